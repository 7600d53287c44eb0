//===- AttentionLowering.cpp - graph.attention to tl loop nests -----------===//
//
// The KV-cache stores, then one nest over the attention's rows (token, head)
// whose body computes the row: q.k over the causal context into a scores row
// of its head, the softmax, p.V. No [tokens, heads, context] buffer: the
// row's scores stay in the cache between its steps. The order of the rows
// and of every sum is the schedules' choice. The softmax sums its
// exponentials in f64 and scales by the f32 rounding of 1 / sum, as ggml's
// soft_max does: the numerics of llama.cpp without flash attention.
//
//===----------------------------------------------------------------------===//
#include "LoweringUtils.h"

#include <limits>

using namespace llmc::graph_to_tl;

namespace {

struct AttentionLowering : GraphLowering<AttentionOp> {
  using GraphLowering::GraphLowering;
  LogicalResult
  matchAndRewrite(AttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    NestBuilder nb(b);
    Value q = adaptor.getQ(), k = adaptor.getK(), v = adaptor.getV();
    Value pos0 = adaptor.getPos0();
    int64_t layer = op.getLayer(), nh = op.getNumHeads();
    int64_t nkv = op.getNumKvHeads(), hd = op.getHeadDim();
    // The nests see this layer's slice of the cache, [2][kv head][position
    // x dim] (llmc/abi.h), a view made here: they are alike in every layer.
    Value cache;
    {
      Value all = adaptor.getCache();
      auto allType = cast<MemRefType>(all.getType());
      int64_t row = allType.getDimSize(3);
      SmallVector<OpFoldResult> offsets = {b.getIndexAttr(layer),
                                           b.getIndexAttr(0), b.getIndexAttr(0),
                                           b.getIndexAttr(0)};
      SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(2),
                                         b.getIndexAttr(nkv),
                                         b.getIndexAttr(row)};
      SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
      auto sliceType = memref::SubViewOp::inferRankReducedResultType(
          {2, nkv, row}, allType, offsets, sizes, strides);
      cache =
          memref::SubViewOp::create(b, sliceType, all, offsets, sizes, strides);
    }
    int64_t group = nh / nkv;
    float scale = op.getScale().convertToFloat();
    Type f32 = b.getF32Type();
    // The cache's element type: values are rounded to it when stored and
    // widened when read; with round_to_cache, the f32 operand of each
    // product (q, a probability) is rounded to it too.
    Type cacheElement = cast<MemRefType>(cache.getType()).getElementType();
    auto toCache = [&](ImplicitLocOpBuilder &b, Value x) -> Value {
      return cacheElement == f32 ? x
                                 : arith::TruncFOp::create(b, cacheElement, x);
    };
    auto fromCache = [&](ImplicitLocOpBuilder &b, Value x) -> Value {
      return x.getType() == f32 ? x : arith::ExtFOp::create(b, f32, x);
    };
    bool roundOperands = op.getRoundToCache() && cacheElement != f32;
    auto rounded = [&](ImplicitLocOpBuilder &b, Value x) -> Value {
      return roundOperands ? fromCache(b, toCache(b, x)) : x;
    };

    Value seq = nb.sizes(q)[0];
    Value ctx = arith::AddIOp::create(b, pos0, seq);
    Value out = nb.alloc(resultType(op), nb.dynamicSizes(q));
    int64_t maxSeq = cast<KVCacheType>(op.getCache().getType()).getMaxSeq();
    int64_t kvPad = op.getKvPad(), runs = op.getSoftmaxBlock();
    // Padded (llama.cpp's numerics): p.V sums positions 0 .. ctxP, the
    // context rounded up to kv_pad (at most max_seq), and the scores rows
    // are `width` wide (ctxP rounded up to the softmax runs), zero past each
    // row's causal end.
    bool padded = kvPad > 1 || runs > 0;
    auto roundUp = [&](Value v, int64_t m) -> Value {
      if (m <= 1)
        return v;
      Value q = arith::DivUIOp::create(
          b, arith::AddIOp::create(b, v, nb.index(m - 1)), nb.index(m));
      return arith::MulIOp::create(b, q, nb.index(m));
    };
    Value ctxP = ctx;
    if (kvPad > 1)
      ctxP = arith::MinUIOp::create(b, roundUp(ctx, kvPad), nb.index(maxSeq));
    Value width = roundUp(ctxP, runs);
    // A scores row per head; per row (s, h) its max, the f64 sum of its
    // exponentials and the f32 rounding of 1 / sum.
    Value scores =
        nb.alloc(MemRefType::get({nh, ShapedType::kDynamic}, f32), {width});
    auto rowType = MemRefType::get({ShapedType::kDynamic, nh}, f32);
    Value rowMax = nb.alloc(rowType, {seq});
    Value rowInv = nb.alloc(rowType, {seq});
    Value rowSum = nb.alloc(
        MemRefType::get({ShapedType::kDynamic, nh}, b.getF64Type()), {seq});

