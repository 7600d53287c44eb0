//===- QuantReader.h - reading ggml blocks inside tl blocks -----*- C++ -*-===//
//
// Internal to lib/Conversion/GraphToTL: decodes elements of quantized
// weights (Q8_0, Q4_0, Q4_K, Q6_K) from their raw ggml blocks inside the
// loop nests that read them, for the matmul and the embedding gather.
//
// A nest iterates over the elements of a block by the block's own layout:
// one iteration variable per level of it (Q4_0: which nibble of a byte, which
// byte), so that every byte, shift and scale an element needs is affine in
// those variables, without a div or mod. That is what lets a schedule put
// the elements of a block into vector lanes: the bytes of consecutive
// lanes are consecutive, the shift of a lane is a constant.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_LIB_CONVERSION_GRAPHTOTL_QUANTREADER_H
#define LLMC_LIB_CONVERSION_GRAPHTOTL_QUANTREADER_H

#include "LoweringUtils.h"

namespace llmc::graph_to_tl {

/// The levels of a quantized block, outermost first, whose product is the
/// block's element count, and the element index they make (row-major):
///   Q8_0: (i < 32)
///   Q4_0: (h < 2: low or high nibble, i < 16: byte)
///   Q4_K: (ja < 2, jb < 2, h < 2, i < 32): sub-block 4ja + 2jb + h of 32
///   Q6_K: (hf < 2, qa < 2, qb < 2, l1 < 2, l0 < 16): half, quarter 2qa + qb
///         of 32, lane 16 l1 + l0
inline SmallVector<int64_t> quantLevels(Type element) {
  if (isa<Q4_0Type>(element))
    return {2, 16};
  if (isa<Q4_KType>(element))
    return {2, 2, 2, 32};
  if (isa<Q6_KType>(element))
    return {2, 2, 2, 2, 16};
  return {32};
}

/// The element index within the block of `levels` (affine expressions, one
/// per level of quantLevels).
inline AffineExpr quantElement(Type element, ArrayRef<AffineExpr> levels) {
  SmallVector<int64_t> extents = quantLevels(element);
  AffineExpr e = levels[0];
  for (size_t i = 1; i < levels.size(); ++i)
    e = e * extents[i] + levels[i];
  return e;
}

/// An f16 stored little-endian at two byte positions of `w`, as f32.
inline Value loadHalfAt(NestBuilder &nb, ImplicitLocOpBuilder &b, Value w,
                        AffineMap loM, AffineMap hiM, ValueRange it) {
  Type i16 = b.getI16Type();
  Value lo = arith::ExtUIOp::create(b, i16, nb.load(w, loM, it));
  Value hi = arith::ExtUIOp::create(b, i16, nb.load(w, hiM, it));
  Value bits = arith::OrIOp::create(
      b, lo,
      arith::ShLIOp::create(b, hi,
                            arith::ConstantOp::create(b, b.getI16IntegerAttr(8))));
  Value h = arith::BitcastOp::create(b, b.getF16Type(), bits);
  return arith::ExtFOp::create(b, b.getF32Type(), h);
}

/// ggml's get_scale_min_k4: the 6-bit scale and min, as i32, of Q4_K
/// sub-block `sub` (or `sub + 4` where the i1 `upper()` makes holds) from
/// the bytes a = scales[sub], bb = scales[4 + sub], c = scales[8 + sub]
/// (sub < 4) of its super-block.
inline std::pair<Value, Value>
decodeScaleMinK4(ImplicitLocOpBuilder &b, Value a, Value bb, Value c,
                 function_ref<Value()> upper) {
  auto c8 = [&](int64_t v) { return i8Constant(b, v); };
  Value c63 = c8(63), c15 = c8(15), c4 = c8(4), c6 = c8(6);
  Value scLow = arith::AndIOp::create(b, a, c63);
  Value mLow = arith::AndIOp::create(b, bb, c63);
  Value scHigh = arith::OrIOp::create(
      b, arith::AndIOp::create(b, c, c15),
      arith::ShLIOp::create(b, arith::ShRUIOp::create(b, a, c6), c4));
  Value mHigh = arith::OrIOp::create(
      b, arith::ShRUIOp::create(b, c, c4),
      arith::ShLIOp::create(b, arith::ShRUIOp::create(b, bb, c6), c4));
  Value isUpper = upper();
  Value sc = arith::SelectOp::create(b, isUpper, scHigh, scLow);
  Value m = arith::SelectOp::create(b, isUpper, mHigh, mLow);
  Type i32 = b.getI32Type();
  return {arith::ExtUIOp::create(b, i32, sc), arith::ExtUIOp::create(b, i32, m)};
}

/// Reads element (row, block, levels) of a quantized weight straight from
/// its ggml blocks and decodes it as ggml's dequantize_row_* does: the f16
/// scale d (and dmin), the packed value and, for K-quants, the sub-block
/// scale. Row, block and levels are affine expressions of the iteration
/// variables of a block with `numIters` of them. Every element is
/// `mul * q - sub` with an integer q (intValue) and f32 factors shared by a
/// group of elements (scale): what integer dot products with quantized
/// activations build on.
class QuantReader {
public:
  /// `layout`: the weight's rows interleaved (#graph.interleaved, `w`
  /// then [row groups, their bytes]); null for plain rows.
  QuantReader(NestBuilder &nb, Type element, Value w, unsigned numIters,
              AffineExpr row, AffineExpr block, ArrayRef<AffineExpr> levels,
              InterleavedAttr layout = {})
      : nb(nb), w(w), numIters(numIters),
        levels(levels.begin(), levels.end()) {
    int64_t blockBytes = quantBlockBytes(element);
    q4 = isa<Q4_0Type>(element);
    q6k = isa<Q6_KType>(element);
    q4k = isa<Q4_KType>(element);
    // Byte `offset` of the row's block: a header byte (scales) or a quant
    // byte; interleaved, the header byte planes and the quant chunks of the
    // group's rows side by side (graph::interleavedOffset's arithmetic).
    int64_t headerStart = quantHeaderStart(element),
            headerBytes = quantHeaderBytes(element);
    auto at = [&](AffineExpr offset, bool header) {
      if (!layout)
        return nb.map(numIters, {row, block * blockBytes + offset});
      int64_t R = layout.getRows(), C = layout.getChunk();
      AffineExpr g = row.floorDiv(R), r = row % R;
      AffineExpr base = block * (R * blockBytes);
      if (header)
        return nb.map(numIters, {g, base + (offset - headerStart) * R + r});
      AffineExpr j = headerStart ? offset : offset - headerBytes;
      return nb.map(numIters, {g, base + headerBytes * R +
                                      (j.floorDiv(C) * R + r) * C + j % C});
    };
    auto hdr = [&](AffineExpr offset) { return at(offset, true); };
    auto qnt = [&](AffineExpr offset) { return at(offset, false); };
    auto c = [&](int64_t v) { return nb.c(v); };
    // Where the f16 scale d sits in the block (dmin follows it in Q4_K).
    int64_t dAt = q6k ? 208 : 0;
    loMap = hdr(c(dAt));
    hiMap = hdr(c(dAt + 1));
    minLoMap = hdr(c(2));
    minHiMap = hdr(c(3));
    if (q4k) {
      // qs[32 * (2 ja + jb) + i], low nibble for h = 0; the 6-bit scale and
      // min of sub-block 4 ja + 2 jb + h from scales[(2 jb + h)],
      // scales[4 + (2 jb + h)], scales[8 + (2 jb + h)] (ggml's
      // get_scale_min_k4, the upper half when ja = 1).
      AffineExpr ja = levels[0], jb = levels[1], h = levels[2], i = levels[3];
      qMap = qnt(c(16) + ja * 64 + jb * 32 + i);
      shiftExpr = h * 4;
      AffineExpr sub = jb * 2 + h;
      sAMap = hdr(c(4) + sub);
      sBMap = hdr(c(8) + sub);
      sCMap = hdr(c(12) + sub);
      upperExpr = ja;
    } else if (q6k) {
      // ql[64 hf + 32 qb + 16 l1 + l0] (nibble qa), qh[128 + 32 hf + 16 l1
      // + l0] (bits 2 (2 qa + qb)), int8 scale[192 + 8 hf + l1 + 2 (2 qa +
      // qb)] (ggml's dequantize_row_q6_K).
      AffineExpr hf = levels[0], qa = levels[1], qb = levels[2],
                 l1 = levels[3], l0 = levels[4];
      qMap = qnt(hf * 64 + qb * 32 + l1 * 16 + l0);
      shiftExpr = qa * 4;
      qhMap = qnt(c(128) + hf * 32 + l1 * 16 + l0);
      qhShiftExpr = (qa * 2 + qb) * 2;
      scMap = hdr(c(192) + hf * 8 + l1 + (qa * 2 + qb) * 2);
    } else if (q4) {
      // qs[i]: element i in the low nibble, i + 16 in the high one.
      qMap = qnt(c(2) + levels[1]);
      shiftExpr = levels[0] * 4;
    } else {
      qMap = qnt(c(2) + levels[0]);
    }
    scaleList = {{w, loMap}, {w, hiMap}};
    if (q6k)
      scaleList.push_back({w, scMap});
    if (q4k)
      for (AffineMap m : {minLoMap, minHiMap, sAMap, sBMap, sCMap})
        scaleList.push_back({w, m});
    intList = {{w, qMap}};
    if (q6k)
      intList.push_back({w, qhMap});
    superList = {{w, loMap}, {w, hiMap}};
    if (q4k) {
      superList.push_back({w, minLoMap});
      superList.push_back({w, minHiMap});
    }
    if (q6k)
      subScaleList = {{w, scMap}};
    if (q4k)
      subScaleList = {{w, sAMap}, {w, sBMap}, {w, sCMap}};
    list = intList;
    llvm::append_range(list, scaleList);
  }

