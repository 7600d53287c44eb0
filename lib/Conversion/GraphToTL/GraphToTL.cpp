//===- GraphToTL.cpp - lower graph tensor ops to tl loop nests ------------===//
//
// Each graph op becomes: one result buffer allocated at the top level of the
// function, and one or more tl.for nests around tl.blocks that fill it. The
// blocks' regions are affine maps over their iteration variables, which is
// what later schedule primitives reason about.
//
//===----------------------------------------------------------------------===//
#include "Conversion/GraphToTL/GraphToTL.h"
#include "Dialect/Graph/IR/Graph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Transforms/DialectConversion.h"

namespace llmc {
#define GEN_PASS_DEF_CONVERTGRAPHTOTL
#include "Conversion/Passes.h.inc"
} // namespace llmc

using namespace mlir;
using namespace llmc;
using namespace llmc::graph;
using llmc::tl::IterKind;
using llmc::tl::LoopKind;

namespace {

//===----------------------------------------------------------------------===//
// Loop-nest building helpers
//===----------------------------------------------------------------------===//

/// One declared access of a block: a buffer and the element one instance
/// touches, as an affine map over the block's iteration variables.
struct Access {
  Value buffer;
  AffineMap map;
};

/// Builds tl loop nests and blocks at the builder's insertion point.
class NestBuilder {
public:
  NestBuilder(ImplicitLocOpBuilder &b) : b(b) {}

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  Value f32(double v) {
    return arith::ConstantOp::create(b, b.getF32FloatAttr(v));
  }

  /// Emits `tl.for %iv = 0 to ub step 1 kind(kind)` and calls `fn` inside.
  void loop(Value ub, LoopKind kind, function_ref<void(Value)> fn) {
    Value zero = index(0), one = index(1);
    auto forOp = tl::ForOp::create(b, zero, ub, one, kind);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(forOp.getBody()->getTerminator());
    fn(forOp.getInductionVar());
  }

  /// A perfect nest over `ubs`; the outermost loop gets `outerKind`.
  void nest(ArrayRef<Value> ubs, LoopKind outerKind,
            function_ref<void(ValueRange)> fn) {
    SmallVector<Value> ivs;
    std::function<void(unsigned)> rec = [&](unsigned depth) {
      if (depth == ubs.size())
        return fn(ivs);
      loop(ubs[depth], depth == 0 ? outerKind : LoopKind::serial,
           [&](Value iv) {
             ivs.push_back(iv);
             rec(depth + 1);
             ivs.pop_back();
           });
    };
    rec(0);
  }

  using BodyFn = function_ref<void(ImplicitLocOpBuilder &, ValueRange)>;

  /// Emits a tl.block. `body` (and `init`, when given) receive the builder
  /// and the iteration variables.
  void block(StringRef name, ValueRange iterValues, ArrayRef<IterKind> kinds,
             ArrayRef<Access> reads, ArrayRef<Access> writes, BodyFn body,
             BodyFn init = nullptr) {
    SmallVector<Value> readBufs, writeBufs;
    SmallVector<Attribute> readMaps, writeMaps, kindAttrs;
    for (const Access &a : reads) {
      readBufs.push_back(a.buffer);
      readMaps.push_back(AffineMapAttr::get(a.map));
    }
    bool reduction = llvm::is_contained(kinds, IterKind::reduce);
    for (const Access &a : writes) {
      writeBufs.push_back(a.buffer);
      writeMaps.push_back(AffineMapAttr::get(a.map));
      // A reduction reads back what it accumulates into.
      if (reduction) {
        readBufs.push_back(a.buffer);
        readMaps.push_back(AffineMapAttr::get(a.map));
      }
    }
    for (IterKind k : kinds)
      kindAttrs.push_back(tl::IterKindAttr::get(b.getContext(), k));
    auto op = tl::BlockOp::create(
        b, b.getStringAttr(name), iterValues, b.getArrayAttr(kindAttrs),
        readBufs, b.getArrayAttr(readMaps), writeBufs,
        b.getArrayAttr(writeMaps));
    auto fill = [&](Region &region, BodyFn fn) {
      Block *block = new Block();
      region.push_back(block);
      for (size_t i = 0; i < iterValues.size(); ++i)
        block->addArgument(b.getIndexType(), b.getLoc());
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(block);
      fn(b, block->getArguments());
      tl::YieldOp::create(b);
    };
    if (init)
      fill(op.getInit(), init);
    fill(op.getBody(), body);
  }

  /// The map `(d0 .. d{n-1}) -> (exprs)`.
  AffineMap map(unsigned numIters, ArrayRef<AffineExpr> exprs) {
    return AffineMap::get(numIters, 0, exprs, b.getContext());
  }
  AffineExpr d(unsigned i) { return b.getAffineDimExpr(i); }
  AffineExpr c(int64_t v) { return b.getAffineConstantExpr(v); }

  Value load(Value buffer, AffineMap map, ValueRange iters) {
    return affine::AffineLoadOp::create(b, buffer, map, iters);
  }
  void store(Value value, Value buffer, AffineMap map, ValueRange iters) {
    affine::AffineStoreOp::create(b, value, buffer, map, iters);
  }

  /// Allocates a buffer of `type` at the top of the function's current
  /// top-level position; dynamic sizes come from `dynSizes`.
  Value alloc(MemRefType type, ValueRange dynSizes) {
    return memref::AllocOp::create(b, type, dynSizes, /*alignment=*/
                                   b.getI64IntegerAttr(64));
  }

  /// The sizes of every dimension of `buffer` (constants or memref.dim).
  SmallVector<Value> sizes(Value buffer) {
    auto type = llvm::cast<MemRefType>(buffer.getType());
    SmallVector<Value> result;
    for (int64_t i = 0; i < type.getRank(); ++i)
      result.push_back(type.isDynamicDim(i)
                           ? memref::DimOp::create(b, buffer, i).getResult()
                           : index(type.getDimSize(i)));
    return result;
  }
  /// The dynamic sizes only, for an alloc shaped like `buffer`.
  SmallVector<Value> dynamicSizes(Value buffer) {
    auto type = llvm::cast<MemRefType>(buffer.getType());
    SmallVector<Value> result;
    for (int64_t i = 0; i < type.getRank(); ++i)
      if (type.isDynamicDim(i))
        result.push_back(memref::DimOp::create(b, buffer, i));
    return result;
  }

  ImplicitLocOpBuilder &b;
};

/// `v` widened to f32 (exactly) when it is an f16 or bf16 weight element.
static Value toF32(ImplicitLocOpBuilder &b, Value v) {
  if (v.getType().isF32())
    return v;
  return arith::ExtFOp::create(b, b.getF32Type(), v);
}

/// The identity map over the first `rank` of `numIters` variables, offset by
/// `first`: (d0..dn) -> (d_first, ..., d_{first+rank-1}).
static AffineMap dimsMap(NestBuilder &nb, unsigned numIters, unsigned first,
                         unsigned rank) {
  SmallVector<AffineExpr> exprs;
  for (unsigned i = 0; i < rank; ++i)
    exprs.push_back(nb.d(first + i));
  return nb.map(numIters, exprs);
}

template <typename OpTy>
struct GraphLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using Adaptor = typename OpConversionPattern<OpTy>::OpAdaptor;

  MemRefType resultType(OpTy op) const {
    return llvm::cast<MemRefType>(
        this->getTypeConverter()->convertType(op.getResult().getType()));
  }
};

//===----------------------------------------------------------------------===//
// graph.param
//===----------------------------------------------------------------------===//

