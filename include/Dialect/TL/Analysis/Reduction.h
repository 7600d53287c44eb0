//===- Reduction.h - the update of a reduction block ------------*- C++ -*-===//
//
// A tl reduction block accumulates into the one buffer it writes:
//   acc = combine(acc, x)      (or acc = fma(a, b, acc), an add of a * b)
// Schedule primitives that reorder a reduction (rfactor, tree_reduce) and the
// vectorizer (group reductions) need to know the combiner and its identity.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_DIALECT_TL_ANALYSIS_REDUCTION_H
#define LLMC_DIALECT_TL_ANALYSIS_REDUCTION_H

#include "Dialect/TL/IR/TL.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"

namespace llmc::tl {

/// `store(combine(load(acc), x), acc)` in a block's body.
struct ReductionUpdate {
  mlir::arith::AtomicRMWKind kind;
  mlir::affine::AffineLoadOp load;   ///< the accumulator read
  mlir::affine::AffineStoreOp store; ///< the accumulator write
  mlir::Operation *combine;          ///< the op whose result is stored
  /// The other operand of the combine (null for an fma, whose a * b is it).
  mlir::Value operand;
  bool fma = false;
};

/// The update of the block's one written buffer, or failure (with no
/// diagnostic) when its body is not of that form: one store of the buffer,
/// of an add/mul/min/max/and/or of one load of it at the same element and
/// a value that does not depend on that load.
mlir::FailureOr<ReductionUpdate> matchReductionUpdate(BlockOp block);

/// The identity of `kind` for `type` (0 for add, -inf for max, ...).
mlir::Value reductionIdentity(mlir::OpBuilder &b, mlir::Location loc,
                              mlir::arith::AtomicRMWKind kind,
                              mlir::Type type);

} // namespace llmc::tl

#endif // LLMC_DIALECT_TL_ANALYSIS_REDUCTION_H
