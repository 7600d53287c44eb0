//===- LoweringUtils.h - shared pieces of the graph-to-tl lowering --------===//
//
// Internal to lib/Conversion/GraphToTL: the tl loop-nest builder, affine map
// helpers and the base of the lowering patterns, shared by GraphToTL.cpp and
// MatmulLowering.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_LIB_CONVERSION_GRAPHTOTL_LOWERINGUTILS_H
#define LLMC_LIB_CONVERSION_GRAPHTOTL_LOWERINGUTILS_H

#include "Dialect/Graph/IR/Graph.h"
#include "Dialect/TL/IR/TL.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Transforms/DialectConversion.h"

namespace llmc::graph_to_tl {

using namespace mlir;
using namespace llmc::graph;
using llmc::tl::IterKind;
using llmc::tl::LoopKind;

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
inline Value toF32(ImplicitLocOpBuilder &b, Value v) {
  if (v.getType().isF32())
    return v;
  return arith::ExtFOp::create(b, b.getF32Type(), v);
}

/// The identity map over the first `rank` of `numIters` variables, offset by
/// `first`: (d0..dn) -> (d_first, ..., d_{first+rank-1}).
inline AffineMap dimsMap(NestBuilder &nb, unsigned numIters, unsigned first,
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

/// The iteration-variable maps of a leading-dims-plus-extra nest: the first
/// `lead` variables are the activation's leading dimensions.
inline AffineMap leadMap(NestBuilder &nb, unsigned numIters, unsigned lead,
                         ArrayRef<AffineExpr> rest) {
  SmallVector<AffineExpr> exprs;
  for (unsigned i = 0; i < lead; ++i)
    exprs.push_back(nb.d(i));
  llvm::append_range(exprs, rest);
  return nb.map(numIters, exprs);
}

/// A buffer shaped like the activation `x` with its last dimension replaced
/// by `last` elements of `element`.
inline Value allocLike(NestBuilder &nb, Value x, int64_t last, Type element) {
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

/// ggml's `hsum_float_8` of 8 lanes: halves added pairwise (v[i+4] + v[i]),
/// then lanes (0+2) and (1+3), then the two.
inline Value reduceAdd8(ImplicitLocOpBuilder &b, ArrayRef<Value> v) {
  auto add = [&](Value p, Value q) {
    return arith::AddFOp::create(b, p, q).getResult();
  };
  SmallVector<Value> t;
  for (int i = 0; i < 4; ++i)
    t.push_back(add(v[i + 4], v[i]));
  return add(add(t[0], t[2]), add(t[1], t[3]));
}

/// GCC's `_mm512_reduce_add_ps` of 16 lanes: the halves added pairwise
/// (v[i+8] + v[i]), then reduceAdd8.
inline Value reduceAdd16(ImplicitLocOpBuilder &b, ArrayRef<Value> v) {
  SmallVector<Value> t;
  for (int i = 0; i < 8; ++i)
    t.push_back(arith::AddFOp::create(b, v[i + 8], v[i]));
  return reduceAdd8(b, t);
}

/// Every element of a small 1-D scratch buffer (a SIMD kernel's lanes), as
/// read by a block with `numIters` variables: one constant map each.
struct LaneReads {
  Value buffer;
  SmallVector<AffineMap> maps;

  LaneReads(NestBuilder &nb, Value buffer, unsigned numIters) : buffer(buffer) {
    int64_t n = llvm::cast<MemRefType>(buffer.getType()).getDimSize(0);
    for (int64_t i = 0; i < n; ++i)
      maps.push_back(nb.map(numIters, {nb.c(i)}));
  }
  /// Appends the regions to a block's reads.
  void appendTo(SmallVectorImpl<Access> &reads) const {
    for (AffineMap m : maps)
      reads.push_back({buffer, m});
  }
  /// Loads every lane at the block instance `it`.
  SmallVector<Value> load(NestBuilder &nb, ValueRange it) const {
    SmallVector<Value> v;
    for (AffineMap m : maps)
      v.push_back(nb.load(buffer, m, it));
    return v;
  }
};

/// ggml_vec_dot_f32's reduction of its four 16-lane accumulators (64 lanes,
/// accumulator j in lanes 16j..16j+15): (acc0 + acc2) + (acc1 + acc3), then
/// reduceAdd16.
inline Value reduceAdd64(ImplicitLocOpBuilder &b, ArrayRef<Value> a) {
  SmallVector<Value> v;
  for (int l = 0; l < 16; ++l)
    v.push_back(arith::AddFOp::create(
        b, arith::AddFOp::create(b, a[l], a[l + 32]),
        arith::AddFOp::create(b, a[l + 16], a[l + 48])));
  return reduceAdd16(b, v);
}

/// One lane of ggml's AVX-512 `ggml_v_expf`, operation for operation
/// (AttentionLowering.cpp; also SiLU's exp with ggml_avx512).
Value ggmlExpfAvx512(ImplicitLocOpBuilder &b, Value x);

/// Adds the graph.attention lowering (AttentionLowering.cpp).
void populateAttentionLoweringPatterns(const TypeConverter &converter,
                                       RewritePatternSet &patterns);

/// Adds the graph.matmul lowering (MatmulLowering.cpp).
void populateMatmulLoweringPatterns(const TypeConverter &converter,
                                    RewritePatternSet &patterns);

} // namespace llmc::graph_to_tl

#endif // LLMC_LIB_CONVERSION_GRAPHTOTL_LOWERINGUTILS_H
