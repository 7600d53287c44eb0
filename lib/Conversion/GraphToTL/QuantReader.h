//===- QuantReader.h - reading ggml blocks inside tl blocks -----*- C++ -*-===//
//
// Internal to lib/Conversion/GraphToTL: decodes elements of quantized
// weights (Q8_0, Q4_0, Q4_K, Q6_K) from their raw ggml blocks inside the
// loop nests that read them, for the matmul and the embedding gather.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_LIB_CONVERSION_GRAPHTOTL_QUANTREADER_H
#define LLMC_LIB_CONVERSION_GRAPHTOTL_QUANTREADER_H

#include "LoweringUtils.h"

namespace llmc::graph_to_tl {

/// Reads element (row, k) of a quantized weight straight from its ggml
/// blocks (Q8_0, Q4_0, Q4_K, Q6_K) and decodes it to f32 exactly as ggml's
/// dequantize_row_* does: the f16 scale d (and dmin), the packed value and,
/// for K-quants, the sub-block scale. The row is the iteration variable at
/// `rowPos` of a block with `numIters` variables, k an affine expression of
/// them. Every element is `mul * q - sub` with an integer q (intValue) and
/// f32 factors shared by a group of elements (scale): what integer dot
/// products with quantized activations build on.
class QuantReader {
public:
  QuantReader(NestBuilder &nb, Type element, Value w, unsigned numIters,
              unsigned rowPos, AffineExpr kIdx)
      : QuantReader(nb, element, w, numIters, rowPos,
                    kIdx.floorDiv(quantBlockElements(element)),
                    kIdx % quantBlockElements(element)) {}

  /// The same with k given as its block and its position in the block
  /// (`within` < the block's element count): simpler maps when a nest
  /// iterates over blocks.
  QuantReader(NestBuilder &nb, Type element, Value w, unsigned numIters,
              unsigned rowPos, AffineExpr blockIdx, AffineExpr within)
      : nb(nb), w(w),
        kMap(nb.map(numIters,
                    {blockIdx * quantBlockElements(element) + within})) {
    int64_t blockBytes = quantBlockBytes(element);
    q4 = llvm::isa<Q4_0Type>(element);
    q6k = llvm::isa<Q6_KType>(element);
    q4k = llvm::isa<Q4_KType>(element);
    AffineExpr nIdx = nb.d(rowPos);
    AffineExpr blockStart = blockIdx * blockBytes;
    // Where the f16 scale d sits in the block.
    int64_t dAt = q6k ? 208 : 0;
    loMap = nb.map(numIters, {nIdx, blockStart + dAt});
    hiMap = nb.map(numIters, {nIdx, blockStart + dAt + 1});
    // Q8_0: one int8 per element after d. Q4_0: byte k%16 holds element
    // k%32 < 16 in its low nibble and the one 16 later in its high nibble.
    // Q6_K (ggml's dequantize_row_q6_K): in half h = (k%256)/128, quarter
    // g = (k%128)/32 and lane l = k%32, the low 4 bits come from
    // ql[64h + 32(g%2) + l] (nibble g/2), the high 2 bits from
    // qh[32h + l] (bits 2g), the int8 sub-scale from
    // scales[8h + l/16 + 2g].
    AffineExpr half = within.floorDiv(128);
    AffineExpr quarter = (within % 128).floorDiv(32);
    AffineExpr lane = within % 32;
    // Q4_K (ggml's dequantize_row_q4_K): sub-block j = (k%256)/32 uses
    // byte qs[32(j/2) + l] (low nibble for even j), with the 6-bit scale
    // and min of j packed in scales[j%4], scales[j%4+4], scales[j%4+8].
    AffineExpr sub = within.floorDiv(32);
    qMap = nb.map(
        numIters, {nIdx, q6k   ? blockStart + half * 64 + (quarter % 2) * 32 + lane
                  : q4k ? blockStart + 16 + sub.floorDiv(2) * 32 + lane
                  : q4  ? blockStart + 2 + within % 16
                        : blockStart + 2 + within});
    minLoMap = nb.map(numIters, {nIdx, blockStart + 2});
    minHiMap = nb.map(numIters, {nIdx, blockStart + 3});
    sAMap = nb.map(numIters, {nIdx, blockStart + 4 + sub % 4});
    sBMap = nb.map(numIters, {nIdx, blockStart + 8 + sub % 4});
    sCMap = nb.map(numIters, {nIdx, blockStart + 12 + sub % 4});
    qhMap = nb.map(numIters, {nIdx, blockStart + 128 + half * 32 + lane});
    scMap = nb.map(
        numIters, {nIdx, blockStart + 192 + half * 8 + lane.floorDiv(16) + quarter * 2});
    scaleList.push_back({w, loMap});
    scaleList.push_back({w, hiMap});
    if (q6k)
      scaleList.push_back({w, scMap});
    if (q4k)
      for (AffineMap m : {minLoMap, minHiMap, sAMap, sBMap, sCMap})
        scaleList.push_back({w, m});
    intList.push_back({w, qMap});
    if (q6k)
      intList.push_back({w, qhMap});
    superList.push_back({w, loMap});
    superList.push_back({w, hiMap});
    if (q4k) {
      superList.push_back({w, minLoMap});
      superList.push_back({w, minHiMap});
    }
    if (q6k)
      subScaleList.push_back({w, scMap});
    if (q4k)
      for (AffineMap m : {sAMap, sBMap, sCMap})
        subScaleList.push_back({w, m});
    for (AffineMap m : {loMap, hiMap, qMap})
      list.push_back({w, m});
    if (q6k)
      for (AffineMap m : {qhMap, scMap})
        list.push_back({w, m});
    if (q4k)
      for (AffineMap m : {minLoMap, minHiMap, sAMap, sBMap, sCMap})
        list.push_back({w, m});
  }

