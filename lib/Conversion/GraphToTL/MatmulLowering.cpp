//===- MatmulLowering.cpp - graph.matmul to tl loop nests -----------------===//
//
// f32 and 16-bit weights: one reduction nest. Quantized weights: decoded
// inside the product (exact mode), or, with an act_type, activations
// quantized like llama.cpp and integer dot products whose f32 steps follow
// ggml's x86 kernels (docs/numerics.md).
//
//===----------------------------------------------------------------------===//
#include "LoweringUtils.h"
#include "QuantReader.h"

using namespace llmc::graph_to_tl;

namespace {

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
    if (act && act.isBF16() && op.getGgmlAvx512() && wElement.isBF16() &&
        inner % 64 == 0) {
      rewriter.replaceOp(op, bf16Dot(nb, op, x, w));
      return success();
    }
    if (act && act.isF16() && op.getGgmlAvx512() && wElement.isF16() &&
        inner % 64 == 0) {
      rewriter.replaceOp(op, f16Dot(nb, op, x, w));
      return success();
    }
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

  /// ggml's BF16 products on an AVX512-BF16 host: VDPBF16PS lanes, each
  /// adding the product of its odd pair element, then its even one, with a
  /// rounding after each. Several rows go through llamafile's sgemm (one
  /// 16-lane accumulator, 32 elements per step, then reduceAdd16); one row
  /// through ggml_vec_dot_bf16 (two accumulators over 64-element steps,
  /// each reduced, summed in f64).
  Value bf16Dot(NestBuilder &nb, MatmulOp op, Value x, Value w) const {
    ImplicitLocOpBuilder &b = nb.b;
    int64_t k = op.getWeight().getType().getShape().back();
    int64_t rows = op.getWeight().getType().getShape().front();
    unsigned lead = llvm::cast<MemRefType>(x.getType()).getRank() - 1;
    Type f32 = b.getF32Type(), f64 = b.getF64Type();
    Value out = nb.alloc(resultType(op), nb.dynamicSizes(x));
    SmallVector<Value> ubs = nb.sizes(x);
    Value seq = ubs.front();
    ubs.pop_back();
    ubs.push_back(nb.index(rows));
    Value gemm = nb.alloc(MemRefType::get({16}, f32), {});
    Value dot = nb.alloc(MemRefType::get({32}, f32), {});
    unsigned nIt = lead + 3;
    AffineExpr n = nb.d(lead), i = nb.d(lead + 1), l = nb.d(lead + 2);
    auto xAt = [&](AffineExpr col) { return leadMap(nb, nIt, lead, {col}); };
    auto wAt = [&](AffineExpr col) { return nb.map(nIt, {n, col}); };
    // gemm: step i covers 32 elements, lane l the pair 32i + 2l, +1.
    AffineMap gx0 = xAt(i * 32 + l * 2), gx1 = xAt(i * 32 + l * 2 + 1);
    AffineMap gw0 = wAt(i * 32 + l * 2), gw1 = wAt(i * 32 + l * 2 + 1);
    // vec_dot: step i covers 64 elements, c1 lane l the pair 64i + 2l, c2
    // lane l the pair 64i + 32 + 2l.
    AffineMap dx0 = xAt(i * 64 + l * 2), dx1 = xAt(i * 64 + l * 2 + 1);
    AffineMap dx2 = xAt(i * 64 + l * 2 + 32), dx3 = xAt(i * 64 + l * 2 + 33);
    AffineMap dw0 = wAt(i * 64 + l * 2), dw1 = wAt(i * 64 + l * 2 + 1);
    AffineMap dw2 = wAt(i * 64 + l * 2 + 32), dw3 = wAt(i * 64 + l * 2 + 33);
    AffineMap lane = nb.map(nIt, {l}), lane2 = nb.map(nIt, {l + 16});
    SmallVector<IterKind> kinds(lead + 1, IterKind::spatial);
    kinds.push_back(IterKind::reduce);
    kinds.push_back(IterKind::spatial);
    // acc += x_odd * w_odd; acc += x_even * w_even (each rounded).
    auto pairStep = [&](ImplicitLocOpBuilder &b, ValueRange it, Value acc,
                        AffineMap x0, AffineMap x1, AffineMap w0, AffineMap w1) {
      auto prod = [&](AffineMap xm, AffineMap wm) {
        return arith::MulFOp::create(
            b, nb.load(x, xm, it),
            arith::ExtFOp::create(b, f32, nb.load(w, wm, it)));
      };
      Value a = arith::AddFOp::create(b, acc, prod(x1, w1));
      return arith::AddFOp::create(b, a, prod(x0, w0)).getResult();
    };
    nb.nest(ubs, LoopKind::parallel, [&](ValueRange ivs) {
      nb.nest({nb.index(k / 32), nb.index(16)}, LoopKind::serial,
              [&](ValueRange il) {
        SmallVector<Value> it(ivs);
        llvm::append_range(it, il);
        nb.block(
            "matmul_bf16_gemm", it, kinds,
            {{x, gx0}, {x, gx1}, {w, gw0}, {w, gw1}}, {{gemm, lane}},
            [&](ImplicitLocOpBuilder &b, ValueRange iv) {
              nb.store(pairStep(b, iv, nb.load(gemm, lane, iv), gx0, gx1, gw0, gw1),
                       gemm, lane, iv);
            },
            [&](ImplicitLocOpBuilder &b, ValueRange iv) {
              nb.store(nb.f32(0.0), gemm, lane, iv);
            });
      });
      nb.nest({nb.index(k / 64), nb.index(16)}, LoopKind::serial,
              [&](ValueRange il) {
        SmallVector<Value> it(ivs);
        llvm::append_range(it, il);
        nb.block(
            "matmul_bf16_dot", it, kinds,
            {{x, dx0}, {x, dx1}, {x, dx2}, {x, dx3},
             {w, dw0}, {w, dw1}, {w, dw2}, {w, dw3}},
            {{dot, lane}, {dot, lane2}},
            [&](ImplicitLocOpBuilder &b, ValueRange iv) {
              nb.store(pairStep(b, iv, nb.load(dot, lane, iv), dx0, dx1, dw0, dw1),
                       dot, lane, iv);
              nb.store(pairStep(b, iv, nb.load(dot, lane2, iv), dx2, dx3, dw2, dw3),
                       dot, lane2, iv);
            },
            [&](ImplicitLocOpBuilder &b, ValueRange iv) {
              nb.store(nb.f32(0.0), dot, lane, iv);
              nb.store(nb.f32(0.0), dot, lane2, iv);
            });
      });
      unsigned nOut = lead + 1;
      LaneReads gl(nb, gemm, nOut), dl(nb, dot, nOut);
      SmallVector<Access> reads;
      gl.appendTo(reads);
      dl.appendTo(reads);
      AffineMap outMap = leadMap(nb, nOut, lead, {nb.d(lead)});
      nb.block("matmul_bf16_sum", ivs, SmallVector<IterKind>(nOut, IterKind::spatial),
               reads, {{out, outMap}}, [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                 SmallVector<Value> g = gl.load(nb, iv), d = dl.load(nb, iv);
                 ArrayRef<Value> c1 = ArrayRef<Value>(d).take_front(16);
                 ArrayRef<Value> c2 = ArrayRef<Value>(d).drop_front(16);
                 Value single = arith::TruncFOp::create(
                     b, f32,
                     arith::AddFOp::create(
                         b, arith::ExtFOp::create(b, f64, reduceAdd16(b, c1)),
                         arith::ExtFOp::create(b, f64, reduceAdd16(b, c2))));
                 Value several = arith::CmpIOp::create(
                     b, arith::CmpIPredicate::uge, seq, nb.index(2));
                 nb.store(arith::SelectOp::create(b, several, reduceAdd16(b, g), single),
                          out, outMap, iv);
               });
    });
    return out;
  }

