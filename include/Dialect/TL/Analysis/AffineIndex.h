//===- AffineIndex.h - index values as affine expressions -------*- C++ -*-===//
//
// Schedule primitives and analyses reason about the values a tl.block's
// iteration variables are bound to (sums and constant multiples of loop
// variables). This turns such a value into an affine expression whose dims
// are the loop variables and outside values it is made of.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_DIALECT_TL_ANALYSIS_AFFINEINDEX_H
#define LLMC_DIALECT_TL_ANALYSIS_AFFINEINDEX_H

#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace llmc::tl {

/// Turns index computations (constants, +, -, * by a constant) into affine
/// expressions. Values made by such ops (and affine.apply) inside `scope`
/// are decomposed, and sums and constant multiples outside it too (a tile's
/// first index hoisted out of the tile's loop); every other value (a loop
/// variable, an argument, a value from outside `scope` made by another op,
/// or one made inside by another op when `opaqueInside` is set) becomes a
/// dim, collected in `dims`.
struct AffineIndexBuilder {
  explicit AffineIndexBuilder(mlir::Operation *scope, bool opaqueInside = false)
      : scope(scope), opaqueInside(opaqueInside) {}

  /// The expression of `v`, or nullopt when it is not affine (a value
  /// computed inside `scope` by another op, unless opaqueInside).
  std::optional<mlir::AffineExpr> build(mlir::Value v);
  /// The dim standing for `v` (added when new).
  mlir::AffineExpr dim(mlir::Value v);
  /// The expressions of a block's accesses: `map` (over the block's
  /// iteration variables) composed with the values they are bound to.
  std::optional<llvm::SmallVector<mlir::AffineExpr>>
  compose(mlir::AffineMap map, mlir::ValueRange iterValues);

  llvm::SmallVector<mlir::Value> dims;
  mlir::Operation *scope;
  bool opaqueInside;
};

/// The constant multiplier of dim `dim` in `e`, or nullopt when `e` is not
/// linear in `dim` (a mod, floordiv or ceildiv of an expression of it).
std::optional<int64_t> linearCoefficient(mlir::AffineExpr e, unsigned dim,
                                         unsigned numDims);

/// The range [least, greatest] of a dim's values, or nullopt when unknown.
using DimRangeFn =
    llvm::function_ref<std::optional<std::pair<int64_t, int64_t>>(
        unsigned dim)>;

/// The least and greatest value of `e` when each of its dims lies in its
/// range, or nullopt when some dim's range is unknown.
std::optional<std::pair<int64_t, int64_t>> exprRange(mlir::AffineExpr e,
                                                     DimRangeFn dimRange);

/// `e` with each floordiv and mod by a positive constant whose quotient is
/// one value over the dims' ranges replaced by that value and the
/// remainder: after simplifyAffineExpr has taken the multiples of the
/// divisor out (`(16 * i + lane) floordiv 16` is `i + lane floordiv 16`),
/// `lane floordiv 16` with lane below 16 is 0 and `lane mod 16` is lane.
mlir::AffineExpr simplifyWithRanges(mlir::AffineExpr e, DimRangeFn dimRange);

/// The constant multiplier of dim `dim` in `e` within aligned runs of `run`
/// consecutive values (dim = run * i + lane, lane below run): a blocked
/// layout's index moves by it inside a block. linearCoefficient when run is
/// 1; nullopt when `e` is not linear in the lane.
std::optional<int64_t> runCoefficient(mlir::AffineExpr e, unsigned dim,
                                      unsigned numDims, int64_t run);

/// True when `v` is `root` or computed from it by ops inside `scope` (what
/// a loop's variable reaches: the iteration values of blocks, loop bounds).
bool isComputedFrom(mlir::Value v, mlir::Value root, mlir::Operation *scope);

} // namespace llmc::tl

#endif // LLMC_DIALECT_TL_ANALYSIS_AFFINEINDEX_H
