//===- AttentionLowering.cpp - graph.attention to tl loop nests -----------===//
//
// The KV-cache stores, then one nest over (token, KV head) whose body
// computes the rows of the query heads that share the KV head (its GQA
// group). No [tokens, heads, context] buffer. Two forms:
//  - two passes (kv_tile = 0): q.k over the causal context into a scores
//    row of each head, the softmax, p.V; a row's scores stay in the cache
//    between its steps. The softmax sums its exponentials in f64 and scales
//    by the f32 rounding of 1 / sum, as ggml's soft_max does: the numerics
//    of llama.cpp without flash attention.
//  - online (kv_tile = T > 0, flash attention): the positions in tiles of
//    T, each tile's scores, then the row's running max, sum (f64) and
//    output rescaled by exp(old max - new max) before the tile's terms are
//    added; the output divided by the sum at the end. Only a tile's scores
//    exist at a time.
// The order of the rows and of every sum is the schedules' choice.
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
    int64_t kvTile = op.getKvTile();
    bool online = kvTile > 0;
    // A scores row per head (online: a tile's); per row (s, h) its max, the
    // f64 sum of its exponentials and the f32 rounding of 1 / sum.
    Value scores =
        online ? nb.alloc(MemRefType::get({nh, kvTile}, f32), {})
               : nb.alloc(MemRefType::get({nh, ShapedType::kDynamic}, f32),
                          {width});
    auto rowType = MemRefType::get({ShapedType::kDynamic, nh}, f32);
    Value rowMax = nb.alloc(rowType, {seq});
    Value rowInv = nb.alloc(rowType, {seq});
    Value rowSum = nb.alloc(
        MemRefType::get({ShapedType::kDynamic, nh}, b.getF64Type()), {seq});
    // Online, per row and tile: the tile's max, the factor exp(old max -
    // new max) that rescales what the earlier tiles summed, the tile's sum.
    Value tileMax, rescale, tileSum;
    if (online) {
      tileMax = nb.alloc(rowType, {seq});
      rescale = nb.alloc(rowType, {seq});
      tileSum = nb.alloc(rowType, {seq});
    }

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

    // One nest over the rows (token s, KV head kv), each iteration the rows
    // of the query heads h = kv * group + g that read that KV head: their
    // scores, softmax and p.V, through a scores row per head ([heads,
    // width]) that stays in the cache; no [tokens, heads, context] buffer.
    // Each block loops over the group itself (g, then its own loops), so a
    // schedule may share one read of the keys and values among the group's
    // heads. The order of the rows and their threads are the schedules'
    // choice. The numerics are those of the unfused softmax, in its order.
    AffineExpr s = nb.d(0), kv = nb.d(1), g = nb.d(2), x = nb.d(3), y = nb.d(4);
    AffineExpr hq = kv * group + g;
    SmallVector<IterKind> rowSpatial(3, IterKind::spatial);
    auto kinds = [&](std::initializer_list<IterKind> rest) {
      SmallVector<IterKind> k = rowSpatial;
      k.append(rest.begin(), rest.end());
      return k;
    };
    IterKind sp = IterKind::spatial, red = IterKind::reduce;
    // Maps of the blocks over (s, kv, g, position x): the scores row and the
    // row's statistics.
    AffineMap sc4 = nb.map(4, {hq, x}), row4 = nb.map(4, {s, hq});
    // Blocks over (s, kv, g, x, y): the scores row (or the runs' sums) at x.
    AffineMap sc5 = nb.map(5, {hq, x});
    // Like ggml's soft_max, the exponentials are summed in f64 and scaled by
    // the f32 rounding of 1 / sum.
    Type f64 = b.getF64Type();
    Value numRuns =
        runs > 0 ? arith::DivUIOp::create(b, width, nb.index(runs)) : Value();
    Value runSum =
        runs > 0 ? nb.alloc(MemRefType::get({nh, ShapedType::kDynamic}, f32),
                            {numRuns})
                 : Value();
    Value groupSize = nb.index(group);
    // acc[accMap] += lhs[lhsMap] * cache[cacheMap] (widened), from 0: q.k
    // and p.V.
    // With `accumulate`, no init: the sum adds to what acc holds (online
    // p.V, into the rescaled output); `round` rounds lhs (a probability) as
    // round_to_cache says.
    auto product = [&](StringRef name, ValueRange iters,
                       ArrayRef<IterKind> iterKinds, Value lhs,
                       AffineMap lhsMap, AffineMap cacheMap, Value acc,
                       AffineMap accMap, bool accumulate = false,
                       bool round = false) {
      auto zero = [&](ImplicitLocOpBuilder &, ValueRange iv) {
        nb.store(nb.f32(0.0), acc, accMap, iv);
      };
      nb.block(
          name, iters, iterKinds, {{lhs, lhsMap}, {cache, cacheMap}},
          {{acc, accMap}},
          [&](ImplicitLocOpBuilder &b, ValueRange iv) {
            Value l = nb.load(lhs, lhsMap, iv);
            Value p = arith::MulFOp::create(
                b, round ? rounded(b, l) : l,
                fromCache(b, nb.load(cache, cacheMap, iv)));
            Value sum = arith::AddFOp::create(b, nb.load(acc, accMap, iv), p);
            nb.store(sum, acc, accMap, iv);
          },
          accumulate ? NestBuilder::BodyFn() : NestBuilder::BodyFn(zero));
    };
    auto negInf = [&](ImplicitLocOpBuilder &b) -> Value {
      return arith::ConstantOp::create(
          b, b.getFloatAttr(f32, -std::numeric_limits<float>::infinity()));
    };
    auto f64Zero = [&](ImplicitLocOpBuilder &b) -> Value {
      return arith::ConstantOp::create(b, b.getF64FloatAttr(0.0));
    };
    // acc[accMap] = sum of src[srcMap] in f32, from 0.
    auto sumF32 = [&](StringRef name, ValueRange iters,
                      ArrayRef<IterKind> iterKinds, Value src, AffineMap srcMap,
                      Value acc, AffineMap accMap) {
      nb.block(
          name, iters, iterKinds, {{src, srcMap}}, {{acc, accMap}},
          [&](ImplicitLocOpBuilder &b, ValueRange iv) {
            nb.store(arith::AddFOp::create(b, nb.load(acc, accMap, iv),
                                           nb.load(src, srcMap, iv)),
                     acc, accMap, iv);
          },
          [&](ImplicitLocOpBuilder &, ValueRange iv) {
            nb.store(nb.f32(0.0), acc, accMap, iv);
          });
    };
    // rowInv = f32(1 / rowSum), at `row`.
    auto invBody = [&](AffineMap row) {
      return [&, row](ImplicitLocOpBuilder &b, ValueRange iv) {
        Value inv = arith::DivFOp::create(
            b, arith::ConstantOp::create(b, b.getF64FloatAttr(1.0)),
            nb.load(rowSum, row, iv));
        nb.store(arith::TruncFOp::create(b, f32, inv), rowInv, row, iv);
      };
    };
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
      nb.loop(nb.index(nkv), [&](Value ikv) {
        // A nest over the group's heads and then `ubs`; `fn` gets the
        // block's iteration values (s, kv, g, the nest's variables).
        // `lead`, values bound before the nest's variables (a tile's first
        // position).
        auto overGroup = [&](ArrayRef<Value> ubs,
                             function_ref<void(SmallVector<Value>)> fn,
                             ArrayRef<Value> lead = {}) {
          nb.loop(groupSize, [&](Value ig) {
            nb.nest(ubs, [&](ValueRange ivs) {
              SmallVector<Value> iters = {is, ikv, ig};
              iters.append(lead.begin(), lead.end());
              iters.append(ivs.begin(), ivs.end());
              fn(iters);
            });
          });
        };
        if (online) {
          // Per row: max -inf, sum 0, output 0.
          AffineMap row3 = nb.map(3, {s, hq});
          overGroup({}, [&](SmallVector<Value> iters) {
            nb.block("attention_init", iters, rowSpatial, {},
                     {{rowMax, row3}, {rowSum, row3}},
                     [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                       nb.store(negInf(b), rowMax, row3, iv);
                       nb.store(f64Zero(b), rowSum, row3, iv);
                     });
          });
          AffineMap out4 = nb.map(4, {s, hq * hd + x});
          // out[s, h*hd + d] *= factor[s, h]
          auto scaleOut = [&](StringRef name, Value factor) {
            overGroup({nb.index(hd)}, [&](SmallVector<Value> iters) {
              nb.block(
                  name, iters, kinds({sp}), {{out, out4}, {factor, row4}},
                  {{out, out4}}, [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                    nb.store(arith::MulFOp::create(b, nb.load(out, out4, iv),
                                                   nb.load(factor, row4, iv)),
                             out, out4, iv);
                  });
            });
          };
          overGroup({nb.index(hd)}, [&](SmallVector<Value> iters) {
            nb.block("attention_init_out", iters, kinds({sp}), {},
                     {{out, out4}}, [&](ImplicitLocOpBuilder &, ValueRange iv) {
                       nb.store(nb.f32(0.0), out, out4, iv);
                     });
          });
          // The tiles of positions [t0, t0 + T), t0 = 0, T, ... below the
          // causal end: q.k up to the causal end, p.V up to valuesEnd
          // (kv_tile is a multiple of kv_pad, so the tiles that hold the
          // causal context hold valuesEnd too).
          nb.loop(causalEnd, kvTile, [&](Value t0) {
            Value tile = nb.index(kvTile);
            Value nScores = arith::MinUIOp::create(
                b, arith::SubIOp::create(b, causalEnd, t0), tile);
            Value nValues = arith::MinUIOp::create(
                b, arith::SubIOp::create(b, valuesEnd, t0), tile);
            // Blocks over (s, kv, g, x) or (s, kv, g, t0, x, y).
            AffineExpr t = nb.d(3), tx = nb.d(4), ty = nb.d(5);
            AffineMap sc6 = nb.map(6, {hq, tx});
            // a. scores[h, x] = q[s, h] . K[t0 + x, kv]
            overGroup({nScores, nb.index(hd)},
                      [&](SmallVector<Value> iters) {
                        product("attention_scores", iters, kinds({sp, sp, red}),
                                q, nb.map(6, {s, hq * hd + ty}),
                                nb.map(6, kAt(kv, t + tx, ty)), scores, sc6);
                      },
                      {t0});
            // b. tileMax[s, h] = max_x scale * scores[h, x]
            overGroup({nScores}, [&](SmallVector<Value> iters) {
              nb.block(
                  "softmax_max", iters, kinds({red}), {{scores, sc4}},
                  {{tileMax, row4}},
                  [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                    Value v = arith::MulFOp::create(b, nb.load(scores, sc4, iv),
                                                    nb.f32(scale));
                    Value m = nb.load(tileMax, row4, iv);
                    nb.store(arith::MaxNumFOp::create(b, m, v), tileMax, row4,
                             iv);
                  },
                  [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                    nb.store(negInf(b), tileMax, row4, iv);
                  });
            });
            // c. the new max; rescale = exp(old max - new max) (0 at the
            //    first tile, whose old max is -inf)
            overGroup({}, [&](SmallVector<Value> iters) {
              nb.block("softmax_rescale_max", iters, rowSpatial,
                       {{rowMax, row3}, {tileMax, row3}},
                       {{rowMax, row3}, {rescale, row3}},
                       [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                         Value old = nb.load(rowMax, row3, iv);
                         Value m = arith::MaxNumFOp::create(
                             b, old, nb.load(tileMax, row3, iv));
                         nb.store(math::ExpOp::create(
                                      b, arith::SubFOp::create(b, old, m)),
                                  rescale, row3, iv);
                         nb.store(m, rowMax, row3, iv);
                       });
            });
            // d. scores = exp(scale * scores - max); zeros past the row's
            //    causal end (padded rows)
            overGroup({nScores}, [&](SmallVector<Value> iters) {
              nb.block("softmax_exp", iters, kinds({sp}),
                       {{scores, sc4}, {rowMax, row4}}, {{scores, sc4}},
                       [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                         Value v = arith::MulFOp::create(
                             b, nb.load(scores, sc4, iv), nb.f32(scale));
                         Value e = math::ExpOp::create(
                             b, arith::SubFOp::create(
                                    b, v, nb.load(rowMax, row4, iv)));
                         nb.store(e, scores, sc4, iv);
                       });
            });
            if (padded) {
              Value rest = arith::SubIOp::create(b, nValues, nScores);
              overGroup({rest}, [&](SmallVector<Value> iters) {
                iters[3] = arith::AddIOp::create(b, nScores, iters[3]);
                nb.block("softmax_pad", iters, kinds({sp}), {}, {{scores, sc4}},
                         [&](ImplicitLocOpBuilder &, ValueRange iv) {
                           nb.store(nb.f32(0.0), scores, sc4, iv);
                         });
              });
            }
            // e. tileSum[s, h] = sum_x scores[h, x] (f32);
            //    sum = sum * rescale + tileSum (f64)
            overGroup({nScores}, [&](SmallVector<Value> iters) {
              sumF32("softmax_sum", iters, kinds({red}), scores, sc4, tileSum,
                     row4);
            });
            overGroup({}, [&](SmallVector<Value> iters) {
              nb.block(
                  "softmax_rescale_sum", iters, rowSpatial,
                  {{rowSum, row3}, {rescale, row3}, {tileSum, row3}},
                  {{rowSum, row3}},
                  [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                    auto wide = [&](Value buffer) -> Value {
                      return arith::ExtFOp::create(b, f64,
                                                   nb.load(buffer, row3, iv));
                    };
                    Value scaled = arith::MulFOp::create(
                        b, nb.load(rowSum, row3, iv), wide(rescale));
                    nb.store(arith::AddFOp::create(b, scaled, wide(tileSum)),
                             rowSum, row3, iv);
                  });
            });
            // f. out *= rescale; out[s, h*hd + d] += sum_x scores[h, x]
            //    V[d, t0 + x] (the block's variables (s, kv, g, t0, x, d),
            //    its loops (g, d, x))
            scaleOut("attention_rescale", rescale);
            overGroup({nb.index(hd), nValues},
                      [&](SmallVector<Value> iters) {
                        std::swap(iters[4], iters[5]);
                        product("attention_values", iters, kinds({sp, red, sp}),
                                scores, sc6, nb.map(6, vAt(kv, t + tx, ty)),
                                out, nb.map(6, {s, hq * hd + ty}),
                                /*accumulate=*/true,
                                /*round=*/true);
                      },
                      {t0});
          });
          // g. out *= f32(1 / sum)
          overGroup({}, [&](SmallVector<Value> iters) {
            nb.block("softmax_inv", iters, rowSpatial, {{rowSum, row3}},
                     {{rowInv, row3}}, invBody(row3));
          });
          scaleOut("attention_normalize", rowInv);
          return;
        }
        // 2. scores[h, t] = q[s, h] . K[t, kv]
        {
          AffineMap qMap = nb.map(5, {s, hq * hd + y});
          AffineMap kMap = nb.map(5, kAt(kv, x, y));
          overGroup({causalEnd, nb.index(hd)}, [&](SmallVector<Value> iters) {
            product("attention_scores", iters, kinds({sp, red}), q, qMap, kMap,
                    scores, sc5);
          });
        }
        // 3. rowMax[s, h] = max_t scale * scores[h, t]
        overGroup({causalEnd}, [&](SmallVector<Value> iters) {
          nb.block(
              "softmax_max", iters, kinds({red}), {{scores, sc4}},
              {{rowMax, row4}},
              [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                Value v = arith::MulFOp::create(b, nb.load(scores, sc4, iv),
                                                nb.f32(scale));
                Value m = nb.load(rowMax, row4, iv);
                nb.store(arith::MaxNumFOp::create(b, m, v), rowMax, row4, iv);
              },
              [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                nb.store(negInf(b), rowMax, row4, iv);
              });
        });
        // 4. scores = exp(scale * scores - rowMax)
        overGroup({causalEnd}, [&](SmallVector<Value> iters) {
          nb.block(
              "softmax_exp", iters, kinds({sp}),
              {{scores, sc4}, {rowMax, row4}}, {{scores, sc4}},
              [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                Value v = arith::MulFOp::create(b, nb.load(scores, sc4, iv),
                                                nb.f32(scale));
                Value e = math::ExpOp::create(
                    b, arith::SubFOp::create(b, v, nb.load(rowMax, row4, iv)));
                nb.store(e, scores, sc4, iv);
              });
        });
        // 5. Past the row's causal end, zeros (padded rows only).
        if (padded) {
          overGroup({rest}, [&](SmallVector<Value> iters) {
            iters[3] = arith::AddIOp::create(b, causalEnd, iters[3]);
            nb.block("softmax_pad", iters, kinds({sp}), {}, {{scores, sc4}},
                     [&](ImplicitLocOpBuilder &, ValueRange iv) {
                       nb.store(nb.f32(0.0), scores, sc4, iv);
                     });
          });
        }
        // 6. rowSum[s, h] = sum_t scores[h, t] in f64; with softmax runs,
        //    the sum in f64 of f32 sums of `runs` positions each.
        auto sumInit = [&](ImplicitLocOpBuilder &b, ValueRange iv) {
          nb.store(f64Zero(b), rowSum, row4, iv);
        };
        auto addF64 = [&](Value buffer, AffineMap map) {
          return [&, buffer, map](ImplicitLocOpBuilder &b, ValueRange iv) {
            Value e = arith::ExtFOp::create(b, f64, nb.load(buffer, map, iv));
            nb.store(arith::AddFOp::create(b, nb.load(rowSum, row4, iv), e),
                     rowSum, row4, iv);
          };
        };
        if (runs > 0) {
          AffineMap elem5 = nb.map(5, {hq, x * runs + y});
          overGroup({numRuns, nb.index(runs)}, [&](SmallVector<Value> iters) {
            sumF32("softmax_sum_run", iters, kinds({sp, red}), scores, elem5,
                   runSum, sc5);
          });
          overGroup({numRuns}, [&](SmallVector<Value> iters) {
            nb.block("softmax_sum", iters, kinds({red}), {{runSum, sc4}},
                     {{rowSum, row4}}, addF64(runSum, sc4), sumInit);
          });
        } else {
          overGroup({causalEnd}, [&](SmallVector<Value> iters) {
            nb.block("softmax_sum", iters, kinds({red}), {{scores, sc4}},
                     {{rowSum, row4}}, addF64(scores, sc4), sumInit);
          });
        }
        // 7. inv = f32(1 / rowSum[s, h]); scores *= inv (rounded to the
        //    cache's type with round_to_cache, for p.V)
        AffineMap row3 = nb.map(3, {s, hq});
        overGroup({}, [&](SmallVector<Value> iters) {
          nb.block("softmax_inv", iters, rowSpatial, {{rowSum, row3}},
                   {{rowInv, row3}}, invBody(row3));
        });
        overGroup({causalEnd}, [&](SmallVector<Value> iters) {
          nb.block("softmax_scale", iters, kinds({sp}),
                   {{scores, sc4}, {rowInv, row4}}, {{scores, sc4}},
                   [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                     nb.store(rounded(b, arith::MulFOp::create(
                                             b, nb.load(scores, sc4, iv),
                                             nb.load(rowInv, row4, iv))),
                              scores, sc4, iv);
                   });
        });
        // 8. out[s, h*hd + d] = sum_t scores[h, t] V[d, t] (V transposed);
        //    the block's variables (s, kv, g, t, d), its loops (g, d, t).
        AffineMap vMap = nb.map(5, vAt(kv, x, y));
        AffineMap outMap = nb.map(5, {s, hq * hd + y});
        overGroup({nb.index(hd), valuesEnd}, [&](SmallVector<Value> iters) {
          std::swap(iters[3], iters[4]);
          product("attention_values", iters, kinds({red, sp}), scores, sc5,
                  vMap, out, outMap);
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