  /// The regions a block reading whole elements (value) declares.
  ArrayRef<Access> accesses() const { return list; }
  /// The regions intValue reads.
  ArrayRef<Access> intAccesses() const { return intList; }
  /// The regions scale reads.
  ArrayRef<Access> scaleAccesses() const { return scaleList; }
  /// The regions subScale reads (Q4_K, Q6_K).
  ArrayRef<Access> subScaleAccesses() const { return subScaleList; }
  /// The regions superScales reads: d (and dmin) of the super-block.
  ArrayRef<Access> superScaleAccesses() const { return superList; }

  /// The integer of the element at the block instance `it`, as i32, with
  /// the block's offset applied: Q8_0 as stored, Q4_0 nibble - 8, Q4_K the
  /// unsigned nibble (its offset is the separate min), Q6_K q - 32.
  Value intValue(ImplicitLocOpBuilder &b, ValueRange it) {
    return arith::ExtSIOp::create(b, b.getI32Type(), int8Value(b, it));
  }

  /// intValue as the i8 it fits in; `withOffset = false` leaves Q6_K's
  /// values unsigned (0..63), as ggml's integer kernels use them.
  Value int8Value(ImplicitLocOpBuilder &b, ValueRange it,
                  bool withOffset = true) {
    Type i8 = b.getI8Type();
    Value byte = nb.load(w, qMap, it);
    Value k = kValue(b, it);
    // An i8 shift amount computed from k: ((k % m) / dv) * mul.
    auto shiftOf = [&](int64_t m, int64_t dv, int64_t mul) -> Value {
      Value v = arith::DivUIOp::create(
          b, arith::RemUIOp::create(b, k, nb.index(m)), nb.index(dv));
      v = arith::MulIOp::create(b, v, nb.index(mul));
      return arith::IndexCastUIOp::create(b, i8, v);
    };
    Value q = byte;
    if (q4k) {
      // Low nibble for even sub-blocks, high for odd: shift ((k%64)/32)*4.
      q = arith::AndIOp::create(
          b, arith::ShRUIOp::create(b, byte, shiftOf(64, 32, 4)), c8(b, 15));
    } else if (q6k) {
      // (low nibble g/2 of ql) | (bits 2g of qh) << 4, minus 32.
      Value low = arith::AndIOp::create(
          b, arith::ShRUIOp::create(b, byte, shiftOf(128, 64, 4)), c8(b, 15));
      Value qh = nb.load(w, qhMap, it);
      Value high = arith::AndIOp::create(
          b, arith::ShRUIOp::create(b, qh, shiftOf(128, 32, 2)), c8(b, 3));
      q = arith::OrIOp::create(b, low, arith::ShLIOp::create(b, high, c8(b, 4)));
      if (withOffset)
        q = arith::SubIOp::create(b, q, c8(b, 32));
    } else if (q4) {
      // (byte >> ((k % 32) / 16 * 4)) & 15, minus 8.
      Value nib = arith::AndIOp::create(
          b, arith::ShRUIOp::create(b, byte, shiftOf(32, 16, 4)), c8(b, 15));
      q = arith::SubIOp::create(b, nib, c8(b, 8));
    }
    return q;
  }

