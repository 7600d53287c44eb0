//===- DequantHalves.cpp - a product's computed weight as f16 halves ------===//
//
// `dequant_halves` (Schedule.h): the weight of a matmul block (computed from
// bytes: a quantized matrix's block scale times its quant; or a bf16 or f32
// element) written once, by a nest of its own, as two f16 matrices [N, K]
// (hi = f16(w), lo = f16((w - hi) * 2^11): Q8_0's d * q has at most 18
// significant bits, Q4_0's 14, a bf16's 8, so hi + lo * 2^-11 holds them
// exactly; an f32's to about 22 bits), and the
// product reading them along one reduction loop over K (the reduction's
// loops, row-major, made one: every other access uses them only in that
// order): x * hi + (x * lo) * 2^-11, or, where x is split already
// (split_halves: xh + xl * 2^-11), xh * hi + (xl * hi + xh * lo) * 2^-11
// (xl * lo, a relative 2^-22, left out), the form the matrix units and the
// GEMM library multiply (Analysis/MatrixBand.h).
//
//===----------------------------------------------------------------------===//
#include "Dialect/TL/Analysis/MatrixBand.h"
#include "Dialect/TL/Analysis/Reduction.h"
#include "Dialect/TL/Transforms/Schedule.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;
using namespace llmc::tl;

namespace {

/// The load `v` is (through a widening extf), or null.
affine::AffineLoadOp loadOf(Value v) {
  if (auto ext = v.getDefiningOp<arith::ExtFOp>())
    v = ext.getIn();
  return v.getDefiningOp<affine::AffineLoadOp>();
}

/// Whether `v` is the constant 2^-11 that scales a low half.
bool isLowScale(Value v) {
  auto c = v.getDefiningOp<arith::ConstantOp>();
  auto f = c ? dyn_cast<FloatAttr>(c.getValue()) : FloatAttr();
  return f && f.getValueAsDouble() == 1.0 / kLowHalfScale;
}

/// `map` over symbols in place of its dims (an access inside a block, whose
/// operands are the block's variables).
AffineMap asSymbols(AffineMap map) {
  SmallVector<AffineExpr> syms;
  for (unsigned i = 0; i < map.getNumDims(); ++i)
    syms.push_back(getAffineSymbolExpr(i, map.getContext()));
  return map.replaceDimsAndSymbols(syms, {}, 0, map.getNumDims());
}

/// The access of load or store `op` over the variables of `block`, or
/// failure (neither, or not over them).
FailureOr<AffineMap> accessOf(Operation *op, Block *block) {
  if (auto l = dyn_cast<affine::AffineLoadOp>(op))
    return accessOverIters(l.getAffineMap(), l.getMapOperands(), block);
  if (auto st = dyn_cast<affine::AffineStoreOp>(op))
    return accessOverIters(st.getAffineMap(), st.getMapOperands(), block);
  return failure();
}

/// Whether an op of `block` other than an access uses one of the variables
/// `vars` (an access uses them through its map).
bool usesVariable(Operation &op, Block *block, ArrayRef<unsigned> vars) {
  if (isa<affine::AffineLoadOp, affine::AffineStoreOp>(op))
    return false;
  return llvm::any_of(op.getOperands(), [&](Value v) {
    auto a = dyn_cast<BlockArgument>(v);
    return a && a.getOwner() == block &&
           llvm::is_contained(vars, a.getArgNumber());
  });
}

/// `e` as sum_i coeffs[i] * d_{dims[i]} + rest, rest free of `dims`; failure
/// where a dim of `dims` appears otherwise (in a product of two dims, a
/// floordiv, a mod).
FailureOr<AffineExpr> linearIn(AffineExpr e, ArrayRef<unsigned> dims,
                               SmallVectorImpl<int64_t> &coeffs) {
  coeffs.assign(dims.size(), 0);
  bool uses =
      llvm::any_of(dims, [&](unsigned d) { return e.isFunctionOfDim(d); });
  if (!uses)
    return e;
  if (auto d = dyn_cast<AffineDimExpr>(e)) {
    coeffs[llvm::find(dims, d.getPosition()) - dims.begin()] = 1;
    return getAffineConstantExpr(0, e.getContext());
  }
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin)
    return failure();
  SmallVector<int64_t> l, r;
  if (e.getKind() == AffineExprKind::Add) {
    FailureOr<AffineExpr> a = linearIn(bin.getLHS(), dims, l);
    FailureOr<AffineExpr> b = linearIn(bin.getRHS(), dims, r);
    if (failed(a) || failed(b))
      return failure();
    for (size_t i = 0; i < dims.size(); ++i)
      coeffs[i] = l[i] + r[i];
    return *a + *b;
  }
  if (e.getKind() == AffineExprKind::Mul) {
    auto c = dyn_cast<AffineConstantExpr>(bin.getRHS());
    if (!c)
      return failure();
    FailureOr<AffineExpr> a = linearIn(bin.getLHS(), dims, l);
    if (failed(a))
      return failure();
    for (size_t i = 0; i < dims.size(); ++i)
      coeffs[i] = l[i] * c.getValue();
    return *a * c.getValue();
  }
  return failure();
}

} // namespace