  /// The regions a block reading whole elements (value) declares.
  ArrayRef<Access> accesses() const { return list; }
  /// The regions intValue reads.
  ArrayRef<Access> intAccesses() const { return intList; }
  /// The regions subScale reads (Q4_K, Q6_K).
  ArrayRef<Access> subScaleAccesses() const { return subScaleList; }
  /// The regions superScales reads: d (and dmin) of the (super-)block.
  ArrayRef<Access> superScaleAccesses() const { return superList; }

  /// The integer of the element at the block instance `it`, as i8, with
  /// the format's offset applied: Q8_0 as stored, Q4_0 nibble - 8, Q4_K the
  /// unsigned nibble (its offset is the separate min), Q6_K q - 32.
  /// The stored integer; Q4_0 and Q6_K without their offset (8, 32) when
  /// `withOffset` is false.
  Value int8Value(ImplicitLocOpBuilder &b, ValueRange it,
                  bool withOffset = true) {
    Value byte = nb.load(w, qMap, it);
    if (!q4 && !q4k && !q6k)
      return byte;
    Value c15 = i8Constant(b, 15);
    Value q = arith::AndIOp::create(
        b, arith::ShRUIOp::create(b, byte, shift(b, shiftExpr, it)), c15);
    if (q4)
      return withOffset ? arith::SubIOp::create(b, q, i8Constant(b, 8)).getResult() : q;
    if (q4k)
      return q;
    // Q6_K: low nibble | (2 bits of qh) << 4, minus 32.
    Value qh = nb.load(w, qhMap, it);
    Value high = arith::AndIOp::create(
        b, arith::ShRUIOp::create(b, qh, shift(b, qhShiftExpr, it)), i8Constant(b, 3));
    q = arith::OrIOp::create(b, q, arith::ShLIOp::create(b, high, i8Constant(b, 4)));
    return withOffset ? arith::SubIOp::create(b, q, i8Constant(b, 32)).getResult() : q;
  }

