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

#endif // LLMC_DIALECT_TL_TRANSFORMS_PASSES_TD