    // llmc/abi.h's layout: per layer and KV head, keys as [position][dim],
    // values transposed as [dim][position].
    auto kAt = [&](AffineExpr kvh, AffineExpr pos, AffineExpr dim) {
      return SmallVector<AffineExpr>{nb.c(0), kvh, pos * hd + dim};
    };
    auto vAt = [&](AffineExpr kvh, AffineExpr pos, AffineExpr dim) {
      return SmallVector<AffineExpr>{nb.c(1), kvh, dim * maxSeq + pos};
    };

    // 1. Store this call's keys and values at positions pos0 + s: one nest
    //    each (the keys' stores run along the head dim, the values' along
    //    the positions, which a schedule may put in lanes apart).
    {
      AffineExpr s = nb.d(0), p = nb.d(1), h = nb.d(2), d = nb.d(3);
      AffineMap src = nb.map(4, {s, h * hd + d});
      auto store = [&](StringRef name, Value x, AffineMap dst) {
        nb.loop(seq, [&](Value is) {
          Value ip = arith::AddIOp::create(b, pos0, is);
          nb.nest({nb.index(nkv), nb.index(hd)}, [&](ValueRange ivs) {
            nb.block(name, {is, ip, ivs[0], ivs[1]},
                     {IterKind::spatial, IterKind::spatial, IterKind::spatial,
                      IterKind::spatial},
                     {{x, src}}, {{cache, dst}},
                     [&](ImplicitLocOpBuilder &b, ValueRange it) {
                       nb.store(toCache(b, nb.load(x, src, it)), cache, dst,
                                it);
                     });
          });
        });
      };
      store("kv_store", k, nb.map(4, kAt(h, p, d)));
      store("kv_store_v", v, nb.map(4, vAt(h, p, d)));
    }

    // q rounded to the cache's type once, first, with round_to_cache.
    if (roundOperands) {
      Value qr = nb.alloc(cast<MemRefType>(q.getType()), nb.dynamicSizes(q));
      AffineMap m = nb.map(2, {nb.d(0), nb.d(1)});
      nb.nest({seq, nb.index(nh * hd)}, [&](ValueRange ivs) {
        nb.block("attention_q_round", ivs,
                 {IterKind::spatial, IterKind::spatial}, {{q, m}}, {{qr, m}},
                 [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                   nb.store(rounded(b, nb.load(q, m, iv)), qr, m, iv);
                 });
      });
      q = qr;
    }

