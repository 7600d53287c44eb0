//===- Independence.h - may a loop's iterations run at once? ----*- C++ -*-===//
//
// The analysis behind the `parallel`, `vectorized` and `thread_bound` loop
// kinds: the schedule primitives ask it before they set a kind, and the
// tl-verify-parallel pass asks it again at phase boundaries, so that a kind
// that would race never reaches code generation.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_DIALECT_TL_ANALYSIS_INDEPENDENCE_H
#define LLMC_DIALECT_TL_ANALYSIS_INDEPENDENCE_H

#include "Dialect/TL/IR/TL.h"

namespace llmc::tl {

/// Checks that the iterations of `loop` are independent, i.e. may run in
/// any order or at once:
///  - no block under the loop binds it to a reduction variable only (a loop
///    that also binds a spatial variable of the block runs separate
///    reductions, as a causal attention's rows do);
///  - every buffer written under the loop is private to one iteration
///    (allocated inside it), or all accesses to it under the loop use one
///    dimension whose index is `c * iv + r`, with the same c != 0 and every
///    r within an interval narrower than |c| (so iterations touch disjoint
///    slices).
/// Emits an error at the loop, prefixed with `what` (the primitive), with a
/// note at the offending block, and fails when it cannot show this. With
/// `within` (an op under the loop), only the blocks under it count: one
/// part of a fused launch, whose other parts touch other buffers.
mlir::LogicalResult verifyIndependent(ForOp loop, llvm::StringRef what,
                                      mlir::Operation *within = nullptr);

/// The loops from `top` inward to the one tl.block of a perfect nest (each
/// loop holding the next one or the block, besides pure ops) into `loops`;
/// a null block when the nest is not perfect.
BlockOp perfectNest(ForOp top, llvm::SmallVectorImpl<ForOp> &loops);

/// Whether the iterations of `loop` are independent by the tl.block's own
/// declaration where verifyIndependent cannot show it (a symbolic offset
/// such as a KV cache's position): `loop` is a perfect nest around one
/// block of spatial variables only (distinct values, distinct elements
/// written), some of which `loop` changes, and the block reads what it
/// writes only at the same element. The GPU schedule binds such a loop to
/// a thread axis, and tl-verify-parallel accepts it there.
bool independentByDeclaration(ForOp loop);

/// Which kinds of `block`'s iteration variables `loop` moves: those bound
/// to values computed from its variable.
struct BoundKinds {
  bool spatial = false, reduction = false;
};
BoundKinds boundKinds(BlockOp block, ForOp loop);

/// The buffer `v` is a view of (through subviews, casts, reshapes: any
/// ViewLikeOpInterface), or `v` itself.
mlir::Value viewedBuffer(mlir::Value v);

} // namespace llmc::tl

#endif // LLMC_DIALECT_TL_ANALYSIS_INDEPENDENCE_H
