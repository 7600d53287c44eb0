//===- Passes.td - llmc conversion passes ------------------*- tablegen -*-===//
#ifndef LLMC_CONVERSION_PASSES_TD
#define LLMC_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertGraphToTL : Pass<"convert-graph-to-tl", "mlir::ModuleOp"> {
  let summary = "Lower graph tensor ops to tl loop nests over buffers";
  let description = [{
    Every tensor becomes a memref: each graph op allocates its result buffer
    at the top level of the function (`memref.alloc`, with the dynamic
    sequence length taken from an operand) and fills it with a `tl.for` nest
    around `tl.block`s. `graph.param` becomes a `memref.view` of the weights
    buffer (`!graph.weights` -> `memref<?xi8>`) at its `blob_offset`;
    `!graph.kv_cache` becomes `memref<layers x 2 x max_seq x kv_heads x
    head_dim x f32>`. Public functions get `llvm.emit_c_interface`, the
    artifact's entry-point ABI. Functions still return memrefs; run
    `buffer-results-to-out-params` afterwards for the out-parameter ABI.

    Input: graph ops inside `func.func`; every param has a `blob_offset`.
    Output: no graph ops or types remain.
  }];
  let dependentDialects = ["llmc::tl::TLDialect", "mlir::memref::MemRefDialect",
                           "mlir::affine::AffineDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::math::MathDialect", "mlir::scf::SCFDialect"];
}

def ConvertTLToSCF : Pass<"convert-tl-to-scf"> {
  let summary = "Lower tl loops and blocks to scf loops, vector code and memref accesses";
  let description = [{
    Every loop kind reaches the code it names:
    - `unrolled` loops are replaced by one copy of their body per iteration;
    - a band of directly nested `vectorized` loops (constant extents)
      becomes straight-line code of the vector dialect, one lane per
      iteration (row-major over the band): contiguous accesses become
      `vector.load`/`vector.store` (replicated with `vector.shuffle` across
      lanes they do not depend on), lane-invariant values stay scalar and are
      broadcast, other accesses go lane by lane; trailing loops of the band
      that bind reduction variables are reduced into the other lanes
      (`vector.multi_reduction`);
    - `parallel` loops become `scf.parallel` (threads, on the CPU);
    - `thread_bound` loops and parallel loops nested in parallel loops are
      errors (they need a GPU target);
    - other loops become `scf.for`.
    `tl.block` is inlined with its iteration variables replaced by their
    bound values, its affine accesses expanded into index arithmetic and
    `memref.load`/`memref.store`, and its `init` region guarded by `scf.if`
    on all reduction variables being zero.

    Output: no tl ops remain.
  }];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::memref::MemRefDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::vector::VectorDialect"];
}

def ConvertTLToGPU : Pass<"convert-tl-to-gpu", "mlir::ModuleOp"> {
  let summary = "Outlined tl kernels to gpu.func, their calls to gpu.launch_func";
  let description = [{
    Input: the kernels of `tl-outline-kernels` (`llmc.kernel` functions, one
    nest each) scheduled for a GPU: the loops at the top of each nest bound
    to `blockIdx.{x,y,z}` and `threadIdx.{x,y,z}` (the GPU schedule).
    Each kernel becomes a `gpu.func` (same arguments) in the module
    `@llmc_kernels`, and each call of it a `gpu.launch_func`:
    - a loop bound to `blockIdx` is the grid's extent on that axis, its
      upper bound computed in the caller from the call's operands; in the
      kernel its variable is `gpu.block_id`;
    - a loop bound to `threadIdx` is the workgroup's extent, a constant or
      `min(constant, x)` (a split's partial last tile: the threads past x
      run nothing, `scf.if`); its variable is `gpu.thread_id`; the kernel
      records the workgroup as `known_block_size`;
    - a workgroup's steps (several loops on `threadIdx.x`, possibly in
      serial loops) get a `gpu.barrier` before each but the first; the stack
      buffers beside them become workgroup attributions, unless every
      access indexes one dimension by the step's thread: then each thread
      allocates its own slice (a stack buffer without that dimension);
    - a matrix band (kind `mma`) right after the bound loops runs on one
      subgroup (32 lanes on `threadIdx.x`) as WMMA: `gpu.subgroup_mma_*`;
    - the rest of the nest lowers as `convert-tl-to-scf` lowers it (unrolled
      loops copied, serial loops to `scf.for`, blocks inlined, `vectorized`
      bands as vector code, each load with the alignment it is known to
      have: a kernel's buffers start at multiples of 64 bytes).
    A matrix band of kind `library` at the top of a host function (the GEMM
    library's, `--target cuda:...,+cublas`) becomes `tl.library_gemm` on the
    host: a subview of each operand's matrix, one call (two where a's values
    are f16 halves: the low half's products scaled by 2^-11 and added).
    Errors, located at the loop: a bound loop that is not at the top of its
    nest, an axis bound twice, blockIdx inside threadIdx, a workgroup
    without a constant extent, a `parallel` loop in a kernel, a matrix band
    that does not follow the bound loops, a kernel with no bound loop.
  }];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::scf::SCFDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::vector::VectorDialect"];
}

#endif // LLMC_CONVERSION_PASSES_TD
