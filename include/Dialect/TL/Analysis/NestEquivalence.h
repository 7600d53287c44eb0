//===- NestEquivalence.h - are two loop nests the same code? ----*- C++ -*-===//
//
// Structural equality of tl loop nests (or kernels): the same operations,
// types and attributes (a block's name aside: it only tells blocks apart
// for schedules and readers) over corresponding values. What the nests use
// from outside pairs up as it is met, under a caller's rule; the pairs are
// what turns one nest into the other. tl-outline-kernels merges equal
// kernels with it, tl-default-schedule schedules equal nests once.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_DIALECT_TL_ANALYSIS_NESTEQUIVALENCE_H
#define LLMC_DIALECT_TL_ANALYSIS_NESTEQUIVALENCE_H

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Operation.h"

namespace llmc::tl {

/// The attributes of `op` that make its meaning: all of them but a tl
/// block's name.
llvm::SmallVector<mlir::NamedAttribute> meaningfulAttrs(mlir::Operation *op);

class NestEquivalence {
public:
  /// Whether `a` may stand for `b` when a value from outside `a` pairs
  /// with one from outside `b`; null: no outside values may differ (each
  /// must already be paired, e.g. the arguments of two kernels).
  using PairRule = std::function<bool(mlir::Value, mlir::Value)>;

  explicit NestEquivalence(PairRule rule = nullptr) : rule(std::move(rule)) {}

  /// Whether `a` and `b` are equal; afterwards mapping() takes every value
  /// `a` uses or defines to its counterpart in `b`.
  bool equal(mlir::Operation *a, mlir::Operation *b);
  bool equal(mlir::Region &a, mlir::Region &b);
  const mlir::IRMapping &mapping() const { return map; }
  void reset() {
    map.clear();
    targets.clear();
  }

  /// A hash that equal nests share.
  static llvm::hash_code hash(mlir::Operation *op);

private:
  bool pair(mlir::Value x, mlir::Value y);

  PairRule rule;
  mlir::IRMapping map;
  llvm::DenseSet<mlir::Value> targets;
};

} // namespace llmc::tl

#endif // LLMC_DIALECT_TL_ANALYSIS_NESTEQUIVALENCE_H