  /// The f32 factors of the element's group: value = mul * q - sub. `sub`
  /// is null except for Q4_K (dmin * m of the 32-wide sub-block). Q6_K's
  /// `mul` is d times the int8 scale of its 16-wide group; Q8_0/Q4_0's and
  /// Q4_K's are per 32 elements.
  std::pair<Value, Value> scale(ImplicitLocOpBuilder &b, ValueRange it) {
    Type f32 = b.getF32Type();
    Value d = loadHalf(b, it, loMap, hiMap);
    if (q6k) {
      Value sc = arith::SIToFPOp::create(b, f32, nb.load(w, scMap, it));
      return {arith::MulFOp::create(b, d, sc), Value()};
    }
    if (!q4k)
      return {d, Value()};
    auto [sc, m] = subScale(b, it);
    Value dmin = loadHalf(b, it, minLoMap, minHiMap);
    return {arith::MulFOp::create(b, d, arith::UIToFPOp::create(b, f32, sc)),
            arith::MulFOp::create(b, dmin, arith::UIToFPOp::create(b, f32, m))};
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
    Value c63 = c8(b, 63), c15 = c8(b, 15), c4 = c8(b, 4), c6 = c8(b, 6);
    Value scLow = arith::AndIOp::create(b, a, c63);
    Value mLow = arith::AndIOp::create(b, bb, c63);
    Value scHigh = arith::OrIOp::create(
        b, arith::AndIOp::create(b, c, c15),
        arith::ShLIOp::create(b, arith::ShRUIOp::create(b, a, c6), c4));
    Value mHigh = arith::OrIOp::create(
        b, arith::ShRUIOp::create(b, c, c4),
        arith::ShLIOp::create(b, arith::ShRUIOp::create(b, bb, c6), c4));
    Value j = arith::DivUIOp::create(
        b, arith::RemUIOp::create(b, kValue(b, it), nb.index(256)),
        nb.index(32));
    Value upper =
        arith::CmpIOp::create(b, arith::CmpIPredicate::uge, j, nb.index(4));
    Value sc = arith::SelectOp::create(b, upper, scHigh, scLow);
    Value m = arith::SelectOp::create(b, upper, mHigh, mLow);
    return {arith::ExtUIOp::create(b, i32, sc), arith::ExtUIOp::create(b, i32, m)};
  }

  /// The super-block's f16 scales as f32: d, and dmin for Q4_K (else null).
  std::pair<Value, Value> superScales(ImplicitLocOpBuilder &b, ValueRange it) {
    Value d = loadHalf(b, it, loMap, hiMap);
    return {d, q4k ? loadHalf(b, it, minLoMap, minHiMap) : Value()};
  }

  /// The element at the block instance `it`, as f32.
  Value value(ImplicitLocOpBuilder &b, ValueRange it) {
    auto [mul, sub] = scale(b, it);
    Value q = arith::SIToFPOp::create(b, b.getF32Type(), int8Value(b, it));
    Value v = arith::MulFOp::create(b, mul, q);
    return sub ? arith::SubFOp::create(b, v, sub).getResult() : v;
  }

private:
  Value c8(ImplicitLocOpBuilder &b, int64_t v) {
    return arith::ConstantOp::create(b, b.getI8IntegerAttr(v)).getResult();
  }
  /// k at the block instance `it`.
  Value kValue(ImplicitLocOpBuilder &b, ValueRange it) {
    if (auto dim = llvm::dyn_cast<AffineDimExpr>(kMap.getResult(0)))
      return it[dim.getPosition()];
    return affine::AffineApplyOp::create(b, kMap, it);
  }
  /// An f16 stored little-endian at two byte positions, as f32.
  Value loadHalf(ImplicitLocOpBuilder &b, ValueRange it, AffineMap loM,
                 AffineMap hiM) {
    Type i16 = b.getI16Type();
    Value lo = arith::ExtUIOp::create(b, i16, nb.load(w, loM, it));
    Value hi = arith::ExtUIOp::create(b, i16, nb.load(w, hiM, it));
    Value bits = arith::OrIOp::create(
        b, lo,
        arith::ShLIOp::create(
            b, hi, arith::ConstantOp::create(b, b.getI16IntegerAttr(8))));
    Value h = arith::BitcastOp::create(b, b.getF16Type(), bits);
    return arith::ExtFOp::create(b, b.getF32Type(), h);
  }

  NestBuilder &nb;
  Value w;
  AffineMap kMap;
  bool q4 = false, q6k = false, q4k = false;
  AffineMap loMap, hiMap, qMap, qhMap, scMap, minLoMap, minHiMap, sAMap, sBMap,
      sCMap;
  SmallVector<Access> list, intList, scaleList, subScaleList, superList;
};

} // namespace llmc::graph_to_tl

#endif // LLMC_LIB_CONVERSION_GRAPHTOTL_QUANTREADER_H
