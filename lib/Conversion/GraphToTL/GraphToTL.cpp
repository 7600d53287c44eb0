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
#include "LoweringUtils.h"
#include "QuantReader.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
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
using namespace llmc::graph_to_tl;

namespace {

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

static Value ggmlExpfAvx512(ImplicitLocOpBuilder &b, Value x);

struct SiluLowering : GraphLowering<SiluOp> {
  using GraphLowering::GraphLowering;
  LogicalResult
  matchAndRewrite(SiluOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    bool ggml = op.getGgmlAvx512();
    Value out = lowerElementwise(
        b, "silu", resultType(op), adaptor.getInput(), Value(),
        [&](ImplicitLocOpBuilder &b, Value x, Value) -> Value {
          // x * sigmoid(x) = x / (1 + exp(-x))
          Value one = arith::ConstantOp::create(b, b.getF32FloatAttr(1.0f));
          Value e = ggml ? ggmlExpfAvx512(b, arith::NegFOp::create(b, x))
                        : math::ExpOp::create(b, arith::NegFOp::create(b, x)).getResult();
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
                    Value angle;
                    bool ggml = op.getGgmlAvx512();
                    if (ggml) {
                      float ts = std::pow(theta, -2.0f / static_cast<float>(hd));
                      auto loop = scf::ForOp::create(b, nb.index(0), it[2],
                                                     nb.index(1), ValueRange{posF});
                      {
                        OpBuilder::InsertionGuard guard(b);
                        b.setInsertionPointToStart(loop.getBody());
                        Value next = arith::MulFOp::create(
                            b, loop.getRegionIterArgs()[0], nb.f32(ts));
                        scf::YieldOp::create(b, next);
                      }
                      angle = loop.getResult(0);
                    } else {
                    Value iF = arith::UIToFPOp::create(
                        b, f32,
                        arith::IndexCastUIOp::create(b, b.getI64Type(), it[2]));
                    Value expo = arith::DivFOp::create(
                        b, arith::MulFOp::create(b, iF, nb.f32(2.0)),
                        nb.f32(hd));
                    Value freq = arith::DivFOp::create(
                        b, nb.f32(1.0),
                        math::PowFOp::create(b, nb.f32(theta), expo));
                    angle = arith::MulFOp::create(b, posF, freq);
                    }
                    Value cos = math::CosOp::create(b, angle);
                    Value sin = math::SinOp::create(b, angle);
                    Value a = nb.load(x, m0, it), c = nb.load(x, m1, it);
                    Value r0, r1;
                    if (ggml) {
                      r0 = math::FmaOp::create(b, a, cos, arith::NegFOp::create(b, arith::MulFOp::create(b, c, sin)));
                      r1 = math::FmaOp::create(b, a, sin, arith::MulFOp::create(b, c, cos));
                    } else {
                    r0 = arith::SubFOp::create(
                        b, arith::MulFOp::create(b, a, cos),
                        arith::MulFOp::create(b, c, sin));
                    r1 = arith::AddFOp::create(
                        b, arith::MulFOp::create(b, a, sin),
                        arith::MulFOp::create(b, c, cos));
                    }
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

/// One lane of ggml's AVX-512 `ggml_v_expf` (vec.h), operation for
/// operation: n = round(x / ln 2), a degree-5 polynomial in the remainder,
/// `_mm512_scalef_ps` by 2^n; 0 or inf beyond |n| > 192.
static Value ggmlExpfAvx512(ImplicitLocOpBuilder &b, Value x) {
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  auto c = [&](float v) {
    return arith::ConstantOp::create(b, b.getF32FloatAttr(v)).getResult();
  };
  auto ci = [&](int32_t v) {
    return arith::ConstantOp::create(b, b.getI32IntegerAttr(v)).getResult();
  };
  auto fma = [&](Value p, Value q, Value r) {
    return math::FmaOp::create(b, p, q, r).getResult();
  };
  Value r = c(0x1.8p23f);
  Value z = fma(x, c(0x1.715476p+0f), r);
  Value n = arith::SubFOp::create(b, z, r);
  Value nn = arith::NegFOp::create(b, n);
  Value bb = fma(nn, c(0x1.7f7d1cp-20f), fma(nn, c(0x1.62e4p-1f), x));
  Value u = arith::MulFOp::create(b, bb, bb);
  Value j = fma(fma(fma(c(0x1.0e4020p-7f), bb, c(0x1.573e2ep-5f)), u,
                    fma(c(0x1.555e66p-3f), bb, c(0x1.fffdb6p-2f))),
                u, fma(c(0x1.ffffecp-1f), bb, c(1.0f)));
  // scalef(j, n) for |n| <= 192: two exact power-of-two scalings.
  Value ni = arith::FPToSIOp::create(b, i32, n);
  Value half = arith::DivSIOp::create(b, ni, ci(2));
  auto pow2 = [&](Value e) {
    return arith::BitcastOp::create(
               b, f32,
               arith::ShLIOp::create(b, arith::AddIOp::create(b, e, ci(127)),
                                     ci(23)))
        .getResult();
  };
  Value res = arith::MulFOp::create(
      b, arith::MulFOp::create(b, j, pow2(half)),
      pow2(arith::SubIOp::create(b, ni, half)));
  Value nonPos = arith::CmpFOp::create(b, arith::CmpFPredicate::OLE, n, c(0.0f));
  Value alt = arith::SelectOp::create(
      b, nonPos, c(0.0f), c(std::numeric_limits<float>::infinity()));
  Value big = arith::CmpFOp::create(b, arith::CmpFPredicate::OGT,
                                    math::AbsFOp::create(b, n), c(192.0f));
  return arith::SelectOp::create(b, big, alt, res);
}

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

    if (op.getGgmlAvx512()) {
      lowerGgml(nb, op, q, cache, pos0, seq, ctx, out, causal);
      rewriter.replaceOp(op, out);
      return success();
    }

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
                Value p = arith::MulFOp::create(b, nb.load(q, qMap, iv),
                                                nb.load(cache, kMap, iv));
                Value acc = nb.load(scores, scMap, iv);
                nb.store(arith::AddFOp::create(b, acc, p), scores, scMap, iv);
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

  /// llama.cpp's attention as its CPU backend computes it on an AVX-512
  /// host (F32 KV cache, no flash attention), reduction for reduction:
  /// q.k is ggml_vec_dot_f32 (64-element steps into four 16-lane FMA
  /// accumulators, reduceAdd64, then products added in order for the
  /// rest); the
  /// softmax uses ggml_v_expf and sums 16-element chunks (reduceAdd16) in
  /// f64; p.V is llamafile's sgemm for several tokens (one 16-lane FMA
  /// accumulator over the KV positions, reduceAdd16) and ggml_vec_dot_f32
  /// for one. Positions after the causal end weigh 0 in ggml and add
  /// nothing here.
  void lowerGgml(NestBuilder &nb, AttentionOp op, Value q, Value cache,
                 Value pos0, Value seq, Value ctx, Value out,
                 function_ref<void(function_ref<void(Value, Value, Value)>)>
                     causal) const {
    ImplicitLocOpBuilder &b = nb.b;
    int64_t layer = op.getLayer(), nh = op.getNumHeads();
    int64_t nkv = op.getNumKvHeads(), hd = op.getHeadDim();
    int64_t group = nh / nkv;
    float scale = op.getScale().convertToFloat();
    Type f32 = b.getF32Type(), f64 = b.getF64Type();
    // Scores padded to whole 16-element chunks.
    Value ctxPad = arith::MulIOp::create(
        b,
        arith::DivUIOp::create(b, arith::AddIOp::create(b, ctx, nb.index(15)),
                               nb.index(16)),
        nb.index(16));
    Value scores = nb.alloc(
        MemRefType::get({ShapedType::kDynamic, nh, ShapedType::kDynamic}, f32),
        {seq, ctxPad});
    Value rowMax = nb.alloc(MemRefType::get({ShapedType::kDynamic, nh}, f32), {seq});
    Value rowSum = nb.alloc(MemRefType::get({ShapedType::kDynamic, nh}, f64), {seq});
    Value lanes = nb.alloc(MemRefType::get({64}, f32), {});
    Value lanes16 = nb.alloc(MemRefType::get({16}, f32), {});
    AffineExpr s = nb.d(0), h = nb.d(1), t = nb.d(2);
    AffineMap sc3 = nb.map(3, {s, h, t}), row3 = nb.map(3, {s, h});
    SmallVector<IterKind> sp3(3, IterKind::spatial);
    auto laneReads = [&](Value buf, int64_t n, unsigned numIters,
                         SmallVector<AffineMap> &maps) {
      SmallVector<Access> reads;
      for (int64_t i = 0; i < n; ++i) {
        maps.push_back(nb.map(numIters, {nb.c(i)}));
        reads.push_back({buf, maps.back()});
      }
      return reads;
    };
    int64_t steps = hd / 64, rest = hd % 64;

    // q . k
    causal([&](Value is, Value ih, Value it) {
      if (steps) {
        nb.nest({nb.index(steps), nb.index(64)}, LoopKind::serial,
                [&](ValueRange ivs) {
          AffineExpr i = nb.d(3), jl = nb.d(4);
          AffineMap qMap = nb.map(5, {s, h * hd + i * 64 + jl});
          AffineMap kMap = nb.map(
              5, {nb.c(layer), nb.c(0), t, h.floorDiv(group), i * 64 + jl});
          AffineMap lane = nb.map(5, {jl});
          nb.block(
              "attention_qk_lanes", {is, ih, it, ivs[0], ivs[1]},
              {IterKind::spatial, IterKind::spatial, IterKind::spatial,
               IterKind::reduce, IterKind::spatial},
              {{q, qMap}, {cache, kMap}}, {{lanes, lane}},
              [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                nb.store(math::FmaOp::create(b, nb.load(q, qMap, iv),
                                             nb.load(cache, kMap, iv),
                                             nb.load(lanes, lane, iv)),
                         lanes, lane, iv);
              },
              [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                nb.store(nb.f32(0.0), lanes, lane, iv);
              });
        });
        SmallVector<AffineMap> maps;
        nb.block("attention_qk_sum", {is, ih, it}, sp3,
                 laneReads(lanes, 64, 3, maps), {{scores, sc3}},
                 [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                   SmallVector<Value> a;
                   for (AffineMap m : maps)
                     a.push_back(nb.load(lanes, m, iv));
                   nb.store(reduceAdd64(b, a), scores, sc3, iv);
                 });
      }
      if (rest) {
        nb.loop(nb.index(rest), LoopKind::serial, [&](Value ir) {
          AffineExpr r = nb.d(3);
          AffineMap qMap = nb.map(4, {s, h * hd + r + steps * 64});
          AffineMap kMap = nb.map(4, {nb.c(layer), nb.c(0), t, h.floorDiv(group),
                                      r + steps * 64});
          AffineMap scMap = nb.map(4, {s, h, t});
          // ggml's tail loop: products rounded, then added in order (its
          // build multiplies as a vector and adds lane by lane, no FMA).
          auto body = [&](ImplicitLocOpBuilder &b, ValueRange iv) {
            Value p = arith::MulFOp::create(b, nb.load(q, qMap, iv),
                                            nb.load(cache, kMap, iv));
            nb.store(arith::AddFOp::create(b, nb.load(scores, scMap, iv), p),
                     scores, scMap, iv);
          };
          auto init = [&](ImplicitLocOpBuilder &, ValueRange iv) {
            nb.store(nb.f32(0.0), scores, scMap, iv);
          };
          SmallVector<IterKind> kinds = {IterKind::spatial, IterKind::spatial,
                                         IterKind::spatial, IterKind::reduce};
          if (steps)
            nb.block("attention_qk_rest", {is, ih, it, ir}, kinds,
                     {{q, qMap}, {cache, kMap}}, {{scores, scMap}}, body);
          else
            nb.block("attention_qk_rest", {is, ih, it, ir}, kinds,
                     {{q, qMap}, {cache, kMap}}, {{scores, scMap}}, body, init);
        });
      }
    });
    // max_t scale * q.k
    causal([&](Value is, Value ih, Value it) {
      nb.block(
          "softmax_max", {is, ih, it},
          {IterKind::spatial, IterKind::spatial, IterKind::reduce},
          {{scores, sc3}}, {{rowMax, row3}},
          [&](ImplicitLocOpBuilder &b, ValueRange iv) {
            Value x = arith::MulFOp::create(b, nb.load(scores, sc3, iv),
                                            nb.f32(scale));
            nb.store(arith::MaxNumFOp::create(b, nb.load(rowMax, row3, iv), x),
                     rowMax, row3, iv);
          },
          [&](ImplicitLocOpBuilder &b, ValueRange iv) {
            nb.store(nb.f32(-std::numeric_limits<float>::infinity()), rowMax,
                     row3, iv);
          });
    });
    // exp(scale * q.k - max), ggml_v_expf
    causal([&](Value is, Value ih, Value it) {
      nb.block("softmax_exp", {is, ih, it}, sp3, {{scores, sc3}, {rowMax, row3}},
               {{scores, sc3}}, [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                 Value x = arith::MulFOp::create(b, nb.load(scores, sc3, iv),
                                                 nb.f32(scale));
                 nb.store(ggmlExpfAvx512(
                              b, arith::SubFOp::create(
                                     b, x, nb.load(rowMax, row3, iv))),
                          scores, sc3, iv);
               });
    });
    // sum over 16-element chunks, each reduced as one vector, in f64
    nb.loop(seq, LoopKind::parallel, [&](Value is) {
      Value end = arith::AddIOp::create(b, arith::AddIOp::create(b, pos0, is),
                                        nb.index(1));
      Value chunks = arith::DivUIOp::create(
          b, arith::AddIOp::create(b, end, nb.index(15)), nb.index(16));
      nb.loop(nb.index(nh), LoopKind::serial, [&](Value ih) {
        nb.loop(chunks, LoopKind::serial, [&](Value ic) {
          SmallVector<AffineMap> maps;
          SmallVector<Access> reads;
          for (int64_t i = 0; i < 16; ++i) {
            maps.push_back(nb.map(3, {s, h, t * 16 + i}));
            reads.push_back({scores, maps.back()});
          }
          nb.block(
              "softmax_sum", {is, ih, ic},
              {IterKind::spatial, IterKind::spatial, IterKind::reduce}, reads,
              {{rowSum, row3}},
              [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                SmallVector<Value> v;
                Value last = arith::AddIOp::create(b, pos0, iv[0]);
                for (int64_t i = 0; i < 16; ++i) {
                  Value pos = arith::AddIOp::create(
                      b, arith::MulIOp::create(b, iv[2], nb.index(16)),
                      nb.index(i));
                  Value inside = arith::CmpIOp::create(
                      b, arith::CmpIPredicate::ule, pos, last);
                  v.push_back(arith::SelectOp::create(
                      b, inside, nb.load(scores, maps[i], iv), nb.f32(0.0)));
                }
                Value part = arith::ExtFOp::create(b, f64, reduceAdd16(b, v));
                nb.store(arith::AddFOp::create(b, nb.load(rowSum, row3, iv), part),
                         rowSum, row3, iv);
              },
              [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                nb.store(arith::ConstantOp::create(b, b.getF64FloatAttr(0.0)),
                         rowSum, row3, iv);
              });
        });
      });
    });
    // p . V
    {
      AffineExpr dd = nb.d(3);
      AffineMap scMap = nb.map(4, {s, h, t}), rowMap = nb.map(4, {s, h});
      AffineMap vMap =
          nb.map(4, {nb.c(layer), nb.c(1), t, h.floorDiv(group), dd});
      AffineMap l64 = nb.map(4, {t % 64}), l16 = nb.map(4, {t % 16});
      Value several = arith::CmpIOp::create(b, arith::CmpIPredicate::uge, seq,
                                            nb.index(2));
      nb.loop(seq, LoopKind::parallel, [&](Value is) {
        Value end = arith::AddIOp::create(
            b, arith::AddIOp::create(b, pos0, is), nb.index(1));
        nb.nest({nb.index(nh), nb.index(hd)}, LoopKind::serial,
                [&](ValueRange hdv) {
          // zero the lanes
          nb.loop(nb.index(64), LoopKind::serial, [&](Value il) {
            AffineMap z64 = nb.map(4, {nb.d(2)}), z16 = nb.map(4, {nb.d(2) % 16});
            nb.block("attention_pv_zero", {is, hdv[0], il, hdv[1]},
                     {IterKind::spatial, IterKind::spatial, IterKind::spatial,
                      IterKind::spatial},
                     {}, {{lanes, z64}, {lanes16, z16}},
                     [&](ImplicitLocOpBuilder &, ValueRange iv) {
                       nb.store(nb.f32(0.0), lanes, z64, iv);
                       nb.store(nb.f32(0.0), lanes16, z16, iv);
                     });
          });
          nb.loop(end, LoopKind::serial, [&](Value it) {
            nb.block(
                "attention_pv_lanes", {is, hdv[0], it, hdv[1]},
                {IterKind::spatial, IterKind::spatial, IterKind::reduce,
                 IterKind::spatial},
                {{scores, scMap}, {rowSum, rowMap}, {cache, vMap}},
                {{lanes, l64}, {lanes16, l16}},
                [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                  Value inv = arith::TruncFOp::create(
                      b, f32,
                      arith::DivFOp::create(
                          b, arith::ConstantOp::create(b, b.getF64FloatAttr(1.0)),
                          nb.load(rowSum, rowMap, iv)));
                  Value p = arith::MulFOp::create(b, nb.load(scores, scMap, iv), inv);
                  Value vv = nb.load(cache, vMap, iv);
                  nb.store(math::FmaOp::create(b, vv, p, nb.load(lanes, l64, iv)),
                           lanes, l64, iv);
                  nb.store(math::FmaOp::create(b, vv, p, nb.load(lanes16, l16, iv)),
                           lanes16, l16, iv);
                });
          });
          SmallVector<AffineMap> m64, m16;
          SmallVector<Access> reads = laneReads(lanes, 64, 4, m64);
          llvm::append_range(reads, laneReads(lanes16, 16, 4, m16));
          AffineMap outMap = nb.map(4, {s, h * hd + dd});
          nb.block("attention_pv_sum", {is, hdv[0], nb.index(0), hdv[1]},
                   {IterKind::spatial, IterKind::spatial, IterKind::spatial,
                    IterKind::spatial},
                   reads, {{out, outMap}},
                   [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                     SmallVector<Value> a, c;
                     for (AffineMap m : m64)
                       a.push_back(nb.load(lanes, m, iv));
                     for (AffineMap m : m16)
                       c.push_back(nb.load(lanes16, m, iv));
                     nb.store(arith::SelectOp::create(b, several, reduceAdd16(b, c),
                                                      reduceAdd64(b, a)),
                              out, outMap, iv);
                   });
        });
      });
    }
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
                           math::MathDialect, scf::SCFDialect>();
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
  populateMatmulLoweringPatterns(converter, patterns);
  patterns.add<ParamLowering, EmbeddingLowering, RMSNormLowering,
               BinaryLowering<AddOp, arith::AddFOp>,
               BinaryLowering<MulOp, arith::MulFOp>, SiluLowering,
               RopeLowering, AttentionLowering, ReshapeLowering>(
      converter, patterns.getContext());
}