FailureOr<BlockOp> llmc::tl::dequantHalves(RewriterBase &rw, BlockOp block,
                                           bool check) {
  auto fail = [&](const Twine &why) {
    return block.emitError("dequant_halves: ") << why;
  };
  MLIRContext *ctx = rw.getContext();
  Block *body = block.getBodyBlock();
  FailureOr<ReductionUpdate> update = matchReductionUpdate(block);
  if (failed(update) || update->kind != arith::AtomicRMWKind::addf ||
      !update->load.getType().isF32())
    return fail("the block must add into an f32 accumulator");
  // The products: x * w (a mulf or an fma), or xh * w + (xl * w) * 2^-11
  // (x split by split_halves); w the weight, the factor that varies with
  // the output's columns (its last index), x a loaded element.
  Value x, xl, w;
  std::optional<unsigned> cvar;
  if (FailureOr<AffineMap> out = accessOverIters(
          update->store.getAffineMap(), update->store.getMapOperands(), body);
      succeeded(out) && out->getNumResults())
    if (auto d = dyn_cast<AffineDimExpr>(out->getResults().back()))
      cvar = d.getPosition();
  // Whether `v` is computed from the columns' variable.
  auto usesColumns = [&](Value v) {
    SmallVector<Value> work = {v};
    llvm::SmallPtrSet<Operation *, 16> seen;
    while (!work.empty()) {
      Value u = work.pop_back_val();
      if (auto a = dyn_cast<BlockArgument>(u)) {
        if (a.getOwner() == body && a.getArgNumber() == cvar)
          return true;
        continue;
      }
      Operation *def = u.getDefiningOp();
      if (!def || def->getBlock() != body || !seen.insert(def).second)
        continue;
      if (auto l = dyn_cast<affine::AffineLoadOp>(def)) {
        FailureOr<AffineMap> m =
            accessOverIters(l.getAffineMap(), l.getMapOperands(), body);
        if (succeeded(m) && m->isFunctionOfDim(*cvar))
          return true;
        continue;
      }
      llvm::append_range(work, def->getOperands());
    }
    return false;
  };
  auto product = [](Value v, Value &a, Value &b) {
    auto mul = v ? v.getDefiningOp<arith::MulFOp>() : arith::MulFOp();
    if (mul) {
      a = mul.getLhs();
      b = mul.getRhs();
    }
    return bool(mul);
  };
  // Orders a product's factors as (loaded x, weight w).
  auto roles = [&](Value &a, Value &b) {
    if (!cvar)
      return false;
    bool ua = usesColumns(a), ub = usesColumns(b);
    if (ua == ub)
      return false;
    if (ua)
      std::swap(a, b);
    return bool(loadOf(a));
  };
  Value p = update->operand;
  if (update->fma) {
    auto fma = cast<math::FmaOp>(update->combine);
    x = fma.getA();
    w = fma.getB();
    if (!roles(x, w))
      x = w = Value();
  } else if (product(p, x, w)) {
    if (!roles(x, w))
      x = w = Value();
  } else if (auto add =
                 p ? p.getDefiningOp<arith::AddFOp>() : arith::AddFOp()) {
    Value hi, w1, lowScaled, low, w2;
    auto scaledLow = [&](Value v) -> Value {
      auto mul = v.getDefiningOp<arith::MulFOp>();
      if (!mul)
        return {};
      if (isLowScale(mul.getRhs()))
        return mul.getLhs();
      if (isLowScale(mul.getLhs()))
        return mul.getRhs();
      return {};
    };
    lowScaled = scaledLow(add.getRhs());
    if (lowScaled && product(add.getLhs(), hi, w1) &&
        product(lowScaled, low, w2) && roles(hi, w1) && roles(low, w2) &&
        w1 == w2) {
      x = hi;
      xl = low;
      w = w1;
    }
  }
  if (!x || !w)
    return fail("the block must add x * w (or xh * w + (xl * w) * 2^-11, x "
                "split) into its accumulator, x a loaded element and w the "
                "weight, which varies with the output's columns");
  if (affine::AffineLoadOp l = loadOf(w);
      l && l.getResult() != w && l.getType().isF16())
    return fail("the weight is an f16 element already (a matrix band takes "
                "it as it is)");
  // w's computation: pure ops and loads of the block's reads, nothing of
  // x's or the accumulator's.
  llvm::SetVector<Operation *> slice;
  SmallVector<Value> work = {w};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != body)
      continue;
    if (def == update->load.getOperation() || def == loadOf(x) ||
        (xl && def == loadOf(xl)) || def->getNumRegions() ||
        !(isPure(def) || isa<affine::AffineLoadOp>(def)))
      return fail("the weight's computation must be pure ops and loads of "
                  "other reads");
    if (slice.insert(def))
      llvm::append_range(work, def->getOperands());
  }
  SmallVector<Operation *> sliceOps(slice.begin(), slice.end());
  llvm::sort(sliceOps,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  for (Operation *op : sliceOps)
    for (Value r : op->getResults())
      for (Operation *user : r.getUsers())
        if (!slice.contains(user) && r != w)
          return fail("a value of the weight's computation is used besides "
                      "it");
  // The variables it uses: one spatial (the columns) and the reduction's.
  unsigned n = block.getNumIters();
  llvm::SmallBitVector used(n);
  for (Operation *op : sliceOps) {
    if (auto l = dyn_cast<affine::AffineLoadOp>(op)) {
      FailureOr<AffineMap> m =
          accessOverIters(l.getAffineMap(), l.getMapOperands(), body);
      if (failed(m))
        return fail("a load of the weight is not over the block's variables");
      for (unsigned i = 0; i < n; ++i)
        if (m->isFunctionOfDim(i))
          used.set(i);
      continue;
    }
    for (Value v : op->getOperands())
      if (auto a = dyn_cast<BlockArgument>(v); a && a.getOwner() == body)
        used.set(a.getArgNumber());
  }
  SmallVector<unsigned> red, cols;
  for (unsigned i = 0; i < n; ++i) {
    if (block.getIterKind(i) == IterKind::reduce)
      red.push_back(i);
    else if (used.test(i))
      cols.push_back(i);
  }
  if (cols.size() != 1 || red.empty())
    return fail("the weight must vary with one spatial variable (the "
                "columns) and the reduction's");
  // The reduction's loops: a perfect chain right around the block, each
  // bound to one reduction variable, from 0 with a constant extent.
  SmallVector<ForOp> loops = getLoops(block);
  if (loops.size() < red.size() + 1)
    return fail("the reduction's variables must be the loops right around "
                "the block");
  SmallVector<ForOp> redLoops(loops.end() - red.size(), loops.end());
  SmallVector<unsigned> order; // reduction variables, outermost loop first
  SmallVector<int64_t> extents;
  for (size_t d = 0; d < redLoops.size(); ++d) {
    ForOp l = redLoops[d];
    Value iv = l.getInductionVar();
    auto it = llvm::find_if(
        red, [&](unsigned i) { return block.getIterValues()[i] == iv; });
    std::optional<int64_t> ub = getConstantIntValue(l.getUpperBound());
    if (it == red.end() || getConstantIntValue(l.getLowerBound()) != 0 ||
        getConstantIntValue(l.getStep()) != 1 || !ub || *ub <= 0)
      return fail("the reduction's variables must be the loops right around "
                  "the block, each from 0 with step 1 to a constant");
    for (Operation &op : l.getBody()->without_terminator())
      if (&op != (d + 1 < redLoops.size() ? redLoops[d + 1].getOperation()
                                          : block.getOperation()))
        return fail("the reduction's loops must be perfectly nested around "
                    "the block");
    order.push_back(*it);
    extents.push_back(*ub);
  }
  SmallVector<int64_t> strides(order.size(), 1);
  for (int64_t i = order.size() - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * extents[i + 1];
  int64_t kExtent = strides[0] * extents[0];
  Value colValue = block.getIterValues()[cols[0]];
  ForOp colLoop;
  for (ForOp l : loops)
    if (l.getInductionVar() == colValue)
      colLoop = l;
  std::optional<int64_t> nExtent =
      colLoop ? getConstantIntValue(colLoop.getUpperBound()) : std::nullopt;
  if (!colLoop || getConstantIntValue(colLoop.getLowerBound()) != 0 ||
      getConstantIntValue(colLoop.getStep()) != 1 || !nExtent)
    return fail("the columns' variable must be a loop from 0 with step 1 to "
                "a constant");
  // Every other access uses the reduction's variables in that order alone
  // (k = sum r_i * stride_i), and no other op uses them.
  auto overK = [&](AffineMap m) -> FailureOr<AffineMap> {
    // Over the new variables: the old ones but the reduction's, then k.
    SmallVector<AffineExpr> repl(n);
    unsigned next = 0;
    for (unsigned i = 0; i < n; ++i)
      if (!llvm::is_contained(red, i))
        repl[i] = getAffineDimExpr(next++, ctx);
    AffineExpr k = getAffineDimExpr(next, ctx);
    SmallVector<AffineExpr> results;
    for (AffineExpr e : m.getResults()) {
      SmallVector<int64_t> coeffs;
      FailureOr<AffineExpr> rest = linearIn(e, order, coeffs);
      if (failed(rest))
        return failure();
      bool none = llvm::all_of(coeffs, [](int64_t c) { return c == 0; });
      if (!none && ArrayRef<int64_t>(coeffs) != ArrayRef<int64_t>(strides))
        return failure();
      for (unsigned i : red)
        repl[i] = getAffineConstantExpr(0, ctx);
      AffineExpr r = rest->replaceDims(repl);
      results.push_back(none ? r : r + k);
    }
    return AffineMap::get(next + 1, 0, results, ctx);
  };
  SmallVector<affine::AffineLoadOp> xLoads = {loadOf(x)};
  if (xl)
    xLoads.push_back(loadOf(xl));
  // The buffers read besides the weight's computation (the activations,
  // the accumulator, a residual the init starts from): the product keeps
  // them, over k.
  llvm::SmallPtrSet<Value, 8> kept;
  for (Block *b : {body, block.getInitBlock()})
    if (b)
      b->walk([&](affine::AffineLoadOp l) {
        if (!slice.contains(l))
          kept.insert(l.getMemRef());
      });
  for (auto [b, a] : llvm::zip(block.getReads(), block.getReadMaps()))
    if (kept.contains(b) && failed(overK(cast<AffineMapAttr>(a).getValue())))
      return fail("a read of the block uses the reduction's variables other "
                  "than as one index k of the weight's order");
  // The accumulator's accesses over the block's variables (an absorbed
  // residual's pass every variable, their maps the outputs'), rebuilt over
  // the new ones.
  for (Operation *acc :
       {update->load.getOperation(), update->store.getOperation()}) {
    FailureOr<AffineMap> m = accessOf(acc, body);
    if (failed(m) || failed(overK(*m)))
      return fail("the accumulator's access must be over the block's "
                  "variables, its index no reduction variable's");
  }
  for (Operation &op : body->without_terminator()) {
    if (slice.contains(&op))
      continue;
    if (auto l = dyn_cast<affine::AffineLoadOp>(op)) {
      FailureOr<AffineMap> m =
          accessOverIters(l.getAffineMap(), l.getMapOperands(), body);
      if (failed(m) || failed(overK(*m)))
        return fail("an access of the block uses the reduction's variables "
                    "other than as one index k of the weight's order");
      continue;
    }
    if (usesVariable(op, body, red))
      return fail("an op of the block uses a reduction variable");
  }
  // The init (0, or a residual's element) runs at the first step: its
  // accesses over the outputs, no other use of a reduction variable.
  if (Block *init = block.getInitBlock())
    for (Operation &op : init->without_terminator()) {
      FailureOr<AffineMap> m = accessOf(&op, init);
      bool access = isa<affine::AffineLoadOp, affine::AffineStoreOp>(op);
      if ((access && (failed(m) || llvm::any_of(red,
                                                [&](unsigned i) {
                                                  return m->isFunctionOfDim(i);
                                                }))) ||
          usesVariable(op, init, red))
        return fail("the block's init uses a reduction variable");
    }
  Operation *root = loops.front();
  // What the weight's computation takes from outside the block (constants,
  // views) must be there before the nest: its own nest goes before it.
  for (Operation *op : sliceOps)
    for (Value v : op->getOperands()) {
      Operation *owner = isa<BlockArgument>(v)
                             ? cast<BlockArgument>(v).getOwner()->getParentOp()
                             : v.getDefiningOp();
      if (owner != block && owner && root->isAncestor(owner) &&
          !block->isAncestor(owner))
        return fail("the weight's computation uses a value of its loop nest");
    }
  for (Operation *op : sliceOps)
    if (auto l = dyn_cast<affine::AffineLoadOp>(op))
      if (root->walk([&](BlockOp b) {
                return llvm::is_contained(b.getWrites(), l.getMemRef())
                           ? WalkResult::interrupt()
                           : WalkResult::advance();
              })
              .wasInterrupted())
        return fail("the nest writes what the weight is computed from");

  if (check)
    return BlockOp();

  // --- The weight's nest, before the block's: over the columns and the
  // reduction's variables, its halves [N, K].
  Location loc = block.getLoc();
  Type f16 = rw.getF16Type(), f32 = rw.getF32Type();
  rw.setInsertionPoint(root);
  auto halfType = MemRefType::get({*nExtent, kExtent}, f16);
  Value hiBuf = memref::AllocOp::create(rw, loc, halfType, ValueRange{},
                                        rw.getI64IntegerAttr(64));
  Value loBuf = memref::AllocOp::create(rw, loc, halfType, ValueRange{},
                                        rw.getI64IntegerAttr(64));
  Value zero = arith::ConstantIndexOp::create(rw, loc, 0);
  Value one = arith::ConstantIndexOp::create(rw, loc, 1);
  SmallVector<Value> ivs;
  BlockOp weight;
  {
    OpBuilder::InsertionGuard guard(rw);
    SmallVector<int64_t> all = {*nExtent};
    all.append(extents);
    // (The bounds before the nest: its loops perfectly nested.)
    SmallVector<Value> bounds;
    for (int64_t e : all)
      bounds.push_back(arith::ConstantIndexOp::create(rw, loc, e));
    for (Value bound : bounds) {
      auto l = ForOp::create(rw, loc, zero, bound, one, LoopKind::serial);
      ivs.push_back(l.getInductionVar());
      rw.setInsertionPoint(l.getBody()->getTerminator());
    }
    // The old variables' positions in the new block: the columns 0, the
    // reduction's 1.. in loop order.
    SmallVector<AffineExpr> repl(n, getAffineConstantExpr(0, ctx));
    repl[cols[0]] = getAffineDimExpr(0, ctx);
    for (auto [j, i] : llvm::enumerate(order))
      repl[i] = getAffineDimExpr(j + 1, ctx);
    unsigned m = order.size() + 1;
    SmallVector<Value> reads;
    SmallVector<Attribute> readMaps;
    for (Operation *op : sliceOps)
      if (auto l = dyn_cast<affine::AffineLoadOp>(op)) {
        AffineMap there =
            accessOverIters(l.getAffineMap(), l.getMapOperands(), body)
                ->replaceDimsAndSymbols(repl, {}, m, 0);
        bool seen = false;
        for (auto [b, a] : llvm::zip(reads, readMaps))
          seen |=
              b == l.getMemRef() && cast<AffineMapAttr>(a).getValue() == there;
        if (!seen) {
          reads.push_back(l.getMemRef());
          readMaps.push_back(AffineMapAttr::get(there));
        }
      }
    AffineExpr kExpr = getAffineConstantExpr(0, ctx);
    for (auto [j, s] : llvm::enumerate(strides))
      kExpr = kExpr + getAffineDimExpr(j + 1, ctx) * s;
    AffineMap at = AffineMap::get(m, 0, {getAffineDimExpr(0, ctx), kExpr}, ctx);
    SmallVector<Attribute> kinds(m, IterKindAttr::get(ctx, IterKind::spatial));
    weight = BlockOp::create(
        rw, loc, rw.getStringAttr((block.getName() + "_weight_halves").str()),
        ivs, rw.getArrayAttr(kinds), reads, rw.getArrayAttr(readMaps),
        ValueRange{hiBuf, loBuf},
        rw.getArrayAttr({AffineMapAttr::get(at), AffineMapAttr::get(at)}));
    Block *wb = new Block();
    weight.getBody().push_back(wb);
    for (unsigned i = 0; i < m; ++i)
      wb->addArgument(rw.getIndexType(), loc);
    rw.setInsertionPointToStart(wb);
    IRMapping map;
    map.map(body->getArgument(cols[0]), wb->getArgument(0));
    for (auto [j, i] : llvm::enumerate(order))
      map.map(body->getArgument(i), wb->getArgument(j + 1));
    for (Operation *op : sliceOps) {
      if (auto l = dyn_cast<affine::AffineLoadOp>(op)) {
        AffineMap there =
            accessOverIters(l.getAffineMap(), l.getMapOperands(), body)
                ->replaceDimsAndSymbols(repl, {}, m, 0);
        auto moved = affine::AffineLoadOp::create(
            rw, l.getLoc(), l.getMemRef(), asSymbols(there), wb->getArguments());
        map.map(l.getResult(), moved.getResult());
        continue;
      }
      rw.clone(*op, map);
    }
    Value v = map.lookup(w);
    Value hi = arith::TruncFOp::create(rw, loc, f16, v);
    Value rest = arith::SubFOp::create(rw, loc, v,
                                       arith::ExtFOp::create(rw, loc, f32, hi));
    Value lo = arith::TruncFOp::create(
        rw, loc, f16,
        arith::MulFOp::create(rw, loc, rest,
                              arith::ConstantOp::create(
                                  rw, loc, rw.getF32FloatAttr(kLowHalfScale))));
    AffineMap atSyms = asSymbols(at);
    affine::AffineStoreOp::create(rw, loc, hi, hiBuf, atSyms,
                                  wb->getArguments());
    affine::AffineStoreOp::create(rw, loc, lo, loBuf, atSyms,
                                  wb->getArguments());
    YieldOp::create(rw, loc);
  }

  // --- The product: one reduction loop over k in place of the chain, its
  // block reading the halves at [column, k].
  ForOp outerRed = redLoops.front();
  rw.setInsertionPoint(root);
  Value kBound = arith::ConstantIndexOp::create(rw, loc, kExtent);
  rw.setInsertionPoint(outerRed);
  auto kLoop = ForOp::create(rw, loc, zero, kBound, one, LoopKind::serial);
  rw.setInsertionPoint(kLoop.getBody()->getTerminator());
  SmallVector<Value> iterValues;
  SmallVector<Attribute> iterKinds;
  for (unsigned i = 0; i < n; ++i)
    if (!llvm::is_contained(red, i)) {
      iterValues.push_back(block.getIterValues()[i]);
      iterKinds.push_back(block.getIterKindsAttr()[i]);
    }
  iterValues.push_back(kLoop.getInductionVar());
  iterKinds.push_back(IterKindAttr::get(ctx, IterKind::reduce));
  unsigned m = iterValues.size();
  // The columns' position among the new variables.
  unsigned colPos = 0;
  for (unsigned i = 0; i < cols[0]; ++i)
    colPos += !llvm::is_contained(red, i);
  AffineMap halfAt = AffineMap::get(
      m, 0, {getAffineDimExpr(colPos, ctx), getAffineDimExpr(m - 1, ctx)}, ctx);
  SmallVector<Value> reads;
  SmallVector<Attribute> readMaps;
  for (affine::AffineLoadOp l : xLoads) {
    reads.push_back(l.getMemRef());
    readMaps.push_back(AffineMapAttr::get(
        *overK(*accessOverIters(l.getAffineMap(), l.getMapOperands(), body))));
  }
  for (Value h : {hiBuf, loBuf}) {
    reads.push_back(h);
    readMaps.push_back(AffineMapAttr::get(halfAt));
  }
  // The other buffers the block (or its init: a residual it starts from)
  // reads besides the weight's computation, their regions over k.
  for (auto [b, a] : llvm::zip(block.getReads(), block.getReadMaps())) {
    if (llvm::any_of(
            xLoads,
            [&](affine::AffineLoadOp l) { return l.getMemRef() == b; }) ||
        !kept.contains(b))
      continue;
    reads.push_back(b);
    readMaps.push_back(
        AffineMapAttr::get(*overK(cast<AffineMapAttr>(a).getValue())));
  }
  SmallVector<Attribute> writeMaps;
  for (Attribute a : block.getWriteMaps())
    writeMaps.push_back(
        AffineMapAttr::get(*overK(cast<AffineMapAttr>(a).getValue())));
  auto newBlock = BlockOp::create(rw, block.getLoc(), block.getNameAttr(),
                                  iterValues, rw.getArrayAttr(iterKinds), reads,
                                  rw.getArrayAttr(readMaps), block.getWrites(),
                                  rw.getArrayAttr(writeMaps));
  // Its init: the old one (it uses no reduction variable), its arguments
  // renumbered.
  auto newArgs = [&](Block *b) {
    for (unsigned i = 0; i < m; ++i)
      b->addArgument(rw.getIndexType(), loc);
  };
  // An access of `b` (the old body or init) over the new variables.
  auto overNew = [&](Operation *access, Block *b) {
    return asSymbols(*overK(*accessOf(access, b)));
  };
  if (Block *init = block.getInitBlock()) {
    Block *ni = new Block();
    newBlock.getInit().push_back(ni);
    newArgs(ni);
    IRMapping im;
    for (unsigned i = 0, j = 0; i < n; ++i)
      if (!llvm::is_contained(red, i))
        im.map(init->getArgument(i), ni->getArgument(j++));
    rw.setInsertionPointToStart(ni);
    // (Accesses rebuilt over the new variables: an absorbed residual's pass
    // every variable of the block.)
    for (Operation &op : *init) {
      if (auto l = dyn_cast<affine::AffineLoadOp>(op)) {
        im.map(l.getResult(),
               affine::AffineLoadOp::create(rw, l.getLoc(), l.getMemRef(),
                                            overNew(l, init),
                                            ni->getArguments())
                   .getResult());
        continue;
      }
      if (auto st = dyn_cast<affine::AffineStoreOp>(op)) {
        affine::AffineStoreOp::create(rw, st.getLoc(),
                                      im.lookupOrDefault(st.getValueToStore()),
                                      st.getMemRef(), overNew(st, init),
                                      ni->getArguments());
        continue;
      }
      rw.clone(op, im);
    }
  }
  Block *nb = new Block();
  newBlock.getBody().push_back(nb);
  newArgs(nb);
  rw.setInsertionPointToStart(nb);
  auto reload = [&](Value old) -> Value {
    affine::AffineLoadOp l = loadOf(old);
    Value v = affine::AffineLoadOp::create(
        rw, l.getLoc(), l.getMemRef(), overNew(l, body), nb->getArguments());
    if (old != l.getResult())
      v = arith::ExtFOp::create(rw, loc, f32, v);
    return v;
  };
  auto halfAtK = [&](Value buf) -> Value {
    Value v = affine::AffineLoadOp::create(rw, loc, buf, asSymbols(halfAt),
                                           nb->getArguments());
    return arith::ExtFOp::create(rw, loc, f32, v);
  };
  Value nx = reload(x), nxl = xl ? reload(xl) : Value();
  Value wh = halfAtK(hiBuf), wl = halfAtK(loBuf);
  Value acc = affine::AffineLoadOp::create(
      rw, update->load.getLoc(), update->load.getMemRef(),
      overNew(update->load, body),
      nb->getArguments());
  Value scale = arith::ConstantOp::create(
      rw, loc, rw.getF32FloatAttr(1.0 / kLowHalfScale));
  auto mul = [&](Value a, Value b) -> Value {
    return arith::MulFOp::create(rw, loc, a, b);
  };
  // x * hi + (x * lo) * 2^-11, or xh * hi + (xl * hi + xh * lo) * 2^-11.
  Value low =
      nxl ? Value(arith::AddFOp::create(rw, loc, mul(nxl, wh), mul(nx, wl)))
          : mul(nx, wl);
  Value sum = arith::AddFOp::create(rw, loc, mul(nx, wh), mul(low, scale));
  Value next = arith::AddFOp::create(rw, loc, acc, sum);
  affine::AffineStoreOp::create(
      rw, update->store.getLoc(), next, update->store.getMemRef(),
      overNew(update->store, body),
      nb->getArguments());
  YieldOp::create(rw, loc);
  rw.eraseOp(outerRed);
  return weight;
}
