//===- AffineIndex.cpp - index values as affine expressions ---------------===//
#include "Dialect/TL/Analysis/AffineIndex.h"
#include "Dialect/TL/IR/TL.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using namespace llmc::tl;

AffineExpr AffineIndexBuilder::dim(Value v) {
  MLIRContext *ctx = v.getContext();
  auto it = llvm::find(dims, v);
  if (it == dims.end()) {
    dims.push_back(v);
    return getAffineDimExpr(dims.size() - 1, ctx);
  }
  return getAffineDimExpr(it - dims.begin(), ctx);
}

std::optional<AffineExpr> AffineIndexBuilder::build(Value v) {
  MLIRContext *ctx = v.getContext();
  if (auto c = getConstantIntValue(v))
    return getAffineConstantExpr(*c, ctx);
  Operation *def = v.getDefiningOp();
  if (!def)
    return dim(v); // a loop variable or an argument
  // A value from outside is decomposed through sums and constant multiples
  // (a tile's first index, t0 * 4, hoisted out of the tile's loop), its
  // other parts dims; an affine.apply from outside (possibly semi-affine
  // in symbols) stays a dim.
  bool inside = scope->isAncestor(def);
  auto binary = [&](Value a, Value b) {
    return std::make_pair(build(a), build(b));
  };
  if (auto add = dyn_cast<arith::AddIOp>(def)) {
    auto [a, b] = binary(add.getLhs(), add.getRhs());
    if (a && b)
      return *a + *b;
  } else if (auto sub = dyn_cast<arith::SubIOp>(def)) {
    auto [a, b] = binary(sub.getLhs(), sub.getRhs());
    if (a && b)
      return *a - *b;
  } else if (auto mul = dyn_cast<arith::MulIOp>(def)) {
    auto [a, b] = binary(mul.getLhs(), mul.getRhs());
    if (a && b && (isa<AffineConstantExpr>(*a) || isa<AffineConstantExpr>(*b)))
      return *a * *b;
  } else if (auto apply = dyn_cast<affine::AffineApplyOp>(def);
             apply && inside) {
    SmallVector<AffineExpr> operands;
    for (Value o : apply.getMapOperands()) {
      auto e = build(o);
      if (!e)
        return std::nullopt;
      operands.push_back(*e);
    }
    AffineMap m = apply.getAffineMap();
    AffineExpr r = m.getResult(0).replaceDimsAndSymbols(
        ArrayRef<AffineExpr>(operands).take_front(m.getNumDims()),
        ArrayRef<AffineExpr>(operands).drop_front(m.getNumDims()));
    return r;
  }
  if (opaqueInside || !inside)
    return dim(v);
  return std::nullopt;
}

/// The constant extent of the tl.for whose variable `v` is, when it starts
/// at 0 with step 1.
static std::optional<int64_t> loopExtent(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg)
    return std::nullopt;
  auto loop = dyn_cast_if_present<ForOp>(arg.getOwner()->getParentOp());
  if (!loop || loop.getInductionVar() != v ||
      getConstantIntValue(loop.getLowerBound()) != 0 ||
      getConstantIntValue(loop.getStep()) != 1)
    return std::nullopt;
  return getConstantIntValue(loop.getUpperBound());
}

std::optional<std::pair<int64_t, int64_t>>
llmc::tl::exprRange(AffineExpr e, DimRangeFn dimRange) {
  if (auto c = dyn_cast<AffineConstantExpr>(e))
    return std::make_pair(c.getValue(), c.getValue());
  if (auto d = dyn_cast<AffineDimExpr>(e))
    return dimRange(d.getPosition());
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin)
    return std::nullopt;
  auto l = exprRange(bin.getLHS(), dimRange);
  auto r = exprRange(bin.getRHS(), dimRange);
  if (!l || !r)
    return std::nullopt;
  bool byConstant = r->first == r->second && r->first > 0;
  switch (bin.getKind()) {
  case AffineExprKind::Add:
    return std::make_pair(l->first + r->first, l->second + r->second);
  case AffineExprKind::Mul: {
    int64_t p[] = {l->first * r->first, l->first * r->second,
                   l->second * r->first, l->second * r->second};
    return std::make_pair(*llvm::min_element(p), *llvm::max_element(p));
  }
  case AffineExprKind::FloorDiv:
    if (!byConstant)
      return std::nullopt;
    return std::make_pair(llvm::divideFloorSigned(l->first, r->first),
                          llvm::divideFloorSigned(l->second, r->first));
  case AffineExprKind::Mod:
    if (!byConstant)
      return std::nullopt;
    return std::make_pair(int64_t(0), r->first - 1);
  default:
    return std::nullopt;
  }
}

AffineExpr llmc::tl::simplifyWithRanges(AffineExpr e, DimRangeFn dimRange) {
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin)
    return e;
  AffineExpr lhs = simplifyWithRanges(bin.getLHS(), dimRange);
  AffineExpr rhs = simplifyWithRanges(bin.getRHS(), dimRange);
  auto c = dyn_cast<AffineConstantExpr>(rhs);
  if (c && c.getValue() > 0 &&
      (e.getKind() == AffineExprKind::Mod ||
       e.getKind() == AffineExprKind::FloorDiv)) {
    // One quotient q over the ranges: lhs floordiv c is q, lhs mod c is
    // lhs - q * c.
    if (auto range = exprRange(lhs, dimRange)) {
      int64_t q = llvm::divideFloorSigned(range->first, c.getValue());
      if (q == llvm::divideFloorSigned(range->second, c.getValue()))
        return e.getKind() == AffineExprKind::Mod
                   ? lhs - q * c.getValue()
                   : getAffineConstantExpr(q, e.getContext());
    }
  }
  return getAffineBinaryOpExpr(e.getKind(), lhs, rhs);
}

