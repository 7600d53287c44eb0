//===- GraphToTL.cpp - lower graph tensor ops to tl loop nests ------------===//
//
// Each graph op becomes: one result buffer allocated at the top level of the
// function, and one or more tl.for nests around tl.blocks that fill it. The
// blocks' regions are affine maps over their iteration variables, which is
// what later schedule primitives reason about.
//
//===----------------------------------------------------------------------===//
#include "Conversion/GraphToTL/GraphToTL.h"
#include "Dialect/Dist/IR/Dist.h"
#include "Dialect/Graph/IR/Graph.h"
#include "LoweringUtils.h"
#include "QuantReader.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
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
    int64_t dim = op.getTable().getType().getDimSize(1);
    int64_t rows = op.getTable().getType().getDimSize(0);
    // A part of a table (`offset`): the row id - offset, clamped into the
    // part, and a last iteration variable that is 1 where the id's row is
    // in the part (the block writes zeros where it is not).
    Value offset = adaptor.getRowOffset();
    unsigned extra = offset ? 1 : 0;
    auto rowOf = [&](Value s, SmallVectorImpl<Value> &it) {
      Value id = memref::LoadOp::create(b, ids, s);
      Value row = arith::IndexCastOp::create(b, b.getIndexType(), id);
      it.push_back(s);
      if (!offset) {
        it.push_back(row);
        return;
      }
      Value local = arith::SubIOp::create(b, row, offset);
      Value zero = nb.index(0), last = nb.index(rows - 1);
      Value inside = arith::AndIOp::create(
          b, arith::CmpIOp::create(b, arith::CmpIPredicate::sge, local, zero),
          arith::CmpIOp::create(b, arith::CmpIPredicate::sle, local, last));
      it.push_back(arith::SelectOp::create(b, inside, local, zero));
      it.push_back(arith::SelectOp::create(b, inside, nb.index(1), zero));
    };
    // Zero where the last iteration variable (`extra`) says the row is not
    // in the table's part.
    auto masked = [&](ImplicitLocOpBuilder &b, Value v, ValueRange it) {
      if (!offset)
        return v;
      Value inside =
          arith::CmpIOp::create(b, arith::CmpIPredicate::ne, it.back(),
                                arith::ConstantIndexOp::create(b, 0));
      return arith::SelectOp::create(
                 b, inside, v,
                 arith::ConstantOp::create(b, b.getF32FloatAttr(0.0f)))
          .getResult();
    };
    // The gathered row is data dependent: load the id in the loop and bind
    // an iteration variable to it, so the block's regions stay affine.
    if (!quantBlockBytes(element)) {
      // (s, row, j); an interleaved table's element j of row `row` lies in
      // the row's group, after j elements of each of its rows.
      unsigned n = 3 + extra;
      SmallVector<Access> reads = {{table, nb.map(n, {nb.d(1), nb.d(2)})}};
      if (InterleavedAttr layout = getInterleaving(op.getTable().getType())) {
        int64_t group = layout.getRows();
        reads[0].map = nb.map(
            n, {nb.d(1).floorDiv(group), nb.d(2) * group + nb.d(1) % group});
      }
      AffineMap outMap = nb.map(n, {nb.d(0), nb.d(2)});
      SmallVector<IterKind> kinds(n, IterKind::spatial);
      nb.loop(idSizes[0], [&](Value s) {
        SmallVector<Value> head;
        rowOf(s, head);
        nb.loop(nb.index(dim), [&](Value j) {
          SmallVector<Value> it = {head[0], head[1], j};
          if (offset)
            it.push_back(head[2]);
          nb.block("embedding", it, kinds, reads, {{out, outMap}},
                   [&](ImplicitLocOpBuilder &b, ValueRange it) {
                     Value v = toF32(b, nb.load(table, reads[0].map, it));
                     nb.store(masked(b, v, it), out, outMap, it);
                   });
        });
      });
    } else {
      // Quantized rows: by block, then by the levels of the block's layout.
      SmallVector<int64_t> levels = quantLevels(element);
      unsigned n = 3 + levels.size() + extra;
      SmallVector<AffineExpr> lv;
      for (unsigned i = 0; i < levels.size(); ++i)
        lv.push_back(nb.d(3 + i));
      // A table shared with llama.cpp-mode products may be interleaved
      // (graph-interleave-weights): the reader finds the row's bytes.
      QuantReader reader(nb, element, table, n, nb.d(1), nb.d(2), lv,
                         getInterleaving(op.getTable().getType()));
      AffineMap outMap = nb.map(
          n, {nb.d(0), nb.d(2) * quantBlockElements(element) +
                           quantElement(element, lv)});
      SmallVector<Value> ubs = {nb.index(dim / quantBlockElements(element))};
      for (int64_t e : levels)
        ubs.push_back(nb.index(e));
      SmallVector<IterKind> kinds(n, IterKind::spatial);
      nb.loop(idSizes[0], [&](Value s) {
        SmallVector<Value> head;
        rowOf(s, head);
        nb.nest(ubs, [&](ValueRange ivs) {
          SmallVector<Value> it = {head[0], head[1]};
          llvm::append_range(it, ivs);
          if (offset)
            it.push_back(head[2]);
          nb.block("embedding", it, kinds, reader.accesses(), {{out, outMap}},
                   [&](ImplicitLocOpBuilder &b, ValueRange iv) {
                     nb.store(masked(b, reader.value(b, iv), iv), out, outMap,
                              iv);
                   });
        });
      });
    }
    rewriter.replaceOp(op, out);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// graph.rms_norm
