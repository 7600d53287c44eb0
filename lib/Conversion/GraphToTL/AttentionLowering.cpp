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
// With q_tile, the nest is over (query tile, KV head) for a prompt's whole
// tiles of rows, which read the keys and values together (each row's
// softmax over its own causal positions, zero probabilities after them),
// and over (token, KV head) for the rows after them and a decode step.
// The order of the rows and of every sum is the schedules' choice.
//
//===----------------------------------------------------------------------===//
#include "LoweringUtils.h"

#include <limits>
#include <numeric>

using namespace llmc::graph_to_tl;

namespace {

/// Keys by dim: q.k's positions per tile rounded up to a multiple of this.
constexpr int64_t kQKGroup = 64;

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
    auto cacheType = cast<KVCacheType>(op.getCache().getType());
    int64_t maxSeq = cacheType.getMaxSeq();
    bool valuesByPosition = cacheType.getValuesByPosition();
    bool keysByDim = cacheType.getKeysByDim();
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
    int64_t kvTile = op.getKvTile(), numParts = op.getKvSplits();
    int64_t qTile = op.getQTile();
    bool online = kvTile > 0, split = numParts > 1;
    // Per part, its heads' state (max, sum, ...) a cache line's multiple
    // apart (16 f32, 8 f64 a line) where parts may run on threads of their
    // own.
    int64_t partRows = split ? llvm::alignTo(nh, 16) : nh;
    // Split: a call of one token splits each row's positions into
    // numParts parts, a longer one takes one.
    // (Index arithmetic, which a GPU's dispatch program evaluates for the
    // grid: 2 - min(seq, 2) is 1 for one token, else 0.)
    Value parts;
    if (split) {
      Value single = arith::SubIOp::create(
          b, nb.index(2), arith::MinUIOp::create(b, seq, nb.index(2)));
      parts = arith::AddIOp::create(
          b, nb.index(1),
          arith::MulIOp::create(b, single, nb.index(numParts - 1)));
    }
    // A scores row per head (online: a tile's per part); per row (s, h) its
    // max, the f64 sum of its exponentials and the f32 rounding of 1 / sum.
    // Online, row s + p for token s and part p (a prompt has a row per
    // token, a decode step one per part): the per-row state's rows, and with
    // row_tiles the tiles' (else one tile per part, reused row after row).
    bool rowTiles = online && op.getRowTiles();
    Value rows =
        split
            ? arith::AddIOp::create(b, seq, nb.index(numParts - 1)).getResult()
            : seq;
    Value scores =
        rowTiles
            ? nb.alloc(MemRefType::get({ShapedType::kDynamic, nh, kvTile}, f32),
                       {rows})
        : online
            ? nb.alloc(MemRefType::get({numParts + qTile - 1, nh, kvTile}, f32),
                       {})
        : qTile > 1
            ? nb.alloc(MemRefType::get({qTile, nh, ShapedType::kDynamic}, f32),
                       {width})
            : nb.alloc(MemRefType::get({nh, ShapedType::kDynamic}, f32),
                       {width});
    auto rowType = MemRefType::get({ShapedType::kDynamic, nh}, f32);
    Value rowMax, rowSum;
    Value rowInv = nb.alloc(rowType, {seq});
    if (!online || split) {
      rowMax = nb.alloc(rowType, {seq});
      rowSum = nb.alloc(
          MemRefType::get({ShapedType::kDynamic, nh}, b.getF64Type()), {seq});
    }
    // Online, per token s and part p (row s + p: a prompt takes one part, a
    // decode step has one token), by head: the part's max and sum, the
    // tile's max, the factor exp(old max - new max) that rescales what the
    // earlier tiles summed (merging: the part's weight), the tile's sum;
    // split, each part's output.
    Value partMax, partSum, tileMax, rescale, tileSum, partOut;
    if (online) {
      auto partBuffer = [&](Type element, int64_t row) {
        return nb.alloc(MemRefType::get({ShapedType::kDynamic, row}, element),
                        {rows});
      };
      partMax = partBuffer(f32, partRows);
      partSum = partBuffer(b.getF64Type(), partRows);
      tileMax = partBuffer(f32, partRows);
      rescale = partBuffer(f32, partRows);
      tileSum = partBuffer(f32, partRows);
      if (split)
        partOut = partBuffer(f32, nh * hd);
    }