struct ParamLowering : GraphLowering<ParamOp> {
  using GraphLowering::GraphLowering;
  LogicalResult
  matchAndRewrite(ParamOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    std::optional<int64_t> offset = op.getBlobOffset();
    if (!offset)
      return op.emitOpError("parameter '")
             << op.getName()
             << "' has no blob_offset; run graph-layout-weights first";
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value byteShift = arith::ConstantIndexOp::create(b, *offset);
    Value view = memref::ViewOp::create(b, resultType(op), adaptor.getWeights(),
                                        byteShift, ValueRange{});
    rewriter.replaceOp(op, view);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Quantized weights
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// graph.embedding
//===----------------------------------------------------------------------===//

struct EmbeddingLowering : GraphLowering<EmbeddingOp> {
  using GraphLowering::GraphLowering;
  LogicalResult
  matchAndRewrite(EmbeddingOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (op.getIds().getType().getRank() != 1)
      return rewriter.notifyMatchFailure(op, "only rank-1 ids are lowered");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    NestBuilder nb(b);
    Value ids = adaptor.getIds(), table = adaptor.getTable();
    SmallVector<Value> idSizes = nb.sizes(ids);
    Value out = nb.alloc(resultType(op), nb.dynamicSizes(ids));
    Type element = op.getTable().getType().getElementType();
    Value dim = nb.index(op.getTable().getType().getDimSize(1));
    std::optional<QuantReader> reader;
    SmallVector<Access> reads = {{table, nb.map(3, {nb.d(1), nb.d(2)})}};
    if (quantBlockBytes(element)) {
      reader.emplace(nb, element, table, 3, 1, nb.d(2));
      reads.assign(reader->accesses().begin(), reader->accesses().end());
    }
    // The gathered row is data dependent: load the id in the loop and bind
    // an iteration variable to it, so the block's regions stay affine.
    nb.loop(idSizes[0], LoopKind::parallel, [&](Value s) {
      Value id = memref::LoadOp::create(b, ids, s);
      Value row = arith::IndexCastOp::create(b, b.getIndexType(), id);
      nb.loop(dim, LoopKind::serial, [&](Value j) {
        nb.block("embedding", {s, row, j},
                 {IterKind::spatial, IterKind::spatial, IterKind::spatial},
                 reads, {{out, nb.map(3, {nb.d(0), nb.d(2)})}},
                 [&](ImplicitLocOpBuilder &b, ValueRange it) {
                   Value v =
                       reader ? reader->value(b, it)
                              : toF32(b, nb.load(table,
                                                 nb.map(3, {nb.d(1), nb.d(2)}),
                                                 it));
                   nb.store(v, out, nb.map(3, {nb.d(0), nb.d(2)}), it);
                 });
      });
    });
    rewriter.replaceOp(op, out);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// graph.rms_norm
//===----------------------------------------------------------------------===//

struct RMSNormLowering : GraphLowering<RMSNormOp> {
  using GraphLowering::GraphLowering;
  LogicalResult
  matchAndRewrite(RMSNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    NestBuilder nb(b);
    Value x = adaptor.getInput(), w = adaptor.getWeight();
    auto xType = llvm::cast<MemRefType>(x.getType());
    unsigned rank = xType.getRank(), lead = rank - 1;
    int64_t dim = xType.getShape().back();
    SmallVector<Value> sizes = nb.sizes(x);
    Value out = nb.alloc(resultType(op), nb.dynamicSizes(x));
    // Sum of squares per row, kept in a scratch buffer of the leading shape.
    // Like ggml's rms_norm, the f32 squares are summed in f64 and the mean
    // is rounded to f32 once: fewer rounding steps than an f32 sum.
    Type f64 = b.getF64Type(), f32 = b.getF32Type();
    auto ssType = MemRefType::get(xType.getShape().drop_back(), f64);
    SmallVector<Value> ssDyn;
    for (unsigned i = 0; i < lead; ++i)
      if (xType.isDynamicDim(i))
        ssDyn.push_back(sizes[i]);
    Value ss = nb.alloc(ssType, ssDyn);
    float eps = op.getEps().convertToFloat();

    unsigned n = rank; // lead spatial vars + one more (reduce or spatial)
    AffineMap xMap = dimsMap(nb, n, 0, rank);
    AffineMap rowMap = dimsMap(nb, n, 0, lead);
    AffineMap wMap = nb.map(n, {nb.d(lead)});
    SmallVector<IterKind> reduceKinds(lead, IterKind::spatial);
    reduceKinds.push_back(IterKind::reduce);
    SmallVector<IterKind> spatialKinds(rank, IterKind::spatial);

    nb.nest(sizes, LoopKind::parallel, [&](ValueRange ivs) {
      nb.block(
          "rms_norm_sumsq", ivs, reduceKinds, {{x, xMap}}, {{ss, rowMap}},
          [&](ImplicitLocOpBuilder &b, ValueRange it) {
            Value v = nb.load(x, xMap, it);
            Value acc = nb.load(ss, rowMap, it);
            Value sq = arith::ExtFOp::create(b, f64, arith::MulFOp::create(b, v, v).getResult());
            nb.store(arith::AddFOp::create(b, acc, sq), ss, rowMap, it);
          },
          [&](ImplicitLocOpBuilder &b, ValueRange it) {
            nb.store(arith::ConstantOp::create(b, b.getF64FloatAttr(0.0)), ss,
                     rowMap, it);
          });
    });
    nb.nest(sizes, LoopKind::parallel, [&](ValueRange ivs) {
      nb.block("rms_norm_scale", ivs, spatialKinds,
               {{x, xMap}, {ss, rowMap}, {w, wMap}}, {{out, xMap}},
               [&](ImplicitLocOpBuilder &b, ValueRange it) {
                 Value v = nb.load(x, xMap, it);
                 Value sum = nb.load(ss, rowMap, it);
                 Value g = nb.load(w, wMap, it);
                 Value mean = arith::TruncFOp::create(
                     b, f32,
                     arith::DivFOp::create(
                         b, sum,
                         arith::ConstantOp::create(b, b.getF64FloatAttr(dim))));
                 Value var = arith::AddFOp::create(b, mean, nb.f32(eps));
                 Value inv = arith::DivFOp::create(
                     b, nb.f32(1.0), math::SqrtOp::create(b, var));
                 Value y = arith::MulFOp::create(b, v, inv);
                 nb.store(arith::MulFOp::create(b, y, g), out, xMap, it);
               });
    });
    rewriter.replaceOp(op, out);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// graph.matmul
//===----------------------------------------------------------------------===//

/// The iteration-variable maps of a leading-dims-plus-extra nest: the first
/// `lead` variables are the activation's leading dimensions.
static AffineMap leadMap(NestBuilder &nb, unsigned numIters, unsigned lead,
                         ArrayRef<AffineExpr> rest) {
  SmallVector<AffineExpr> exprs;
  for (unsigned i = 0; i < lead; ++i)
    exprs.push_back(nb.d(i));
  llvm::append_range(exprs, rest);
  return nb.map(numIters, exprs);
}

/// A buffer shaped like the activation `x` with its last dimension replaced
/// by `last` elements of `element`.
static Value allocLike(NestBuilder &nb, Value x, int64_t last, Type element) {
  auto xType = llvm::cast<MemRefType>(x.getType());
  SmallVector<int64_t> shape(xType.getShape());
  shape.back() = last;
  SmallVector<Value> dyn;
  SmallVector<Value> sizes = nb.sizes(x);
  for (unsigned i = 0; i + 1 < shape.size(); ++i)
    if (xType.isDynamicDim(i))
      dyn.push_back(sizes[i]);
  return nb.alloc(MemRefType::get(shape, element), dyn);
}

/// `x` rounded to f16 or bf16 element by element (round to nearest even,
/// as ggml's fp32 -> fp16/bf16 conversions) and widened back to f32.
static Value roundActivations(NestBuilder &nb, Value x, Type act) {
  ImplicitLocOpBuilder &b = nb.b;
  auto xType = llvm::cast<MemRefType>(x.getType());
  unsigned rank = xType.getRank();
  Value out = allocLike(nb, x, xType.getShape().back(), b.getF32Type());
  AffineMap m = dimsMap(nb, rank, 0, rank);
  nb.nest(nb.sizes(x), LoopKind::parallel, [&](ValueRange ivs) {
    nb.block("act_round", ivs, SmallVector<IterKind>(rank, IterKind::spatial),
             {{x, m}}, {{out, m}}, [&](ImplicitLocOpBuilder &b, ValueRange it) {
               Value v = arith::TruncFOp::create(b, act, nb.load(x, m, it));
               nb.store(arith::ExtFOp::create(b, b.getF32Type(), v), out, m,
                        it);
             });
  });
  return out;
}

/// Activations quantized to 8-bit blocks like llama.cpp's
/// quantize_row_q8_0 / quantize_row_q8_K: per row, `values` [.., K] i8,
/// `scales` [.., K/block] f32 and, when asked for, `sums` [.., K/sumWidth]
/// i32 (sums of consecutive values: ggml's bsums for a width of 16).
struct QuantizedActivations {
  Value values, scales, sums;
  int64_t block;
};

static QuantizedActivations quantizeActivations(NestBuilder &nb, Value x,
                                                int64_t k, Type act,
                                                int64_t sumWidth) {
  ImplicitLocOpBuilder &b = nb.b;
  Type f32 = b.getF32Type(), i8 = b.getI8Type(), i32 = b.getI32Type();
  bool q8k = llvm::isa<Q8_KType>(act);
  int64_t block = q8k ? 256 : 32;
  unsigned lead = llvm::cast<MemRefType>(x.getType()).getRank() - 1;
  SmallVector<Value> leadSizes = nb.sizes(x);
  leadSizes.pop_back();
  auto withLead = [&](ArrayRef<Value> rest) {
    SmallVector<Value> ubs(leadSizes);
    llvm::append_range(ubs, rest);
    return ubs;
  };
  auto kinds = [&](ArrayRef<IterKind> rest) {
    SmallVector<IterKind> result(lead, IterKind::spatial);
    llvm::append_range(result, rest);
    return result;
  };
  QuantizedActivations qa;
  qa.block = block;
  // Per block the element of largest magnitude: its magnitude for Q8_0,
  // the signed value (first one on ties) for Q8_K.
  Value amax = allocLike(nb, x, k / block, f32);
  qa.scales = allocLike(nb, x, k / block, f32);
  qa.values = allocLike(nb, x, k, i8);
  {
    unsigned n = lead + 2;
    AffineMap xMap = leadMap(nb, n, lead, {nb.d(lead) * block + nb.d(lead + 1)});
    AffineMap aMap = leadMap(nb, n, lead, {nb.d(lead)});
    nb.nest(withLead({nb.index(k / block), nb.index(block)}),
            LoopKind::parallel, [&](ValueRange ivs) {
      nb.block(
          "act_absmax", ivs, kinds({IterKind::spatial, IterKind::reduce}),
          {{x, xMap}}, {{amax, aMap}},
          [&](ImplicitLocOpBuilder &b, ValueRange it) {
            Value v = nb.load(x, xMap, it), acc = nb.load(amax, aMap, it);
            Value mag = math::AbsFOp::create(b, v);
            Value r;
            if (q8k) {
              Value bigger = arith::CmpFOp::create(
                  b, arith::CmpFPredicate::OGT, mag,
                  math::AbsFOp::create(b, acc));
              r = arith::SelectOp::create(b, bigger, v, acc);
            } else {
              r = arith::MaximumFOp::create(b, acc, mag);
            }
            nb.store(r, amax, aMap, it);
          },
          [&](ImplicitLocOpBuilder &b, ValueRange it) {
            nb.store(nb.f32(0.0), amax, aMap, it);
          });
    });
  }
  // The multiplier from x to the integer grid: Q8_0 127/amax (0 for an
  // all-zero block), Q8_K -127/max.
  auto inverseScale = [&](ImplicitLocOpBuilder &b, Value m) -> Value {
    Value isZero =
        arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, m, nb.f32(0.0));
    Value inv = arith::DivFOp::create(b, nb.f32(q8k ? -127.0 : 127.0), m);
    return arith::SelectOp::create(b, isZero, nb.f32(0.0), inv);
  };
  {
    unsigned n = lead + 1;
    AffineMap aMap = leadMap(nb, n, lead, {nb.d(lead)});
    nb.nest(withLead({nb.index(k / block)}), LoopKind::parallel,
            [&](ValueRange ivs) {
      nb.block("act_scale", ivs, kinds({IterKind::spatial}), {{amax, aMap}},
               {{qa.scales, aMap}},
               [&](ImplicitLocOpBuilder &b, ValueRange it) {
                 Value m = nb.load(amax, aMap, it);
                 Value d;
                 if (q8k) {
                   // d = 1 / iscale, kept in f32.
                   Value inv = inverseScale(b, m);
                   Value isZero = arith::CmpFOp::create(
                       b, arith::CmpFPredicate::OEQ, inv, nb.f32(0.0));
                   d = arith::SelectOp::create(
                       b, isZero, nb.f32(0.0),
                       arith::DivFOp::create(b, nb.f32(1.0), inv));
                 } else {
                   // d = amax / 127, stored (and used) as f16.
                   d = arith::DivFOp::create(b, m, nb.f32(127.0));
                   d = arith::ExtFOp::create(
                       b, f32, arith::TruncFOp::create(b, b.getF16Type(), d).getResult());
                 }
                 nb.store(d, qa.scales, aMap, it);
               });
    });
  }
  {
    unsigned n = lead + 1;
    AffineMap xMap = dimsMap(nb, n, 0, n);
    AffineMap aMap = leadMap(nb, n, lead, {nb.d(lead).floorDiv(block)});
    nb.nest(withLead({nb.index(k)}), LoopKind::parallel, [&](ValueRange ivs) {
      nb.block("act_quant", ivs, kinds({IterKind::spatial}),
               {{x, xMap}, {amax, aMap}}, {{qa.values, xMap}},
               [&](ImplicitLocOpBuilder &b, ValueRange it) {
                 Value v = nb.load(x, xMap, it);
                 Value inv = inverseScale(b, nb.load(amax, aMap, it));
                 // Round half to even, as ggml's nearest_int and AVX2's
                 // _mm256_round_ps; Q8_K clamps to 127.
                 Value r = math::RoundEvenOp::create(
                     b, arith::MulFOp::create(b, inv, v));
                 if (q8k)
                   r = arith::MinimumFOp::create(b, r, nb.f32(127.0));
                 nb.store(arith::FPToSIOp::create(b, i8, r), qa.values, xMap,
                          it);
               });
    });
  }
  if (sumWidth) {
    qa.sums = allocLike(nb, x, k / sumWidth, i32);
    unsigned n = lead + 2;
    AffineMap qMap = leadMap(nb, n, lead, {nb.d(lead) * sumWidth + nb.d(lead + 1)});
    AffineMap sMap = leadMap(nb, n, lead, {nb.d(lead)});
    nb.nest(withLead({nb.index(k / sumWidth), nb.index(sumWidth)}), LoopKind::parallel,
            [&](ValueRange ivs) {
      nb.block(
          "act_sum", ivs, kinds({IterKind::spatial, IterKind::reduce}),
          {{qa.values, qMap}}, {{qa.sums, sMap}},
          [&](ImplicitLocOpBuilder &b, ValueRange it) {
            Value q = arith::ExtSIOp::create(b, i32, nb.load(qa.values, qMap, it));
            nb.store(arith::AddIOp::create(b, nb.load(qa.sums, sMap, it), q),
                     qa.sums, sMap, it);
          },
          [&](ImplicitLocOpBuilder &b, ValueRange it) {
            nb.store(arith::ConstantOp::create(b, b.getI32IntegerAttr(0)),
                     qa.sums, sMap, it);
          });
    });
  }
  return qa;
}

struct MatmulLowering : GraphLowering<MatmulOp> {
  using GraphLowering::GraphLowering;
  LogicalResult
  matchAndRewrite(MatmulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    NestBuilder nb(b);
    Value x = adaptor.getInput(), w = adaptor.getWeight();
    unsigned rank = llvm::cast<MemRefType>(x.getType()).getRank();
    unsigned lead = rank - 1;
    Type wElement = op.getWeight().getType().getElementType();
    int64_t inner = op.getWeight().getType().getShape().back();
    Type act = op.getActType() ? *op.getActType() : Type();
    if (act && llvm::isa<Q8_0Type, Q8_KType>(act)) {
      rewriter.replaceOp(op, lowerIntegerDot(nb, op, x, w, act));
      return success();
    }
    if (act)
      x = roundActivations(nb, x, act);
    SmallVector<Value> xSizes = nb.sizes(x), wSizes = nb.sizes(w);
    Value out = nb.alloc(resultType(op), nb.dynamicSizes(x));
    // Iteration space: leading dims, n (spatial), k (reduce).
    unsigned n = lead + 2;
    SmallVector<AffineExpr> xe, oe;
    for (unsigned i = 0; i < lead; ++i) {
      xe.push_back(nb.d(i));
      oe.push_back(nb.d(i));
    }
    xe.push_back(nb.d(lead + 1));
    oe.push_back(nb.d(lead));
    AffineMap xMap = nb.map(n, xe), outMap = nb.map(n, oe);
    AffineMap wMap = nb.map(n, {nb.d(lead), nb.d(lead + 1)});
    SmallVector<IterKind> kinds(lead + 1, IterKind::spatial);
    kinds.push_back(IterKind::reduce);
    int64_t blockBytes = quantBlockBytes(wElement);
    SmallVector<Value> ubs(xSizes.begin(), xSizes.end() - 1);
    ubs.push_back(wSizes[0]);
    ubs.push_back(blockBytes ? nb.index(inner) : wSizes[1]);
    if (blockBytes) {
      // Quantized weights are read as their blocks and decoded element by
      // element inside the product (QuantReader), never materialised.
      QuantReader reader(nb, wElement, w, n, lead, nb.d(lead + 1));
      SmallVector<Access> reads = {{x, xMap}};
      llvm::append_range(reads, reader.accesses());
      nb.nest(ubs, LoopKind::parallel, [&](ValueRange ivs) {
        nb.block(
            "matmul", ivs, kinds, reads, {{out, outMap}},
            [&](ImplicitLocOpBuilder &b, ValueRange it) {
              Value wv = reader.value(b, it);
              Value p = arith::MulFOp::create(b, nb.load(x, xMap, it), wv);
              Value acc = nb.load(out, outMap, it);
              nb.store(arith::AddFOp::create(b, acc, p), out, outMap, it);
            },
            [&](ImplicitLocOpBuilder &b, ValueRange it) {
              nb.store(nb.f32(0.0), out, outMap, it);
            });
      });
      rewriter.replaceOp(op, out);
      return success();
    }
    nb.nest(ubs, LoopKind::parallel, [&](ValueRange ivs) {
      nb.block(
          "matmul", ivs, kinds, {{x, xMap}, {w, wMap}}, {{out, outMap}},
          [&](ImplicitLocOpBuilder &b, ValueRange it) {
            Value a = nb.load(x, xMap, it);
            Value c = toF32(b, nb.load(w, wMap, it));
            Value acc = nb.load(out, outMap, it);
            Value p = arith::MulFOp::create(b, a, c);
            nb.store(arith::AddFOp::create(b, acc, p), out, outMap, it);
          },
          [&](ImplicitLocOpBuilder &b, ValueRange it) {
            nb.store(nb.f32(0.0), out, outMap, it);
          });
    });
    rewriter.replaceOp(op, out);
    return success();
  }

  /// The llama.cpp-style product with 8-bit activations. The integer dot
  /// products are exact; the f32 steps around them follow the kernels
  /// ggml's CPU backend runs on x86 for each weight type, so that the
  /// result matches llama.cpp's to the bit:
  /// - Q4_0 and Q4_K with a multiple of 8 rows are repacked by ggml
  ///   (block_q4_0x8 / block_q4_Kx8): one FMA chain per output (repackChain);
  /// - Q8_0, Q6_K (and unrepacked Q4_0) use ggml_vec_dot_*: eight lanes of
  ///   four consecutive elements per block, summed at the end (laneDot).
  Value lowerIntegerDot(NestBuilder &nb, MatmulOp op, Value x, Value w,
                        Type act) const {
    Type wElement = op.getWeight().getType().getElementType();
    int64_t k = op.getWeight().getType().getShape().back();
    int64_t rows = op.getWeight().getType().getShape().front();
    bool q4k = llvm::isa<Q4_KType>(wElement);
    bool q6k = llvm::isa<Q6_KType>(wElement);
    QuantizedActivations qa =
        quantizeActivations(nb, x, k, act, q6k ? 16 : 0);
    Value out = nb.alloc(resultType(op), nb.dynamicSizes(x));
    bool repacked = llvm::isa<Q4_0Type, Q4_KType>(wElement) && rows % 8 == 0;
    if (repacked || q4k)
      repackChain(nb, op, x, w, qa, out);
    else
      laneDot(nb, op, x, w, qa, out);
    return out;
  }

  /// A one-element scratch buffer (memref<1xT>): per-output state that is
  /// consumed within the iteration of the output that produced it.
  static Value scratch(NestBuilder &nb, Type element) {
    return nb.alloc(MemRefType::get({1}, element), {});
  }

  /// ggml's repacked kernels (ggml_gemv/gemm_q4_0_8x8_q8_0,
  /// ggml_gemv/gemm_q4_K_8x8_q8_K). Q4_0: per 32-block
  /// `acc = fma(isum, d_w * d_a, acc)`. Q4_K: integer sums of
  /// `scale * w * a` and `min * asum32` per 64 elements; prompt rows in full
  /// groups of four (gemm) take one FMA step per 64 elements, the others
  /// (gemv) one per 256-element super-block; result `acc - acc_min`.
  void repackChain(NestBuilder &nb, MatmulOp op, Value x, Value w,
                   const QuantizedActivations &qa, Value out) const {
    ImplicitLocOpBuilder &b = nb.b;
    Type wElement = op.getWeight().getType().getElementType();
    int64_t k = op.getWeight().getType().getShape().back();
    int64_t rows = op.getWeight().getType().getShape().front();
    unsigned lead = llvm::cast<MemRefType>(x.getType()).getRank() - 1;
    bool q4k = llvm::isa<Q4_KType>(wElement);
    Type i32 = b.getI32Type(), f32 = b.getF32Type();
    // Iteration: (lead..., n, blk, c, i) with element c * group + i of
    // block blk; Q4_0: 32-blocks, c = 0; Q4_K: 256-blocks of 4 groups of 64.
    int64_t group = q4k ? 64 : 32, block = q4k ? 256 : 32;
    SmallVector<Value> ubs = nb.sizes(x);
    Value seq = ubs.front();
    ubs.pop_back();
    ubs.push_back(nb.index(rows));
    ubs.push_back(nb.index(k / block));
    ubs.push_back(nb.index(block / group));
    Value isum = scratch(nb, i32), msum;
    Value acc = scratch(nb, f32), accMin, isb, msb;
    if (q4k) {
      msum = scratch(nb, i32);
      accMin = scratch(nb, f32);
      isb = scratch(nb, i32);
      msb = scratch(nb, i32);
    }
    unsigned nDot = lead + 4, nScale = lead + 3;
    AffineExpr blk = nb.d(lead + 1), c = nb.d(lead + 2);
    AffineExpr within = c * group + nb.d(lead + 3);
    AffineMap aDot = leadMap(nb, nDot, lead, {blk * block + within});
    AffineMap one = nb.map(nDot, {nb.c(0)}), oneS = nb.map(nScale, {nb.c(0)});
    QuantReader dotReader(nb, wElement, w, nDot, lead, blk, within);
    SmallVector<Access> dotReads = {{qa.values, aDot}};
    llvm::append_range(dotReads, dotReader.intAccesses());
    llvm::append_range(dotReads, dotReader.subScaleAccesses());
    SmallVector<Access> dotWrites = {{isum, one}};
    if (q4k)
      dotWrites.push_back({msum, one});
    SmallVector<IterKind> dotKinds(lead + 3, IterKind::spatial);
    dotKinds.push_back(IterKind::reduce);
    AffineMap aScale = leadMap(nb, nScale, lead, {(blk * block).floorDiv(qa.block)});
    QuantReader scaleReader(nb, wElement, w, nScale, lead, blk, c * group);
    SmallVector<Access> scaleReads = {{isum, oneS}, {qa.scales, aScale}};
    llvm::append_range(scaleReads, scaleReader.superScaleAccesses());
    AffineMap outMap = leadMap(nb, nScale, lead, {nb.d(lead)});
    SmallVector<Access> scaleWrites = {{out, outMap}, {acc, oneS}};
    if (q4k) {
      scaleReads.push_back({msum, oneS});
      for (Value v : {accMin, isb, msb})
        scaleWrites.push_back({v, oneS});
    }
    SmallVector<IterKind> scaleKinds(lead + 1, IterKind::spatial);
    scaleKinds.append({IterKind::reduce, IterKind::reduce});
    Value zero32 = arith::ConstantOp::create(b, b.getI32IntegerAttr(0));

    nb.nest(ubs, LoopKind::parallel, [&](ValueRange ivs) {
      // The block and group variables are spatial for the dot product:
      // each group's sums start from zero (init) and are consumed by
      // matmul_iscale in the same iteration.
      nb.loop(nb.index(group), LoopKind::serial, [&](Value i) {
        SmallVector<Value> dotIvs(ivs);
        dotIvs.push_back(i);
        nb.block(
            "matmul_idot", dotIvs, dotKinds, dotReads, dotWrites,
            [&](ImplicitLocOpBuilder &b, ValueRange it) {
              Value a = arith::ExtSIOp::create(b, i32, nb.load(qa.values, aDot, it));
              Value p = arith::MulIOp::create(b, a, dotReader.intValue(b, it));
              if (q4k) {
                auto [sc, m] = dotReader.subScale(b, it);
                p = arith::MulIOp::create(b, p, sc);
                Value pm = arith::MulIOp::create(b, a, m);
                nb.store(arith::AddIOp::create(b, nb.load(msum, one, it), pm),
                         msum, one, it);
              }
              nb.store(arith::AddIOp::create(b, nb.load(isum, one, it), p),
                       isum, one, it);
            },
            [&](ImplicitLocOpBuilder &b, ValueRange it) {
              nb.store(zero32, isum, one, it);
              if (q4k)
                nb.store(zero32, msum, one, it);
            });
      });
      nb.block(
          "matmul_iscale", ivs, scaleKinds, scaleReads, scaleWrites,
          [&](ImplicitLocOpBuilder &b, ValueRange it) {
            auto [d, dmin] = scaleReader.superScales(b, it);
            Value ad = nb.load(qa.scales, aScale, it);
            Value s = nb.load(isum, oneS, it);
            Value dd = arith::MulFOp::create(b, d, ad);
            Value prev = nb.load(acc, oneS, it);
            if (!q4k) {
              Value next = math::FmaOp::create(
                  b, arith::SIToFPOp::create(b, f32, s), dd, prev);
              nb.store(next, acc, oneS, it);
              nb.store(next, out, outMap, it);
              return;
            }
            Value ms = nb.load(msum, oneS, it);
            Value dm = arith::MulFOp::create(b, dmin, ad);
            Value prevMin = nb.load(accMin, oneS, it);
            // gemm rows: the first seq - seq % 4 rows when seq > 3.
            Value full = arith::SubIOp::create(
                b, seq, arith::RemUIOp::create(b, seq, nb.index(4)));
            Value gemm = arith::AndIOp::create(
                b,
                arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, seq,
                                      nb.index(3)),
                arith::CmpIOp::create(b, arith::CmpIPredicate::ult, it[0], full));
            // gemv rows: integer sums over the super-block, one FMA step
            // at its last group.
            Value cv = it[lead + 2];
            Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, cv,
                                                nb.index(0));
            Value last = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, cv,
                                               nb.index(block / group - 1));
            Value sb = arith::AddIOp::create(
                b, arith::SelectOp::create(b, first, zero32, nb.load(isb, oneS, it)), s);
            Value mb = arith::AddIOp::create(
                b, arith::SelectOp::create(b, first, zero32, nb.load(msb, oneS, it)), ms);
            nb.store(sb, isb, oneS, it);
            nb.store(mb, msb, oneS, it);
            Value step = arith::OrIOp::create(b, gemm, last);
            Value iv = arith::SelectOp::create(b, gemm, s, sb);
            Value mv = arith::SelectOp::create(b, gemm, ms, mb);
            Value nextAcc = math::FmaOp::create(
                b, arith::SIToFPOp::create(b, f32, iv), dd, prev);
            Value nextMin = math::FmaOp::create(
                b, arith::SIToFPOp::create(b, f32, mv), dm, prevMin);
            nextAcc = arith::SelectOp::create(b, step, nextAcc, prev);
            nextMin = arith::SelectOp::create(b, step, nextMin, prevMin);
            nb.store(nextAcc, acc, oneS, it);
            nb.store(nextMin, accMin, oneS, it);
            nb.store(arith::SubFOp::create(b, nextAcc, nextMin), out, outMap, it);
          },
          [&](ImplicitLocOpBuilder &b, ValueRange it) {
            nb.store(nb.f32(0.0), acc, oneS, it);
            if (q4k)
              nb.store(nb.f32(0.0), accMin, oneS, it);
          });
    });
  }

  /// ggml_vec_dot_q8_0_q8_0 / _q4_0_q8_0 / _q6_K_q8_K (x86): per block d =
  /// d_w * d_a and eight int32 lanes, lane l summing elements 4l..4l+3 of
  /// each 32-element run of the block (Q6_K: `scale * q` with q in 0..63,
  /// minus 32 * (scale * asum16) of two 16-groups per lane);
  /// `acc_l = fma(d, lane_l, acc_l)`, then
  /// ((acc0+acc4)+(acc2+acc6)) + ((acc1+acc5)+(acc3+acc7)).
  void laneDot(NestBuilder &nb, MatmulOp op, Value x, Value w,
               const QuantizedActivations &qa, Value out) const {
    ImplicitLocOpBuilder &b = nb.b;
    Type wElement = op.getWeight().getType().getElementType();
    int64_t k = op.getWeight().getType().getShape().back();
    int64_t rows = op.getWeight().getType().getShape().front();
    unsigned lead = llvm::cast<MemRefType>(x.getType()).getRank() - 1;
    bool q6k = llvm::isa<Q6_KType>(wElement);
    Type i32 = b.getI32Type(), f32 = b.getF32Type();
    int64_t block = q6k ? 256 : 32;
    SmallVector<Value> ubs = nb.sizes(x);
    ubs.pop_back();
    ubs.push_back(nb.index(rows));
    Value isum = scratch(nb, i32);
    Value lanes = nb.alloc(MemRefType::get({8}, f32), {});
    // (lead..., n, blk, l, [half, run,] i): column
    // blk * block [+ 128 half + 32 run] + 4 l + i.
    unsigned nScale = lead + 3;
    unsigned nDot = nScale + (q6k ? 3 : 1);
    AffineExpr blk = nb.d(lead + 1), l = nb.d(lead + 2);
    AffineExpr within = q6k ? nb.d(lead + 3) * 128 + nb.d(lead + 4) * 32 +
                                  l * 4 + nb.d(lead + 5)
                            : l * 4 + nb.d(lead + 3);
    AffineMap aDot = leadMap(nb, nDot, lead, {blk * block + within});
    AffineMap one = nb.map(nDot, {nb.c(0)}), oneS = nb.map(nScale, {nb.c(0)});
    QuantReader dotReader(nb, wElement, w, nDot, lead, blk, within);
    SmallVector<Access> dotReads = {{qa.values, aDot}};
    llvm::append_range(dotReads, dotReader.intAccesses());
    llvm::append_range(dotReads, dotReader.subScaleAccesses());
    SmallVector<IterKind> dotKinds(lead + 3, IterKind::spatial);
    dotKinds.append(nDot - nScale, IterKind::reduce);
    // (lead..., n, blk, l): the lane's f32 step.
    AffineMap aScale = leadMap(nb, nScale, lead, {(blk * block).floorDiv(qa.block)});
    AffineMap laneMap = nb.map(nScale, {l});
    QuantReader scaleReader(nb, wElement, w, nScale, lead, blk, nb.c(0));
    // Q6_K: the int8 scales (bytes 192 + s of the super-block) and the
    // activation sums of the 16-groups s = 2l and 2l+1.
    AffineMap sc0 = nb.map(nScale, {nb.d(lead), blk * 210 + 192 + l * 2});
    AffineMap sc1 = nb.map(nScale, {nb.d(lead), blk * 210 + 193 + l * 2});
    AffineMap sum0 = leadMap(nb, nScale, lead, {blk * 16 + l * 2});
    AffineMap sum1 = leadMap(nb, nScale, lead, {blk * 16 + l * 2 + 1});
    SmallVector<Access> scaleReads = {{isum, oneS}, {qa.scales, aScale}};
    llvm::append_range(scaleReads, scaleReader.superScaleAccesses());
    if (q6k) {
      scaleReads.push_back({w, sc0});
      scaleReads.push_back({w, sc1});
      scaleReads.push_back({qa.sums, sum0});
      scaleReads.push_back({qa.sums, sum1});
    }
    SmallVector<IterKind> scaleKinds(lead + 1, IterKind::spatial);
    scaleKinds.push_back(IterKind::reduce);
    scaleKinds.push_back(IterKind::spatial);

    nb.nest(ubs, LoopKind::parallel, [&](ValueRange outer) {
      nb.loop(nb.index(k / block), LoopKind::serial, [&](Value vb) {
        nb.loop(nb.index(8), LoopKind::serial, [&](Value vl) {
          SmallVector<Value> scaleIvs(outer);
          scaleIvs.push_back(vb);
          scaleIvs.push_back(vl);
          SmallVector<Value> inner = q6k ? SmallVector<Value>{nb.index(2), nb.index(4), nb.index(4)}
                                         : SmallVector<Value>{nb.index(4)};
          nb.nest(inner, LoopKind::serial, [&](ValueRange red) {
            SmallVector<Value> dotIvs(scaleIvs);
            llvm::append_range(dotIvs, red);
            nb.block(
                "matmul_idot", dotIvs, dotKinds, dotReads, {{isum, one}},
                [&](ImplicitLocOpBuilder &b, ValueRange it) {
                  Value a = arith::ExtSIOp::create(b, i32, nb.load(qa.values, aDot, it));
                  Value q = arith::ExtSIOp::create(
                      b, i32, dotReader.int8Value(b, it, /*withOffset=*/!q6k));
                  if (q6k)
                    q = arith::MulIOp::create(b, q, dotReader.subScale(b, it).first);
                  Value p = arith::MulIOp::create(b, a, q);
                  nb.store(arith::AddIOp::create(b, nb.load(isum, one, it), p),
                           isum, one, it);
                },
                [&](ImplicitLocOpBuilder &b, ValueRange it) {
                  nb.store(arith::ConstantOp::create(b, b.getI32IntegerAttr(0)),
                           isum, one, it);
                });
          });
          nb.block(
              "matmul_iscale", scaleIvs, scaleKinds, scaleReads, {{lanes, laneMap}},
              [&](ImplicitLocOpBuilder &b, ValueRange it) {
                Value d = scaleReader.superScales(b, it).first;
                Value ad = nb.load(qa.scales, aScale, it);
                Value lane = nb.load(isum, oneS, it);
                if (q6k) {
                  Value sub = arith::AddIOp::create(
                      b,
                      arith::MulIOp::create(
                          b, arith::ExtSIOp::create(b, i32, nb.load(w, sc0, it)),
                          nb.load(qa.sums, sum0, it)),
                      arith::MulIOp::create(
                          b, arith::ExtSIOp::create(b, i32, nb.load(w, sc1, it)),
                          nb.load(qa.sums, sum1, it)));
                  sub = arith::ShLIOp::create(
                      b, sub, arith::ConstantOp::create(b, b.getI32IntegerAttr(5)));
                  lane = arith::SubIOp::create(b, lane, sub);
                }
                Value dd = q6k ? arith::MulFOp::create(b, ad, d)
                               : arith::MulFOp::create(b, d, ad);
                Value next = math::FmaOp::create(
                    b, dd, arith::SIToFPOp::create(b, f32, lane),
                    nb.load(lanes, laneMap, it));
                nb.store(next, lanes, laneMap, it);
              },
              [&](ImplicitLocOpBuilder &b, ValueRange it) {
                nb.store(nb.f32(0.0), lanes, laneMap, it);
              });
        });
      });
      // hsum_float_8.
      unsigned nOut = lead + 1;
      SmallVector<Access> reads;
      SmallVector<AffineMap> laneAt;
      for (int64_t i = 0; i < 8; ++i) {
        laneAt.push_back(nb.map(nOut, {nb.c(i)}));
        reads.push_back({lanes, laneAt.back()});
      }
      AffineMap outMap = leadMap(nb, nOut, lead, {nb.d(lead)});
      nb.block("matmul_hsum", outer, SmallVector<IterKind>(nOut, IterKind::spatial),
               reads, {{out, outMap}}, [&](ImplicitLocOpBuilder &b, ValueRange it) {
                 auto at = [&](int i) { return nb.load(lanes, laneAt[i], it); };
                 auto add = [&](Value p, Value q) {
                   return arith::AddFOp::create(b, p, q).getResult();
                 };
                 Value r0 = add(add(at(4), at(0)), add(at(6), at(2)));
                 Value r1 = add(add(at(5), at(1)), add(at(7), at(3)));
                 nb.store(add(r0, r1), out, outMap, it);
               });
    });
  }
};

//===----------------------------------------------------------------------===//
// Elementwise: graph.add, graph.mul, graph.silu
//===----------------------------------------------------------------------===//

/// Lowers `op` computing `fn(lhs[...], rhs[trailing...])` (rhs may be null).
static Value lowerElementwise(
    ImplicitLocOpBuilder &b, StringRef name, MemRefType resultType, Value lhs,
    Value rhs,
    function_ref<Value(ImplicitLocOpBuilder &, Value, Value)> fn) {
  NestBuilder nb(b);
  unsigned rank = resultType.getRank();
  SmallVector<Value> sizes = nb.sizes(lhs);
  Value out = nb.alloc(resultType, nb.dynamicSizes(lhs));
  AffineMap full = dimsMap(nb, rank, 0, rank);
  SmallVector<Access> reads = {{lhs, full}};
  AffineMap rhsMap;
  if (rhs) {
    unsigned rr = llvm::cast<MemRefType>(rhs.getType()).getRank();
    rhsMap = dimsMap(nb, rank, rank - rr, rr);
    reads.push_back({rhs, rhsMap});
  }
  SmallVector<IterKind> kinds(rank, IterKind::spatial);
  nb.nest(sizes, LoopKind::parallel, [&](ValueRange ivs) {
    nb.block(name, ivs, kinds, reads, {{out, full}},
             [&](ImplicitLocOpBuilder &b, ValueRange it) {
               Value a = nb.load(lhs, full, it);
               Value c = rhs ? nb.load(rhs, rhsMap, it) : Value();
               nb.store(fn(b, a, c), out, full, it);
             });
  });
  return out;
}

template <typename OpTy, typename ArithOp>
struct BinaryLowering : GraphLowering<OpTy> {
  using GraphLowering<OpTy>::GraphLowering;
  LogicalResult
  matchAndRewrite(OpTy op, typename GraphLowering<OpTy>::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value out = lowerElementwise(
        b, op->getName().stripDialect(), this->resultType(op), adaptor.getLhs(),
        adaptor.getRhs(), [](ImplicitLocOpBuilder &b, Value x, Value y) {
          return ArithOp::create(b, x, y).getResult();
        });
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct SiluLowering : GraphLowering<SiluOp> {
  using GraphLowering::GraphLowering;
  LogicalResult
  matchAndRewrite(SiluOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value out = lowerElementwise(
        b, "silu", resultType(op), adaptor.getInput(), Value(),
        [](ImplicitLocOpBuilder &b, Value x, Value) -> Value {
          // x * sigmoid(x) = x / (1 + exp(-x))
          Value one = arith::ConstantOp::create(b, b.getF32FloatAttr(1.0f));
          Value e = math::ExpOp::create(b, arith::NegFOp::create(b, x));
          return arith::DivFOp::create(b, x, arith::AddFOp::create(b, one, e));
        });
    rewriter.replaceOp(op, out);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// graph.rope
//===----------------------------------------------------------------------===//

struct RopeLowering : GraphLowering<RopeOp> {
  using GraphLowering::GraphLowering;
  LogicalResult
  matchAndRewrite(RopeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    NestBuilder nb(b);
    Value x = adaptor.getInput(), pos0 = adaptor.getPos0();
    int64_t hd = op.getHeadDim();
    int64_t heads = llvm::cast<MemRefType>(x.getType()).getDimSize(1) / hd;
    bool interleaved = op.getStyle() == RopeStyle::interleaved;
    float theta = static_cast<float>(op.getTheta().convertToDouble());
    SmallVector<Value> sizes = nb.sizes(x);
    Value out = nb.alloc(resultType(op), nb.dynamicSizes(x));
    // Iteration variables: (s, h, i) for pair i of head h of row s.
    AffineExpr s = nb.d(0), h = nb.d(1), i = nb.d(2);
    AffineExpr first = interleaved ? h * hd + i * 2 : h * hd + i;
    AffineExpr second = interleaved ? h * hd + i * 2 + 1 : h * hd + i + hd / 2;
    AffineMap m0 = nb.map(3, {s, first}), m1 = nb.map(3, {s, second});
    nb.nest({sizes[0], nb.index(heads), nb.index(hd / 2)}, LoopKind::parallel,
            [&](ValueRange ivs) {
              nb.block(
                  "rope", ivs,
                  {IterKind::spatial, IterKind::spatial, IterKind::spatial},
                  {{x, m0}, {x, m1}}, {{out, m0}, {out, m1}},
                  [&](ImplicitLocOpBuilder &b, ValueRange it) {
                    Type f32 = b.getF32Type();
                    // angle = (pos0 + s) * theta^(-2i/hd), all in f32.
                    Value pos = arith::AddIOp::create(b, pos0, it[0]);
                    Value posF = arith::UIToFPOp::create(
                        b, f32,
                        arith::IndexCastUIOp::create(b, b.getI64Type(), pos));
                    Value iF = arith::UIToFPOp::create(
                        b, f32,
                        arith::IndexCastUIOp::create(b, b.getI64Type(), it[2]));
                    Value expo = arith::DivFOp::create(
                        b, arith::MulFOp::create(b, iF, nb.f32(2.0)),
                        nb.f32(hd));
                    Value freq = arith::DivFOp::create(
                        b, nb.f32(1.0),
                        math::PowFOp::create(b, nb.f32(theta), expo));
                    Value angle = arith::MulFOp::create(b, posF, freq);
                    Value cos = math::CosOp::create(b, angle);
                    Value sin = math::SinOp::create(b, angle);
                    Value a = nb.load(x, m0, it), c = nb.load(x, m1, it);
                    Value r0 = arith::SubFOp::create(
                        b, arith::MulFOp::create(b, a, cos),
                        arith::MulFOp::create(b, c, sin));
                    Value r1 = arith::AddFOp::create(
                        b, arith::MulFOp::create(b, a, sin),
                        arith::MulFOp::create(b, c, cos));
                    nb.store(r0, out, m0, it);
                    nb.store(r1, out, m1, it);
                  });
            });
    rewriter.replaceOp(op, out);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// graph.attention
//===----------------------------------------------------------------------===//

struct AttentionLowering : GraphLowering<AttentionOp> {
  using GraphLowering::GraphLowering;
  LogicalResult
  matchAndRewrite(AttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    NestBuilder nb(b);
    Value q = adaptor.getQ(), k = adaptor.getK(), v = adaptor.getV();
    Value cache = adaptor.getCache(), pos0 = adaptor.getPos0();
    int64_t layer = op.getLayer(), nh = op.getNumHeads();
    int64_t nkv = op.getNumKvHeads(), hd = op.getHeadDim();
    int64_t group = nh / nkv;
    float scale = op.getScale().convertToFloat();
    Type f32 = b.getF32Type();

    Value seq = nb.sizes(q)[0];
    Value ctx = arith::AddIOp::create(b, pos0, seq);
    Value out = nb.alloc(resultType(op), nb.dynamicSizes(q));
    auto scoresType = MemRefType::get(
        {ShapedType::kDynamic, nh, ShapedType::kDynamic}, f32);
    Value scores = nb.alloc(scoresType, {seq, ctx});

    auto rowType = MemRefType::get({ShapedType::kDynamic, nh}, f32);
    Value rowMax = nb.alloc(rowType, {seq});
    // Like ggml's soft_max, the exponentials are summed in f64 and scaled by
    // the f32 rounding of 1 / sum.
    Type f64 = b.getF64Type();
    Value rowSum =
        nb.alloc(MemRefType::get({ShapedType::kDynamic, nh}, f64), {seq});

    // 1. Store this call's keys and values at positions pos0 + s.
    {
      AffineExpr s = nb.d(0), p = nb.d(1), h = nb.d(2), d = nb.d(3);
      AffineMap src = nb.map(4, {s, h * hd + d});
      AffineMap kDst = nb.map(4, {nb.c(layer), nb.c(0), p, h, d});
      AffineMap vDst = nb.map(4, {nb.c(layer), nb.c(1), p, h, d});
      nb.loop(seq, LoopKind::parallel, [&](Value is) {
        Value ip = arith::AddIOp::create(b, pos0, is);
        nb.nest({nb.index(nkv), nb.index(hd)}, LoopKind::serial,
                [&](ValueRange ivs) {
                  nb.block("kv_store", {is, ip, ivs[0], ivs[1]},
                           {IterKind::spatial, IterKind::spatial,
                            IterKind::spatial, IterKind::spatial},
                           {{k, src}, {v, src}}, {{cache, kDst}, {cache, vDst}},
                           [&](ImplicitLocOpBuilder &, ValueRange it) {
                             nb.store(nb.load(k, src, it), cache, kDst, it);
                             nb.store(nb.load(v, src, it), cache, vDst, it);
                           });
                });
      });
    }

    // Loops (s, h) then t over the causal context 0 .. pos0 + s.
    auto causal = [&](function_ref<void(Value, Value, Value)> fn) {
      nb.loop(seq, LoopKind::parallel, [&](Value is) {
        Value end = arith::AddIOp::create(
            b, arith::AddIOp::create(b, pos0, is), nb.index(1));
        nb.loop(nb.index(nh), LoopKind::serial, [&](Value ih) {
          nb.loop(end, LoopKind::serial, [&](Value it) { fn(is, ih, it); });
        });
      });
    };
    AffineExpr s = nb.d(0), h = nb.d(1), t = nb.d(2), d = nb.d(3);
    AffineMap sc3 = nb.map(3, {s, h, t}), row3 = nb.map(3, {s, h});
    SmallVector<IterKind> allSpatial3(3, IterKind::spatial);

    // 2. scores[s, h, t] = q[s, h] . K[t, h / group]
    {
      AffineMap qMap = nb.map(4, {s, h * hd + d});
      AffineMap kMap =
          nb.map(4, {nb.c(layer), nb.c(0), t, h.floorDiv(group), d});
      AffineMap scMap = nb.map(4, {s, h, t});
      causal([&](Value is, Value ih, Value it) {
        nb.loop(nb.index(hd), LoopKind::serial, [&](Value id) {
          nb.block(
              "attention_scores", {is, ih, it, id},
              {IterKind::spatial, IterKind::spatial, IterKind::spatial,
               IterKind::reduce},
              {{q, qMap}, {cache, kMap}}, {{scores, scMap}},
              [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                // A fused multiply-add chain, as ggml_vec_dot_f32 (built
                // with FMA contraction) sums rows shorter than its SIMD step.
                Value acc = nb.load(scores, scMap, iv);
                nb.store(math::FmaOp::create(b, nb.load(q, qMap, iv),
                                             nb.load(cache, kMap, iv), acc),
                         scores, scMap, iv);
              },
              [&](ImplicitLocOpBuilder &, ValueRange iv) {
                nb.store(nb.f32(0.0), scores, scMap, iv);
              });
        });
      });
    }
    SmallVector<IterKind> rowReduce = {IterKind::spatial, IterKind::spatial,
                                       IterKind::reduce};
    // 3. rowMax[s, h] = max_t scale * scores[s, h, t]
    causal([&](Value is, Value ih, Value it) {
      nb.block(
          "softmax_max", {is, ih, it}, rowReduce, {{scores, sc3}},
          {{rowMax, row3}},
          [&](ImplicitLocOpBuilder &b, ValueRange iv) {
            Value x = arith::MulFOp::create(b, nb.load(scores, sc3, iv),
                                            nb.f32(scale));
            Value m = nb.load(rowMax, row3, iv);
            nb.store(arith::MaxNumFOp::create(b, m, x), rowMax, row3, iv);
          },
          [&](ImplicitLocOpBuilder &b, ValueRange iv) {
            Value negInf = arith::ConstantOp::create(
                b, b.getFloatAttr(f32, -std::numeric_limits<float>::infinity()));
            nb.store(negInf, rowMax, row3, iv);
          });
    });
    // 4. scores = exp(scale * scores - rowMax)
    causal([&](Value is, Value ih, Value it) {
      nb.block("softmax_exp", {is, ih, it}, allSpatial3,
               {{scores, sc3}, {rowMax, row3}}, {{scores, sc3}},
               [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                 Value x = arith::MulFOp::create(b, nb.load(scores, sc3, iv),
                                                 nb.f32(scale));
                 Value e = math::ExpOp::create(
                     b, arith::SubFOp::create(b, x, nb.load(rowMax, row3, iv)));
                 nb.store(e, scores, sc3, iv);
               });
    });
    // 5. rowSum[s, h] = sum_t scores[s, h, t]
    causal([&](Value is, Value ih, Value it) {
      nb.block(
          "softmax_sum", {is, ih, it}, rowReduce, {{scores, sc3}},
          {{rowSum, row3}},
          [&](ImplicitLocOpBuilder &b, ValueRange iv) {
            Value acc = nb.load(rowSum, row3, iv);
            Value e = arith::ExtFOp::create(b, f64, nb.load(scores, sc3, iv));
            nb.store(arith::AddFOp::create(b, acc, e), rowSum, row3, iv);
          },
          [&](ImplicitLocOpBuilder &b, ValueRange iv) {
            nb.store(arith::ConstantOp::create(b, b.getF64FloatAttr(0.0)),
                     rowSum, row3, iv);
          });
    });
    // 6. out[s, h*hd + d] = sum_t (scores[s, h, t] / rowSum[s, h]) V[t, h/g, d]
    {
      AffineMap scMap = nb.map(4, {s, h, t}), rowMap = nb.map(4, {s, h});
      AffineMap vMap =
          nb.map(4, {nb.c(layer), nb.c(1), t, h.floorDiv(group), d});
      AffineMap outMap = nb.map(4, {s, h * hd + d});
      nb.loop(seq, LoopKind::parallel, [&](Value is) {
        Value end = arith::AddIOp::create(
            b, arith::AddIOp::create(b, pos0, is), nb.index(1));
        nb.nest({nb.index(nh), nb.index(hd)}, LoopKind::serial,
                [&](ValueRange hdv) {
                  nb.loop(end, LoopKind::serial, [&](Value it) {
                    nb.block(
                        "attention_values", {is, hdv[0], it, hdv[1]},
                        {IterKind::spatial, IterKind::spatial, IterKind::reduce,
                         IterKind::spatial},
                        {{scores, scMap}, {rowSum, rowMap}, {cache, vMap}},
                        {{out, outMap}},
                        [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                          Value inv = arith::TruncFOp::create(
                              b, f32,
                              arith::DivFOp::create(
                                  b,
                                  arith::ConstantOp::create(
                                      b, b.getF64FloatAttr(1.0)),
                                  nb.load(rowSum, rowMap, iv)));
                          Value p = arith::MulFOp::create(
                              b, nb.load(scores, scMap, iv), inv);
                          Value pv = arith::MulFOp::create(
                              b, p, nb.load(cache, vMap, iv));
                          Value acc = nb.load(out, outMap, iv);
                          nb.store(arith::AddFOp::create(b, acc, pv), out,
                                   outMap, iv);
                        },
                        [&](ImplicitLocOpBuilder &, ValueRange iv) {
                          nb.store(nb.f32(0.0), out, outMap, iv);
                        });
                  });
                });
      });
    }
    rewriter.replaceOp(op, out);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// graph.reshape
//===----------------------------------------------------------------------===//

struct ReshapeLowering : GraphLowering<ReshapeOp> {
  using GraphLowering::GraphLowering;
  LogicalResult
  matchAndRewrite(ReshapeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value x = adaptor.getInput();
    auto inType = llvm::cast<MemRefType>(x.getType());
    MemRefType outType = resultType(op);
    // Collapse the trailing dims into one, then expand them to the result's.
    auto group = [](int64_t rank) {
      SmallVector<ReassociationIndices> r = {{0}, {}};
      for (int64_t i = 1; i < rank; ++i)
        r[1].push_back(i);
      return r;
    };
    Value flat = x;
    if (inType.getRank() > 2)
      flat = memref::CollapseShapeOp::create(b, x, group(inType.getRank()));
    if (inType.getRank() == 1 || outType.getRank() == 1)
      return rewriter.notifyMatchFailure(op, "rank-1 reshapes are not lowered");
    Value result = flat;
    if (outType.getRank() > 2) {
      SmallVector<OpFoldResult> shape;
      if (outType.isDynamicDim(0))
        shape.push_back(
            memref::DimOp::create(b, flat, 0).getResult());
      else
        shape.push_back(b.getIndexAttr(outType.getDimSize(0)));
      for (int64_t d : outType.getShape().drop_front())
        shape.push_back(b.getIndexAttr(d));
      result = memref::ExpandShapeOp::create(b, outType, flat,
                                             group(outType.getRank()), shape);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct ConvertGraphToTLPass
    : llmc::impl::ConvertGraphToTLBase<ConvertGraphToTLPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    TypeConverter converter;
    populateGraphToTLTypeConversions(converter);

    ConversionTarget target(*ctx);
    target.addIllegalDialect<GraphDialect>();
    target.addLegalOp<ModuleOp>();
    target.addLegalDialect<tl::TLDialect, memref::MemRefDialect,
                           affine::AffineDialect, arith::ArithDialect,
                           math::MathDialect>();
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp op) {
      return converter.isSignatureLegal(op.getFunctionType()) &&
             converter.isLegal(&op.getBody());
    });
    target.addDynamicallyLegalOp<func::ReturnOp, func::CallOp>(
        [&](Operation *op) { return converter.isLegal(op); });

    RewritePatternSet patterns(ctx);
    populateGraphToTLPatterns(converter, patterns);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateReturnOpTypeConversionPattern(patterns, converter);
    populateCallOpTypeConversionPattern(patterns, converter);
    if (failed(applyFullConversion(getOperation(), target, std::move(patterns))))
      return signalPassFailure();

    // Block names are how schedules find blocks: make them unique per
    // function ("matmul", "matmul_1", ...), in program order.
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      llvm::StringMap<unsigned> seen;
      func.walk([&](tl::BlockOp block) {
        unsigned n = seen[block.getName()]++;
        if (n)
          block.setName((block.getName() + "_" + llvm::Twine(n)).str());
      });
    }

    // Public functions are entry points: give them the C interface that the
    // runtime calls (docs/artifact.md).
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (func.isPublic() && !func.isExternal())
        func->setAttr("llvm.emit_c_interface", UnitAttr::get(ctx));
  }
};

} // namespace

void llmc::populateGraphToTLTypeConversions(TypeConverter &converter) {
  converter.addConversion([](Type t) { return t; });
  converter.addConversion([](RankedTensorType t) -> Type {
    // Quantized rows become their raw blocks: [rows, row bytes] of i8.
    if (int64_t block = quantBlockBytes(t.getElementType())) {
      SmallVector<int64_t> shape(t.getShape());
      shape.back() = shape.back() / quantBlockElements(t.getElementType()) * block;
      return MemRefType::get(shape, IntegerType::get(t.getContext(), 8));
    }
    return MemRefType::get(t.getShape(), t.getElementType());
  });
  converter.addConversion([](WeightsType t) -> Type {
    return MemRefType::get({ShapedType::kDynamic},
                           IntegerType::get(t.getContext(), 8));
  });
  converter.addConversion([](KVCacheType t) -> Type {
    return MemRefType::get({t.getLayers(), 2, t.getMaxSeq(), t.getKvHeads(),
                            t.getHeadDim()},
                           t.getElementType());
  });
  auto cast = [](OpBuilder &b, Type type, ValueRange inputs,
                 Location loc) -> Value {
    return UnrealizedConversionCastOp::create(b, loc, type, inputs)
        .getResult(0);
  };
  converter.addSourceMaterialization(cast);
  converter.addTargetMaterialization(cast);
}

void llmc::populateGraphToTLPatterns(const TypeConverter &converter,
                                     RewritePatternSet &patterns) {
  patterns.add<ParamLowering, EmbeddingLowering, RMSNormLowering,
               MatmulLowering, BinaryLowering<AddOp, arith::AddFOp>,
               BinaryLowering<MulOp, arith::MulFOp>, SiluLowering,
               RopeLowering, AttentionLowering, ReshapeLowering>(
      converter, patterns.getContext());
}