std::optional<int64_t> llmc::tl::runCoefficient(AffineExpr e, unsigned dim,
                                                unsigned numDims, int64_t run) {
  if (run <= 1)
    return linearCoefficient(e, dim, numDims);
  // dim = run * dim + lane, the lane a new dim below `run`.
  MLIRContext *ctx = e.getContext();
  SmallVector<AffineExpr> repl;
  for (unsigned k = 0; k < numDims; ++k)
    repl.push_back(k == dim ? getAffineDimExpr(k, ctx) * run +
                                  getAffineDimExpr(numDims, ctx)
                            : getAffineDimExpr(k, ctx));
  AffineExpr split = simplifyAffineExpr(e.replaceDims(repl), numDims + 1, 0);
  split = simplifyWithRanges(split, [&](unsigned d) {
    return d == numDims ? std::optional(std::make_pair(int64_t(0), run - 1))
                        : std::nullopt;
  });
  return linearCoefficient(simplifyAffineExpr(split, numDims + 1, 0), numDims,
                           numDims + 1);
}

/// `e` with each floordiv and mod of a loop variable's dim below its
/// divisor simplified (a tile's slice: (t0 * 4 + t1) mod 4, which simplifies
/// to t1 mod 4, is t1).
static AffineExpr withLoopRanges(AffineExpr e, ArrayRef<Value> dims) {
  return simplifyWithRanges(
      e, [&](unsigned d) -> std::optional<std::pair<int64_t, int64_t>> {
        std::optional<int64_t> extent =
            d < dims.size() ? loopExtent(dims[d]) : std::nullopt;
        if (!extent || *extent < 1)
          return std::nullopt;
        return std::make_pair(int64_t(0), *extent - 1);
      });
}

std::optional<SmallVector<AffineExpr>>
AffineIndexBuilder::compose(AffineMap map, ValueRange iterValues) {
  SmallVector<AffineExpr> bound(map.getNumDims());
  SmallVector<AffineExpr> results;
  for (AffineExpr e : map.getResults()) {
    // Only the iteration variables the result uses need to be affine.
    for (unsigned i = 0; i < map.getNumDims(); ++i) {
      if (bound[i] || !e.isFunctionOfDim(i))
        continue;
      auto b = build(iterValues[i]);
      if (!b)
        return std::nullopt;
      bound[i] = *b;
    }
    SmallVector<AffineExpr> repl;
    for (unsigned i = 0; i < map.getNumDims(); ++i)
      repl.push_back(bound[i] ? bound[i]
                              : getAffineConstantExpr(0, map.getContext()));
    unsigned n = std::max<unsigned>(dims.size(), 1);
    results.push_back(simplifyAffineExpr(
        withLoopRanges(simplifyAffineExpr(e.replaceDims(repl), n, 0), dims), n,
        0));
  }
  return results;
}

std::optional<int64_t> llmc::tl::linearCoefficient(AffineExpr e, unsigned dim,
                                                   unsigned numDims) {
  if (!e.isPureAffine())
    return std::nullopt;
  // A floordiv, ceildiv or mod of an expression of `dim` is not linear in
  // it, though its first steps may look so (x + (x floordiv 4) * 60 goes
  // 0, 1, 2, 3, 64).
  bool nonlinear = false;
  e.walk([&](AffineExpr sub) {
    if (isa<AffineBinaryOpExpr>(sub) &&
        (sub.getKind() == AffineExprKind::FloorDiv ||
         sub.getKind() == AffineExprKind::CeilDiv ||
         sub.getKind() == AffineExprKind::Mod) &&
        cast<AffineBinaryOpExpr>(sub).getLHS().isFunctionOfDim(dim))
      nonlinear = true;
  });
  if (nonlinear)
    return std::nullopt;
  MLIRContext *ctx = e.getContext();
  auto at = [&](int64_t v) {
    SmallVector<AffineExpr> repl;
    for (unsigned k = 0; k < numDims; ++k)
      repl.push_back(k == dim ? getAffineConstantExpr(v, ctx)
                              : getAffineDimExpr(k, ctx));
    return e.replaceDims(repl);
  };
  AffineExpr d1 = simplifyAffineExpr(at(1) - at(0), numDims, 0);
  AffineExpr d2 = simplifyAffineExpr(at(2) - at(1), numDims, 0);
  auto c = dyn_cast<AffineConstantExpr>(d1);
  if (!c || d1 != d2)
    return std::nullopt;
  return c.getValue();
}

bool llmc::tl::isComputedFrom(Value v, Value root, Operation *scope) {
  SmallVector<Value> work = {v};
  llvm::DenseSet<Value> seen;
  while (!work.empty()) {
    Value cur = work.pop_back_val();
    if (cur == root)
      return true;
    if (!seen.insert(cur).second)
      continue;
    Operation *def = cur.getDefiningOp();
    if (def && scope->isAncestor(def))
      llvm::append_range(work, def->getOperands());
  }
  return false;
}