  /// ggml's F16 products on an AVX-512 host (F16C conversions, products of
  /// two halves exact in f32): several rows through llamafile's sgemm (one
  /// 16-lane FMA accumulator, then reduceAdd16), one row through
  /// ggml_vec_dot_f16 (four 16-lane accumulators over 64-element steps,
  /// reduceAdd64).
  Value f16Dot(NestBuilder &nb, MatmulOp op, Value x, Value w) const {
    ImplicitLocOpBuilder &b = nb.b;
    int64_t k = op.getWeight().getType().getShape().back();
    int64_t rows = op.getWeight().getType().getShape().front();
    unsigned lead = llvm::cast<MemRefType>(x.getType()).getRank() - 1;
    Type f32 = b.getF32Type();
    Value out = nb.alloc(resultType(op), nb.dynamicSizes(x));
    SmallVector<Value> ubs = nb.sizes(x);
    Value seq = ubs.front();
    ubs.pop_back();
    ubs.push_back(nb.index(rows));
    Value gemm = nb.alloc(MemRefType::get({16}, f32), {});
    Value dot = nb.alloc(MemRefType::get({64}, f32), {});
    unsigned nIt = lead + 3;
    AffineExpr n = nb.d(lead), i = nb.d(lead + 1), l = nb.d(lead + 2);
    SmallVector<IterKind> kinds(lead + 1, IterKind::spatial);
    kinds.push_back(IterKind::reduce);
    kinds.push_back(IterKind::spatial);
    auto step = [&](StringRef name, Value acc, int64_t width, int64_t lanes) {
      AffineMap xm = leadMap(nb, nIt, lead, {i * width + l});
      AffineMap wm = nb.map(nIt, {n, i * width + l});
      AffineMap lane = nb.map(nIt, {l});
      return [&, name, acc, width, lanes, xm, wm, lane](ValueRange ivs) {
        nb.nest({nb.index(k / width), nb.index(lanes)}, LoopKind::serial,
                [&](ValueRange il) {
          SmallVector<Value> it(ivs);
          llvm::append_range(it, il);
          nb.block(
              name, it, kinds, {{x, xm}, {w, wm}}, {{acc, lane}},
              [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                Value p = arith::MulFOp::create(
                    b, nb.load(x, xm, iv),
                    arith::ExtFOp::create(b, f32, nb.load(w, wm, iv)));
                nb.store(arith::AddFOp::create(b, nb.load(acc, lane, iv), p),
                         acc, lane, iv);
              },
              [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                nb.store(nb.f32(0.0), acc, lane, iv);
              });
        });
      };
    };
    auto gemmStep = step("matmul_f16_gemm", gemm, 16, 16);
    auto dotStep = step("matmul_f16_dot", dot, 64, 64);
    nb.nest(ubs, LoopKind::parallel, [&](ValueRange ivs) {
      gemmStep(ivs);
      dotStep(ivs);
      unsigned nOut = lead + 1;
      LaneReads gl(nb, gemm, nOut), dl(nb, dot, nOut);
      SmallVector<Access> reads;
      gl.appendTo(reads);
      dl.appendTo(reads);
      AffineMap outMap = leadMap(nb, nOut, lead, {nb.d(lead)});
      nb.block("matmul_f16_sum", ivs, SmallVector<IterKind>(nOut, IterKind::spatial),
               reads, {{out, outMap}}, [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                 SmallVector<Value> g = gl.load(nb, iv), d = dl.load(nb, iv);
                 Value several = arith::CmpIOp::create(
                     b, arith::CmpIPredicate::uge, seq, nb.index(2));
                 nb.store(arith::SelectOp::create(b, several, reduceAdd16(b, g),
                                                  reduceAdd64(b, d)),
                          out, outMap, iv);
               });
    });
    return out;
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
      unsigned nOut = lead + 1;
      LaneReads ll(nb, lanes, nOut);
      SmallVector<Access> reads;
      ll.appendTo(reads);
      AffineMap outMap = leadMap(nb, nOut, lead, {nb.d(lead)});
      nb.block("matmul_hsum", outer, SmallVector<IterKind>(nOut, IterKind::spatial),
               reads, {{out, outMap}}, [&](ImplicitLocOpBuilder &b, ValueRange it) {
                 nb.store(reduceAdd8(b, ll.load(nb, it)), out, outMap, it);
               });
    });
  }
};

} // namespace

void llmc::graph_to_tl::populateMatmulLoweringPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<MatmulLowering>(converter, patterns.getContext());
}
