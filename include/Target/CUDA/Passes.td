//===- Passes.td - passes of the CUDA back end -------------*- tablegen -*-===//
#ifndef LLMC_TARGET_CUDA_PASSES_TD
#define LLMC_TARGET_CUDA_PASSES_TD

include "mlir/Pass/PassBase.td"

def CUDAKernelABI : Pass<"cuda-kernel-abi", "mlir::ModuleOp"> {
  let summary = "Write the dispatch program and give the kernels CUDA's ABI";
  let description = [{
    Input: `convert-tl-to-gpu`'s output (the kernels in `gpu.module
    @llmc_kernels`, launched from the phase functions `llmc.phase` =
    prefill / decode, whose arguments are the entry's, llmc/abi.h).

    Writes the module attribute `llmc.dispatch` as `vulkan-kernel-abi`
    does (docs/artifact.md, "device"; the code is shared,
    Target/GPU/KernelABI.h): per phase the launches in order, with grids,
    buffer bindings (`tokens`, `weights`, `kv`, `logits` or `arena` at a
    byte offset) and scalars as expressions of the call's sizes. Each
    kernel's memref arguments become `memref<?xT>` (the runtime passes the
    buffer's device address plus the binding's offset), each followed by
    index arguments for its dynamic sizes; loads, stores and `memref.dim`
    are linearized with the old type's strides. The workgroup attributions
    stay (CUDA's shared memory), as do stack buffers (registers or local
    memory). Kernels index with 32 bits (the lowering's index width): a
    buffer of a static shape past the target's `range` (2 GiB by default)
    is bound in windows as on Vulkan, and an element type the target lacks
    (`-fp64`, ...) is an error located at the op that uses it.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cuda:sm_80\"",
           "the target description (explicit: resolved by the driver)">
  ];
  let dependentDialects = ["mlir::gpu::GPUDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect"];
}

def CUDASubgroupShuffles : Pass<"cuda-subgroup-shuffles",
                                "mlir::gpu::GPUModuleOp"> {
  let summary = "Sum across a warp with shuffles";
  let description = [{
    `gpu.subgroup_reduce` (the GPU schedule's sums across a subgroup, with
    or without a cluster size) becomes a butterfly of `gpu.shuffle xor`
    over 32-bit values: log2(subgroup) steps, every lane left with the
    total (or its cluster's); a 64-bit value (the exact mode's f64 sums)
    shuffles as 64 bits, which the NVVM lowering does as two halves. NVVM has no lowering of
    its own for the float sums (`redux.sync` adds only integers), so every
    CUDA kernel's subgroup sums go through this pass.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cuda:sm_80\"",
           "the target description (its subgroup= is the warp's size)">
  ];
  let dependentDialects = ["mlir::gpu::GPUDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::vector::VectorDialect"];
}

def CUDALowerVectors : Pass<"cuda-lower-vectors", "mlir::gpu::GPUModuleOp"> {
  let summary = "Vector code of vectorized loops in the forms NVVM lowers";
  let description = [{
    The kernels' vector code (a lane's vectorized loop: its 16-byte loads and
    the group reduction of their elements) in forms `convert-gpu-to-nvvm`
    lowers: each `vector.multi_reduction` of a group into one
    `vector.reduction` per row (inner reduction), n-D shape casts into 1-D
    extracts and inserts. The loads keep their alignment, so a 16-byte one
    stays one instruction (`ld.global.v4.b32`).
  }];
  let dependentDialects = ["mlir::vector::VectorDialect"];
}

def CUDAAsyncCopies : Pass<"cuda-async-copies", "mlir::gpu::GPUModuleOp"> {
  let summary = "Copy staged tiles into shared memory with cp.async";
  let description = [{
    On a target with `async-copy` (sm_80 and newer; `-async-copy` off), a
    kernel's element copies from global into shared memory (a
    `memref.load` of a global buffer whose value only a `memref.store` into
    a `workgroup` buffer right after it takes: the GPU schedule's `stage`
    copies, a workgroup's tile of activations) of 4 or 8 bytes become
    `nvgpu.device_async_copy` (PTX `cp.async.ca.shared.global`: the data
    goes to shared memory without passing through registers, and the
    thread issues its next copy at once). The copies of one step (the
    outermost loops around them that hold only copies and index
    arithmetic) are one group: right after that step the thread commits
    it and waits for it (`cp.async.commit_group`, `cp.async.wait_group
    0`), before the barrier that makes every thread's copies visible to
    the workgroup. Anything else (2-byte elements, a load whose value is
    used otherwise, a copy from shared or private memory) is left as it is.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cuda:sm_80\"",
           "the target description (its async-copy feature)">
  ];
  let dependentDialects = ["mlir::nvgpu::NVGPUDialect",
                           "mlir::NVVM::NVVMDialect"];
}

def CUDAContractFMA : Pass<"cuda-contract-fma", "mlir::gpu::GPUModuleOp"> {
  let summary = "Let a kernel's float multiplies and adds fuse into FMAs";
  let description = [{
    Marks every `arith.mulf`, `arith.addf` and `arith.subf` of the kernels
    `fastmath<contract>`, which the NVVM lowering carries to LLVM, so that
    the NVPTX back end fuses a product into the sum that takes it (one
    `fma.rn` with one rounding instead of `mul.rn` and `add.rn`), as nvcc
    does by default (`-fmad=true`). The GPU targets compile the exact mode
    only, whose bound (1e-4 of PyTorch; 1e-3 x max|logit| of the CPU target)
    an FMA's single rounding keeps; the CPU target's exact mode fuses its
    products the same way.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def CUDAGridDependencies : Pass<"cuda-grid-dependencies", "mlir::gpu::GPUModuleOp"> {
  let summary = "Let each kernel start while the one before it ends (programmatic dependent launch)";
  let description = [{
    On a target with programmatic dependent launch (`pdl`: sm_90 and newer),
    every kernel of the module begins with `griddepcontrol.wait` (it waits
    until the grids it depends on have completed and their memory is
    visible, before any thread touches memory) and then
    `griddepcontrol.launch_dependents` (the next kernel may be scheduled
    once every workgroup of this one has started). The runtime then links
    consecutive kernels of a CUDA graph with programmatic edges: the next
    kernel's launch overlaps this one's end, which is most of a small
    kernel's cost in a decode step of hundreds of launches. Without a
    programmatic launch the wait returns at once: the kernels run as before.
    The artifact records it (`device.pdl`); nothing is inserted without the
    feature.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cuda:sm_90\"",
           "the target description">
  ];
  let dependentDialects = ["mlir::NVVM::NVVMDialect"];
}

#endif // LLMC_TARGET_CUDA_PASSES_TD