//===----------------------------------------------------------------------===//

/// The block summing the squares of a row of `x` into `ss` (f64, zero
/// first): iteration variables `ivs`, the last a reduction over the row.
/// Like ggml's rms_norm, the f32 squares are summed in f64 and the mean is
/// rounded to f32 once (rmsInverse): fewer rounding steps than an f32 sum.
static void sumSquaresBlock(NestBuilder &nb, StringRef name, ValueRange ivs,
                            Value x, AffineMap xMap, Value ss,
                            AffineMap rowMap) {
  SmallVector<IterKind> kinds(ivs.size() - 1, IterKind::spatial);
  kinds.push_back(IterKind::reduce);
  Type f64 = nb.b.getF64Type();
  nb.block(
      name, ivs, kinds, {{x, xMap}}, {{ss, rowMap}},
      [&](ImplicitLocOpBuilder &b, ValueRange it) {
        Value v = nb.load(x, xMap, it);
        Value acc = nb.load(ss, rowMap, it);
        Value sq = arith::ExtFOp::create(
            b, f64, arith::MulFOp::create(b, v, v).getResult());
        nb.store(arith::AddFOp::create(b, acc, sq), ss, rowMap, it);
      },
      [&](ImplicitLocOpBuilder &b, ValueRange it) {
        nb.store(arith::ConstantOp::create(b, b.getF64FloatAttr(0.0)), ss,
                 rowMap, it);
      });
}

/// 1 / sqrt(mean + eps) from a row's f64 sum of `dim` squares.
static Value rmsInverse(ImplicitLocOpBuilder &b, NestBuilder &nb, Value sum,
                        int64_t dim, float eps) {
  Value mean = arith::TruncFOp::create(
      b, b.getF32Type(),
      arith::DivFOp::create(
          b, sum, arith::ConstantOp::create(b, b.getF64FloatAttr(dim))));
  Value var = arith::AddFOp::create(b, mean, nb.f32(eps));
  return arith::DivFOp::create(b, nb.f32(1.0), math::SqrtOp::create(b, var));
}

