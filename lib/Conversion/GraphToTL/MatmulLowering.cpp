//===- MatmulLowering.cpp - graph.matmul to tl loop nests -----------------===//
//
// Canonical loop nests, no schedule: every loop serial, reductions in their
// natural order. What they compute is the numeric mode (docs/numerics.md):
//
// - exact: f32 products of the activations and the weights, quantized
//   weights decoded element by element inside the product (the nest walks a
//   block by its layout levels, QuantReader.h); over float rows
//   interleaved by #graph.interleaved, the group's rows innermost;
// - llama.cpp, 16-bit weights: the activations rounded to the weight's type
//   first;
// - llama.cpp, quantized weights: the activations quantized to 8-bit blocks
//   as llama.cpp does, integer dot products summed exactly in i32 over the
//   groups the format's scales cover, then one f32 step (fma) per group:
//     Q8_0: per block and group of 4 (a lane of ggml's vec_dot); over
//           rows interleaved by #graph.interleaved, one row per vector
//           lane and each row's 8 lanes explicit, summed as ggml does;
//     Q4_0: per block of 32 (ggml's repacked kernels, for a multiple of 8
//           rows; over rows interleaved by #graph.interleaved, one row
//           per lane), else like Q8_0;
//     Q4_K: repacked, per 64-element group for the prompt rows ggml's gemm
//           takes and per super-block for the others (gemv); else per
//           group of 4 of a 32-element sub-block (lanes), the mins per
//           64-element group; two chains (d and dmin), subtracted at
//           the end;
//     Q6_K: per super-block and lane of 8 (the groups of 4 at one offset in
//           every 32-element run), its offset of 32 taken off through the
//           activation sums of two 16-element runs, as ggml's vec_dot;
//           over rows interleaved by #graph.interleaved, one row per
//           vector lane and each row's 8 lanes explicit, like Q8_0.
//   In which order the f32 steps are added is the schedule's choice.
//
//===----------------------------------------------------------------------===//
#include "LoweringUtils.h"
#include "QuantReader.h"

using namespace llmc::graph_to_tl;