    // One nest over the rows (s, h): each row's scores, softmax and p.V run
    // in its iteration, through a scores row per head ([heads, width]) that
    // stays in the cache; no [tokens, heads, context] buffer. The order of
    // the rows (heads outermost, one KV head's keys and values shared by
    // the rows that read them) and their threads are the schedules' choice.
    // The numerics are those of the unfused softmax, in the same order.
    AffineExpr s = nb.d(0), h = nb.d(1), t = nb.d(2), d = nb.d(3);
    AffineMap sc3 = nb.map(3, {h, t}), row3 = nb.map(3, {s, h});
    SmallVector<IterKind> allSpatial3(3, IterKind::spatial);
    SmallVector<IterKind> rowReduce = {IterKind::spatial, IterKind::spatial,
                                       IterKind::reduce};
    // Like ggml's soft_max, the exponentials are summed in f64 and scaled by
    // the f32 rounding of 1 / sum.
    Type f64 = b.getF64Type();
    Value numRuns =
        runs > 0 ? arith::DivUIOp::create(b, width, nb.index(runs)) : Value();
    Value runSum =
        runs > 0 ? nb.alloc(MemRefType::get({nh, ShapedType::kDynamic}, f32),
                            {numRuns})
                 : Value();
    nb.loop(seq, [&](Value is) {
      Value causalEnd = arith::AddIOp::create(
          b, arith::AddIOp::create(b, pos0, is), nb.index(1));
      // p.V sums over the causal context or the padded one. Padded, a row
      // stops at its causal end rounded up to kv_pad: the positions after
      // it, whole runs of kv_pad starting at a multiple of it, add only
      // zeros (+0 products to sums that start at +0), so any split of the
      // sum into lanes that divide kv_pad gives the same bits as summing up
      // to ctxP, for half the prompt's work.
      Value valuesEnd = causalEnd;
      if (kvPad > 1)
        valuesEnd = arith::MinUIOp::create(b, roundUp(causalEnd, kvPad), ctxP);
      else if (padded)
        valuesEnd = ctxP;
      Value rest = padded
                       ? arith::SubIOp::create(b, width, causalEnd).getResult()
                       : Value();
      nb.loop(nb.index(nh), [&](Value ih) {
        auto overContext = [&](function_ref<void(Value)> fn) {
          nb.loop(causalEnd, fn);
        };
        // 2. scores[h, t] = q[s, h] . K[t, h / group]
        {
          AffineMap qMap = nb.map(4, {s, h * hd + d});
          AffineMap kMap = nb.map(4, kAt(h.floorDiv(group), t, d));
          AffineMap scMap = nb.map(4, {h, t});
          overContext([&](Value it) {
            nb.loop(nb.index(hd), [&](Value id) {
              nb.block(
                  "attention_scores", {is, ih, it, id},
                  {IterKind::spatial, IterKind::spatial, IterKind::spatial,
                   IterKind::reduce},
                  {{q, qMap}, {cache, kMap}}, {{scores, scMap}},
                  [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                    Value p = arith::MulFOp::create(
                        b, nb.load(q, qMap, iv),
                        fromCache(b, nb.load(cache, kMap, iv)));
                    Value acc = nb.load(scores, scMap, iv);
                    nb.store(arith::AddFOp::create(b, acc, p), scores, scMap,
                             iv);
                  },
                  [&](ImplicitLocOpBuilder &, ValueRange iv) {
                    nb.store(nb.f32(0.0), scores, scMap, iv);
                  });
            });
          });
        }
        // 3. rowMax[s, h] = max_t scale * scores[h, t]
        overContext([&](Value it) {
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
                    b, b.getFloatAttr(f32,
                                      -std::numeric_limits<float>::infinity()));
                nb.store(negInf, rowMax, row3, iv);
              });
        });
        // 4. scores = exp(scale * scores - rowMax)
        overContext([&](Value it) {
          nb.block(
              "softmax_exp", {is, ih, it}, allSpatial3,
              {{scores, sc3}, {rowMax, row3}}, {{scores, sc3}},
              [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                Value x = arith::MulFOp::create(b, nb.load(scores, sc3, iv),
                                                nb.f32(scale));
                Value e = math::ExpOp::create(
                    b, arith::SubFOp::create(b, x, nb.load(rowMax, row3, iv)));
                nb.store(e, scores, sc3, iv);
              });
        });
        // 5. Past the row's causal end, zeros (padded rows only).
        if (padded) {
          nb.loop(rest, [&](Value ir) {
            Value it = arith::AddIOp::create(b, causalEnd, ir);
            nb.block("softmax_pad", {is, ih, it}, allSpatial3, {},
                     {{scores, sc3}},
                     [&](ImplicitLocOpBuilder &, ValueRange iv) {
                       nb.store(nb.f32(0.0), scores, sc3, iv);
                     });
          });
        }
        // 6. rowSum[s, h] = sum_t scores[h, t] in f64; with softmax runs,
        //    the sum in f64 of f32 sums of `runs` positions each.
        auto sumInit = [&](ImplicitLocOpBuilder &b, ValueRange iv) {
          nb.store(arith::ConstantOp::create(b, b.getF64FloatAttr(0.0)), rowSum,
                   row3, iv);
        };
        if (runs > 0) {
          AffineExpr c = nb.d(2), i = nb.d(3);
          AffineMap run4 = nb.map(4, {h, c}),
                    elem4 = nb.map(4, {h, c * runs + i});
          nb.nest({numRuns, nb.index(runs)}, [&](ValueRange ivs) {
            nb.block(
                "softmax_sum_run", {is, ih, ivs[0], ivs[1]},
                {IterKind::spatial, IterKind::spatial, IterKind::spatial,
                 IterKind::reduce},
                {{scores, elem4}}, {{runSum, run4}},
                [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                  nb.store(arith::AddFOp::create(b, nb.load(runSum, run4, iv),
                                                 nb.load(scores, elem4, iv)),
                           runSum, run4, iv);
                },
                [&](ImplicitLocOpBuilder &, ValueRange iv) {
                  nb.store(nb.f32(0.0), runSum, run4, iv);
                });
          });
          AffineMap runs3 = nb.map(3, {h, t});
          nb.loop(numRuns, [&](Value ic) {
            nb.block(
                "softmax_sum", {is, ih, ic}, rowReduce, {{runSum, runs3}},
                {{rowSum, row3}},
                [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                  Value e =
                      arith::ExtFOp::create(b, f64, nb.load(runSum, runs3, iv));
                  nb.store(
                      arith::AddFOp::create(b, nb.load(rowSum, row3, iv), e),
                      rowSum, row3, iv);
                },
                sumInit);
          });
        } else {
          overContext([&](Value it) {
            nb.block(
                "softmax_sum", {is, ih, it}, rowReduce, {{scores, sc3}},
                {{rowSum, row3}},
                [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                  Value acc = nb.load(rowSum, row3, iv);
                  Value e =
                      arith::ExtFOp::create(b, f64, nb.load(scores, sc3, iv));
                  nb.store(arith::AddFOp::create(b, acc, e), rowSum, row3, iv);
                },
                sumInit);
          });
        }
        // 7. inv = f32(1 / rowSum[s, h]); scores *= inv (rounded to the
        //    cache's type with round_to_cache, for p.V)
        AffineMap row2 = nb.map(2, {s, h});
        nb.block("softmax_inv", {is, ih},
                 {IterKind::spatial, IterKind::spatial}, {{rowSum, row2}},
                 {{rowInv, row2}}, [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                   Value inv = arith::DivFOp::create(
                       b, arith::ConstantOp::create(b, b.getF64FloatAttr(1.0)),
                       nb.load(rowSum, row2, iv));
                   nb.store(arith::TruncFOp::create(b, f32, inv), rowInv, row2,
                            iv);
                 });
        overContext([&](Value it) {
          nb.block("softmax_scale", {is, ih, it}, allSpatial3,
                   {{scores, sc3}, {rowInv, row3}}, {{scores, sc3}},
                   [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                     nb.store(rounded(b, arith::MulFOp::create(
                                             b, nb.load(scores, sc3, iv),
                                             nb.load(rowInv, row3, iv))),
                              scores, sc3, iv);
                   });
        });
        // 8. out[s, h*hd + d] = sum_t scores[h, t] V[d, t] (V transposed)
        AffineMap scMap = nb.map(4, {h, t});
        AffineMap vMap = nb.map(4, vAt(h.floorDiv(group), t, d));
        AffineMap outMap = nb.map(4, {s, h * hd + d});
        nb.loop(nb.index(hd), [&](Value id) {
          nb.loop(valuesEnd, [&](Value it) {
            nb.block(
                "attention_values", {is, ih, it, id},
                {IterKind::spatial, IterKind::spatial, IterKind::reduce,
                 IterKind::spatial},
                {{scores, scMap}, {cache, vMap}}, {{out, outMap}},
                [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                  Value pv = arith::MulFOp::create(
                      b, nb.load(scores, scMap, iv),
                      fromCache(b, nb.load(cache, vMap, iv)));
                  Value acc = nb.load(out, outMap, iv);
                  nb.store(arith::AddFOp::create(b, acc, pv), out, outMap, iv);
                },
                [&](ImplicitLocOpBuilder &, ValueRange iv) {
                  nb.store(nb.f32(0.0), out, outMap, iv);
                });
          });
        });
      });
    });
    rewriter.replaceOp(op, out);
    return success();
  }
};

} // namespace

void llmc::graph_to_tl::populateAttentionLoweringPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<AttentionLowering>(converter, patterns.getContext());
}