/// Element `v` of a row normalised: (v * inv) * g.
static Value rmsScale(ImplicitLocOpBuilder &b, Value v, Value inv, Value g) {
  return arith::MulFOp::create(b, arith::MulFOp::create(b, v, inv), g);
}

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
    // The scale block computes the inverse root from it per element (a
    // nest of its own for the inverse measured slower: docs/performance.md,
    // issue 9 step 11).
    auto ssType = MemRefType::get(xType.getShape().drop_back(), b.getF64Type());
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
    SmallVector<IterKind> spatialKinds(rank, IterKind::spatial);

    nb.nest(sizes, [&](ValueRange ivs) {
      sumSquaresBlock(nb, "rms_norm_sumsq", ivs, x, xMap, ss, rowMap);
    });
    nb.nest(sizes, [&](ValueRange ivs) {
      nb.block("rms_norm_scale", ivs, spatialKinds,
               {{x, xMap}, {ss, rowMap}, {w, wMap}}, {{out, xMap}},
               [&](ImplicitLocOpBuilder &b, ValueRange it) {
                 Value v = nb.load(x, xMap, it);
                 Value inv = rmsInverse(b, nb, nb.load(ss, rowMap, it), dim, eps);
                 nb.store(rmsScale(b, v, inv, nb.load(w, wMap, it)), out,
                          xMap, it);
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
  nb.nest(sizes, [&](ValueRange ivs) {
    nb.block(name, ivs, kinds, reads, {{out, full}},
             [&](ImplicitLocOpBuilder &b, ValueRange it) {
               Value a = nb.load(lhs, full, it);
               Value c = rhs ? nb.load(rhs, rhsMap, it) : Value();
               nb.store(fn(b, a, c), out, full, it);
             });
  });
  return out;
}

/// One element of an elementwise graph op (graph.add, graph.mul,
/// graph.silu) from its operands' elements.
static Value scalarElementwise(ImplicitLocOpBuilder &b, Operation *op,
                               ValueRange args) {
  if (isa<AddOp>(op))
    return arith::AddFOp::create(b, args[0], args[1]);
  if (isa<MulOp>(op))
    return arith::MulFOp::create(b, args[0], args[1]);
  assert(isa<SiluOp>(op) && "not an elementwise graph op");
  // x * sigmoid(x) = x / (1 + exp(-x))
  Value x = args[0];
  Value one = arith::ConstantOp::create(b, b.getF32FloatAttr(1.0f));
  Value e = math::ExpOp::create(b, arith::NegFOp::create(b, x));
  return arith::DivFOp::create(b, x, arith::AddFOp::create(b, one, e));
}

template <typename OpTy>
struct ElementwiseOpLowering : GraphLowering<OpTy> {
  using GraphLowering<OpTy>::GraphLowering;
  LogicalResult
  matchAndRewrite(OpTy op, typename GraphLowering<OpTy>::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    ValueRange operands = adaptor.getOperands();
    Value out = lowerElementwise(
        b, op->getName().stripDialect(), this->resultType(op), operands[0],
        operands.size() > 1 ? operands[1] : Value(),
        [&](ImplicitLocOpBuilder &b, Value x, Value y) {
          return y ? scalarElementwise(b, op, {x, y})
                   : scalarElementwise(b, op, {x});
        });
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// graph.elementwise: one nest whose block computes the body's ops on
/// scalars, in order (the same operations as the unfused ops'), loading
/// each input once (broadcast ones along the trailing dimensions).
struct FusedElementwiseLowering : GraphLowering<ElementwiseOp> {
  using GraphLowering::GraphLowering;
  LogicalResult
  matchAndRewrite(ElementwiseOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    NestBuilder nb(b);
    MemRefType type = resultType(op);
    unsigned rank = type.getRank();
    ValueRange inputs = adaptor.getInputs();
    // The verifier guarantees an input of the result's shape.
    Value shaped = *llvm::find_if(inputs, [&](Value v) {
      return cast<MemRefType>(v.getType()).getRank() == rank;
    });
    Value out = nb.alloc(type, nb.dynamicSizes(shaped));
    Block &body = op.getBody().front();
    std::string name;
    for (Operation &inner : body.without_terminator())
      name += (name.empty() ? "" : "_") + inner.getName().stripDialect().str();
    AffineMap full = dimsMap(nb, rank, 0, rank);
    SmallVector<Access> reads;
    for (Value input : inputs) {
      unsigned r = cast<MemRefType>(input.getType()).getRank();
      reads.push_back({input, dimsMap(nb, rank, rank - r, r)});
    }
    nb.nest(nb.sizes(shaped), [&](ValueRange ivs) {
      nb.block(name, ivs, SmallVector<IterKind>(rank, IterKind::spatial), reads,
               {{out, full}}, [&](ImplicitLocOpBuilder &b, ValueRange it) {
                 IRMapping scalars;
                 for (auto [arg, read] : llvm::zip(body.getArguments(), reads))
                   scalars.map(arg, nb.load(read.buffer, read.map, it));
                 for (Operation &inner : body.without_terminator()) {
                   SmallVector<Value> args;
                   for (Value v : inner.getOperands())
                     args.push_back(scalars.lookup(v));
                   scalars.map(inner.getResult(0),
                               scalarElementwise(b, &inner, args));
                 }
                 Value result = cast<YieldOp>(body.back()).getValue();
                 nb.store(scalars.lookup(result), out, full, it);
               });
    });
    rewriter.replaceOp(op, out);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// graph.rope
//===----------------------------------------------------------------------===//

/// The angle of pair `i` at position `pos` as PyTorch/HF compute it:
/// pos * (1 / theta^(2i/hd)) in f32.
static Value torchRopeAngle(ImplicitLocOpBuilder &b, NestBuilder &nb, Value pos,
                          Value i, float theta, int64_t headDim) {
  Type f32 = b.getF32Type();
  Value iF = arith::UIToFPOp::create(
      b, f32, arith::IndexCastUIOp::create(b, b.getI64Type(), i));
  Value expo = arith::DivFOp::create(
      b, arith::MulFOp::create(b, iF, nb.f32(2.0)), nb.f32(headDim));
  Value freq = arith::DivFOp::create(
      b, nb.f32(1.0), math::PowFOp::create(b, nb.f32(theta), expo));
  return arith::MulFOp::create(b, pos, freq);
}

/// The angle as ggml's rope cache computes it: pos multiplied by
/// theta^(-2/hd) once per pair, i times, rounding each time.
static Value ggmlRopeAngle(ImplicitLocOpBuilder &b, NestBuilder &nb, Value pos,
                         Value i, float theta, int64_t headDim) {
  float scale = std::pow(theta, -2.0f / static_cast<float>(headDim));
  auto loop = scf::ForOp::create(b, nb.index(0), i, nb.index(1),
                                 ValueRange{pos});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  scf::YieldOp::create(
      b, arith::MulFOp::create(b, loop.getRegionIterArgs()[0],
                               nb.f32(scale))
             .getResult());
  return loop.getResult(0);
}

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
    bool ggml = op.getAngles() == RopeAngles::iterated;
    // The angles of the rows: cos and sin per (row, pair), shared by the
    // heads (ggml's rope cache).
    Type f32 = b.getF32Type();
    auto tableType = MemRefType::get({ShapedType::kDynamic, hd / 2}, f32);
    Value cosT = nb.alloc(tableType, {sizes[0]});
    Value sinT = nb.alloc(tableType, {sizes[0]});
    AffineMap si = nb.map(2, {nb.d(0), nb.d(1)});
    nb.nest({sizes[0], nb.index(hd / 2)}, [&](ValueRange ivs) {
      nb.block("rope_angles", ivs, {IterKind::spatial, IterKind::spatial}, {},
               {{cosT, si}, {sinT, si}},
               [&](ImplicitLocOpBuilder &b, ValueRange it) {
                 // angle = (pos0 + s) * theta^(-2i/hd), all in f32.
                 Value pos = arith::AddIOp::create(b, pos0, it[0]);
                 Value posF = arith::UIToFPOp::create(
                     b, f32, arith::IndexCastUIOp::create(b, b.getI64Type(), pos));
                 Value angle = ggml ? ggmlRopeAngle(b, nb, posF, it[1], theta, hd)
                                    : torchRopeAngle(b, nb, posF, it[1], theta, hd);
                 nb.store(math::CosOp::create(b, angle), cosT, si, it);
                 nb.store(math::SinOp::create(b, angle), sinT, si, it);
               });
    });
    // Iteration variables: (s, h, i) for pair i of head h of row s.
    AffineExpr s = nb.d(0), h = nb.d(1), i = nb.d(2);
    // The pair's places in its head, and in the row.
    AffineExpr firstIn = interleaved ? i * 2 : i;
    AffineExpr secondIn = interleaved ? i * 2 + 1 : i + hd / 2;
    AffineExpr first = h * hd + firstIn, second = h * hd + secondIn;
    AffineMap m0 = nb.map(3, {s, first}), m1 = nb.map(3, {s, second});
    AffineMap angleMap = nb.map(3, {s, i});
    SmallVector<Access> reads = {
        {x, m0}, {x, m1}, {cosT, angleMap}, {sinT, angleMap}};
    // A fused head norm (graph-fuse-rope-norm): each head's sum of squares
    // first, then the pair normalised as it is loaded, as rms_norm's scale
    // block computes it.
    Value g = adaptor.getNormWeight(), ss;
    AffineMap headMap = nb.map(3, {s, h});
    AffineMap g0 = nb.map(3, {firstIn}), g1 = nb.map(3, {secondIn});
    if (g) {
      ss = nb.alloc(MemRefType::get({ShapedType::kDynamic, heads}, b.getF64Type()),
                    {sizes[0]});
      nb.nest({sizes[0], nb.index(heads), nb.index(hd)}, [&](ValueRange ivs) {
        sumSquaresBlock(nb, "rope_norm_sumsq", ivs, x,
                        nb.map(3, {s, h * hd + nb.d(2)}), ss, headMap);
      });
      reads.append({{ss, headMap}, {g, g0}, {g, g1}});
    }
    nb.nest({sizes[0], nb.index(heads), nb.index(hd / 2)},
            [&](ValueRange ivs) {
              nb.block(
                  "rope", ivs,
                  {IterKind::spatial, IterKind::spatial, IterKind::spatial},
                  reads, {{out, m0}, {out, m1}},
                  [&](ImplicitLocOpBuilder &b, ValueRange it) {
                    Value cos = nb.load(cosT, angleMap, it);
                    Value sin = nb.load(sinT, angleMap, it);
                    Value a = nb.load(x, m0, it), c = nb.load(x, m1, it);
                    if (g) {
                      Value inv = rmsInverse(
                          b, nb, nb.load(ss, headMap, it), hd,
                          op.getNormEpsAttr().getValue().convertToFloat());
                      a = rmsScale(b, a, inv, nb.load(g, g0, it));
                      c = rmsScale(b, c, inv, nb.load(g, g1, it));
                    }
                    auto mul = [&](Value p, Value q) {
                      return arith::MulFOp::create(b, p, q).getResult();
                    };
                    Value r0, r1;
                    if (ggml) {
                      // ggml's rotate_pairs as its build contracts it:
                      // the first product of each line is fused.
                      r0 = math::FmaOp::create(
                          b, a, cos, arith::NegFOp::create(b, mul(c, sin)));
                      r1 = math::FmaOp::create(b, a, sin, mul(c, cos));
                    } else {
                      r0 = arith::SubFOp::create(b, mul(a, cos), mul(c, sin));
                      r1 = arith::AddFOp::create(b, mul(a, sin), mul(c, cos));
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
// graph.last_rows
//===----------------------------------------------------------------------===//

/// A copy of rows n - count .. n - 1 into a buffer of count rows (the source
/// row is an iteration value, as the KV store's position is).
struct LastRowsLowering : GraphLowering<LastRowsOp> {
  using GraphLowering::GraphLowering;
  LogicalResult
  matchAndRewrite(LastRowsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    NestBuilder nb(b);
    Value x = adaptor.getInput(), count = adaptor.getCount();
    MemRefType type = resultType(op);
    unsigned rank = type.getRank();
    SmallVector<Value> sizes = nb.sizes(x);
    Value first = arith::SubIOp::create(b, sizes[0], count);
    SmallVector<Value> dynSizes = nb.dynamicSizes(x);
    dynSizes[0] = count;
    Value out = nb.alloc(type, dynSizes);
    // Iteration values (i, first + i, trailing...).
    SmallVector<AffineExpr> dst = {nb.d(0)}, src = {nb.d(1)};
    for (unsigned d = 1; d < rank; ++d) {
      dst.push_back(nb.d(d + 1));
      src.push_back(nb.d(d + 1));
    }
    AffineMap dstMap = nb.map(rank + 1, dst), srcMap = nb.map(rank + 1, src);
    SmallVector<IterKind> kinds(rank + 1, IterKind::spatial);
    nb.loop(count, [&](Value i) {
      Value row = arith::AddIOp::create(b, first, i);
      nb.nest(ArrayRef<Value>(sizes).drop_front(), [&](ValueRange ivs) {
        SmallVector<Value> it = {i, row};
        it.append(ivs.begin(), ivs.end());
        nb.block("last_rows", it, kinds, {{x, srcMap}}, {{out, dstMap}},
                 [&](ImplicitLocOpBuilder &, ValueRange v) {
                   nb.store(nb.load(x, srcMap, v), out, dstMap, v);
                 });
      });
    });
    rewriter.replaceOp(op, out);
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
                           math::MathDialect, scf::SCFDialect,
                           dist::DistDialect>();
    // (Collectives on tensors become their buffer forms.)
    target.addIllegalOp<dist::AllReduceOp, dist::AllGatherOp,
                        dist::ReduceScatterOp, dist::AllToAllOp, dist::SendOp,
                        dist::RecvOp, dist::ShardOp, tensor::DimOp>();
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
      // Interleaved: [row groups, their bytes] (#graph.interleaved).
      if (InterleavedAttr layout = getInterleaving(t)) {
        int64_t rows = layout.getRows();
        return MemRefType::get(
            {t.getDimSize(0) / rows,
             rows * t.getDimSize(1) / quantBlockElements(t.getElementType()) *
                 block},
            IntegerType::get(t.getContext(), 8));
      }
      SmallVector<int64_t> shape(t.getShape());
      shape.back() = shape.back() / quantBlockElements(t.getElementType()) * block;
      return MemRefType::get(shape, IntegerType::get(t.getContext(), 8));
    }
    // Interleaved floats: [row groups, their elements] (#graph.interleaved).
    if (InterleavedAttr layout = getInterleaving(t)) {
      int64_t rows = layout.getRows();
      return MemRefType::get({t.getDimSize(0) / rows, rows * t.getDimSize(1)},
                             t.getElementType());
    }
    return MemRefType::get(t.getShape(), t.getElementType());
  });
  converter.addConversion([](WeightsType t) -> Type {
    return MemRefType::get({ShapedType::kDynamic},
                           IntegerType::get(t.getContext(), 8));
  });
  // llmc/abi.h's layout: [layer][k|v][kv_head][max_seq * head_dim], keys
  // as [position][dim], values transposed as [dim][position].
  converter.addConversion([](KVCacheType t) -> Type {
    return MemRefType::get({t.getLayers(), 2, t.getKvHeads(),
                            t.getMaxSeq() * t.getHeadDim()},
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
  populateAttentionLoweringPatterns(converter, patterns);
  populateCollectiveLoweringPatterns(converter, patterns);
  patterns.add<ParamLowering, EmbeddingLowering, RMSNormLowering,
               ElementwiseOpLowering<AddOp>, ElementwiseOpLowering<MulOp>,
               ElementwiseOpLowering<SiluOp>, FusedElementwiseLowering,
               RopeLowering, ReshapeLowering, LastRowsLowering>(
      converter, patterns.getContext());
}