namespace {

/// `x` converted to f16 or bf16 element by element (round to nearest even,
/// as ggml's fp32 -> fp16/bf16 conversions): the product then multiplies
/// two 16-bit values, exactly, in f32.
static Value roundActivations(NestBuilder &nb, Value x, Type act) {
  auto xType = llvm::cast<MemRefType>(x.getType());
  unsigned rank = xType.getRank();
  Value out = allocLike(nb, x, xType.getShape().back(), act);
  AffineMap m = dimsMap(nb, rank, 0, rank);
  nb.nest(nb.sizes(x), [&](ValueRange ivs) {
    nb.block("act_round", ivs, SmallVector<IterKind>(rank, IterKind::spatial),
             {{x, m}}, {{out, m}}, [&](ImplicitLocOpBuilder &b, ValueRange it) {
               nb.store(arith::TruncFOp::create(b, act, nb.load(x, m, it)), out,
                        m, it);
             });
  });
  return out;
}

/// Activations quantized to 8-bit blocks like llama.cpp's
/// quantize_row_q8_0 / quantize_row_q8_K: per row, `values` [.., K] i8 and
/// `scales` [.., K/block] f32.
struct QuantizedActivations {
  Value values, scales;
  int64_t block;
  /// With `sumWidth`: the sums of the integer values over runs of that many
  /// (Q8_K's bsums), [.., K/sumWidth] i32, each value times `sumFactor`.
  Value sums;
  int64_t sumWidth = 0;
  /// With `floatSums`: the same sums as f32 (exact: at most 32 x 128), for
  /// products that take them in f32 lanes (Q4_K's mins).
  Value floatSums;
};

static QuantizedActivations quantizeActivations(NestBuilder &nb, Value x,
                                                int64_t k, Type act,
                                                int64_t sumWidth = 0,
                                                int64_t sumFactor = 1,
                                                bool floatSums = false) {
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
  // the signed value (first one on ties) for Q8_K. quantize_row_q8_K finds
  // the latter in one scan, an order no vector lanes keep; the same value
  // comes from reductions exact in any order: the magnitude (a max that
  // skips NaN, as the scan's comparison does), then the first element of
  // that magnitude with its sign (the least key, 2j for +max and 2j + 1
  // for -max), then the value.
  Value amax = allocLike(nb, x, k / block, f32);
  Value mag = q8k ? allocLike(nb, x, k / block, f32) : amax;
  qa.scales = allocLike(nb, x, k / block, f32);
  qa.values = allocLike(nb, x, k, i8);
  // Nests over (.., block, element): the element and its block's value.
  AffineMap xMap =
      leadMap(nb, lead + 2, lead, {nb.d(lead) * block + nb.d(lead + 1)});
  AffineMap aMap = leadMap(nb, lead + 2, lead, {nb.d(lead)});
  AffineMap bMap = leadMap(nb, lead + 1, lead, {nb.d(lead)});
  auto overBlocks = [&](function_ref<void(ValueRange)> fn) {
    nb.nest(withLead({nb.index(k / block), nb.index(block)}), fn);
  };
  overBlocks([&](ValueRange ivs) {
    nb.block(
        "act_absmax", ivs, kinds({IterKind::spatial, IterKind::reduce}),
        {{x, xMap}}, {{mag, aMap}},
        [&](ImplicitLocOpBuilder &b, ValueRange it) {
          Value m = math::AbsFOp::create(b, nb.load(x, xMap, it));
          Value acc = nb.load(mag, aMap, it);
          Value r = q8k ? arith::MaxNumFOp::create(b, acc, m).getResult()
                        : arith::MaximumFOp::create(b, acc, m).getResult();
          nb.store(r, mag, aMap, it);
        },
        [&](ImplicitLocOpBuilder &b, ValueRange it) {
          nb.store(nb.f32(0.0), mag, aMap, it);
        });
  });
  if (q8k) {
    Value first = allocLike(nb, x, k / block, i32);
    overBlocks([&](ValueRange ivs) {
      nb.block(
          "act_first", ivs, kinds({IterKind::spatial, IterKind::reduce}),
          {{x, xMap}, {mag, aMap}}, {{first, aMap}},
          [&](ImplicitLocOpBuilder &b, ValueRange it) {
            Value v = nb.load(x, xMap, it), m = nb.load(mag, aMap, it);
            Value even = arith::IndexCastOp::create(
                b, b.getI32Type(),
                arith::MulIOp::create(b, it[lead + 1], nb.index(2)));
            Value odd = arith::AddIOp::create(b, even, nb.i32(1));
            Value plus =
                arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, v, m);
            Value minus = arith::CmpFOp::create(
                b, arith::CmpFPredicate::OEQ, v, arith::NegFOp::create(b, m));
            Value key = arith::SelectOp::create(
                b, plus, even,
                arith::SelectOp::create(b, minus, odd, nb.i32(2 * block)));
            nb.store(
                arith::MinSIOp::create(b, nb.load(first, aMap, it), key),
                first, aMap, it);
          },
          [&](ImplicitLocOpBuilder &b, ValueRange it) {
            nb.store(nb.i32(2 * block), first, aMap, it);
          });
    });
    nb.nest(withLead({nb.index(k / block)}), [&](ValueRange ivs) {
      nb.block("act_signed_max", ivs, kinds({IterKind::spatial}),
               {{mag, bMap}, {first, bMap}}, {{amax, bMap}},
               [&](ImplicitLocOpBuilder &b, ValueRange it) {
                 Value m = nb.load(mag, bMap, it), f = nb.load(first, bMap, it);
                 Value none = arith::CmpIOp::create(
                     b, arith::CmpIPredicate::eq, f, nb.i32(2 * block));
                 Value negative = arith::CmpIOp::create(
                     b, arith::CmpIPredicate::ne,
                     arith::AndIOp::create(b, f, nb.i32(1)), nb.i32(0));
                 Value r = arith::SelectOp::create(
                     b, negative, arith::NegFOp::create(b, m), m);
                 nb.store(arith::SelectOp::create(b, none, nb.f32(0.0), r),
                          amax, bMap, it);
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
    nb.nest(withLead({nb.index(k / block)}), [&](ValueRange ivs) {
      nb.block("act_scale", ivs, kinds({IterKind::spatial}), {{amax, bMap}},
               {{qa.scales, bMap}},
               [&](ImplicitLocOpBuilder &b, ValueRange it) {
                 Value m = nb.load(amax, bMap, it);
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
                 nb.store(d, qa.scales, bMap, it);
               });
    });
  }
  {
    // Each element's block by its own variable: the scale is the same in
    // every lane of a vector of elements.
    overBlocks([&](ValueRange ivs) {
      nb.block("act_quant", ivs,
               kinds({IterKind::spatial, IterKind::spatial}),
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
    qa.sumWidth = sumWidth;
    qa.sums = allocLike(nb, x, k / sumWidth, i32);
    unsigned n = lead + 2;
    AffineMap qMap =
        leadMap(nb, n, lead, {nb.d(lead) * sumWidth + nb.d(lead + 1)});
    AffineMap sMap = leadMap(nb, n, lead, {nb.d(lead)});
    nb.nest(withLead({nb.index(k / sumWidth), nb.index(sumWidth)}),
            [&](ValueRange ivs) {
      nb.block(
          "act_sum", ivs, kinds({IterKind::spatial, IterKind::reduce}),
          {{qa.values, qMap}}, {{qa.sums, sMap}},
          [&](ImplicitLocOpBuilder &b, ValueRange it) {
            Value q = arith::ExtSIOp::create(b, i32, nb.load(qa.values, qMap, it));
            if (sumFactor != 1)
              q = arith::MulIOp::create(b, q, nb.i32(sumFactor));
            nb.store(arith::AddIOp::create(b, nb.load(qa.sums, sMap, it), q),
                     qa.sums, sMap, it);
          },
          [&](ImplicitLocOpBuilder &b, ValueRange it) {
            nb.store(nb.i32(0), qa.sums, sMap, it);
          });
    });
    if (floatSums) {
      qa.floatSums = allocLike(nb, x, k / sumWidth, f32);
      unsigned n1 = lead + 1;
      AffineMap m = leadMap(nb, n1, lead, {nb.d(lead)});
      nb.nest(withLead({nb.index(k / sumWidth)}), [&](ValueRange ivs) {
        nb.block(
            "act_sum_f32", ivs, kinds({IterKind::spatial}), {{qa.sums, m}},
            {{qa.floatSums, m}}, [&](ImplicitLocOpBuilder &b, ValueRange it) {
              nb.store(arith::SIToFPOp::create(b, f32, nb.load(qa.sums, m, it)),
                       qa.floatSums, m, it);
            });
      });
    }
  }
  return qa;
}

/// The map to element `idx` (row-major over `shape`) of a one-dimensional
/// scratch buffer: the integer sums are laid out flat, so that the lanes of
/// a vector read them with one load. `{0}` for none.
static AffineMap flatMap(NestBuilder &nb, unsigned numIters,
                         ArrayRef<AffineExpr> idx, ArrayRef<int64_t> shape) {
  AffineExpr e = nb.c(0);
  for (auto [i, x] : llvm::enumerate(idx))
    e = i == 0 ? x : e * shape[i] + x;
  return nb.map(numIters, {e});
}

/// A block `acc[accMap] += term(it)` in the accumulator's type (i32 or
/// f32), zero-initialised.
static void
sumBlock(NestBuilder &nb, StringRef name, ValueRange it,
         ArrayRef<IterKind> kinds, ArrayRef<Access> reads, Value acc,
         AffineMap accMap,
         function_ref<Value(ImplicitLocOpBuilder &, ValueRange)> term) {
  bool isFloat =
      isa<FloatType>(cast<MemRefType>(acc.getType()).getElementType());
  nb.block(
      name, it, kinds, reads, {{acc, accMap}},
      [&](ImplicitLocOpBuilder &b, ValueRange iv) {
        Value p = term(b, iv), prev = nb.load(acc, accMap, iv);
        nb.store(isFloat ? arith::AddFOp::create(b, prev, p).getResult()
                         : arith::AddIOp::create(b, prev, p).getResult(),
                 acc, accMap, iv);
      },
      [&](ImplicitLocOpBuilder &b, ValueRange iv) {
        nb.store(isFloat ? nb.f32(0.0) : nb.i32(0), acc, accMap, iv);
      });
}

/// A block `acc[accMap] += a[aMap] * factor(it)`, zero-initialised: in i32,
/// or with an f32 accumulator in f32, the factor an unsigned integer
/// converted (exact where every product and partial sum is an integer below
/// 2^24: the caller's bound).
static void
macBlock(NestBuilder &nb, StringRef name, ValueRange it,
         ArrayRef<IterKind> kinds, ArrayRef<Access> reads, Value acc,
         AffineMap accMap, Value a, AffineMap aMap,
         function_ref<Value(ImplicitLocOpBuilder &, ValueRange)> factor) {
  sumBlock(nb, name, it, kinds, reads, acc, accMap,
           [&](ImplicitLocOpBuilder &b, ValueRange iv) -> Value {
             Value f = factor(b, iv);
             Type t = cast<MemRefType>(acc.getType()).getElementType();
             if (isa<FloatType>(t))
               return arith::MulFOp::create(b, nb.load(a, aMap, iv),
                                            arith::UIToFPOp::create(b, t, f));
             return arith::MulIOp::create(b, nb.load(a, aMap, iv), f);
           });
}

/// One f32 step of a Q4_K chain in ggml's repacked kernels: for gemm rows
/// one fma per 64-element group (`sums`, in order), else one per
/// super-block of their integer total. Sums already in f32 must be
/// integers whose total stays below 2^24 (the mins' sums: at most 2.1 M),
/// so that it is exact, as the integer total is.
static Value q4kStep(ImplicitLocOpBuilder &b, Value gemm, Value prev, Value dd,
                     ArrayRef<Value> sums) {
  auto toF = [&](Value v) {
    if (isa<FloatType>(v.getType()))
      return v;
    return arith::SIToFPOp::create(b, b.getF32Type(), v).getResult();
  };
  Value perGroup = prev;
  for (Value v : sums)
    perGroup = math::FmaOp::create(b, toF(v), dd, perGroup);
  bool isFloat = isa<FloatType>(sums[0].getType());
  Value total = sums[0];
  for (Value v : sums.drop_front())
    total = isFloat ? arith::AddFOp::create(b, total, v).getResult()
                    : arith::AddIOp::create(b, total, v).getResult();
  Value perBlock = math::FmaOp::create(b, toF(total), dd, prev);
  return arith::SelectOp::create(b, gemm, perGroup, perBlock);
}

/// A block `acc[accMap] += a[aMap] * nibble` in i32, zero-initialised: the
/// nibble of `w[qMap]` selected by iteration variable `half` (0: low, 1:
/// high), unsigned.
static void nibbleDotBlock(NestBuilder &nb, ValueRange it,
                           ArrayRef<IterKind> kinds, Value a, AffineMap aMap,
                           Value w, AffineMap qMap, Value acc,
                           AffineMap accMap, unsigned half) {
  Type i32 = nb.b.getI32Type();
  sumBlock(nb, "matmul_idot", it, kinds, {{a, aMap}, {w, qMap}}, acc, accMap,
           [&](ImplicitLocOpBuilder &b, ValueRange iv) -> Value {
             Value shift = arith::IndexCastUIOp::create(
                 b, b.getI8Type(),
                 arith::MulIOp::create(b, iv[half], nb.index(4)));
             Value q = arith::AndIOp::create(
                 b, arith::ShRUIOp::create(b, nb.load(w, qMap, iv), shift),
                 i8Constant(b, 15));
             return arith::MulIOp::create(
                 b, arith::ExtSIOp::create(b, i32, nb.load(a, aMap, iv)),
                 arith::ExtUIOp::create(b, i32, q));
           });
}

/// A nest over the first `count` levels of a quantized block, in `order`
/// (level numbers), after the block's own iteration variables (`base`):
/// lane levels spatial, the others reducing, and the map of the lanes into
/// a flat buffer of sums.
struct LevelNest {
  unsigned nb0, n;
  SmallVector<IterKind> kinds;
  SmallVector<Value> ubs;
  SmallVector<unsigned> order;
  AffineMap sumMap;

  LevelNest(NestBuilder &nb, unsigned nb0, ArrayRef<int64_t> levels,
            unsigned count, ArrayRef<unsigned> laneLevels,
            ArrayRef<unsigned> order)
      : nb0(nb0), n(nb0 + count), kinds(nb0, IterKind::spatial),
        order(order.begin(), order.end()) {
    SmallVector<AffineExpr> laneIdx;
    SmallVector<int64_t> laneShape;
    for (unsigned l : laneLevels) {
      laneIdx.push_back(nb.d(nb0 + l));
      laneShape.push_back(levels[l]);
    }
    sumMap = flatMap(nb, n, laneIdx, laneShape);
    for (unsigned l = 0; l < count; ++l)
      kinds.push_back(llvm::is_contained(laneLevels, l) ? IterKind::spatial
                                                        : IterKind::reduce);
    for (unsigned l : order)
      ubs.push_back(nb.index(levels[l]));
  }

  /// Builds the loops; `body` gets the iteration values (base, then one per
  /// level in level order).
  void build(NestBuilder &nb, ArrayRef<Value> base,
             function_ref<void(ValueRange)> body) const {
    nb.nest(ubs, [&](ValueRange ivs) {
      SmallVector<Value> it(base);
      it.resize(n);
      for (auto [j, l] : llvm::enumerate(order))
        it[nb0 + l] = ivs[j];
      body(it);
    });
  }
};

struct MatmulLowering : GraphLowering<MatmulOp> {
  using GraphLowering::GraphLowering;

  /// The f32 lanes per row of ggml's AVX2 vec_dot (one 256-bit register).
  static constexpr int64_t kVecDotLanes = 8;

  LogicalResult
  matchAndRewrite(MatmulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    NestBuilder nb(b);
    Value x = adaptor.getInput(), w = adaptor.getWeight();
    Type act = op.getActType() ? *op.getActType() : Type();
    if (InterleavedAttr layout = getInterleaving(op.getWeight().getType());
        layout &&
        isInterleavableFloat(op.getWeight().getType().getElementType())) {
      // (No act_type: graph.matmul's verifier.)
      rewriter.replaceOp(op, lowerInterleavedFloat(nb, op, x, w, layout));
      return success();
    }
    if (InterleavedAttr layout = getInterleaving(op.getWeight().getType())) {
      Type wElement = op.getWeight().getType().getElementType();
      if (layout.getChunk() != 4 ||
          !isa<Q8_0Type, Q4_0Type, Q4_KType, Q6_KType>(wElement))
        return op.emitOpError("no lowering reads a weight laid out as ")
               << op.getWeight().getType();
      rewriter.replaceOp(op, isa<Q4_KType>(wElement)
                                 ? lowerInterleavedQ4K(nb, op, x, w, act, layout)
                             : isa<Q6_KType>(wElement)
                                 ? lowerInterleavedQ6K(nb, op, x, w, act, layout)
                             : isa<Q8_0Type>(wElement)
                                 ? lowerInterleavedQ8(nb, op, x, w, act, layout)
                                 : lowerInterleavedDot(nb, op, x, w, act, layout));
      return success();
    }
    if (act && llvm::isa<Q8_0Type, Q8_KType>(act)) {
      rewriter.replaceOp(op, lowerIntegerDot(nb, op, x, w, act));
      return success();
    }
    if (act)
      x = roundActivations(nb, x, act);
    Type wElement = op.getWeight().getType().getElementType();
    Value out = quantBlockBytes(wElement) ? lowerDequantized(nb, op, x, w)
                                          : lowerFloat(nb, op, x, w);
    rewriter.replaceOp(op, out);
    return success();
  }

  /// The nest over `ubs` of the block "matmul" of a float product: out +=
  /// x * w (both widened to f32), its init storing 0.
  static void floatProduct(NestBuilder &nb, ArrayRef<Value> ubs,
                           ArrayRef<IterKind> kinds, Value x, AffineMap xMap,
                           Value w, AffineMap wMap, Value out,
                           AffineMap outMap) {
    nb.nest(ubs, [&](ValueRange ivs) {
      nb.block(
          "matmul", ivs, kinds, {{x, xMap}, {w, wMap}}, {{out, outMap}},
          [&](ImplicitLocOpBuilder &b, ValueRange it) {
            Value a = toF32(b, nb.load(x, xMap, it));
            Value c = toF32(b, nb.load(w, wMap, it));
            Value acc = nb.load(out, outMap, it);
            Value p = arith::MulFOp::create(b, a, c);
            nb.store(arith::AddFOp::create(b, acc, p), out, outMap, it);
          },
          [&](ImplicitLocOpBuilder &b, ValueRange it) {
            nb.store(nb.f32(0.0), out, outMap, it);
          });
    });
  }

  /// out[.., n] = sum_k x[.., k] * w[n, k] over (lead.., n, k), k reducing.
  Value lowerFloat(NestBuilder &nb, MatmulOp op, Value x, Value w) const {
    unsigned lead = llvm::cast<MemRefType>(x.getType()).getRank() - 1;
    SmallVector<Value> xSizes = nb.sizes(x), wSizes = nb.sizes(w);
    Value out = nb.alloc(resultType(op), nb.dynamicSizes(x));
    unsigned n = lead + 2;
    AffineMap xMap = leadMap(nb, n, lead, {nb.d(lead + 1)});
    AffineMap outMap = leadMap(nb, n, lead, {nb.d(lead)});
    AffineMap wMap = nb.map(n, {nb.d(lead), nb.d(lead + 1)});
    SmallVector<IterKind> kinds(lead + 1, IterKind::spatial);
    kinds.push_back(IterKind::reduce);
    SmallVector<Value> ubs(xSizes.begin(), xSizes.end() - 1);
    ubs.push_back(wSizes[0]);
    ubs.push_back(wSizes[1]);
    floatProduct(nb, ubs, kinds, x, xMap, w, wMap, out, outMap);
    return out;
  }

  /// Over a float weight interleaved `R` rows at a time (#graph.interleaved,
  /// [n / R][k * R + n % R]): out[.., g * R + r] = sum_k x[.., k] *
  /// w[g, k * R + r] over (lead.., g, k, r), k reducing and the group's rows
  /// r innermost (the outputs a vector of the weight serves).
  Value lowerInterleavedFloat(NestBuilder &nb, MatmulOp op, Value x, Value w,
                              InterleavedAttr layout) const {
    int64_t rows = layout.getRows();
    RankedTensorType wType = op.getWeight().getType();
    unsigned lead = llvm::cast<MemRefType>(x.getType()).getRank() - 1;
    Value out = nb.alloc(resultType(op), nb.dynamicSizes(x));
    unsigned n = lead + 3;
    AffineExpr g = nb.d(lead), k = nb.d(lead + 1), r = nb.d(lead + 2);
    AffineMap xMap = leadMap(nb, n, lead, {k});
    AffineMap outMap = leadMap(nb, n, lead, {g * rows + r});
    AffineMap wMap = nb.map(n, {g, k * rows + r});
    SmallVector<IterKind> kinds(lead + 1, IterKind::spatial);
    kinds.push_back(IterKind::reduce);
    kinds.push_back(IterKind::spatial);
    SmallVector<Value> ubs = nb.sizes(x);
    ubs.pop_back();
    ubs.push_back(nb.index(wType.getDimSize(0) / rows));
    ubs.push_back(nb.index(wType.getDimSize(1)));
    ubs.push_back(nb.index(rows));
    floatProduct(nb, ubs, kinds, x, xMap, w, wMap, out, outMap);
    return out;
  }

  /// Quantized weights decoded inside the product (never materialised):
  /// (lead.., n, block, levels..) with the block and its levels reducing.
  Value lowerDequantized(NestBuilder &nb, MatmulOp op, Value x, Value w) const {
    Type wElement = op.getWeight().getType().getElementType();
    int64_t k = op.getWeight().getType().getShape().back();
    int64_t rows = op.getWeight().getType().getShape().front();
    int64_t be = quantBlockElements(wElement);
    unsigned lead = llvm::cast<MemRefType>(x.getType()).getRank() - 1;
    Value out = nb.alloc(resultType(op), nb.dynamicSizes(x));
    SmallVector<int64_t> levels = quantLevels(wElement);
    unsigned n = lead + 2 + levels.size();
    SmallVector<AffineExpr> lv;
    for (unsigned i = 0; i < levels.size(); ++i)
      lv.push_back(nb.d(lead + 2 + i));
    AffineExpr blk = nb.d(lead + 1);
    QuantReader reader(nb, wElement, w, n, nb.d(lead), blk, lv);
    AffineMap xMap =
        leadMap(nb, n, lead, {blk * be + quantElement(wElement, lv)});
    AffineMap outMap = leadMap(nb, n, lead, {nb.d(lead)});
    SmallVector<Value> ubs = nb.sizes(x);
    ubs.pop_back();
    ubs.push_back(nb.index(rows));
    ubs.push_back(nb.index(k / be));
    for (int64_t e : levels)
      ubs.push_back(nb.index(e));
    SmallVector<IterKind> kinds(lead + 1, IterKind::spatial);
    kinds.append(1 + levels.size(), IterKind::reduce);
    SmallVector<Access> reads = {{x, xMap}};
    llvm::append_range(reads, reader.accesses());
    nb.nest(ubs, [&](ValueRange ivs) {
      nb.block(
          "matmul", ivs, kinds, reads, {{out, outMap}},
          [&](ImplicitLocOpBuilder &b, ValueRange it) {
            Value wv = reader.value(b, it);
            Value p = arith::MulFOp::create(b, toF32(b, nb.load(x, xMap, it)), wv);
            Value acc = nb.load(out, outMap, it);
            nb.store(arith::AddFOp::create(b, acc, p), out, outMap, it);
          },
          [&](ImplicitLocOpBuilder &b, ValueRange it) {
            nb.store(nb.f32(0.0), out, outMap, it);
          });
    });
    return out;
  }

  /// llama.cpp's product with 8-bit activations (file comment).
  Value lowerIntegerDot(NestBuilder &nb, MatmulOp op, Value x, Value w,
                        Type act) const {
    ImplicitLocOpBuilder &b = nb.b;
    Type wElement = op.getWeight().getType().getElementType();
    int64_t k = op.getWeight().getType().getShape().back();
    int64_t rows = op.getWeight().getType().getShape().front();
    int64_t be = quantBlockElements(wElement);
    bool q8 = isa<Q8_0Type>(wElement), q4 = isa<Q4_0Type>(wElement);
    bool q4k = isa<Q4_KType>(wElement);
    // ggml repacks Q4_0 and Q4_K matrices with a multiple of 8 rows into
    // its interleaved x86 layouts and runs their kernels; the others go
    // through ggml_vec_dot_*.
    bool repacked = (q4 || q4k) && rows % 8 == 0;
    Type f32 = b.getF32Type();
    bool q6k = isa<Q6_KType>(wElement);
    // Q6_K takes its offset of 32 off through the activations' sums of 16
    // (Q8_K's bsums), per lane, as ggml's vec_dot does; Q4_K its mins
    // through the sums of 32 (one per sub-block).
    QuantizedActivations qa =
        quantizeActivations(nb, x, k, act,
                            q6k   ? 16
                            : q4k ? 32
                                  : 0,
                            /*sumFactor=*/1, /*floatSums=*/q4k);
    Value out = nb.alloc(resultType(op), nb.dynamicSizes(x));
    SmallVector<Value> leadUbs = nb.sizes(x);
    Value seq = leadUbs.front();
    leadUbs.pop_back();
    // Levels of the integer groups: the block's layout with its innermost
    // level split by four (the elements of one group of four are adjacent).
    SmallVector<int64_t> levels = quantLevels(wElement);
    levels.back() /= 4;
    levels.push_back(4);
    // The integer sums an f32 step takes, by the levels that index them
    // ("lanes"; the others are summed over):
    //   Q8_0, and Q4_0 by vec_dot: each group of 4 of a 32-run (8 lanes);
    //   Q4_0 repacked: the block;
    //   Q4_K repacked: each 64-element group; by vec_dot: each group of 4
    //     of a 32-element sub-block (8 lanes), the mins per 64-group;
    //   Q6_K: each group of 4 of a 16-element run.
    SmallVector<unsigned> laneLevels, minLaneLevels;
    if (q8)
      laneLevels = {0};
    else if (q4)
      laneLevels = repacked ? SmallVector<unsigned>{}
                            : SmallVector<unsigned>{0, 1};
    else if (q4k) {
      laneLevels = repacked ? SmallVector<unsigned>{0, 1}
                            : SmallVector<unsigned>{3};
      minLaneLevels = {0, 1};
    } else
      laneLevels = {3, 4}; // Q6_K: (l1, l0a)
    auto shapeOf = [&](ArrayRef<unsigned> lv) {
      SmallVector<int64_t> shape;
      for (unsigned l : lv)
        shape.push_back(levels[l]);
      return shape;
    };
    SmallVector<int64_t> laneShape = shapeOf(laneLevels);
    SmallVector<int64_t> minShape = shapeOf(minLaneLevels);

    // Outputs, then per block: the integer sums of its lanes (a scratch
    // buffer private to the block's iteration), then the f32 steps.
    nb.nest(leadUbs, [&](ValueRange leadIvs) {
      nb.loop(nb.index(rows), [&](Value row) {
        SmallVector<Value> outer(leadIvs);
        outer.push_back(row);
        // Q4_K keeps its two chains apart until the end.
        Value accD, accM;
        if (q4k) {
          accD = nb.scratch(MemRefType::get({1}, f32));
          accM = nb.scratch(MemRefType::get({1}, f32));
        }
        nb.loop(nb.index(k / be), [&](Value blk) {
          SmallVector<Value> base(outer);
          base.push_back(blk);
          auto sums = [&](ArrayRef<int64_t> shape, Type element) {
            int64_t size = 1;
            for (int64_t e : shape)
              size *= e;
            return nb.scratch(MemRefType::get({size}, element));
          };
          Type i32 = b.getI32Type();
          Value isum = sums(laneShape, i32);
          if (q4k || q6k) {
            // Sub-block scales: the plain dot of each group of four first
            // (what a VNNI instruction lane computes), then the sums the
            // steps take, each group scaled; all exact integers.
            SmallVector<unsigned> groups;
            for (unsigned l = 0; l + 1 < levels.size(); ++l)
              groups.push_back(l);
            Value dots = sums(shapeOf(groups), i32);
            emitDot(nb, "matmul_idot", wElement, w, qa, levels, groups, base,
                    be, dots, /*mins=*/false, /*subScales=*/false);
            emitScaledSum(nb, wElement, w, levels, laneLevels, base, dots,
                          isum);
          } else {
            emitDot(nb, "matmul_idot", wElement, w, qa, levels, laneLevels,
                    base, be, isum, /*mins=*/false);
          }
          Value msum;
          if (q4k) {
            // In f32: exact integers (each of its sums at most 2 x 63 x
            // 32 x 128 < 2^24), FMAs where i32 products took VPMULLD.
            msum = sums(minShape, f32);
            emitMinSum(nb, w, qa, base, msum);
          }
          unsigned lead = leadIvs.size();
          if (q4k && repacked) {
            emitRepackedQ4KSteps(nb, w, qa, base, lead, seq, isum, msum, accD,
                                 accM);
          } else if (q4k) {
            emitSteps(nb, "matmul_iscale", wElement, w, qa, laneShape, base,
                      lead, isum, accD, /*mins=*/false);
            emitSteps(nb, "matmul_imin_scale", wElement, w, qa, minShape, base,
                      lead, msum, accM, /*mins=*/true);
          } else {
            emitSteps(nb, "matmul_iscale", wElement, w, qa, laneShape, base,
                      lead, isum, out, /*mins=*/false);
          }
        });
        if (q4k) {
          // out = acc_d - acc_m.
          unsigned n = leadIvs.size() + 1;
          AffineMap outMap = leadMap(nb, n, n - 1, {nb.d(n - 1)});
          AffineMap one = nb.map(n, {nb.c(0)});
          nb.block("matmul_out", outer, SmallVector<IterKind>(n, IterKind::spatial),
                   {{accD, one}, {accM, one}}, {{out, outMap}},
                   [&](ImplicitLocOpBuilder &b, ValueRange it) {
                     nb.store(arith::SubFOp::create(b, nb.load(accD, one, it),
                                                    nb.load(accM, one, it)),
                              out, outMap, it);
                   });
        }
      });
    });
    return out;
  }

  /// What the interleaved products start from: the weight's shape and
  /// layout, the activations quantized with their sums (of 32 unless said
  /// otherwise), the output, and the terms of their maps (iterations
  /// lead.., row group g, block).
  struct InterleavedProduct {
    int64_t k, rows, R, header;
    QuantizedActivations qa;
    Value out;
    SmallVector<Value> leadUbs;
    unsigned lead;
    AffineExpr g, blk;
    AffineExpr start; ///< the block's first byte in its group's row
    int64_t chunk;    ///< quant bytes of a row side by side

    /// Header byte `byte` of row `r`'s block (one byte plane per byte).
    AffineMap headerByte(NestBuilder &nb, unsigned n, AffineExpr byte,
                         AffineExpr r) const {
      return nb.map(n, {g, start + byte * R + r});
    }
    /// Byte `i` of chunk `c` of row `r`'s quants (the R rows' chunks side
    /// by side after the header planes).
    AffineMap quantByte(NestBuilder &nb, unsigned n, AffineExpr c,
                        AffineExpr r, AffineExpr i) const {
      return nb.map(n, {g, start + header * R + (c * R + r) * chunk + i});
    }
  };

  InterleavedProduct interleavedProduct(NestBuilder &nb, MatmulOp op, Value x,
                                        Type act, InterleavedAttr layout,
                                        int64_t sumWidth = 32,
                                        int64_t sumFactor = 1,
                                        bool floatSums = false) const {
    RankedTensorType wType = op.getWeight().getType();
    InterleavedProduct p;
    p.k = wType.getShape().back();
    p.rows = wType.getShape().front();
    p.R = layout.getRows();
    p.header = quantHeaderBytes(wType.getElementType());
    p.qa = quantizeActivations(nb, x, p.k, act, sumWidth, sumFactor, floatSums);
    p.out = nb.alloc(resultType(op), nb.dynamicSizes(x));
    p.leadUbs = nb.sizes(x);
    p.leadUbs.pop_back();
    p.lead = p.leadUbs.size();
    p.g = nb.d(p.lead);
    p.blk = nb.d(p.lead + 1);
    p.start = p.blk * (p.R * quantBlockBytes(wType.getElementType()));
    p.chunk = layout.getChunk();
    return p;
  }

  /// llama.cpp's Q4_0 product (ggml's repacked kernels: one f32 step per
  /// block) over a weight interleaved `R` rows at a time in chunks of four
  /// bytes (#graph.interleaved). Per group of R rows and block: the R rows'
  /// integer sums side by side, `isum[r]`, each summing groups of four
  /// bytes of its row (the lane of a row and the group of four are
  /// contiguous in the weight), then each row's step
  ///   out[.., g R + r] = fma(float(isum[r] - 8 asum), d_w * d_a, out)
  /// with the nibbles unsigned in the dot and their offset of 8 taken off
  /// through the block's activation sum (the same integer as sum((q-8) a)).
  /// Iterations: dot (lead.., g, blk, h, i1, r, i0) for byte 4 i1 + i0 of
  /// the block, nibble h; step (lead.., g, blk, r).
  Value lowerInterleavedDot(NestBuilder &nb, MatmulOp op, Value x, Value w,
                            Type act, InterleavedAttr layout) const {
    ImplicitLocOpBuilder &b = nb.b;
    Type f32 = b.getF32Type(), i32 = b.getI32Type();
    InterleavedProduct p = interleavedProduct(nb, op, x, act, layout);
    nb.nest(p.leadUbs, [&](ValueRange leadIvs) {
      nb.loop(nb.index(p.rows / p.R), [&](Value group) {
        nb.loop(nb.index(p.k / 32), [&](Value block) {
          SmallVector<Value> base(leadIvs);
          base.append({group, block});
          Value isum = nb.scratch(MemRefType::get({p.R}, i32));
          // The dot: h, i1 reducing; r the lanes; i0 the group of four.
          {
            unsigned n = p.lead + 6;
            AffineExpr h = nb.d(p.lead + 2), i1 = nb.d(p.lead + 3),
                       r = nb.d(p.lead + 4), i0 = nb.d(p.lead + 5);
            AffineMap aMap =
                leadMap(nb, n, p.lead, {p.blk * 32 + h * 16 + i1 * 4 + i0});
            AffineMap qMap = p.quantByte(nb, n, i1, r, i0);
            AffineMap sumMap = nb.map(n, {r});
            SmallVector<IterKind> kinds(p.lead + 2, IterKind::spatial);
            kinds.append({IterKind::reduce, IterKind::reduce,
                          IterKind::spatial, IterKind::reduce});
            nb.nest({nb.index(2), nb.index(4), nb.index(p.R), nb.index(4)},
                    [&](ValueRange ivs) {
              SmallVector<Value> it(base);
              llvm::append_range(it, ivs);
              nibbleDotBlock(nb, it, kinds, p.qa.values, aMap, w, qMap, isum,
                             sumMap, p.lead + 2);
            });
          }
          // The steps, one per row and block.
          {
            unsigned n = p.lead + 3;
            AffineExpr r = nb.d(p.lead + 2);
            AffineMap sumMap = nb.map(n, {r});
            AffineMap aScale = leadMap(nb, n, p.lead, {p.blk});
            AffineMap dLo = p.headerByte(nb, n, nb.c(0), r);
            AffineMap dHi = p.headerByte(nb, n, nb.c(1), r);
            AffineMap outMap = leadMap(nb, n, p.lead, {p.g * p.R + r});
            SmallVector<IterKind> kinds(p.lead + 1, IterKind::spatial);
            kinds.append({IterKind::reduce, IterKind::spatial});
            nb.loop(nb.index(p.R), [&](Value row) {
              SmallVector<Value> it(base);
              it.push_back(row);
              nb.block(
                  "matmul_iscale", it, kinds,
                  {{isum, sumMap}, {p.qa.scales, aScale}, {p.qa.sums, aScale},
                   {w, dLo}, {w, dHi}},
                  {{p.out, outMap}},
                  [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                    Value d = loadHalfAt(nb, b, w, dLo, dHi, iv);
                    Value dd = arith::MulFOp::create(
                        b, d, nb.load(p.qa.scales, aScale, iv));
                    Value offset = arith::ShLIOp::create(
                        b, nb.load(p.qa.sums, aScale, iv), nb.i32(3));
                    Value lane = arith::SubIOp::create(
                        b, nb.load(isum, sumMap, iv), offset);
                    Value s = arith::SIToFPOp::create(b, f32, lane);
                    nb.store(math::FmaOp::create(b, s, dd,
                                                 nb.load(p.out, outMap, iv)),
                             p.out, outMap, iv);
                  },
                  [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                    nb.store(nb.f32(0.0), p.out, outMap, iv);
                  });
            });
          }
        });
      });
    });
    return p.out;
  }

  /// vec_dot's 8 f32 lanes per output row (Q8_0, Q6_K), the group's R rows
  /// side by side: `acc[i1][r]`, zeroed. Iterations (lead.., g, i1, r).
  Value laneChains(NestBuilder &nb, const InterleavedProduct &p,
                   ArrayRef<Value> outer) const {
    Value acc =
        nb.scratch(MemRefType::get({kVecDotLanes * p.R}, nb.b.getF32Type()));
    unsigned n = p.lead + 3;
    AffineMap accMap = nb.map(n, {nb.d(p.lead + 1) * p.R + nb.d(p.lead + 2)});
    nb.nest({nb.index(kVecDotLanes), nb.index(p.R)}, [&](ValueRange ivs) {
      SmallVector<Value> it(outer);
      llvm::append_range(it, ivs);
      nb.block("matmul_lanes_init", it,
               SmallVector<IterKind>(n, IterKind::spatial), {}, {{acc, accMap}},
               [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                 nb.store(nb.f32(0.0), acc, accMap, iv);
               });
    });
    return acc;
  }

  /// One block's f32 steps of the lanes: each lane of each row its own
  /// chain over the blocks, `acc[i1][r] = fma(float(isum[i1][r]), d_w *
  /// d_a, acc[i1][r])`, d_w the f16 at header planes `dPlane`, `dPlane + 1`
  /// (ggml's Q6_K multiplies d_a * d_w: the same product). Iterations
  /// (lead.., g, blk, i1, r).
  void laneSteps(NestBuilder &nb, const InterleavedProduct &p,
                 ArrayRef<Value> base, Value w, Value isum, Value acc,
                 int64_t dPlane) const {
    unsigned n = p.lead + 4;
    AffineExpr i1 = nb.d(p.lead + 2), r = nb.d(p.lead + 3);
    AffineMap laneMap = nb.map(n, {i1 * p.R + r});
    AffineMap aScale = leadMap(nb, n, p.lead, {p.blk});
    AffineMap dLo = p.headerByte(nb, n, nb.c(dPlane), r);
    AffineMap dHi = p.headerByte(nb, n, nb.c(dPlane + 1), r);
    SmallVector<IterKind> kinds(p.lead + 1, IterKind::spatial);
    kinds.append({IterKind::reduce, IterKind::spatial, IterKind::spatial});
    nb.nest({nb.index(kVecDotLanes), nb.index(p.R)}, [&](ValueRange ivs) {
      SmallVector<Value> it(base);
      llvm::append_range(it, ivs);
      nb.block(
          "matmul_iscale", it, kinds,
          {{isum, laneMap}, {p.qa.scales, aScale}, {w, dLo}, {w, dHi},
           {acc, laneMap}},
          {{acc, laneMap}}, [&](ImplicitLocOpBuilder &b, ValueRange iv) {
            Value dd = arith::MulFOp::create(b, loadHalfAt(nb, b, w, dLo, dHi, iv),
                                             nb.load(p.qa.scales, aScale, iv));
            Value s = arith::SIToFPOp::create(b, b.getF32Type(),
                                              nb.load(isum, laneMap, iv));
            nb.store(math::FmaOp::create(b, s, dd, nb.load(acc, laneMap, iv)),
                     acc, laneMap, iv);
          });
    });
  }

  /// Each row's output, its lanes summed as hsum_float_8 does:
  /// ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)). Iterations
  /// (lead.., g, r).
  void laneSums(NestBuilder &nb, const InterleavedProduct &p,
                ArrayRef<Value> outer, Value acc) const {
    unsigned n = p.lead + 2;
    AffineExpr r = nb.d(p.lead + 1);
    SmallVector<AffineMap> laneMaps;
    SmallVector<Access> reads;
    for (int64_t i = 0; i < kVecDotLanes; ++i) {
      laneMaps.push_back(nb.map(n, {r + i * p.R}));
      reads.push_back({acc, laneMaps.back()});
    }
    AffineMap outMap = leadMap(nb, n, p.lead, {p.g * p.R + r});
    nb.loop(nb.index(p.R), [&](Value lane) {
      SmallVector<Value> it(outer);
      it.push_back(lane);
      nb.block("matmul_out", it, SmallVector<IterKind>(n, IterKind::spatial),
               reads, {{p.out, outMap}},
               [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                 auto l = [&](int64_t i) {
                   return nb.load(acc, laneMaps[i], iv);
                 };
                 auto add = [&](Value u, Value v) -> Value {
                   return arith::AddFOp::create(b, u, v);
                 };
                 Value sum = add(add(add(l(0), l(4)), add(l(2), l(6))),
                                 add(add(l(1), l(5)), add(l(3), l(7))));
                 nb.store(sum, p.out, outMap, iv);
               });
    });
  }

  /// The skeleton of the products in vec_dot's lanes (Q8_0, Q6_K): per
  /// token and group of R rows the lanes' chains (laneChains), per block
  /// the lanes' integers `isum[i1][r]` (`blockSums`, given the iteration
  /// values (lead.., g, blk) and the scratch buffer) and their f32 steps
  /// (laneSteps, d_w at header planes `dPlane`, `dPlane + 1`), then each
  /// row's lanes summed (laneSums).
  void laneProduct(NestBuilder &nb, const InterleavedProduct &p, Value w,
                   int64_t blockElements, int64_t dPlane,
                   function_ref<void(ArrayRef<Value>, Value)> blockSums) const {
    Type i32 = nb.b.getI32Type();
    nb.nest(p.leadUbs, [&](ValueRange leadIvs) {
      nb.loop(nb.index(p.rows / p.R), [&](Value group) {
        SmallVector<Value> outer(leadIvs);
        outer.push_back(group);
        Value acc = laneChains(nb, p, outer);
        nb.loop(nb.index(p.k / blockElements), [&](Value block) {
          SmallVector<Value> base(outer);
          base.push_back(block);
          Value isum = nb.scratch(MemRefType::get({kVecDotLanes * p.R}, i32));
          blockSums(base, isum);
          laneSteps(nb, p, base, w, isum, acc, dPlane);
        });
        laneSums(nb, p, outer, acc);
      });
    });
  }

  /// llama.cpp's Q8_0 product over a weight interleaved `R` rows at a time
  /// in chunks of four bytes (#graph.interleaved). ggml's vec_dot_q8_0_q8_0
  /// and llamafile's sgemm both keep 8 f32 lanes per output, lane i1 taking
  /// the group of four i1 of every block,
  ///   lane[i1] = fma(float(dot of the group), d_w * d_a, lane[i1]),
  /// and add them at the end as hsum_float_8 does (laneChains, laneSteps,
  /// laneSums). Per block `isum[i1][r]` is that dot with the weight's bytes
  /// biased to unsigned (w ^ 0x80 = w + 128, what VPDPBUSD multiplies) and
  /// the bias taken off through the activations' sums of four, precomputed
  /// times -128 as the sums' start: the same integer.
  /// Iterations: dot (lead.., g, blk, i1, r, i0).
  Value lowerInterleavedQ8(NestBuilder &nb, MatmulOp op, Value x, Value w,
                           Type act, InterleavedAttr layout) const {
    ImplicitLocOpBuilder &b = nb.b;
    Type i32 = b.getI32Type();
    InterleavedProduct p =
        interleavedProduct(nb, op, x, act, layout, /*sumWidth=*/4,
                           /*sumFactor=*/-128);
    laneProduct(
        nb, p, w, /*blockElements=*/32, /*dPlane=*/0,
        [&](ArrayRef<Value> base, Value isum) {
          // The dot: i1 and r spatial (r the lanes), i0 the group of four.
          unsigned n = p.lead + 5;
          AffineExpr i1 = nb.d(p.lead + 2), r = nb.d(p.lead + 3),
                     i0 = nb.d(p.lead + 4);
          AffineMap aMap = leadMap(nb, n, p.lead, {p.blk * 32 + i1 * 4 + i0});
          AffineMap qMap = p.quantByte(nb, n, i1, r, i0);
          AffineMap sumMap = nb.map(n, {i1 * p.R + r});
          AffineMap aSum = leadMap(nb, n, p.lead, {p.blk * kVecDotLanes + i1});
          SmallVector<IterKind> kinds(p.lead + 4, IterKind::spatial);
          kinds.push_back(IterKind::reduce);
          nb.nest({nb.index(kVecDotLanes), nb.index(p.R), nb.index(4)},
                  [&](ValueRange ivs) {
                    SmallVector<Value> it(base);
                    llvm::append_range(it, ivs);
                    nb.block(
                        "matmul_idot", it, kinds,
                        {{p.qa.values, aMap},
                         {w, qMap},
                         {p.qa.sums, aSum},
                         {isum, sumMap}},
                        {{isum, sumMap}},
                        [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                          Value biased = arith::XOrIOp::create(
                              b, nb.load(w, qMap, iv), i8Constant(b, -128));
                          Value prod = arith::MulIOp::create(
                              b, arith::ExtUIOp::create(b, i32, biased),
                              arith::ExtSIOp::create(
                                  b, i32, nb.load(p.qa.values, aMap, iv)));
                          nb.store(arith::AddIOp::create(
                                       b, nb.load(isum, sumMap, iv), prod),
                                   isum, sumMap, iv);
                        },
                        [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                          nb.store(nb.load(p.qa.sums, aSum, iv), isum, sumMap,
                                   iv);
                        });
                  });
        });
    return p.out;
  }

  /// llama.cpp's Q6_K product (ggml_vec_dot_q6_K_q8_K) over a weight
  /// interleaved `R` rows at a time in chunks of four bytes
  /// (#graph.interleaved: the 16 sub-block scales and d in byte planes,
  /// then ql and qh). vec_dot keeps 8 f32 lanes per row like Q8_0's
  /// (laneChains, laneSteps, laneSums); per super-block the integer of lane
  /// m = 4 l1 + l0a is
  ///   sum over the 32-element runs (hf, qa, qb) of the run's scale times
  ///   the dot of its group of four m (elements 16 l1 + 4 l0a + l0b),
  ///   minus 32 (sc[2m] asum[2m] + sc[2m+1] asum[2m+1])
  /// over the 16-element sub-blocks 2m, 2m + 1 (asum: the activations' sums
  /// of 16, Q8_K's bsums, here precomputed times -32 as the lane's start).
  /// The 6-bit q (ql's nibble qa | qh's bits 2 (2 qa + qb) << 4) is
  /// unsigned, what VPDPBUSD multiplies. Per run and group of four the
  /// group's R dots (`dots[r]`, iterations (lead.., g, blk, hf, qa, qb,
  /// l1, l0a, r, l0b)), then each scaled into its lane (`isum[m][r]`,
  /// (lead.., g, blk, hf, qa, qb, l1, l0a, r), the run reducing).
  Value lowerInterleavedQ6K(NestBuilder &nb, MatmulOp op, Value x, Value w,
                            Type act, InterleavedAttr layout) const {
    ImplicitLocOpBuilder &b = nb.b;
    Type i32 = b.getI32Type(), i8 = b.getI8Type();
    InterleavedProduct p =
        interleavedProduct(nb, op, x, act, layout, /*sumWidth=*/16,
                           /*sumFactor=*/-32);
    auto shiftBy = [&](ImplicitLocOpBuilder &b, Value iv, int64_t factor,
                       Value plus = Value()) -> Value {
      Value s = arith::MulIOp::create(b, iv, nb.index(factor));
      if (plus)
        s = arith::AddIOp::create(b, s, plus);
      return arith::IndexCastUIOp::create(b, i8, s);
    };
    constexpr unsigned kRunLevels = 5; // hf, qa, qb, l1, l0a
    laneProduct(
        nb, p, w, /*blockElements=*/256, /*dPlane=*/16,
        [&](ArrayRef<Value> base, Value isum) {
          nb.nest(
              {nb.index(2), nb.index(2), nb.index(2), nb.index(2), nb.index(4)},
              [&](ValueRange runIvs) {
                SmallVector<Value> at(base);
                llvm::append_range(at, runIvs);
                unsigned d0 = p.lead + 2; // hf
                AffineExpr hf = nb.d(d0), qa = nb.d(d0 + 1), qb = nb.d(d0 + 2),
                           l1 = nb.d(d0 + 3), l0a = nb.d(d0 + 4),
                           r = nb.d(d0 + kRunLevels);
                Value dots = nb.scratch(MemRefType::get({p.R}, i32));
                // The run's group of four: q * a over l0b, r the lanes.
                {
                  unsigned n = d0 + kRunLevels + 2;
                  AffineExpr l0b = nb.d(d0 + kRunLevels + 1);
                  AffineMap aMap =
                      leadMap(nb, n, p.lead,
                              {p.blk * 256 + hf * 128 + (qa * 2 + qb) * 32 +
                               l1 * 16 + l0a * 4 + l0b});
                  AffineMap qlMap = p.quantByte(
                      nb, n, hf * 16 + qb * 8 + l1 * 4 + l0a, r, l0b);
                  AffineMap qhMap =
                      p.quantByte(nb, n, hf * 8 + l1 * 4 + l0a + 32, r, l0b);
                  AffineMap dotMap = nb.map(n, {r});
                  SmallVector<IterKind> kinds(n - 1, IterKind::spatial);
                  kinds.push_back(IterKind::reduce);
                  nb.nest({nb.index(p.R), nb.index(4)}, [&](ValueRange ivs) {
                    SmallVector<Value> it(at);
                    llvm::append_range(it, ivs);
                    sumBlock(
                        nb, "matmul_idot", it, kinds,
                        {{p.qa.values, aMap}, {w, qlMap}, {w, qhMap}}, dots,
                        dotMap,
                        [&](ImplicitLocOpBuilder &b, ValueRange iv) -> Value {
                          Value vqa = iv[d0 + 1], vqb = iv[d0 + 2];
                          Value low = arith::AndIOp::create(
                              b,
                              arith::ShRUIOp::create(b, nb.load(w, qlMap, iv),
                                                     shiftBy(b, vqa, 4)),
                              i8Constant(b, 15));
                          Value high = arith::AndIOp::create(
                              b,
                              arith::ShRUIOp::create(
                                  b, nb.load(w, qhMap, iv),
                                  shiftBy(b, vqa, 4,
                                          arith::MulIOp::create(b, vqb,
                                                                nb.index(2)))),
                              i8Constant(b, 3));
                          Value q = arith::OrIOp::create(
                              b, low,
                              arith::ShLIOp::create(b, high, i8Constant(b, 4)));
                          return arith::MulIOp::create(
                              b,
                              arith::ExtSIOp::create(
                                  b, i32, nb.load(p.qa.values, aMap, iv)),
                              arith::ExtUIOp::create(b, i32, q));
                        });
                  });
                }
                // Into its lane, scaled; the lane starts at its offset.
                {
                  unsigned n = d0 + kRunLevels + 1;
                  AffineExpr lane = l1 * 4 + l0a;
                  AffineMap sumMap = nb.map(n, {lane * p.R + r});
                  AffineMap dotMap = nb.map(n, {r});
                  AffineMap scMap =
                      p.headerByte(nb, n, hf * 8 + qa * 4 + qb * 2 + l1, r);
                  SmallVector<AffineMap> offScale, offSum;
                  SmallVector<Access> reads = {{dots, dotMap}, {w, scMap}};
                  for (int64_t t = 0; t < 2; ++t) {
                    offScale.push_back(p.headerByte(nb, n, lane * 2 + t, r));
                    offSum.push_back(
                        leadMap(nb, n, p.lead, {p.blk * 16 + lane * 2 + t}));
                    reads.append(
                        {{w, offScale.back()}, {p.qa.sums, offSum.back()}});
                  }
                  SmallVector<IterKind> kinds(p.lead + 1, IterKind::spatial);
                  kinds.append({IterKind::spatial, IterKind::reduce,
                                IterKind::reduce, IterKind::reduce,
                                IterKind::spatial, IterKind::spatial,
                                IterKind::spatial});
                  auto scale = [&](ImplicitLocOpBuilder &b, AffineMap m,
                                   ValueRange iv) -> Value {
                    return arith::ExtSIOp::create(b, i32, nb.load(w, m, iv));
                  };
                  nb.loop(nb.index(p.R), [&](Value row) {
                    SmallVector<Value> it(at);
                    it.push_back(row);
                    nb.block(
                        "matmul_isum", it, kinds, reads, {{isum, sumMap}},
                        [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                          Value term = arith::MulIOp::create(
                              b, nb.load(dots, dotMap, iv),
                              scale(b, scMap, iv));
                          nb.store(arith::AddIOp::create(
                                       b, nb.load(isum, sumMap, iv), term),
                                   isum, sumMap, iv);
                        },
                        [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                          Value start;
                          for (int64_t t = 0; t < 2; ++t) {
                            Value term = arith::MulIOp::create(
                                b, scale(b, offScale[t], iv),
                                nb.load(p.qa.sums, offSum[t], iv));
                            start = start
                                        ? arith::AddIOp::create(b, start, term)
                                              .getResult()
                                        : term;
                          }
                          nb.store(start, isum, sumMap, iv);
                        });
                  });
                }
              });
        });
    return p.out;
  }

  /// llama.cpp's Q4_K product (ggml's repacked kernels) over a weight
  /// interleaved `R` rows at a time (#graph.interleaved: the 16 header bytes
  /// d, dmin, scales[12] in byte planes, then the 128 quant bytes four at a
  /// time), one row per lane. Per group of R rows and super-block, with c =
  /// 2 ja + jb the 64-element group and h the nibble (sub-block 2c + h):
  ///   dots[c, h, r]  = sum of q * a over the sub-block (i = 4 i1 + i0),
  ///   isum[c, r]     = sum over h of sc(r, 2c + h) * dots[c, h, r],
  ///   msum[c, r]     = sum over h of m(r, 2c + h) * asum[2c + h],
  /// then each row's d and dmin chains take their steps (one per group for
  /// ggml's gemm rows, one per super-block otherwise: lowerIntegerDot's
  /// emitRepackedQ4KSteps, the same numbers), out = accD - accM.
  Value lowerInterleavedQ4K(NestBuilder &nb, MatmulOp op, Value x, Value w,
                            Type act, InterleavedAttr layout) const {
    ImplicitLocOpBuilder &b = nb.b;
    Type f32 = b.getF32Type(), i32 = b.getI32Type();
    InterleavedProduct p =
        interleavedProduct(nb, op, x, act, layout, /*sumWidth=*/32,
                           /*sumFactor=*/1, /*floatSums=*/true);
    Value seq = p.leadUbs.front(); // the tokens
    // The 6-bit scale (or min) of sub-block 4 ja + 2 jb + h of each lane,
    // as i32 (ggml's get_scale_min_k4): from scales[sub], scales[4 + sub],
    // scales[8 + sub] with sub = 2 jb + h, the upper form when ja = 1.
    struct ScaleMaps {
      AffineMap a, bb, c;
    };
    auto scaleMaps = [&](unsigned n, AffineExpr jb, AffineExpr h,
                         AffineExpr r) {
      AffineExpr sub = jb * 2 + h;
      return ScaleMaps{p.headerByte(nb, n, nb.c(4) + sub, r),
                       p.headerByte(nb, n, nb.c(8) + sub, r),
                       p.headerByte(nb, n, nb.c(12) + sub, r)};
    };
    auto scaleOrMin = [&](ImplicitLocOpBuilder &b, const ScaleMaps &m,
                          Value ja, ValueRange iv, bool min) -> Value {
      Value va = nb.load(w, m.a, iv), vb = nb.load(w, m.bb, iv);
      Value vc = nb.load(w, m.c, iv);
      auto [sc, mn] = decodeScaleMinK4(b, va, vb, vc, [&] {
        return arith::CmpIOp::create(b, arith::CmpIPredicate::ne, ja,
                                     nb.index(0))
            .getResult();
      });
      return min ? mn : sc;
    };
    // gemm rows: the first seq - seq % 4 when seq > 3 (ggml's choice).
    Value full = arith::SubIOp::create(
        b, seq, arith::RemUIOp::create(b, seq, nb.index(4)));
    Value longPrompt =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, seq, nb.index(3));
    nb.nest(p.leadUbs, [&](ValueRange leadIvs) {
      Value token = leadIvs.front();
      Value gemm = arith::AndIOp::create(
          b, longPrompt,
          arith::CmpIOp::create(b, arith::CmpIPredicate::ult, token, full));
      nb.loop(nb.index(p.rows / p.R), [&](Value group) {
        Value accD = nb.scratch(MemRefType::get({p.R}, f32));
        Value accM = nb.scratch(MemRefType::get({p.R}, f32));
        nb.loop(nb.index(p.k / 256), [&](Value block) {
          SmallVector<Value> base(leadIvs);
          base.append({group, block});
          Value dots = nb.scratch(MemRefType::get({8 * p.R}, i32));
          Value isum = nb.scratch(MemRefType::get({4 * p.R}, i32));
          // The mins' sums in f32: exact integers (at most 2 x 63 x 32 x
          // 128 < 2^24), FMAs where i32 products took VPMULLD.
          Value msum = nb.scratch(MemRefType::get({4 * p.R}, f32));
          // dots: (ja, jb, h) spatial, i1 reducing, r the lanes, i0 the
          // group of four.
          {
            unsigned n = p.lead + 8;
            AffineExpr ja = nb.d(p.lead + 2), jb = nb.d(p.lead + 3),
                       h = nb.d(p.lead + 4), i1 = nb.d(p.lead + 5),
                       r = nb.d(p.lead + 6), i0 = nb.d(p.lead + 7);
            AffineExpr cc = ja * 2 + jb;
            AffineMap aMap = leadMap(
                nb, n, p.lead, {p.blk * 256 + cc * 64 + h * 32 + i1 * 4 + i0});
            AffineMap qMap = p.quantByte(nb, n, cc * 8 + i1, r, i0);
            AffineMap dotMap = nb.map(n, {(cc * 2 + h) * p.R + r});
            SmallVector<IterKind> kinds(p.lead + 5, IterKind::spatial);
            kinds.append({IterKind::reduce, IterKind::spatial, IterKind::reduce});
            nb.nest({nb.index(2), nb.index(2), nb.index(2), nb.index(8),
                     nb.index(p.R), nb.index(4)},
                    [&](ValueRange ivs) {
              SmallVector<Value> it(base);
              llvm::append_range(it, ivs);
              nibbleDotBlock(nb, it, kinds, p.qa.values, aMap, w, qMap, dots,
                             dotMap, p.lead + 4);
            });
          }
          // isum and msum: (ja, jb) spatial, h reducing, r the lanes.
          {
            unsigned n = p.lead + 6;
            AffineExpr ja = nb.d(p.lead + 2), jb = nb.d(p.lead + 3),
                       h = nb.d(p.lead + 4), r = nb.d(p.lead + 5);
            AffineExpr cc = ja * 2 + jb;
            ScaleMaps sm = scaleMaps(n, jb, h, r);
            AffineMap dotMap = nb.map(n, {(cc * 2 + h) * p.R + r});
            AffineMap sumMap = nb.map(n, {cc * p.R + r});
            AffineMap aSum = leadMap(nb, n, p.lead, {p.blk * 8 + cc * 2 + h});
            SmallVector<IterKind> kinds(p.lead + 4, IterKind::spatial);
            kinds.append({IterKind::reduce, IterKind::spatial});
            SmallVector<Access> scales = {{w, sm.a}, {w, sm.bb}, {w, sm.c}};
            auto mac = [&](StringRef name, Value acc, Value src,
                           AffineMap srcMap, bool min) {
              SmallVector<Access> reads = {{src, srcMap}};
              llvm::append_range(reads, scales);
              nb.nest({nb.index(2), nb.index(2), nb.index(2), nb.index(p.R)},
                      [&](ValueRange ivs) {
                SmallVector<Value> it(base);
                llvm::append_range(it, ivs);
                auto factor = [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                  return scaleOrMin(b, sm, iv[p.lead + 2], iv, min);
                };
                macBlock(nb, name, it, kinds, reads, acc, sumMap, src, srcMap,
                         factor);
              });
            };
            mac("matmul_isum", isum, dots, dotMap, false);
            mac("matmul_imin", msum, p.qa.floatSums, aSum, true);
          }
          // The steps of each row's two chains.
          {
            unsigned n = p.lead + 3;
            AffineExpr r = nb.d(p.lead + 2);
            AffineMap one = nb.map(n, {r});
            AffineMap aScale = leadMap(nb, n, p.lead, {p.blk});
            SmallVector<AffineMap> groupMaps;
            for (int64_t c = 0; c < 4; ++c)
              groupMaps.push_back(nb.map(n, {r + c * p.R}));
            SmallVector<IterKind> kinds(p.lead + 1, IterKind::spatial);
            kinds.append({IterKind::reduce, IterKind::spatial});
            auto step = [&](StringRef name, Value sum, Value acc,
                            int64_t scaleByte) {
              AffineMap lo = p.headerByte(nb, n, nb.c(scaleByte), r);
              AffineMap hi = p.headerByte(nb, n, nb.c(scaleByte + 1), r);
              SmallVector<Access> reads;
              for (AffineMap m : groupMaps)
                reads.push_back({sum, m});
              reads.append({{p.qa.scales, aScale}, {w, lo}, {w, hi}});
              nb.loop(nb.index(p.R), [&](Value lane) {
                SmallVector<Value> it(base);
                it.push_back(lane);
                nb.block(
                    name, it, kinds, reads, {{acc, one}},
                    [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                      Value dd = arith::MulFOp::create(
                          b, loadHalfAt(nb, b, w, lo, hi, iv),
                          nb.load(p.qa.scales, aScale, iv));
                      SmallVector<Value> sums;
                      for (AffineMap m : groupMaps)
                        sums.push_back(nb.load(sum, m, iv));
                      nb.store(q4kStep(b, gemm, nb.load(acc, one, iv), dd, sums),
                               acc, one, iv);
                    },
                    [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                      nb.store(nb.f32(0.0), acc, one, iv);
                    });
              });
            };
            step("matmul_iscale", isum, accD, 0);
            step("matmul_imin_scale", msum, accM, 2);
          }
        });
        // out = accD - accM, row by row.
        unsigned n = p.lead + 2;
        AffineExpr r = nb.d(p.lead + 1);
        AffineMap one = nb.map(n, {r});
        AffineMap outMap = leadMap(nb, n, p.lead, {p.g * p.R + r});
        nb.loop(nb.index(p.R), [&](Value lane) {
          SmallVector<Value> it(leadIvs);
          it.append({group, lane});
          nb.block("matmul_out", it, SmallVector<IterKind>(n, IterKind::spatial),
                   {{accD, one}, {accM, one}}, {{p.out, outMap}},
                   [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                     nb.store(arith::SubFOp::create(b, nb.load(accD, one, iv),
                                                    nb.load(accM, one, iv)),
                              p.out, outMap, iv);
                   });
        });
      });
    });
    return p.out;
  }

  /// The integer sums of one block into `acc[lanes]`: (sub-scale *) q * a
  /// over the block's other levels, or with `mins` the Q4_K sub-block mins
  /// times a. Iteration: (lead.., n, block, levels in level order) with the
  /// lane levels spatial, nested inside the others, and the last level (the
  /// group of four) innermost.
  void emitDot(NestBuilder &nb, StringRef name, Type wElement, Value w,
               const QuantizedActivations &qa, ArrayRef<int64_t> levels,
               ArrayRef<unsigned> laneLevels, ArrayRef<Value> base, int64_t be,
               Value acc, bool mins, bool subScales = true) const {
    Type i32 = nb.b.getI32Type();
    bool q4k = isa<Q4_KType>(wElement), q6k = isa<Q6_KType>(wElement);
    unsigned numLevels = levels.size();
    unsigned lead = base.size() - 2;
    // Loop order: reduce levels first, then lane levels, then the group.
    SmallVector<unsigned> order;
    for (unsigned l = 0; l + 1 < numLevels; ++l)
      if (!llvm::is_contained(laneLevels, l))
        order.push_back(l);
    llvm::append_range(order, laneLevels);
    order.push_back(numLevels - 1);
    // Iteration variables: base (lead.., n, block), then one per level in
    // level order; dims of level l = base.size() + l.
    unsigned nb0 = base.size(), n = nb0 + numLevels;
    auto lvl = [&](unsigned l) { return nb.d(nb0 + l); };
    // The exact levels of the format (the innermost one rebuilt from its
    // split: i = 4 i0 + i1).
    SmallVector<AffineExpr> exact;
    for (unsigned l = 0; l + 2 < numLevels; ++l)
      exact.push_back(lvl(l));
    exact.push_back(lvl(numLevels - 2) * 4 + lvl(numLevels - 1));
    AffineExpr blk = nb.d(lead + 1);
    QuantReader reader(nb, wElement, w, n, nb.d(lead), blk, exact);
    AffineMap aMap =
        leadMap(nb, n, lead, {blk * be + quantElement(wElement, exact)});
    LevelNest nest(nb, nb0, levels, numLevels, laneLevels, order);
    AffineMap sumMap = nest.sumMap;
    SmallVector<Access> reads = {{qa.values, aMap}};
    if (!mins)
      llvm::append_range(reads, reader.intAccesses());
    if (subScales && (q4k || (q6k && !mins)))
      llvm::append_range(reads, reader.subScaleAccesses());
    nest.build(nb, base, [&](ValueRange it) {
      nb.block(
          name, it, nest.kinds, reads, {{acc, sumMap}},
          [&](ImplicitLocOpBuilder &b, ValueRange iv) {
            Value a = arith::ExtSIOp::create(b, i32, nb.load(qa.values, aMap, iv));
            Value p;
            if (mins) {
              p = arith::MulIOp::create(b, a, reader.subScale(b, iv).second);
            } else {
              Value q = arith::ExtSIOp::create(
                  b, i32, reader.int8Value(b, iv, /*withOffset=*/!q6k));
              p = arith::MulIOp::create(b, a, q);
              if (subScales && (q4k || q6k))
                p = arith::MulIOp::create(b, p, reader.subScale(b, iv).first);
            }
            nb.store(arith::AddIOp::create(b, nb.load(acc, sumMap, iv), p),
                     acc, sumMap, iv);
          },
          [&](ImplicitLocOpBuilder &b, ValueRange iv) {
            nb.store(nb.i32(0), acc, sumMap, iv);
          });
    });
  }

  /// `isum[lanes] = sum over the other levels of sub-scale * dots[levels]`
  /// (K-quants: each group of four's dot, scaled by its sub-block's
  /// scale). Iteration: (lead.., n, block, levels but the group, in order)
  /// with the lane levels spatial.
  void emitScaledSum(NestBuilder &nb, Type wElement, Value w,
                     ArrayRef<int64_t> levels, ArrayRef<unsigned> laneLevels,
                     ArrayRef<Value> base, Value dots, Value isum) const {
    unsigned numGroups = levels.size() - 1; // every level but the group
    unsigned lead = base.size() - 2;
    // The levels in their order (the dots' layout): contiguous innermost.
    SmallVector<unsigned> order;
    for (unsigned l = 0; l < numGroups; ++l)
      order.push_back(l);
    unsigned nb0 = base.size(), n = nb0 + numGroups;
    auto lvl = [&](unsigned l) { return nb.d(nb0 + l); };
    // The format's levels for the reader (the innermost at its first
    // element: the sub-scale does not depend on it).
    SmallVector<AffineExpr> exact;
    for (unsigned l = 0; l + 1 < numGroups; ++l)
      exact.push_back(lvl(l));
    exact.push_back(lvl(numGroups - 1) * 4);
    QuantReader reader(nb, wElement, w, n, nb.d(lead), nb.d(lead + 1), exact);
    SmallVector<AffineExpr> all;
    for (unsigned l = 0; l < numGroups; ++l)
      all.push_back(lvl(l));
    AffineMap dotMap = flatMap(nb, n, all, levels.drop_back());
    LevelNest nest(nb, nb0, levels, numGroups, laneLevels, order);
    AffineMap sumMap = nest.sumMap;
    SmallVector<Access> reads = {{dots, dotMap}};
    llvm::append_range(reads, reader.subScaleAccesses());
    nest.build(nb, base, [&](ValueRange it) {
      macBlock(nb, "matmul_isum", it, nest.kinds, reads, isum, sumMap, dots,
               dotMap, [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                 return reader.subScale(b, iv).first;
               });
    });
  }

  /// Q4_K: `msum[64-group] = sum over its two sub-blocks of min * (sum of
  /// the sub-block's 32 activations)`, the integer ggml's kernels take the
  /// mins with, in f32 (exact: at most 2 x 63 x 4096).
  void emitMinSum(NestBuilder &nb, Value w, const QuantizedActivations &qa,
                  ArrayRef<Value> base, Value msum) const {
    unsigned lead = base.size() - 2, nb0 = base.size(), n = nb0 + 3;
    AffineExpr l0 = nb.d(nb0), l1 = nb.d(nb0 + 1), l2 = nb.d(nb0 + 2);
    AffineExpr blk = nb.d(lead + 1);
    QuantReader reader(nb, Q4_KType::get(nb.b.getContext()), w, n,
                       nb.d(lead), blk, {l0, l1, l2, nb.c(0)});
    AffineMap sumMap = leadMap(nb, n, lead, {blk * 8 + (l0 * 2 + l1) * 2 + l2});
    AffineMap outMap = nb.map(n, {l0 * 2 + l1});
    SmallVector<IterKind> kinds(nb0 + 2, IterKind::spatial);
    kinds.push_back(IterKind::reduce);
    SmallVector<Access> reads = {{qa.floatSums, sumMap}};
    llvm::append_range(reads, reader.subScaleAccesses());
    nb.nest({nb.index(2), nb.index(2), nb.index(2)}, [&](ValueRange ivs) {
      SmallVector<Value> it(base);
      llvm::append_range(it, ivs);
      macBlock(nb, "matmul_imin", it, kinds, reads, msum, outMap, qa.floatSums,
               sumMap, [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                 return reader.subScale(b, iv).second;
               });
    });
  }

  /// The f32 steps of one block: for each lane, acc = fma(float(isum),
  /// d_w * d_a, acc) (Q6_K: d_a * d_w, as ggml multiplies them; `mins`:
  /// Q4_K's dmin), into `acc` (the output or one of Q4_K's two chains).
  void emitSteps(NestBuilder &nb, StringRef name, Type wElement, Value w,
                 const QuantizedActivations &qa, ArrayRef<int64_t> laneShape,
                 ArrayRef<Value> base, unsigned lead, Value sum, Value acc,
                 bool mins) const {
    ImplicitLocOpBuilder &b = nb.b;
    Type f32 = b.getF32Type();
    bool q6k = isa<Q6_KType>(wElement);
    unsigned nb0 = base.size(), n = nb0 + laneShape.size();
    AffineExpr blk = nb.d(lead + 1);
    QuantReader reader(nb, wElement, w, n, nb.d(lead), blk,
                       SmallVector<AffineExpr>(quantLevels(wElement).size(),
                                               nb.c(0)));
    AffineMap aScale =
        leadMap(nb, n, lead, {(blk * quantBlockElements(wElement)).floorDiv(qa.block)});
    SmallVector<AffineExpr> laneIdx;
    for (unsigned i = 0; i < laneShape.size(); ++i)
      laneIdx.push_back(nb.d(nb0 + i));
    AffineMap sumMap = flatMap(nb, n, laneIdx, laneShape);
    // The output [lead.., rows], or a one-element chain (Q4_K's).
    bool toOut = !isa<Q4_KType>(wElement);
    AffineMap accMap = toOut ? leadMap(nb, n, lead, {nb.d(lead)})
                             : nb.map(n, {nb.c(0)});
    SmallVector<IterKind> kinds(lead + 1, IterKind::spatial);
    kinds.append(1 + laneShape.size(), IterKind::reduce);
    SmallVector<Value> ubs;
    for (int64_t e : laneShape)
      ubs.push_back(nb.index(e));
    SmallVector<Access> reads = {{sum, sumMap}, {qa.scales, aScale}};
    llvm::append_range(reads, reader.superScaleAccesses());
    // Q6_K: lane l (of 8) takes off 32 * (scale * activation sum) of the
    // 16-element runs 2l and 2l + 1 (ggml's vec_dot, lane for lane).
    AffineMap sc0, sc1, sum0, sum1;
    if (q6k) {
      AffineExpr l = laneShape.size() == 2
                         ? nb.d(nb0) * laneShape[1] + nb.d(nb0 + 1)
                         : nb.d(nb0);
      AffineExpr row = nb.d(lead);
      int64_t bytes = quantBlockBytes(wElement);
      sc0 = nb.map(n, {row, blk * bytes + 192 + l * 2});
      sc1 = nb.map(n, {row, blk * bytes + 193 + l * 2});
      sum0 = leadMap(nb, n, lead, {blk * 16 + l * 2});
      sum1 = leadMap(nb, n, lead, {blk * 16 + l * 2 + 1});
      reads.append({{w, sc0}, {w, sc1}, {qa.sums, sum0}, {qa.sums, sum1}});
    }
    nb.nest(ubs, [&](ValueRange lanes) {
      SmallVector<Value> it(base);
      llvm::append_range(it, lanes);
      nb.block(
          name, it, kinds, reads, {{acc, accMap}},
          [&](ImplicitLocOpBuilder &b, ValueRange iv) {
            auto [d, dmin] = reader.superScales(b, iv);
            Value ad = nb.load(qa.scales, aScale, iv);
            Value dd = q6k ? arith::MulFOp::create(b, ad, d)
                           : arith::MulFOp::create(b, mins ? dmin : d, ad);
            Value lane = nb.load(sum, sumMap, iv);
            if (q6k) {
              Type i32 = b.getI32Type();
              auto term = [&](AffineMap sc, AffineMap sm) {
                return arith::MulIOp::create(
                    b, arith::ExtSIOp::create(b, i32, nb.load(w, sc, iv)),
                    nb.load(qa.sums, sm, iv));
              };
              Value sub = arith::AddIOp::create(b, term(sc0, sum0),
                                                term(sc1, sum1));
              sub = arith::ShLIOp::create(b, sub, nb.i32(5));
              lane = arith::SubIOp::create(b, lane, sub);
            }
            Value s = isa<FloatType>(lane.getType())
                          ? lane
                          : arith::SIToFPOp::create(b, f32, lane).getResult();
            nb.store(math::FmaOp::create(b, s, dd, nb.load(acc, accMap, iv)),
                     acc, accMap, iv);
          },
          [&](ImplicitLocOpBuilder &b, ValueRange iv) {
            nb.store(nb.f32(0.0), acc, accMap, iv);
          });
    });
  }

  /// Q4_K's f32 steps in ggml's repacked kernels: the rows of a prompt
  /// processed in whole groups of four (ggml_gemm_q4_K_8x8_q8_K, when the
  /// prompt has more than three) take one step per 64-element group, the
  /// others (ggml_gemv_*) one per super-block of the groups' integer sums;
  /// d and dmin chains apart.
  void emitRepackedQ4KSteps(NestBuilder &nb, Value w,
                            const QuantizedActivations &qa,
                            ArrayRef<Value> base, unsigned lead, Value seq,
                            Value isum, Value msum, Value accD,
                            Value accM) const {
    ImplicitLocOpBuilder &b = nb.b;
    Type q4kType = Q4_KType::get(b.getContext());
    unsigned n = base.size();
    AffineExpr blk = nb.d(lead + 1);
    QuantReader reader(nb, q4kType, w, n, nb.d(lead), blk,
                       SmallVector<AffineExpr>(4, nb.c(0)));
    AffineMap aScale = leadMap(nb, n, lead, {(blk * 256).floorDiv(qa.block)});
    SmallVector<AffineMap> groupMaps;
    for (int64_t g = 0; g < 4; ++g)
      groupMaps.push_back(nb.map(n, {nb.c(g)}));
    AffineMap one = nb.map(n, {nb.c(0)});
    SmallVector<IterKind> kinds(lead + 1, IterKind::spatial);
    kinds.push_back(IterKind::reduce);
    // gemm rows: the first seq - seq % 4 when seq > 3.
    Value token = base.front();
    Value full = arith::SubIOp::create(
        b, seq, arith::RemUIOp::create(b, seq, nb.index(4)));
    Value gemm = arith::AndIOp::create(
        b, arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, seq, nb.index(3)),
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, token, full));
    auto step = [&](StringRef name, Value sum, Value acc, bool mins) {
      SmallVector<Access> reads;
      for (AffineMap m : groupMaps)
        reads.push_back({sum, m});
      reads.push_back({qa.scales, aScale});
      llvm::append_range(reads, reader.superScaleAccesses());
      nb.block(
          name, base, kinds, reads, {{acc, one}},
          [&](ImplicitLocOpBuilder &b, ValueRange iv) {
            auto [d, dmin] = reader.superScales(b, iv);
            Value dd = arith::MulFOp::create(b, mins ? dmin : d,
                                             nb.load(qa.scales, aScale, iv));
            SmallVector<Value> sums;
            for (AffineMap m : groupMaps)
              sums.push_back(nb.load(sum, m, iv));
            nb.store(q4kStep(b, gemm, nb.load(acc, one, iv), dd, sums), acc,
                     one, iv);
          },
          [&](ImplicitLocOpBuilder &b, ValueRange iv) {
            nb.store(nb.f32(0.0), acc, one, iv);
          });
    };
    step("matmul_iscale", isum, accD, false);
    step("matmul_imin_scale", msum, accM, true);
  }
};

} // namespace

void llmc::graph_to_tl::populateMatmulLoweringPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<MatmulLowering>(converter, patterns.getContext());
}