  /// The integer scale of the element's group, as i32: Q4_K's 6-bit scale
  /// and min of its 32-wide sub-block (ggml's get_scale_min_k4), Q6_K's int8
  /// scale of its 16-wide group (second value null).
  std::pair<Value, Value> subScale(ImplicitLocOpBuilder &b, ValueRange it) {
    Type i32 = b.getI32Type();
    if (q6k)
      return {arith::ExtSIOp::create(b, i32, nb.load(w, scMap, it)), Value()};
    Value a = nb.load(w, sAMap, it), bb = nb.load(w, sBMap, it);
    Value c = nb.load(w, sCMap, it);
    return decodeScaleMinK4(b, a, bb, c, [&] {
      return arith::CmpIOp::create(b, arith::CmpIPredicate::ne,
                                   apply(b, upperExpr, it), nb.index(0))
          .getResult();
    });
  }

  /// The (super-)block's f16 scales as f32: d, and dmin for Q4_K (else null).
  std::pair<Value, Value> superScales(ImplicitLocOpBuilder &b, ValueRange it) {
    Value d = loadHalf(b, it, loMap, hiMap);
    return {d, q4k ? loadHalf(b, it, minLoMap, minHiMap) : Value()};
  }

  /// The element at the block instance `it`, as f32 (ggml's dequantization:
  /// Q4_K is d * sc * q - dmin * m, Q6_K d * sc * q, the others d * q).
  Value value(ImplicitLocOpBuilder &b, ValueRange it) {
    Type f32 = b.getF32Type();
    auto [d, dmin] = superScales(b, it);
    Value q = arith::SIToFPOp::create(b, f32, int8Value(b, it));
    if (q6k) {
      Value sc = arith::SIToFPOp::create(b, f32, subScale(b, it).first);
      return arith::MulFOp::create(b, arith::MulFOp::create(b, d, sc), q);
    }
    if (!q4k)
      return arith::MulFOp::create(b, d, q);
    auto [sc, m] = subScale(b, it);
    Value mul = arith::MulFOp::create(b, d, arith::UIToFPOp::create(b, f32, sc));
    Value sub = arith::MulFOp::create(b, dmin, arith::UIToFPOp::create(b, f32, m));
    return arith::SubFOp::create(b, arith::MulFOp::create(b, mul, q), sub);
  }

private:
  /// An affine expression of the iteration variables, evaluated.
  Value apply(ImplicitLocOpBuilder &b, AffineExpr e, ValueRange it) {
    if (auto d = dyn_cast<AffineDimExpr>(e))
      return it[d.getPosition()];
    if (auto c = dyn_cast<AffineConstantExpr>(e))
      return nb.index(c.getValue());
    return affine::AffineApplyOp::create(b, nb.map(numIters, {e}), it);
  }
  /// A shift amount as i8.
  Value shift(ImplicitLocOpBuilder &b, AffineExpr e, ValueRange it) {
    return arith::IndexCastUIOp::create(b, b.getI8Type(), apply(b, e, it));
  }
  Value loadHalf(ImplicitLocOpBuilder &b, ValueRange it, AffineMap loM,
                 AffineMap hiM) {
    return loadHalfAt(nb, b, w, loM, hiM, it);
  }

  NestBuilder &nb;
  Value w;
  unsigned numIters;
  SmallVector<AffineExpr> levels;
  bool q4 = false, q6k = false, q4k = false;
  AffineMap loMap, hiMap, qMap, qhMap, scMap, minLoMap, minHiMap, sAMap, sBMap,
      sCMap;
  AffineExpr shiftExpr, qhShiftExpr, upperExpr;
  SmallVector<Access> list, intList, scaleList, subScaleList, superList;
};

} // namespace llmc::graph_to_tl

#endif // LLMC_LIB_CONVERSION_GRAPHTOTL_QUANTREADER_H
