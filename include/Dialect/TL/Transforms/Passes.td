//===- Passes.td - tensor-loop dialect passes --------------*- tablegen -*-===//
#ifndef LLMC_DIALECT_TL_TRANSFORMS_PASSES_TD
#define LLMC_DIALECT_TL_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TLReleaseBuffers : Pass<"tl-release-buffers", "mlir::func::FuncOp"> {
  let summary = "Free every function-level buffer after its last use";
  let description = [{
    Lowering from `graph` allocates one buffer per intermediate tensor at the
    top level of the function, where control flow is straight-line. This pass
    inserts a `memref.dealloc` for each such `memref.alloc` right after the
    last top-level operation that uses it, directly or through a view
    (`ViewLikeOpInterface`) or inside a nested loop nest. Buffers that escape
    (returned, or stored/passed to a call) are left alone.

    Input: `memref.alloc`s at the top level of the function body.
    Output: each non-escaping one has exactly one `memref.dealloc`.
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def TLVectorize : Pass<"tl-vectorize", "mlir::func::FuncOp"> {
  let summary = "Split and vectorize the innermost spatial loop of each block";
  let description = [{
    For every tl.block, in program order, whose innermost enclosing loop has a
    constant extent that is a multiple of `width` and may run its iterations
    independently (it binds only spatial variables and the block writes
    distinct elements in distinct iterations): splits that loop by `width`
    and marks the inner loop `vectorized`. It applies the same schedule
    primitives (`split`, `vectorize`) as the Python schedule API, so the two
    produce the same IR for the same decisions. Loops that do not qualify
    are left alone.
  }];
  let options = [
    Option<"width", "width", "int64_t", /*default=*/"8",
           "vector width in elements">
  ];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def TLSchedule : Pass<"tl-schedule"> {
  let summary = "Apply a schedule written as a script of primitive calls";
  let description = [{
    Runs the schedule primitives (`Dialect/TL/Transforms/Schedule.h`, the
    same C++ the default schedule and Python drive) named in `script`, in
    order. Statements are separated by `;`; blocks are named, loops are
    given as a block and the position of the loop among those around it at
    that moment (0 = outermost):

    ```
    split(matmul, 2, 16)            # split loop 2 of block "matmul" by 16
    split_peel(matmul, 2, 16)       # the same with the remainder peeled off
    reorder(matmul, 0, 2, 1)        # loops 0, 2, 1 of the block, in order
    rfactor(matmul, 3)              # lanes: loop 3 (or several: 3, 4)
    tree_reduce(matmul)
    parallel(matmul, 0); vectorize(matmul_rf, 3); unroll(matmul, 1)
    decompose_reduction(matmul, 1); bind(matmul, 0, threadIdx.x)
    ```

    A primitive that refuses reports its located error and the pass fails.
    Used by the lit tests of the primitives and to replay schedules from
    `llm-opt`.
  }];
  let options = [
    Option<"script", "script", "std::string", /*default=*/"\"\"",
           "the primitive calls, `;`-separated">
  ];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::affine::AffineDialect"];
}

def TLVerifyParallel : Pass<"tl-verify-parallel"> {
  let summary = "Check that every parallel, vectorized and thread_bound loop is independent";
  let description = [{
    Runs the independence analysis of the schedule primitives
    (`Dialect/TL/Analysis/Independence.h`) again on every loop whose kind
    runs iterations at once, so that IR from any source (a Python
    schedule, hand-written IR, a later pass) cannot reach code generation
    with a kind that would race: no such loop may carry a reduction
    variable, and the elements its iterations write must be disjoint (or
    in buffers private to an iteration). Parallel loops may not nest. The
    pipeline runs it at the end of the tl phase. Errors are located at the
    loop, with a note at the block.
  }];
}

#endif // LLMC_DIALECT_TL_TRANSFORMS_PASSES_TD