    // llmc/abi.h's layout: per layer and KV head, keys as [position][dim]
    // or, keys_by_dim, transposed as [dim][position]; values transposed as
    // [dim][position] (or in blocks of positions) or, values_by_position, as
    // [position][dim].
    auto kAt = [&](AffineExpr kvh, AffineExpr pos, AffineExpr dim) {
      if (keysByDim)
        return SmallVector<AffineExpr>{nb.c(0), kvh, dim * maxSeq + pos};
      return SmallVector<AffineExpr>{nb.c(0), kvh, pos * hd + dim};
    };
    // (values_block B: transposed in blocks of B positions,
    // [position / B][dim][B].)
    int64_t valuesBlock = cacheType.getValuesBlock();
    auto vAt = [&](AffineExpr kvh, AffineExpr pos, AffineExpr dim) {
      if (valuesByPosition)
        return SmallVector<AffineExpr>{nb.c(1), kvh, pos * hd + dim};
      if (valuesBlock > 0)
        return SmallVector<AffineExpr>{
            nb.c(1), kvh,
            pos.floorDiv(valuesBlock) * (valuesBlock * hd) + dim * valuesBlock +
                pos % valuesBlock};
      return SmallVector<AffineExpr>{nb.c(1), kvh, dim * maxSeq + pos};
    };

    // 1. Store this call's keys and values at positions pos0 + s: one nest
    //    each (the keys' stores run along the head dim; the values'
    //    transposed along the positions, which a schedule may put in lanes
    //    apart).
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

