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
  Value i32(int64_t v) {
    return arith::ConstantOp::create(b, b.getI32IntegerAttr(v));
  }

  /// Emits `tl.for %iv = 0 to ub step 1` and calls `fn` inside. Lowering
  /// emits serial loops only: their kinds are the schedules' choice.
  void loop(Value ub, function_ref<void(Value)> fn) { loop(ub, 1, fn); }
  /// The same with a step (tiles of `step` up to `ub`), from `lb` (0 when
  /// null).
  void loop(Value ub, int64_t step, function_ref<void(Value)> fn,
            Value lb = {}) {
    Value s = index(step);
    auto forOp =
        tl::ForOp::create(b, lb ? lb : index(0), ub, s, LoopKind::serial);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(forOp.getBody()->getTerminator());
    fn(forOp.getInductionVar());
  }

  /// A perfect nest over `ubs`.
  void nest(ArrayRef<Value> ubs, function_ref<void(ValueRange)> fn) {
    SmallVector<Value> ivs;
    std::function<void(unsigned)> rec = [&](unsigned depth) {
      if (depth == ubs.size())
        return fn(ivs);
      loop(ubs[depth], [&](Value iv) {
        ivs.push_back(iv);
        rec(depth + 1);
        ivs.pop_back();
      });
    };
    rec(0);
  }

  /// A stack buffer of `type` private to the current loop iteration (for
  /// partial results consumed in the iteration that makes them).
  Value scratch(MemRefType type) {
    return memref::AllocaOp::create(b, type, b.getI64IntegerAttr(64));
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

/// An i8 constant (masks and shift amounts of quantized bytes).
inline Value i8Constant(ImplicitLocOpBuilder &b, int64_t v) {
  return arith::ConstantOp::create(b, b.getI8IntegerAttr(v)).getResult();
}

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

/// Adds the graph.attention lowering (AttentionLowering.cpp).
/// dist.all_reduce and dist.all_gather on buffers (CollectiveLowering.cpp).
void populateCollectiveLoweringPatterns(const TypeConverter &converter,
                                        RewritePatternSet &patterns);
void populateAttentionLoweringPatterns(const TypeConverter &converter,
                                       RewritePatternSet &patterns);

/// Adds the graph.matmul lowering (MatmulLowering.cpp).
void populateMatmulLoweringPatterns(const TypeConverter &converter,
                                    RewritePatternSet &patterns);

} // namespace llmc::graph_to_tl

#endif // LLMC_LIB_CONVERSION_GRAPHTOTL_LOWERINGUTILS_H
