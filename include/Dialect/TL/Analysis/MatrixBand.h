//===- MatrixBand.h - a matmul band for a GPU's matrix units ----*- C++ -*-===//
//
// A matrix band is what the loop kind `mma` marks: three directly nested
// loops (rows, columns, the reduction) around one block
//
//   out[.., r, c] += ext(a[.., r, k]) * ext(b[.., c, k])
//
// (or ext(a) * ext(b) + (ext(aLow) * ext(b)) * 2^-11: a's f32 values split
// into two f16 halves, which keeps the product's precision near f32's; or
// ext(a) * ext(b) + (ext(aLow) * ext(b) + ext(a) * ext(bLow)) * 2^-11: b's
// values split too, a quantized weight's elements, dequant_halves)
// with `a` and `b` f16 and `out` f32, each operand a row-major matrix in its
// last two dimensions (unit stride along the row, a constant stride between
// rows), every extent a multiple of the fragment edge (16). One subgroup
// computes it on the matrix units: fragments of 16 x 16 of `out` in
// registers over the whole reduction, 16 x 16 fragments of `a` and of `b`
// (read transposed) loaded at each step of 16 (WMMA's m16n16k16). The schedule
// primitive `mma` checks this form and the GPU conversion lowers it.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_DIALECT_TL_ANALYSIS_MATRIXBAND_H
#define LLMC_DIALECT_TL_ANALYSIS_MATRIXBAND_H

#include "Dialect/TL/IR/TL.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/Twine.h"

namespace llmc::tl {

/// The edge of one fragment of the matrix units (rows, columns and
/// reduction steps are multiples of it).
constexpr int64_t kMatrixTile = 16;

/// The scale of a split operand's low half (split_halves: lo = f16((v -
/// hi) * 2^11), so that the rest of a small value is no f16 subnormal; the
/// block multiplies its product by the inverse).
constexpr double kLowHalfScale = 2048.0;

/// Bytes a fragment's first element must be aligned to (WMMA's loads and
/// stores: 256 bits).
constexpr int64_t kMatrixAlignment = 32;

struct MatrixBand {
  ForOp rows, cols, red;
  BlockOp block;
  /// The operands (a: rows x k, b: cols x k, out: rows x cols).
  mlir::Value a, b, out;
  /// Where a's values are held as the sum of two f16 halves (an f32
  /// operand split: a the high half, aLow the low one, read at the same
  /// element with the same layout): the block adds ext(a) * ext(b) +
  /// (ext(aLow) * ext(b)) / kLowHalfScale. Null otherwise.
  mlir::Value aLow;
  /// Where b's values are split too (dequant_halves: b the high half, bLow
  /// the low one): the block adds ext(a) * ext(b) + (ext(aLow) * ext(b) +
  /// ext(a) * ext(bLow)) / kLowHalfScale (aLow is then set as well). Null
  /// otherwise.
  mlir::Value bLow;
  /// Their accesses, as maps over the block's iteration variables.
  mlir::AffineMap aMap, bMap, outMap;
  /// The stride between rows of each (WMMA's leading dimension).
  int64_t aLead = 0, bLead = 0, outLead = 0;
  /// The block's init stores 0 (the sums start at zero), or an element of
  /// `initFrom` at out's element (a residual added into the product: the
  /// sums start there; `initLead` its rows' stride); without an init they
  /// start at out's values.
  bool zeroInit = false;
  mlir::Value initFrom;
  int64_t initLead = 0;
  int64_t rowCount = 0, colCount = 0, redCount = 0;
};

/// The matrix band rooted at `rows`, or failure; `why` (if given) hears the
/// first condition that does not hold. With `anyRowCount` the rows' loop
/// may run to any bound (a prompt's tokens, before a schedule tiles them;
/// rowCount is then 0); with `f32Rows` a's values may be f32 loads (not
/// widened f16: a schedule about to split them into halves checks the rest).
mlir::FailureOr<MatrixBand>
matchMatrixBand(ForOp rows,
                llvm::function_ref<void(const llvm::Twine &)> why = {},
                bool anyRowCount = false, bool f32Rows = false);

} // namespace llmc::tl

#endif // LLMC_DIALECT_TL_ANALYSIS_MATRIXBAND_H