    // One nest over the rows (token s, or query tile, and KV head kv), each
    // iteration the rows of the query heads h = kv * group + g that read
    // that KV head (of each token of the tile): their
    // scores, softmax and p.V, through a scores row per head ([heads,
    // width]) that stays in the cache, or online through a tile's scores
    // (and with parts, the parts' states merged after them); no [tokens,
    // heads, context] buffer. Each block loops over the group itself (g,
    // then its own loops), so a schedule may share one read of the keys and
    // values among the group's heads. The order of the rows and their
    // threads are the schedules' choice. Two passes, the numerics are those
    // of the unfused softmax, in its order. Online, a block's tile (its
    // first position) is a spatial variable although every tile adds into
    // the same row state: the loop over the tiles holds several nests, so
    // no rule for one block moves it, and the threads never take it (its
    // iterations write the same elements).
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
    // (Two passes with q_tile: a scores row per row of the query tile, row
    // s's at s mod q_tile.)
    auto scoresAt = [&](unsigned n, AffineExpr col) {
      if (!online && qTile > 1)
        return nb.map(n, {s % qTile, hq, col});
      return nb.map(n, {hq, col});
    };
    AffineMap sc4 = scoresAt(4, x), row4 = nb.map(4, {s, hq});
    // Blocks over (s, kv, g, x, y): the scores row (or the runs' sums) at x.
    AffineMap sc5 = scoresAt(5, x);
    // Like ggml's soft_max, the exponentials are summed in f64 and scaled by
    // the f32 rounding of 1 / sum.
    Type f64 = b.getF64Type();
    Value numRuns =
        runs > 0 ? arith::DivUIOp::create(b, width, nb.index(runs)) : Value();
    Value runSum =
        runs == 0 ? Value()
        : qTile > 1
            ? nb.alloc(MemRefType::get({qTile, nh, ShapedType::kDynamic}, f32),
                       {numRuns})
            : nb.alloc(MemRefType::get({nh, ShapedType::kDynamic}, f32),
                       {numRuns});
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
    auto lowest = [&](ImplicitLocOpBuilder &b) -> Value {
      return arith::ConstantOp::create(
          b, b.getFloatAttr(f32, std::numeric_limits<float>::lowest()));
    };
    auto f64Zero = [&](ImplicitLocOpBuilder &b) -> Value {
      return arith::ConstantOp::create(b, b.getF64FloatAttr(0.0));
    };
    // "softmax_max": max[maxMap] = max of scale * scores[scMap], from -inf.
    auto scaledMax = [&](ValueRange iters, ArrayRef<IterKind> iterKinds,
                         AffineMap scMap, Value max, AffineMap maxMap) {
      nb.block(
          "softmax_max", iters, iterKinds, {{scores, scMap}}, {{max, maxMap}},
          [&](ImplicitLocOpBuilder &b, ValueRange iv) {
            Value v = arith::MulFOp::create(b, nb.load(scores, scMap, iv),
                                            nb.f32(scale));
            Value m = nb.load(max, maxMap, iv);
            nb.store(arith::MaxNumFOp::create(b, m, v), max, maxMap, iv);
          },
          [&](ImplicitLocOpBuilder &b, ValueRange iv) {
            nb.store(negInf(b), max, maxMap, iv);
          });
    };
    // "softmax_exp": scores[scMap] = exp(scale * scores[scMap] -
    // max[maxMap]).
    auto scaledExp = [&](ValueRange iters, ArrayRef<IterKind> iterKinds,
                         AffineMap scMap, Value max, AffineMap maxMap) {
      nb.block("softmax_exp", iters, iterKinds,
               {{scores, scMap}, {max, maxMap}}, {{scores, scMap}},
               [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                 Value v = arith::MulFOp::create(b, nb.load(scores, scMap, iv),
                                                 nb.f32(scale));
                 Value e = math::ExpOp::create(
                     b, arith::SubFOp::create(b, v, nb.load(max, maxMap, iv)));
                 nb.store(e, scores, scMap, iv);
               });
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
    // rowInv[invMap] = f32(1 / sum[sumMap]).
    auto invBody = [&](Value sum, AffineMap sumMap, AffineMap invMap) {
      return [&, sum, sumMap, invMap](ImplicitLocOpBuilder &b, ValueRange iv) {
        Value inv = arith::DivFOp::create(
            b, arith::ConstantOp::create(b, b.getF64FloatAttr(1.0)),
            nb.load(sum, sumMap, iv));
        nb.store(arith::TruncFOp::create(b, f32, inv), rowInv, invMap, iv);
      };
    };
    // The nest of `count` rows from token `first` (a query tile of q_tile
    // tokens, else one token) and KV head `ikv`. A query tile's rows share
    // each read of the keys and values: q.k and p.V over the positions up
    // to the causal end of its last row for every row (online, in tiles of
    // kv_tile positions), the max, exponentials and sum of each row over its
    // own causal positions and its probabilities zero after them (+0
    // products, so each row's sums are those it would add alone).
    auto emitRows = [&](Value first, int64_t count, Value ikv) {
      // The causal end of the last row: one row's own, or the tile's.
      Value causalEnd = arith::AddIOp::create(
          b, arith::AddIOp::create(b, pos0, first), nb.index(count));
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
      // The rows, each around the group's heads and then `ubsOf(s)` (the
      // nest's extents for row s); `fn` gets the block's iteration values
      // (s, kv, g, the nest's variables). `lead`, values bound before the
      // nest's variables (a tile's first position).
      auto overGroupRows = [&](function_ref<SmallVector<Value>(Value)> ubsOf,
                               function_ref<void(SmallVector<Value>)> fn,
                               ArrayRef<Value> lead = {}) {
        auto row = [&](Value s) {
          SmallVector<Value> ubs = ubsOf(s);
          nb.loop(groupSize, [&](Value ig) {
            nb.nest(ubs, [&](ValueRange ivs) {
              SmallVector<Value> iters = {s, ikv, ig};
              iters.append(lead.begin(), lead.end());
              iters.append(ivs.begin(), ivs.end());
              fn(iters);
            });
          });
        };
        if (count == 1)
          return row(first);
        nb.loop(nb.index(count),
                [&](Value ir) { row(arith::AddIOp::create(b, first, ir)); });
      };
      auto overGroup = [&](ArrayRef<Value> ubs,
                           function_ref<void(SmallVector<Value>)> fn,
                           ArrayRef<Value> lead = {}) {
        overGroupRows([&](Value) { return SmallVector<Value>(ubs); }, fn, lead);
      };
      // Row s's causal end (each row's own softmax runs up to it).
      auto rowEnd = [&](Value s) -> SmallVector<Value> {
        if (count == 1)
          return {causalEnd};
        return {arith::AddIOp::create(b, arith::AddIOp::create(b, pos0, s),
                                      nb.index(1))};
      };
      if (!online) {
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
        overGroupRows(rowEnd, [&](SmallVector<Value> iters) {
          scaledMax(iters, kinds({red}), sc4, rowMax, row4);
        });
        // 4. scores = exp(scale * scores - rowMax)
        overGroupRows(rowEnd, [&](SmallVector<Value> iters) {
          scaledExp(iters, kinds({sp}), sc4, rowMax, row4);
        });
        // 5. Past the row's causal end, zeros (padded rows only).
        if (padded) {
          Value end;
          auto rest = [&](Value s) -> SmallVector<Value> {
            end = rowEnd(s)[0];
            return {arith::SubIOp::create(b, width, end)};
          };
          overGroupRows(rest, [&](SmallVector<Value> iters) {
            iters[3] = arith::AddIOp::create(b, end, iters[3]);
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
          AffineMap elem5 = scoresAt(5, x * runs + y);
          overGroup({numRuns, nb.index(runs)}, [&](SmallVector<Value> iters) {
            sumF32("softmax_sum_run", iters, kinds({sp, red}), scores, elem5,
                   runSum, sc5);
          });
          overGroup({numRuns}, [&](SmallVector<Value> iters) {
            nb.block("softmax_sum", iters, kinds({red}), {{runSum, sc4}},
                     {{rowSum, row4}}, addF64(runSum, sc4), sumInit);
          });
        } else {
          overGroupRows(rowEnd, [&](SmallVector<Value> iters) {
            nb.block("softmax_sum", iters, kinds({red}), {{scores, sc4}},
                     {{rowSum, row4}}, addF64(scores, sc4), sumInit);
          });
        }
        // 7. inv = f32(1 / rowSum[s, h]); scores *= inv (rounded to the
        //    cache's type with round_to_cache, for p.V)
        AffineMap row3 = nb.map(3, {s, hq});
        overGroup({}, [&](SmallVector<Value> iters) {
          nb.block("softmax_inv", iters, rowSpatial, {{rowSum, row3}},
                   {{rowInv, row3}}, invBody(rowSum, row3, row3));
        });
        overGroupRows(rowEnd, [&](SmallVector<Value> iters) {
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
        return;
      }
      // Blocks over (s, kv, g, p, ...): p the part of the row's
      // positions (0 but in a split decode step), whose running max,
      // sum and output are the part's own: at [s + p][h].
      AffineExpr p = nb.d(3);
      auto stateAt = [&](unsigned n) { return nb.map(n, {s + p, hq}); };
      // The output being summed: out, or with parts the part's own.
      auto accAt = [&](unsigned n, AffineExpr d) {
        return split ? nb.map(n, {s + p, hq * hd + d})
                     : nb.map(n, {s, hq * hd + d});
      };
      Value acc = split ? partOut : out;
      // The part's positions: [lo, end) for q.k, [lo, endV) for p.V
      // (at most up to valuesEnd), parts of roundUp(ceil(causalEnd /
      // parts), lcm(kv_pad, 16)) positions: p.V's lanes (a divisor of
      // kv_pad) whole in every part, no remainder summed position by
      // position (a short context takes fewer parts). (Divided by the
      // constant: a division by a value is not speculatable, and would
      // pin the loops the schedules move.)
      Value c;
      if (split) {
        // (Compared here, in the nest: a kernel takes the token count,
        // not a condition.)
        Value oneToken = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, seq,
                                               nb.index(1));
        Value share = arith::SelectOp::create(
            b, oneToken,
            arith::DivUIOp::create(
                b, arith::AddIOp::create(b, causalEnd, nb.index(numParts - 1)),
                nb.index(numParts)),
            causalEnd);
        c = roundUp(share, std::lcm<int64_t>(kvPad, 16));
      }
      auto part = [&](Value ip) {
        Value lo, end = causalEnd, endV = valuesEnd;
        if (split) {
          lo = arith::MulIOp::create(b, ip, c);
          Value hi = arith::AddIOp::create(b, lo, c);
          end = arith::MinUIOp::create(b, hi, causalEnd);
          endV = arith::MinUIOp::create(b, hi, valuesEnd);
        }
        // The part's max the lowest finite f32 (not -inf: a tile whose
        // scaled scores are all -inf then keeps it, its exponentials 0,
        // where exp(-inf - -inf) would be NaN), sum 0, output 0.
        AffineMap st4 = stateAt(4), st5 = stateAt(5);
        overGroup({},
                  [&](SmallVector<Value> iters) {
                    nb.block("attention_init", iters, kinds({sp}), {},
                             {{partMax, st4}, {partSum, st4}},
                             [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                               nb.store(lowest(b), partMax, st4, iv);
                               nb.store(f64Zero(b), partSum, st4, iv);
                             });
                  },
                  {ip});
        // acc[s, h*hd + d] *= factor[s, h]
        auto scaleAcc = [&](StringRef name, Value factor) {
          AffineMap a5 = accAt(5, nb.d(4));
          overGroup({nb.index(hd)},
                    [&](SmallVector<Value> iters) {
                      nb.block(name, iters, kinds({sp, sp}),
                               {{acc, a5}, {factor, st5}}, {{acc, a5}},
                               [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                                 nb.store(arith::MulFOp::create(
                                              b, nb.load(acc, a5, iv),
                                              nb.load(factor, st5, iv)),
                                          acc, a5, iv);
                               });
                    },
                    {ip});
        };
        {
          AffineMap a5 = accAt(5, nb.d(4));
          overGroup({nb.index(hd)},
                    [&](SmallVector<Value> iters) {
                      nb.block("attention_init_out", iters, kinds({sp, sp}), {},
                               {{acc, a5}},
                               [&](ImplicitLocOpBuilder &, ValueRange iv) {
                                 nb.store(nb.f32(0.0), acc, a5, iv);
                               });
                    },
                    {ip});
        }
        // The tiles [t0, t0 + T) of the part, t0 = lo, lo + T, ... <
        // end (none when lo >= end): q.k up to end, p.V up to endV
        // (kv_tile is a multiple of kv_pad, so the tiles that hold the
        // causal context hold valuesEnd too).
        auto tiles = [&](Value base) {
          Value tile = nb.index(kvTile);
          Value nScores = arith::MinUIOp::create(
              b, arith::SubIOp::create(b, end, base), tile);
          Value nValues = arith::MinUIOp::create(
              b, arith::SubIOp::create(b, endV, base), tile);
          // Row s's positions in the tile: the tile's, or in a query tile
          // those before its causal end (none when it ends before the
          // tile).
          auto rowScores = [&](Value s) -> SmallVector<Value> {
            if (count == 1)
              return {nScores};
            Value left = arith::SubIOp::create(b, rowEnd(s)[0], base);
            Value clamped = arith::MaxSIOp::create(b, left, nb.index(0));
            return {arith::MinUIOp::create(b, clamped, nScores)};
          };
          // Blocks over (s, kv, g, p, x) or (s, kv, g, p, base, x, y).
          AffineExpr px = nb.d(4), t = nb.d(4), tx = nb.d(5), ty = nb.d(6);
          // (A query tile's rows: a scores tile each, s mod q_tile.)
          AffineExpr tileRow = rowTiles ? s + p : qTile > 1 ? p + s % qTile : p;
          AffineMap sc5 = nb.map(5, {tileRow, hq, px}),
                    sc7 = nb.map(7, {tileRow, hq, tx});
          // a. scores[h, x] = q[s, h] . K[base + x, kv]; keys by dim,
          //    for the positions up to a multiple of kQKGroup (at most
          //    the tile and the cache's end): whole vectors of
          //    positions for any CPU's lanes and their register tiles,
          //    no remainder position by position. The extra positions'
          //    keys are finite (stored by an earlier step or zero) and
          //    their scores, past nScores, are never read.
          Value nQK = nScores;
          if (keysByDim)
            nQK = arith::MinUIOp::create(
                b, arith::MinUIOp::create(b, roundUp(nScores, kQKGroup), tile),
                arith::SubIOp::create(b, nb.index(maxSeq), base));
          overGroup({nQK, nb.index(hd)},
                    [&](SmallVector<Value> iters) {
                      product("attention_scores", iters,
                              kinds({sp, sp, sp, red}), q,
                              nb.map(7, {s, hq * hd + ty}),
                              nb.map(7, kAt(kv, t + tx, ty)), scores, sc7);
                    },
                    {ip, base});
          // b. tileMax[s, h] = max_x scale * scores[h, x]
          overGroupRows(rowScores,
                        [&](SmallVector<Value> iters) {
                          scaledMax(iters, kinds({sp, red}), sc5, tileMax, st5);
                        },
                        {ip});
          // c. the new max; rescale = exp(old max - new max) (0 at the
          //    first tile, whose old max is the lowest f32)
          overGroup({},
                    [&](SmallVector<Value> iters) {
                      nb.block("softmax_rescale_max", iters, kinds({sp}),
                               {{partMax, st4}, {tileMax, st4}},
                               {{partMax, st4}, {rescale, st4}},
                               [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                                 Value old = nb.load(partMax, st4, iv);
                                 Value m = arith::MaxNumFOp::create(
                                     b, old, nb.load(tileMax, st4, iv));
                                 nb.store(
                                     math::ExpOp::create(
                                         b, arith::SubFOp::create(b, old, m)),
                                     rescale, st4, iv);
                                 nb.store(m, partMax, st4, iv);
                               });
                    },
                    {ip});
          // d. scores = exp(scale * scores - max); zeros past the row's
          //    causal end (padded rows)
          overGroupRows(rowScores,
                        [&](SmallVector<Value> iters) {
                          scaledExp(iters, kinds({sp, sp}), sc5, partMax, st5);
                        },
                        {ip});
          if (padded || count > 1) {
            // (Zeros from the row's last causal position to the tile's
            // values: the padding, or a query tile's later rows' positions.)
            Value end;
            overGroupRows(
                [&](Value s) {
                  end = rowScores(s)[0];
                  return SmallVector<Value>{
                      arith::SubIOp::create(b, nValues, end)};
                },
                [&](SmallVector<Value> iters) {
                  iters[4] = arith::AddIOp::create(b, end, iters[4]);
                  nb.block("softmax_pad", iters, kinds({sp, sp}), {},
                           {{scores, sc5}},
                           [&](ImplicitLocOpBuilder &, ValueRange iv) {
                             nb.store(nb.f32(0.0), scores, sc5, iv);
                           });
                },
                {ip});
          }
          // e. tileSum[s, h] = sum_x scores[h, x] (f32);
          //    sum = sum * rescale + tileSum (f64)
          overGroupRows(rowScores,
                        [&](SmallVector<Value> iters) {
                          sumF32("softmax_sum", iters, kinds({sp, red}), scores,
                                 sc5, tileSum, st5);
                        },
                        {ip});
          overGroup(
              {},
              [&](SmallVector<Value> iters) {
                nb.block(
                    "softmax_rescale_sum", iters, kinds({sp}),
                    {{partSum, st4}, {rescale, st4}, {tileSum, st4}},
                    {{partSum, st4}},
                    [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                      auto wide = [&](Value buffer) -> Value {
                        return arith::ExtFOp::create(b, f64,
                                                     nb.load(buffer, st4, iv));
                      };
                      Value scaled = arith::MulFOp::create(
                          b, nb.load(partSum, st4, iv), wide(rescale));
                      nb.store(arith::AddFOp::create(b, scaled, wide(tileSum)),
                               partSum, st4, iv);
                    });
              },
              {ip});
          // f. acc *= rescale; acc[s, h*hd + d] += sum_x scores[h, x]
          //    V[d, base + x] (the block's variables (s, kv, g, p, base,
          //    x, d), its loops (g, d, x); values by position, the loops
          //    follow the cache: (g, x, d))
          scaleAcc("attention_rescale", rescale);
          Value dims = nb.index(hd);
          overGroup(valuesByPosition ? SmallVector<Value>{nValues, dims}
                                     : SmallVector<Value>{dims, nValues},
                    [&](SmallVector<Value> iters) {
                      if (!valuesByPosition)
                        std::swap(iters[5], iters[6]);
                      product("attention_values", iters,
                              kinds({sp, sp, red, sp}), scores, sc7,
                              nb.map(7, vAt(kv, t + tx, ty)), acc, accAt(7, ty),
                              /*accumulate=*/true, /*round=*/true);
                    },
                    {ip, base});
        };
        nb.loop(end, kvTile, tiles, lo);
      };
      if (split)
        nb.loop(parts, part);
      else
        part(nb.index(0));
      // g. Merged: the largest max M, each part's weight exp(max - M)
      //    (0 for an empty part), the sum and output of the weighted
      //    parts'.
      AffineMap row3 = nb.map(3, {s, hq});
      if (split) {
        AffineMap st4 = stateAt(4);
        overGroup({parts}, [&](SmallVector<Value> iters) {
          nb.block(
              "attention_merge_max", iters, kinds({red}), {{partMax, st4}},
              {{rowMax, row4}},
              [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                nb.store(arith::MaxNumFOp::create(b, nb.load(rowMax, row4, iv),
                                                  nb.load(partMax, st4, iv)),
                         rowMax, row4, iv);
              },
              [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                nb.store(negInf(b), rowMax, row4, iv);
              });
        });
        overGroup({parts}, [&](SmallVector<Value> iters) {
          nb.block("attention_merge_weight", iters, kinds({sp}),
                   {{partMax, st4}, {rowMax, row4}}, {{rescale, st4}},
                   [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                     nb.store(math::ExpOp::create(
                                  b, arith::SubFOp::create(
                                         b, nb.load(partMax, st4, iv),
                                         nb.load(rowMax, row4, iv))),
                              rescale, st4, iv);
                   });
        });
        overGroup({parts}, [&](SmallVector<Value> iters) {
          nb.block(
              "attention_merge_sum", iters, kinds({red}),
              {{partSum, st4}, {rescale, st4}}, {{rowSum, row4}},
              [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                Value w =
                    arith::ExtFOp::create(b, f64, nb.load(rescale, st4, iv));
                Value t =
                    arith::MulFOp::create(b, nb.load(partSum, st4, iv), w);
                nb.store(arith::AddFOp::create(b, nb.load(rowSum, row4, iv), t),
                         rowSum, row4, iv);
              },
              [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                nb.store(f64Zero(b), rowSum, row4, iv);
              });
        });
        // out[s, h*hd + d] = sum_p partOut[p][...] * weight[p], the
        // block's variables (s, kv, g, p, d), its loops (g, d, p).
        AffineMap part5 = accAt(5, nb.d(4)), w5 = stateAt(5);
        AffineMap out5 = nb.map(5, {s, hq * hd + nb.d(4)});
        overGroup({nb.index(hd), parts}, [&](SmallVector<Value> iters) {
          std::swap(iters[3], iters[4]);
          nb.block(
              "attention_merge_out", iters, kinds({red, sp}),
              {{partOut, part5}, {rescale, w5}}, {{out, out5}},
              [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                Value t = arith::MulFOp::create(b, nb.load(partOut, part5, iv),
                                                nb.load(rescale, w5, iv));
                nb.store(arith::AddFOp::create(b, nb.load(out, out5, iv), t),
                         out, out5, iv);
              },
              [&](ImplicitLocOpBuilder &, ValueRange iv) {
                nb.store(nb.f32(0.0), out, out5, iv);
              });
        });
      }
      // h. out *= f32(1 / sum)
      overGroup({}, [&](SmallVector<Value> iters) {
        if (split)
          return nb.block("softmax_inv", iters, rowSpatial, {{rowSum, row3}},
                          {{rowInv, row3}}, invBody(rowSum, row3, row3));
        // The one part's sum (p = 0).
        iters.push_back(nb.index(0));
        AffineMap sum4 = stateAt(4), inv4 = nb.map(4, {s, hq});
        nb.block("softmax_inv", iters, kinds({sp}), {{partSum, sum4}},
                 {{rowInv, inv4}}, invBody(partSum, sum4, inv4));
      });
      AffineMap out4 = nb.map(4, {s, hq * hd + x}), inv4 = nb.map(4, {s, hq});
      overGroup({nb.index(hd)}, [&](SmallVector<Value> iters) {
        nb.block("attention_normalize", iters, kinds({sp}),
                 {{out, out4}, {rowInv, inv4}}, {{out, out4}},
                 [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                   nb.store(arith::MulFOp::create(b, nb.load(out, out4, iv),
                                                  nb.load(rowInv, inv4, iv)),
                            out, out4, iv);
                 });
      });
    };
    {
      if (qTile > 1) {
        // Whole query tiles, then the tokens after the last one (and a
        // decode step) a row at a time.
        Value nTiles = arith::DivUIOp::create(b, seq, nb.index(qTile));
        nb.loop(nTiles, [&](Value it) {
          Value s0 = arith::MulIOp::create(b, it, nb.index(qTile));
          nb.loop(nb.index(nkv), [&](Value ikv) { emitRows(s0, qTile, ikv); });
        });
        Value tiled = arith::MulIOp::create(b, nTiles, nb.index(qTile));
        nb.loop(arith::SubIOp::create(b, seq, tiled), [&](Value ir) {
          Value is = arith::AddIOp::create(b, tiled, ir);
          nb.loop(nb.index(nkv), [&](Value ikv) { emitRows(is, 1, ikv); });
        });
      } else {
        nb.loop(seq, [&](Value is) {
          nb.loop(nb.index(nkv), [&](Value ikv) { emitRows(is, 1, ikv); });
        });
      }
    }
    rewriter.replaceOp(op, out);
    return success();
  }
};

} // namespace

void llmc::graph_to_tl::populateAttentionLoweringPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<AttentionLowering>(converter, patterns.getContext());
}
