//===- Passes.td - passes of the CPU back end --------------*- tablegen -*-===//
#ifndef LLMC_TARGET_CPU_PASSES_TD
#define LLMC_TARGET_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def CPUOutlineParallelBodies
    : Pass<"cpu-outline-parallel-bodies", "mlir::ModuleOp"> {
  let summary = "Give parallel loop bodies and stack buffers a function of their own";
  let description = [{
    The body of every `scf.parallel` becomes a private function (called from
    the loop with the induction variables and the values it uses), and every
    statically shaped `memref.alloca` moves to the entry block of its
    function. Allocations in an entry block are what LLVM promotes to
    registers (SROA, mem2reg): the lanes and tiles of a scheduled kernel
    live in vector registers instead of round-tripping through the stack.
    Outlined, each thread's iterations get their own copy, and the OpenMP
    region that `convert-scf-to-openmp` makes of the loop holds only a call.

    Input: `scf.parallel` loops with no reductions, not nested.
    Output: each such loop's body is one `func.call`; no static alloca
    outside an entry block.
  }];
  let dependentDialects = ["mlir::func::FuncDialect",
                           "mlir::memref::MemRefDialect"];
}

def CPUAddThreadControl : Pass<"cpu-add-thread-control", "mlir::ModuleOp"> {
  let summary = "Export the thread-count setter of llmc/abi.h";
  let description = [{
    When the module has OpenMP parallel regions, adds the exported function
    `llmc_set_num_threads(i32)` (LLMC_SET_NUM_THREADS_SYMBOL), which sets
    the thread count of the parallel regions the calling thread starts
    (`omp_set_num_threads`). The runtime calls it before each forward call.
    Without parallel regions the module is left as it is, and the runtime
    finds no setter.
  }];
  let dependentDialects = ["mlir::func::FuncDialect",
                           "mlir::LLVM::LLVMDialect"];
}

def CPUProfileKernels : Pass<"cpu-profile-kernels", "mlir::ModuleOp"> {
  let summary = "Time every kernel call into exported counters";
  let description = [{
    For `llmc compile --profile` (and `llmc bench --profile`): each call of
    a kernel from a caller listed in the module's `llmc.kernels`
    (tl-estimate-cost: a slot per kernel and caller, in that order) reads
    the monotonic clock (`clock_gettime`) before and after, and adds the
    nanoseconds and one call to its slot of two exported arrays of i64,
    `llmc_profile_ns` and `llmc_profile_calls`, whose length the exported
    constant `llmc_profile_count` states (LLMC_PROFILE_*_SYMBOL in
    llmc/abi.h). A
    kernel's threads run inside its call, so its time is the wall time of
    its parallel region. The runtime reads and clears the arrays; the
    metadata's `kernels` name the slots.

    Input: outlined kernels and their callers (tl-outline-kernels,
    tl-estimate-cost), before the loops are lowered.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::func::FuncDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::LLVM::LLVMDialect"];
}

def CPUInt8Dot : Pass<"cpu-int8-dot"> {
  let summary = "Groups of four int8 products as VNNI dot-product instructions";
  let description = [{
    An integer dot product's group of four (a `vector.multi_reduction <add>`
    over the inner dimension of 4 of products of values widened from i8, as
    the vectorizer makes of a group reduction loop) becomes VPDPBUSD on
    targets with AVX512-VNNI (512-, 256- and 128-bit with AVX512VL) or
    AVX-VNNI (256, 128): unsigned bytes times signed bytes summed into i32
    lanes, exactly. A zero-extended operand (or a masked one known to be
    below 128) is the unsigned one; two signed operands take the bias route,
    `dpbusd(acc, a ^ 0x80, b) - dpbusd(0, 128, b)`, still exact. Other
    reductions are left to `lower-vector-multi-reduction`.

    The target's description decides (`target=`); on one without VNNI the
    pass does nothing.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cpu:x86-64-v3\"",
           "the target description (resolved by the driver)">
  ];
  let dependentDialects = ["mlir::LLVM::LLVMDialect",
                           "mlir::vector::VectorDialect",
                           "mlir::arith::ArithDialect"];
}

def CPUExpandExp : Pass<"cpu-expand-exp"> {
  let summary = "Compute math.exp (f32) as ggml's CPU back end does";
  let description = [{
    Replaces every f32 `math.exp`, scalar or vector, with the arithmetic of
    ggml's `ggml_v_expf` (from ARM's optimized-routines): n = round(x /
    ln 2), a Cody-Waite reduction, a degree-5 polynomial, and a scaling by
    2^n in two exact steps (0 or infinity beyond |n| > 192). Accurate to
    about 1.5 ulp, it vectorizes (fused multiply-adds, integer shifts) where
    the C library's expf is a scalar call, and it is the exp llama.cpp
    computes SiLU and the softmax with on a CPU, which llama.cpp mode is
    held to. The CPU back end runs it in both numeric modes.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::math::MathDialect"];
}

def CPULowerCollectives : Pass<"cpu-lower-collectives", "mlir::ModuleOp"> {
  let summary = "Collectives as calls into the runtime's table";
  let description = [{
    A partitioned model's collectives on buffers (`dist.buffer_all_reduce`,
    `dist.buffer_all_gather`) and `dist.axis_index` become indirect calls
    through the table of llmc/abi.h (`llmc_collectives`), which the
    runtime hands to the exported `llmc_set_collectives` before the first
    forward call: the model library stays free of MPI or NCCL. Each
    distinct list of mesh axes a collective spans is a group, numbered in
    program order and recorded on the module as `dist.groups` (the artifact
    writes it into metadata.json). Buffers must be dense f32.
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::arith::ArithDialect"];
}

#endif // LLMC_TARGET_CPU_PASSES_TD
