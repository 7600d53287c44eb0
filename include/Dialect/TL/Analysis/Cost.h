//===- Cost.h - the work of a loop nest, as polynomials in its sizes -*- C++
//-*-===//
//
// An analytical model of what a tl loop nest does: its arithmetic (floating
// and integer operations, and the vector instructions they take at the
// nest's vector lanes), the distinct bytes it reads and writes from
// buffers it does not own, and how many iterations its outermost parallel
// loop splits among threads. Sizes the nest takes from its caller (the
// prompt length, pos0) stay symbols, so one estimate serves every call:
// `tl-estimate-cost` records it per kernel, the runtime's profile divides
// it by the machine's rates and sets it beside the measured time.
//
// Counting rules (docs/performance.md, "The cost model"):
// - every operation in a block's body counts once per block instance; a
//   fused multiply-add is two floating-point operations;
// - in a vectorized loop an operation on W-bit elements takes
//   ceil(lanes * W / vectorBits) instructions for `lanes` instances; a
//   sum of products of bytes (an add of a multiply of two values extended
//   from i8) is one instruction at 8 bits with VNNI, three without, and
//   its extensions and multiply none (the int8 dot instructions); the
//   count is in multiply-add issue slots: float arithmetic, integer
//   multiplies and dots one per instruction, other integer and conversion
//   instructions half of one (they issue on about twice as many ports);
// - bytes: each outside buffer's accessed indices over the iteration
//   domain, per dimension the fewer of their span and the values of the
//   loop variables in them, times its element size; the innermost
//   dimension's run in whole cache lines;
// - a loop whose body does not depend on its variable multiplies the body
//   by its trip count; one that does is summed in closed form (loop
//   variables up to the third power), as attention's triangular loops.
// A caller's size over a constant stays a symbol of its own, the floor
// ("arg0.0/4"), so a tile's remainder is counted; other divisions are
// taken as exact. A bound the model cannot express makes its loop run once
// and the estimate inexact.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_DIALECT_TL_ANALYSIS_COST_H
#define LLMC_DIALECT_TL_ANALYSIS_COST_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace llmc::tl {

/// A polynomial with real coefficients over named symbols.
class CostPoly {
public:
  /// A product of symbols, sorted (a repeated symbol is a power).
  using Monomial = std::vector<std::string>;

  CostPoly() = default;
  static CostPoly constant(double c);
  static CostPoly symbol(llvm::StringRef name);

  CostPoly operator+(const CostPoly &o) const;
  CostPoly operator-(const CostPoly &o) const;
  CostPoly operator*(const CostPoly &o) const;
  CostPoly operator*(double c) const;
  CostPoly &operator+=(const CostPoly &o) { return *this = *this + o; }

  /// The constant, when no symbol appears.
  std::optional<double> constantValue() const;
  bool dependsOn(llvm::StringRef name) const;
  /// The highest power of `name` in any term.
  unsigned degreeIn(llvm::StringRef name) const;
  /// `name` replaced by `by`.
  CostPoly substitute(llvm::StringRef name, const CostPoly &by) const;
  /// The sum of this polynomial over name = 0, 1, ..., count - 1, in closed
  /// form; std::nullopt past the third power of `name`.
  std::optional<CostPoly> sumOver(llvm::StringRef name,
                                  const CostPoly &count) const;
  /// The value with each symbol given by `value`.
  double evaluate(llvm::function_ref<double(llvm::StringRef)> value) const;
  /// The value with every symbol at `reference` (comparisons of sizes).
  double atReference(double reference = 256) const;

  const std::map<Monomial, double> &terms() const { return terms_; }
  /// `1.5*arg0.0*arg1 + 2`, for remarks and tests.
  std::string str() const;

private:
  std::map<Monomial, double> terms_;
};

/// What one run of a loop nest does.
struct NestWork {
  /// Floating-point operations (a fused multiply-add is two).
  CostPoly flops;
  /// Integer operations on data (not addressing).
  CostPoly intOps;
  /// The issue slots of the multiply-add units that arithmetic takes at the
  /// nest's vector lanes (see the counting rules).
  CostPoly instructions;
  /// Distinct bytes of the buffers from outside the nest it reads or writes.
  CostPoly bytes;
  /// Iterations of its outermost parallel loop (1 without one).
  CostPoly parallel = CostPoly::constant(1);
  /// Iterations of the nest's own loop: a call where it is below one (a
  /// tile's remainder the sizes leave empty) does nothing.
  CostPoly trips = CostPoly::constant(1);
  /// Every bound and index was one the model expresses.
  bool exact = true;
};

/// Resolves a block argument the nest takes from outside: an index (`dim`
/// = -1) or dimension `dim` of a memref, as a polynomial in the caller's
/// symbols.
using CostLeaf =
    llvm::function_ref<std::optional<CostPoly>(mlir::Value, int64_t dim)>;

/// An index value as a polynomial: constants and `+ - *`, divisions and
/// remainders by constants (a size's floor kept as a symbol, others taken
/// as exact), affine maps, and `leaf` at block arguments.
std::optional<CostPoly> estimateIndex(mlir::Value v, CostLeaf leaf);
/// Dimension `dim` of a memref, through the ops that give its sizes.
std::optional<CostPoly> estimateDim(mlir::Value memref, int64_t dim,
                                    CostLeaf leaf);

/// The facts of the target the counts depend on.
struct CostTarget {
  /// Bits of the widest vector register.
  unsigned vectorBits = 128;
  /// Whether a vector of i32 lanes accumulates four u8 x s8 products per
  /// lane in one instruction (VNNI); without it a multiply-add of bytes
  /// takes three (widening multiply-adds to i16, then to i32, and an add).
  bool int8Dot = false;
  /// Bytes moved per cache line: an access's contiguous run is counted in
  /// whole lines.
  int64_t cacheLine = 64;
};

/// The work of the loop nest `nest` on `target`.
NestWork estimateWork(mlir::Operation *nest, const CostTarget &target,
                      CostLeaf leaf);

} // namespace llmc::tl

#endif // LLMC_DIALECT_TL_ANALYSIS_COST_H
