//===- AttentionLowering.cpp - graph.attention to tl loop nests -----------===//
//
// KV-cache store, q.k, softmax and p.V as tl loop nests; with ggml_avx512,
// every reduction in the order llama.cpp's CPU backend uses on an AVX-512
// host (docs/numerics.md).
//
//===----------------------------------------------------------------------===//
#include "LoweringUtils.h"

#include <limits>

using namespace llmc::graph_to_tl;

/// One lane of ggml's AVX-512 `ggml_v_expf` (vec.h), operation for
/// operation: n = round(x / ln 2), a degree-5 polynomial in the remainder,
/// `_mm512_scalef_ps` by 2^n; 0 or inf beyond |n| > 192.
Value llmc::graph_to_tl::ggmlExpfAvx512(ImplicitLocOpBuilder &b, Value x) {
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

namespace {

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
    // p.V's lanes are its own: scratch scoped to one loop nest each.
    Value pvLanes = nb.alloc(MemRefType::get({64}, f32), {});
    AffineExpr s = nb.d(0), h = nb.d(1), t = nb.d(2);
    AffineMap sc3 = nb.map(3, {s, h, t}), row3 = nb.map(3, {s, h});
    SmallVector<IterKind> sp3(3, IterKind::spatial);
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
        LaneReads ll(nb, lanes, 3);
        SmallVector<Access> reads;
        ll.appendTo(reads);
        nb.block("attention_qk_sum", {is, ih, it}, sp3, reads, {{scores, sc3}},
                 [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                   nb.store(reduceAdd64(b, ll.load(nb, iv)), scores, sc3, iv);
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
                     {}, {{pvLanes, z64}, {lanes16, z16}},
                     [&](ImplicitLocOpBuilder &, ValueRange iv) {
                       nb.store(nb.f32(0.0), pvLanes, z64, iv);
                       nb.store(nb.f32(0.0), lanes16, z16, iv);
                     });
          });
          nb.loop(end, LoopKind::serial, [&](Value it) {
            nb.block(
                "attention_pv_lanes", {is, hdv[0], it, hdv[1]},
                {IterKind::spatial, IterKind::spatial, IterKind::reduce,
                 IterKind::spatial},
                {{scores, scMap}, {rowSum, rowMap}, {cache, vMap}},
                {{pvLanes, l64}, {lanes16, l16}},
                [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                  Value inv = arith::TruncFOp::create(
                      b, f32,
                      arith::DivFOp::create(
                          b, arith::ConstantOp::create(b, b.getF64FloatAttr(1.0)),
                          nb.load(rowSum, rowMap, iv)));
                  Value p = arith::MulFOp::create(b, nb.load(scores, scMap, iv), inv);
                  Value vv = nb.load(cache, vMap, iv);
                  nb.store(math::FmaOp::create(b, vv, p, nb.load(pvLanes, l64, iv)),
                           pvLanes, l64, iv);
                  nb.store(math::FmaOp::create(b, vv, p, nb.load(lanes16, l16, iv)),
                           lanes16, l16, iv);
                });
          });
          LaneReads l64s(nb, pvLanes, 4), l16s(nb, lanes16, 4);
          SmallVector<Access> reads;
          l64s.appendTo(reads);
          l16s.appendTo(reads);
          AffineMap outMap = nb.map(4, {s, h * hd + dd});
          nb.block("attention_pv_sum", {is, hdv[0], nb.index(0), hdv[1]},
                   {IterKind::spatial, IterKind::spatial, IterKind::spatial,
                    IterKind::spatial},
                   reads, {{out, outMap}},
                   [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                     nb.store(arith::SelectOp::create(
                                  b, several, reduceAdd16(b, l16s.load(nb, iv)),
                                  reduceAdd64(b, l64s.load(nb, iv))),
                              out, outMap, iv);
                   });
        });
      });
    }
  }
};

} // namespace

void llmc::graph_to_tl::populateAttentionLoweringPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<AttentionLowering>(converter, patterns.getContext());
}
