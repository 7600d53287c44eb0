//===- ReductionPrimitives.cpp - rfactor and tree_reduce ------------------===//
//
// The schedule primitives that change how a reduction combines: rfactor
// splits it into per-lane partials (the lanes of a vector register, the rows
// of a register tile), tree_reduce combines those partials in a fixed tree.
// Both check their preconditions first and leave the IR unchanged when one
// fails.
//
//===----------------------------------------------------------------------===//
#include "Dialect/TL/Analysis/AffineIndex.h"
#include "Dialect/TL/Analysis/Reduction.h"
#include "Dialect/TL/Transforms/Schedule.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace llmc::tl;

/// The constant extent of a normalised loop, or nullopt.
static std::optional<int64_t> constantExtent(ForOp l) {
  if (getConstantIntValue(l.getLowerBound()) != 0 ||
      getConstantIntValue(l.getStep()) != 1)
    return std::nullopt;
  return getConstantIntValue(l.getUpperBound());
}

/// Rewrites every affine access in `body` so that its map is over all of
/// `body`'s arguments: the operand that is argument k stands for `subst[k]`
/// (an expression over the arguments). Accesses of `from` go to `to`
/// instead, at `toMap` (over the arguments).
static void rewriteAccesses(RewriterBase &rw, Block *body,
                            ArrayRef<AffineExpr> subst, Value from = {},
                            Value to = {}, AffineMap toMap = {}) {
  SmallVector<Operation *> accesses;
  body->walk([&](Operation *op) {
    if (isa<affine::AffineLoadOp, affine::AffineStoreOp>(op))
      accesses.push_back(op);
  });
  SmallVector<Value> args(body->getArguments());
  unsigned n = args.size();
  MLIRContext *ctx = body->getParentOp()->getContext();
  auto over = [&](AffineMap map, ValueRange operands) {
    SmallVector<AffineExpr> repl;
    for (Value v : operands) {
      // An argument, or a constant standing for one (a reduction variable
      // that is zero where an init runs).
      if (auto c = getConstantIntValue(v))
        repl.push_back(getAffineConstantExpr(*c, ctx));
      else
        repl.push_back(subst[cast<BlockArgument>(v).getArgNumber()]);
    }
    AffineMap m = map.replaceDimsAndSymbols(
        ArrayRef<AffineExpr>(repl).take_front(map.getNumDims()),
        ArrayRef<AffineExpr>(repl).drop_front(map.getNumDims()), n, 0);
    return simplifyAffineMap(m);
  };
  for (Operation *op : accesses) {
    rw.setInsertionPoint(op);
    if (auto load = dyn_cast<affine::AffineLoadOp>(op)) {
      bool redirect = from && load.getMemRef() == from;
      AffineMap m = redirect ? toMap
                             : over(load.getAffineMap(), load.getMapOperands());
      rw.replaceOpWithNewOp<affine::AffineLoadOp>(
          op, redirect ? to : load.getMemRef(), m, args);
    } else {
      auto store = cast<affine::AffineStoreOp>(op);
      bool redirect = from && store.getMemRef() == from;
      AffineMap m = redirect
                        ? toMap
                        : over(store.getAffineMap(), store.getMapOperands());
      rw.replaceOpWithNewOp<affine::AffineStoreOp>(
          op, store.getValueToStore(), redirect ? to : store.getMemRef(), m,
          args);
    }
  }
}

/// Creates an empty block region entry with `n` index arguments.
static Block *addBody(RewriterBase &rw, Region &region, unsigned n,
                      Location loc) {
  Block *b = rw.createBlock(&region);
  for (unsigned i = 0; i < n; ++i)
    b->addArgument(rw.getIndexType(), loc);
  return b;
}

/// Builds (at the insertion point) serial loops over `extents` and returns
/// their induction variables; the insertion point ends in the innermost.
static SmallVector<Value> buildLoops(RewriterBase &rw, Location loc,
                                     ArrayRef<int64_t> extents) {
  SmallVector<Value> ivs;
  Value zero = arith::ConstantIndexOp::create(rw, loc, 0);
  Value one = arith::ConstantIndexOp::create(rw, loc, 1);
  for (int64_t e : extents) {
    Value ub = arith::ConstantIndexOp::create(rw, loc, e);
    auto l = ForOp::create(rw, loc, zero, ub, one, LoopKind::serial);
    ivs.push_back(l.getInductionVar());
    rw.setInsertionPoint(l.getBody()->getTerminator());
  }
  return ivs;
}

static ArrayAttr kindsAttr(MLIRContext *ctx, ArrayRef<IterKind> kinds) {
  SmallVector<Attribute> a;
  for (IterKind k : kinds)
    a.push_back(IterKindAttr::get(ctx, k));
  return ArrayAttr::get(ctx, a);
}

static ArrayAttr mapsAttr(MLIRContext *ctx, ArrayRef<AffineMap> maps) {
  SmallVector<Attribute> a;
  for (AffineMap m : maps)
    a.push_back(AffineMapAttr::get(m));
  return ArrayAttr::get(ctx, a);
}

//===----------------------------------------------------------------------===//
// rfactor
//===----------------------------------------------------------------------===//

/// Whether the init of `block`, a sum (`update`), only stores 0 into its one
/// output (its write region, as the block declares it): the sum is then the
/// sum of its terms.
static bool initStoresZero(BlockOp block, const ReductionUpdate &update) {
  Block *init = block.getInitBlock();
  if (!init || update.kind != arith::AtomicRMWKind::addf)
    return false;
  affine::AffineStoreOp store;
  for (Operation &op : init->without_terminator()) {
    if (auto s = dyn_cast<affine::AffineStoreOp>(op)) {
      if (store)
        return false;
      store = s;
    } else if (!isPure(&op)) {
      return false;
    }
  }
  FloatAttr zero;
  return store && store.getMemRef() == block.getWrites()[0] &&
         matchPattern(store.getValueToStore(), m_Constant(&zero)) &&
         zero.getValue().isZero();
}

/// Appends to `reads` and `maps` each buffer the init of `block` loads (a
/// residual its sums start from) that `reads` lacks, its access over the
/// block's variables mapped by `remap` onto those of the block that takes
/// the init over.
static LogicalResult
addInitReads(BlockOp block, SmallVectorImpl<Value> &reads,
             SmallVectorImpl<AffineMap> &maps,
             llvm::function_ref<AffineMap(AffineMap)> remap) {
  Block *init = block.getInitBlock();
  if (!init)
    return success();
  WalkResult r = init->walk([&](affine::AffineLoadOp l) {
    FailureOr<AffineMap> at =
        accessOverIters(l.getAffineMap(), l.getMapOperands(), init);
    if (failed(at))
      return WalkResult::interrupt();
    AffineMap m = remap(*at);
    for (auto [b, bm] : llvm::zip(reads, maps))
      if (b == l.getMemRef() && bm == m)
        return WalkResult::advance();
    reads.push_back(l.getMemRef());
    maps.push_back(m);
    return WalkResult::advance();
  });
  if (r.wasInterrupted())
    return block.emitError("the init of tl.block '")
           << block.getName() << "' reads other than by its variables";
  return success();
}

FailureOr<RFactorResult> llmc::tl::rfactor(RewriterBase &rw, BlockOp block,
                                           ArrayRef<ForOp> lanes,
                                           ForOp rootLoop) {
  MLIRContext *ctx = block.getContext();
  Location loc = block.getLoc();
  auto error = [&](const Twine &msg) {
    return block.emitError("rfactor: ") << msg;
  };
  SmallVector<ForOp> loops = getLoops(block);
  SmallVector<int64_t> laneExtents;
  for (auto [i, l] : llvm::enumerate(lanes)) {
    if (!llvm::is_contained(loops, l))
      return error("a lane loop does not enclose tl.block '" +
                   block.getName() + "'");
    if (i && l->getParentOp() != lanes[i - 1])
      return error("the lane loops must be directly nested, outermost first");
    std::optional<int64_t> e = constantExtent(l);
    if (!e || *e <= 0)
      return error("a lane loop must start at 0 with step 1 and have a "
                   "constant extent");
    laneExtents.push_back(*e);
  }

  // The iteration variables as affine expressions of the loops (dims 0..
  // of `loops`, then outside values).
  AffineIndexBuilder ab(loops.front());
  for (ForOp l : loops)
    ab.dim(l.getInductionVar());
  unsigned n = block.getNumIters();
  SmallVector<AffineExpr> bind;
  for (unsigned i = 0; i < n; ++i) {
    auto e = ab.build(block.getIterValues()[i]);
    if (!e)
      return error("iteration variable " + Twine(i) + " of tl.block '" +
                   block.getName() + "' is not affine in its loops");
    bind.push_back(*e);
  }
  unsigned numDims = ab.dims.size();
  auto bindsKind = [&](unsigned loopIndex, IterKind kind) {
    for (unsigned i = 0; i < n; ++i)
      if (block.getIterKind(i) == kind && bind[i].isFunctionOfDim(loopIndex))
        return true;
    return false;
  };
  // The reduction: from the outermost loop that binds a reduction variable,
  // or from `rootLoop` (the reduction loops outside it stay outside).
  int root = -1;
  for (unsigned li = 0; li < loops.size() && root < 0; ++li)
    if (bindsKind(li, IterKind::reduce))
      root = li;
  if (root < 0)
    return error("tl.block '" + block.getName() + "' has no reduction loop");
  bool outerReduction = false;
  if (rootLoop) {
    auto it = llvm::find(loops, rootLoop);
    if (it == loops.end() || !bindsKind(it - loops.begin(), IterKind::reduce))
      return error("the root loop must enclose tl.block '" + block.getName() +
                   "' and bind a reduction variable of it");
    outerReduction = (it - loops.begin()) != root;
    root = it - loops.begin();
  }
  SmallVector<unsigned> spatialInner;
  SmallVector<int64_t> spatialExtents;
  SmallVector<unsigned> laneIndex;
  for (unsigned li = root; li < loops.size(); ++li) {
    bool red = bindsKind(li, IterKind::reduce);
    bool sp = bindsKind(li, IterKind::spatial);
    if (llvm::is_contained(lanes, loops[li])) {
      if (sp || !red)
        return error("a lane loop must bind only reduction variables of "
                     "tl.block '" +
                     block.getName() + "'");
      laneIndex.push_back(li);
      continue;
    }
    if (red && sp)
      return error("a loop of the reduction binds both spatial and "
                   "reduction variables");
    if (!red && !sp)
      return error("a loop of the reduction binds no iteration variable");
    if (sp) {
      std::optional<int64_t> e = constantExtent(loops[li]);
      if (!e)
        return error("a spatial loop inside the reduction needs a constant "
                     "extent (it becomes a dimension of the partials)");
      spatialInner.push_back(li);
      spatialExtents.push_back(*e);
    }
  }
  if (laneIndex.size() != lanes.size())
    return error("a lane loop encloses the reduction's outermost loop");
  FailureOr<ReductionUpdate> update = matchReductionUpdate(block);
  if (failed(update))
    return error("the update of tl.block '" + block.getName() +
                 "' is not `acc = combine(acc, x)` of its one output");
  // No lane loops: one partial per spatial iteration inside the reduction,
  // an accumulator that a register can hold, added to the output after the
  // reduction (a block that accumulates into what its output holds), or
  // stored as the output (a block whose init stores 0 into a sum).
  bool storePartial = false;
  if (lanes.empty() && block.getInitBlock() && !outerReduction) {
    storePartial = initStoresZero(block, *update);
    if (!storePartial)
      return error("with no lane loops, the init of tl.block '" +
                   block.getName() +
                   "' must store 0 into its sum (or be absent)");
  }
  Value acc = block.getWrites()[0];
  AffineMap accMap = cast<AffineMapAttr>(block.getWriteMaps()[0]).getValue();
  for (unsigned i = 0; i < n; ++i)
    if (block.getIterKind(i) == IterKind::reduce && accMap.isFunctionOfDim(i))
      return error("the output region depends on a reduction variable");
  WalkResult shared = loops[root]->walk([&](BlockOp other) {
    if (other != block && (llvm::is_contained(other.getReads(), acc) ||
                           llvm::is_contained(other.getWrites(), acc)))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  if (shared.wasInterrupted())
    return error("another block inside the reduction accesses the output of "
                 "tl.block '" +
                 block.getName() + "'");
  // Each reduction variable's dependence on each lane: a constant multiple.
  SmallVector<SmallVector<int64_t>> coeff(n);
  for (unsigned i = 0; i < n; ++i)
    for (unsigned li : laneIndex) {
      int64_t c = 0;
      if (bind[i].isFunctionOfDim(li)) {
        auto k = linearCoefficient(bind[i], li, numDims);
        if (!k)
          return error("iteration variable " + Twine(i) +
                       " is not linear in a lane loop");
        c = *k;
      }
      coeff[i].push_back(c);
    }

  //===--- Build --------------------------------------------------------===//
  // The partials: one per spatial iteration inside the reduction and lane,
  // the lanes flattened row-major into the last dimension.
  unsigned numS = spatialInner.size(), numL = lanes.size();
  int64_t flatLanes = 1;
  SmallVector<int64_t> laneStride(numL, 1);
  for (unsigned j = numL; j-- > 0;) {
    laneStride[j] = flatLanes;
    flatLanes *= laneExtents[j];
  }
  // (No lane loops: no lane dimension, unless it is the only one.)
  bool laneDim = numL || !numS;
  SmallVector<int64_t> shape(spatialExtents);
  if (laneDim)
    shape.push_back(flatLanes);
  auto accType = cast<MemRefType>(acc.getType());
  Type elem = accType.getElementType();
  rw.setInsertionPoint(loops[root]);
  Value rf = memref::AllocaOp::create(rw, loc, MemRefType::get(shape, elem),
                                      rw.getI64IntegerAttr(64));
  unsigned rank = shape.size();
  AffineMap rfIdentity = AffineMap::getMultiDimIdentityMap(rank, ctx);

  // The partials start at the combiner's identity.
  BlockOp init;
  {
    OpBuilder::InsertionGuard guard(rw);
    SmallVector<Value> ivs = buildLoops(rw, loc, shape);
    init = BlockOp::create(
        rw, loc, rw.getStringAttr((block.getName() + "_rf_init").str()), ivs,
        kindsAttr(ctx, SmallVector<IterKind>(rank, IterKind::spatial)),
        ValueRange{}, rw.getArrayAttr({}), ValueRange{rf},
        mapsAttr(ctx, {rfIdentity}));
    Block *b = addBody(rw, init.getBody(), rank, loc);
    rw.setInsertionPointToStart(b);
    Value id = reductionIdentity(rw, loc, update->kind, elem);
    affine::AffineStoreOp::create(rw, loc, id, rf, rfIdentity,
                                  b->getArguments());
    YieldOp::create(rw, loc);
  }

  // The partial reduction, in place of the block.
  BlockOp rfBlock;
  {
    rw.setInsertionPoint(block);
    SmallVector<Value> values;
    SmallVector<IterKind> kinds;
    for (unsigned i = 0; i < n; ++i) {
      // A reduction variable without its lane parts: rebuilt from its
      // affine form with the lanes at 0, so that it no longer depends on
      // the lane loops (their iterations become independent).
      Value v = block.getIterValues()[i];
      if (llvm::any_of(coeff[i], [](int64_t c) { return c != 0; })) {
        SmallVector<AffineExpr> zeroLanes;
        for (unsigned k = 0; k < numDims; ++k)
          zeroLanes.push_back(llvm::is_contained(laneIndex, k)
                                  ? getAffineConstantExpr(0, ctx)
                                  : getAffineDimExpr(k, ctx));
        AffineExpr rest = simplifyAffineExpr(bind[i].replaceDims(zeroLanes),
                                             numDims, 0);
        v = affine::expandAffineExpr(rw, loc, rest, ab.dims, {});
      }
      values.push_back(v);
      kinds.push_back(block.getIterKind(i));
    }
    for (unsigned li : spatialInner)
      values.push_back(loops[li].getInductionVar());
    for (unsigned li : laneIndex)
      values.push_back(loops[li].getInductionVar());
    kinds.append(numS + numL, IterKind::spatial);
    unsigned total = n + numS + numL;
    // Old variable i stands for itself, plus its lane parts.
    SmallVector<AffineExpr> subst;
    for (unsigned i = 0; i < n; ++i) {
      AffineExpr e = getAffineDimExpr(i, ctx);
      for (unsigned j = 0; j < numL; ++j)
        if (coeff[i][j])
          e = e + getAffineDimExpr(n + numS + j, ctx) * coeff[i][j];
      subst.push_back(e);
    }
    SmallVector<AffineExpr> rfExprs;
    for (unsigned k = 0; k < numS; ++k)
      rfExprs.push_back(getAffineDimExpr(n + k, ctx));
    AffineExpr flat = getAffineConstantExpr(0, ctx);
    for (unsigned j = 0; j < numL; ++j)
      flat = flat + getAffineDimExpr(n + numS + j, ctx) * laneStride[j];
    if (laneDim)
      rfExprs.push_back(flat);
    AffineMap rfMap = AffineMap::get(total, 0, rfExprs, ctx);
    auto substMap = [&](AffineMap m) {
      return simplifyAffineMap(m.replaceDimsAndSymbols(subst, {}, total, 0));
    };
    SmallVector<Value> reads;
    SmallVector<AffineMap> readMaps;
    for (auto [buf, m] : llvm::zip(block.getReads(), block.getReadMaps())) {
      if (buf == acc)
        continue;
      reads.push_back(buf);
      readMaps.push_back(substMap(cast<AffineMapAttr>(m).getValue()));
    }
    reads.push_back(rf);
    readMaps.push_back(rfMap);
    rfBlock = BlockOp::create(
        rw, loc, rw.getStringAttr((block.getName() + "_rf").str()), values,
        kindsAttr(ctx, kinds), reads, mapsAttr(ctx, readMaps), ValueRange{rf},
        mapsAttr(ctx, {rfMap}));
    Block *b = addBody(rw, rfBlock.getBody(), total, loc);
    IRMapping mapping;
    for (unsigned i = 0; i < n; ++i)
      mapping.map(block.getBodyBlock()->getArgument(i), b->getArgument(i));
    rw.setInsertionPointToStart(b);
    for (Operation &op : *block.getBodyBlock())
      rw.clone(op, mapping);
    SmallVector<AffineExpr> full(subst);
    for (unsigned k = n; k < total; ++k)
      full.push_back(getAffineDimExpr(k, ctx));
    rewriteAccesses(rw, b, full, acc, rf, rfMap);
    // Other uses of a split reduction variable (a shift computed from it)
    // get its whole value back: the rest plus the lane parts.
    rw.setInsertionPointToStart(b);
    for (unsigned i = 0; i < n; ++i) {
      if (llvm::all_of(coeff[i], [](int64_t c) { return c == 0; }))
        continue;
      Value arg = b->getArgument(i);
      bool used = llvm::any_of(arg.getUses(), [](OpOperand &u) {
        return !isa<affine::AffineLoadOp, affine::AffineStoreOp>(u.getOwner());
      });
      if (!used)
        continue;
      Value whole = arg;
      llvm::SmallPtrSet<Operation *, 4> made;
      for (unsigned j = 0; j < numL; ++j)
        if (coeff[i][j]) {
          Value c = arith::ConstantIndexOp::create(rw, loc, coeff[i][j]);
          Value part = arith::MulIOp::create(
              rw, loc, b->getArgument(n + numS + j), c);
          whole = arith::AddIOp::create(rw, loc, whole, part);
          made.insert(whole.getDefiningOp());
        }
      rw.replaceUsesWithIf(arg, whole, [&](OpOperand &u) {
        Operation *owner = u.getOwner();
        return !isa<affine::AffineLoadOp, affine::AffineStoreOp>(owner) &&
               !made.contains(owner);
      });
    }
  }

  // The write-back after the reduction: the partials, in lane order, into
  // the output.
  BlockOp writeBack;
  {
    rw.setInsertionPointAfter(loops[root]);
    SmallVector<Value> sIvs = buildLoops(rw, loc, spatialExtents);
    // The spatial variables, rebound (outside the lane loop: they do not
    // depend on it): the spatial loops inside the reduction are the new
    // ones.
    SmallVector<Value> dimValues(ab.dims);
    for (auto [k, li] : llvm::enumerate(spatialInner))
      dimValues[li] = sIvs[k];
    SmallVector<Value> values;
    SmallVector<IterKind> kinds;
    SmallVector<int> newIndex(n, -1);
    for (unsigned i = 0; i < n; ++i) {
      if (block.getIterKind(i) != IterKind::spatial)
        continue;
      newIndex[i] = values.size();
      values.push_back(
          affine::expandAffineExpr(rw, loc, bind[i], dimValues, {}));
      kinds.push_back(IterKind::spatial);
    }
    // The reduction loops outside the root: each reduction variable's part
    // from them (the root's loops at 0) is a reduction variable of the
    // write-back, whose init then runs once, at their first iteration.
    if (outerReduction) {
      SmallVector<AffineExpr> outerOnly;
      for (unsigned k = 0; k < numDims; ++k)
        outerOnly.push_back(k >= (unsigned)root && k < loops.size()
                                ? getAffineConstantExpr(0, ctx)
                                : getAffineDimExpr(k, ctx));
      for (unsigned i = 0; i < n; ++i) {
        if (block.getIterKind(i) != IterKind::reduce)
          continue;
        AffineExpr outer =
            simplifyAffineExpr(bind[i].replaceDims(outerOnly), numDims, 0);
        if (outer.isSymbolicOrConstant())
          continue;
        values.push_back(affine::expandAffineExpr(rw, loc, outer, ab.dims, {}));
        kinds.push_back(IterKind::reduce);
      }
    }
    // (No lane loops: the one partial, no loop over it.)
    SmallVector<Value> lIvs =
        numL ? buildLoops(rw, loc, {flatLanes}) : SmallVector<Value>();
    unsigned nsp = values.size();
    llvm::append_range(values, sIvs);
    kinds.append(numS, IterKind::spatial);
    llvm::append_range(values, lIvs);
    if (numL)
      kinds.push_back(IterKind::reduce);
    unsigned total = values.size();
    SmallVector<AffineExpr> subst;
    for (unsigned i = 0; i < n; ++i)
      subst.push_back(newIndex[i] >= 0
                          ? getAffineDimExpr(newIndex[i], ctx)
                          : getAffineConstantExpr(0, ctx));
    AffineMap outMap = simplifyAffineMap(
        accMap.replaceDimsAndSymbols(subst, {}, total, 0));
    SmallVector<AffineExpr> rfExprs;
    for (unsigned k = 0; k < numS; ++k)
      rfExprs.push_back(getAffineDimExpr(nsp + k, ctx));
    if (laneDim)
      rfExprs.push_back(numL ? getAffineDimExpr(nsp + numS, ctx)
                             : getAffineConstantExpr(0, ctx));
    AffineMap rfMap = AffineMap::get(total, 0, rfExprs, ctx);
    SmallVector<Value> wbReads = {acc, rf};
    SmallVector<AffineMap> wbMaps = {outMap, rfMap};
    if (storePartial) {
      wbReads.erase(wbReads.begin());
      wbMaps.erase(wbMaps.begin());
    }
    // What the init reads besides, over the write-back's variables.
    if (!storePartial &&
        failed(addInitReads(block, wbReads, wbMaps, [&](AffineMap m) {
          return simplifyAffineMap(
              m.replaceDimsAndSymbols(subst, {}, total, 0));
        })))
      return failure();
    writeBack = BlockOp::create(
        rw, loc, block.getNameAttr(), values, kindsAttr(ctx, kinds), wbReads,
        mapsAttr(ctx, wbMaps), ValueRange{acc}, mapsAttr(ctx, {outMap}));
    if (Block *oldInit = storePartial ? nullptr : block.getInitBlock()) {
      Block *b = addBody(rw, writeBack.getInit(), total, loc);
      IRMapping mapping;
      rw.setInsertionPointToStart(b);
      Value zero = arith::ConstantIndexOp::create(rw, loc, 0);
      for (unsigned i = 0; i < n; ++i)
        mapping.map(oldInit->getArgument(i),
                    newIndex[i] >= 0 ? b->getArgument(newIndex[i]) : zero);
      for (Operation &op : *oldInit)
        rw.clone(op, mapping);
      // Accesses of the init were over all old variables: only spatial ones
      // (now at their new places) can appear.
      SmallVector<AffineExpr> identity;
      for (unsigned k = 0; k < total; ++k)
        identity.push_back(getAffineDimExpr(k, ctx));
      rewriteAccesses(rw, b, identity);
      if (zero.use_empty())
        rw.eraseOp(zero.getDefiningOp());
    }
    Block *b = addBody(rw, writeBack.getBody(), total, loc);
    rw.setInsertionPointToStart(b);
    // (The init's 0 plus the partial is the partial.)
    Value cur = storePartial ? Value()
                             : affine::AffineLoadOp::create(
                                   rw, loc, acc, outMap, b->getArguments());
    Value part =
        affine::AffineLoadOp::create(rw, loc, rf, rfMap, b->getArguments());
    Value next = storePartial
                     ? part
                     : arith::getReductionOp(update->kind, rw, loc, cur, part);
    affine::AffineStoreOp::create(rw, loc, next, acc, outMap,
                                  b->getArguments());
    YieldOp::create(rw, loc);
  }
  rw.eraseOp(block);
  return RFactorResult{rfBlock, writeBack, init};
}

//===----------------------------------------------------------------------===//
// tree_reduce
//===----------------------------------------------------------------------===//

FailureOr<TreeReduceResult> llmc::tl::treeReduce(RewriterBase &rw,
                                                 BlockOp block,
                                                 int64_t segment) {
  MLIRContext *ctx = block.getContext();
  Location loc = block.getLoc();
  auto error = [&](const Twine &msg) {
    return block.emitError("tree_reduce: ") << msg;
  };
  unsigned n = block.getNumIters();
  int red = -1;
  for (unsigned i = 0; i < n; ++i)
    if (block.getIterKind(i) == IterKind::reduce) {
      if (red >= 0)
        return error("tl.block '" + block.getName() +
                     "' has more than one reduction variable");
      red = i;
    }
  if (red < 0)
    return error("tl.block '" + block.getName() +
                 "' has no reduction variable");
  auto arg = dyn_cast<BlockArgument>(block.getIterValues()[red]);
  auto loop = arg ? dyn_cast<ForOp>(arg.getOwner()->getParentOp()) : ForOp();
  if (!loop || loop.getInductionVar() != arg || block->getParentOp() != loop)
    return error("the reduction variable must be bound to the loop directly "
                 "around the block");
  std::optional<int64_t> extent = constantExtent(loop);
  if (!extent || *extent < 2 || !llvm::isPowerOf2_64(*extent))
    return error("the reduction loop needs a constant power-of-two extent "
                 "(the lanes of a tree)");
  if (segment == 0)
    segment = *extent;
  if (segment < 2 || segment > *extent || !llvm::isPowerOf2_64(segment))
    return error("the segment must be a power of two from 2 to the lane "
                 "count (" + Twine(*extent) + ")");
  int64_t numSegments = *extent / segment;
  for (Operation &op : loop.getBody()->without_terminator())
    if (&op != block.getOperation() && (op.getNumRegions() || !isPure(&op)))
      return error("the reduction loop holds more than the block");
  for (unsigned i = 0; i < n; ++i)
    if ((int)i != red)
      if (Operation *def = block.getIterValues()[i].getDefiningOp())
        if (loop->isAncestor(def))
          return error("spatial variable " + Twine(i) +
                       " is computed inside the reduction loop");
  FailureOr<ReductionUpdate> update = matchReductionUpdate(block);
  if (failed(update) || update->fma)
    return error("the update of tl.block '" + block.getName() +
                 "' is not `acc = combine(acc, x)` of its one output");
  auto partLoad = update->operand.getDefiningOp<affine::AffineLoadOp>();
  Value parts = partLoad ? partLoad.getMemRef() : Value();
  if (!parts || !parts.getDefiningOp<memref::AllocaOp>())
    return error("the combined value must be read from a stack buffer of "
                 "partials (as rfactor makes)");
  // The partial's element over the block's variables: the reduction
  // variable must index its last dimension, by itself.
  AffineMap partMap = partLoad.getAffineMap();
  SmallVector<AffineExpr> over;
  for (Value v : partLoad.getMapOperands())
    over.push_back(getAffineDimExpr(cast<BlockArgument>(v).getArgNumber(), ctx));
  partMap = simplifyAffineMap(partMap.replaceDimsAndSymbols(
      ArrayRef<AffineExpr>(over).take_front(partMap.getNumDims()),
      ArrayRef<AffineExpr>(over).drop_front(partMap.getNumDims()), n, 0));
  AffineExpr last = partMap.getResults().back();
  if (last != getAffineDimExpr(red, ctx))
    return error("the reduction variable must index the last dimension of "
                 "the partials");
  for (AffineExpr e : partMap.getResults().drop_back())
    if (e.isFunctionOfDim(red))
      return error("the reduction variable may index only the last "
                   "dimension of the partials");
  for (Operation *user : parts.getUsers()) {
    Operation *owner = user;
    if (auto b = user->getParentOfType<BlockOp>())
      owner = b;
    if (owner->getBlock() == loop->getBlock() && loop->isBeforeInBlock(owner))
      return error("the partials are read after the write-back");
  }

  // Levels: partials[.., i] = partials[.., i] (+) partials[.., i + h].
  rw.setInsertionPoint(loop);
  SmallVector<Value> spatial;
  SmallVector<unsigned> spatialIndex;
  for (unsigned i = 0; i < n; ++i)
    if ((int)i != red) {
      spatial.push_back(block.getIterValues()[i]);
      spatialIndex.push_back(i);
    }
  unsigned ns = spatial.size();
  // Old variable k as a dim of a block over (spatial..., i).
  SmallVector<AffineExpr> toNew(n);
  for (auto [j, k] : llvm::enumerate(spatialIndex))
    toNew[k] = getAffineDimExpr(j, ctx);
  TreeReduceResult result;
  int level = 0;
  // Level variables: (spatial..., [segment,] i).
  bool segmented = numSegments > 1;
  unsigned nl = ns + (segmented ? 2 : 1);
  AffineExpr laneBase =
      segmented ? getAffineDimExpr(ns, ctx) * segment : getAffineConstantExpr(0, ctx);
  AffineExpr laneI = getAffineDimExpr(nl - 1, ctx);
  for (int64_t h = segment / 2; h >= 1; h /= 2, ++level) {
    OpBuilder::InsertionGuard guard(rw);
    SmallVector<int64_t> extents;
    if (segmented)
      extents.push_back(numSegments);
    extents.push_back(h);
    SmallVector<Value> ivs = buildLoops(rw, loc, extents);
    toNew[red] = laneBase + laneI;
    AffineMap lo = simplifyAffineMap(
        partMap.replaceDimsAndSymbols(toNew, {}, nl, 0));
    toNew[red] = laneBase + laneI + h;
    AffineMap hi = simplifyAffineMap(
        partMap.replaceDimsAndSymbols(toNew, {}, nl, 0));
    SmallVector<Value> values(spatial);
    llvm::append_range(values, ivs);
    auto lvl = BlockOp::create(
        rw, loc,
        rw.getStringAttr((block.getName() + "_tree" + Twine(level)).str()),
        values,
        kindsAttr(ctx, SmallVector<IterKind>(nl, IterKind::spatial)),
        ValueRange{parts, parts}, mapsAttr(ctx, {lo, hi}), ValueRange{parts},
        mapsAttr(ctx, {lo}));
    result.levels.push_back(lvl);
    Block *b = addBody(rw, lvl.getBody(), nl, loc);
    rw.setInsertionPointToStart(b);
    Value x = affine::AffineLoadOp::create(rw, loc, parts, lo, b->getArguments());
    Value y = affine::AffineLoadOp::create(rw, loc, parts, hi, b->getArguments());
    affine::AffineStoreOp::create(
        rw, loc, arith::getReductionOp(update->kind, rw, loc, x, y), parts, lo,
        b->getArguments());
    YieldOp::create(rw, loc);
  }
  if (segmented) {
    // The block itself combines the segments' first lanes, in order.
    rw.modifyOpInPlace(loop, [&] {
      loop.getUpperBoundMutable().assign(
          arith::ConstantIndexOp::create(rw, loc, numSegments));
    });
    AffineExpr scaled = getAffineDimExpr(red, ctx) * segment;
    SmallVector<Attribute> maps;
    for (auto [buf, attr] : llvm::zip(block.getReads(), block.getReadMaps())) {
      AffineMap m = cast<AffineMapAttr>(attr).getValue();
      if (buf == parts)
        m = simplifyAffineMap(m.replace(getAffineDimExpr(red, ctx), scaled,
                                        m.getNumDims(), 0));
      maps.push_back(AffineMapAttr::get(m));
    }
    rw.modifyOpInPlace(block, [&] { block.setReadMapsAttr(rw.getArrayAttr(maps)); });
    // The body's read of the partials: its operand that is the reduction
    // variable's argument, scaled.
    Block *body = &block.getBody().front();
    SmallVector<AffineExpr> subst;
    for (unsigned k = 0; k < n; ++k)
      subst.push_back(getAffineDimExpr(k, ctx));
    subst[red] = scaled;
    rw.setInsertionPoint(partLoad);
    SmallVector<AffineExpr> repl;
    for (Value v : partLoad.getMapOperands())
      repl.push_back(subst[cast<BlockArgument>(v).getArgNumber()]);
    AffineMap lm = partLoad.getAffineMap();
    lm = simplifyAffineMap(lm.replaceDimsAndSymbols(
        ArrayRef<AffineExpr>(repl).take_front(lm.getNumDims()),
        ArrayRef<AffineExpr>(repl).drop_front(lm.getNumDims()), n, 0));
    rw.replaceOpWithNewOp<affine::AffineLoadOp>(partLoad, parts, lm,
                                                 body->getArguments());
    result.final = block;
    return result;
  }
  // The final combine: the output, after its init, with lane 0.
  toNew[red] = getAffineConstantExpr(0, ctx);
  auto inNew = [&](AffineMap m) {
    return simplifyAffineMap(m.replaceDimsAndSymbols(toNew, {}, ns, 0));
  };
  Value acc = block.getWrites()[0];
  AffineMap outMap =
      inNew(cast<AffineMapAttr>(block.getWriteMaps()[0]).getValue());
  AffineMap firstMap = inNew(partMap);
  SmallVector<Value> finalReads = {acc, parts};
  SmallVector<AffineMap> finalMaps = {outMap, firstMap};
  if (failed(addInitReads(block, finalReads, finalMaps, inNew)))
    return failure();
  auto final = BlockOp::create(
      rw, loc, block.getNameAttr(), spatial,
      kindsAttr(ctx, SmallVector<IterKind>(ns, IterKind::spatial)), finalReads,
      mapsAttr(ctx, finalMaps), ValueRange{acc}, mapsAttr(ctx, {outMap}));
  Block *b = addBody(rw, final.getBody(), ns, loc);
  rw.setInsertionPointToStart(b);
  Value zero;
  if (Block *oldInit = block.getInitBlock()) {
    IRMapping mapping;
    zero = arith::ConstantIndexOp::create(rw, loc, 0);
    for (auto [j, k] : llvm::enumerate(spatialIndex))
      mapping.map(oldInit->getArgument(k), b->getArgument(j));
    mapping.map(oldInit->getArgument(red), zero);
    for (Operation &op : oldInit->without_terminator())
      rw.clone(op, mapping);
  }
  Value cur = affine::AffineLoadOp::create(rw, loc, acc, outMap, b->getArguments());
  Value part =
      affine::AffineLoadOp::create(rw, loc, parts, firstMap, b->getArguments());
  affine::AffineStoreOp::create(
      rw, loc, arith::getReductionOp(update->kind, rw, loc, cur, part), acc,
      outMap, b->getArguments());
  YieldOp::create(rw, loc);
  // The init's accesses were over all old variables: re-express them.
  SmallVector<AffineExpr> identity;
  for (unsigned k = 0; k < ns; ++k)
    identity.push_back(getAffineDimExpr(k, ctx));
  rewriteAccesses(rw, b, identity);
  if (zero && zero.use_empty())
    rw.eraseOp(zero.getDefiningOp());
  rw.eraseOp(loop);
  result.final = final;
  return result;
}

//===----------------------------------------------------------------------===//
// contract
//===----------------------------------------------------------------------===//

LogicalResult llmc::tl::contract(RewriterBase &rw, BlockOp block) {
  auto error = [&](const Twine &msg) {
    return block.emitError("contract: ") << msg;
  };
  FailureOr<ReductionUpdate> update = matchReductionUpdate(block);
  if (failed(update) || update->fma ||
      update->kind != arith::AtomicRMWKind::addf)
    return error("the update of tl.block '" + block.getName() +
                 "' is not `acc = acc + x` of a floating-point accumulator");
  auto mul = update->operand.getDefiningOp<arith::MulFOp>();
  if (!mul || mul->getBlock() != block.getBodyBlock())
    return error("the added value is not a product computed in the block");
  if (!mul->hasOneUse())
    return error("the product has another use besides the update");
  rw.setInsertionPoint(update->combine);
  Value fma = math::FmaOp::create(rw, update->combine->getLoc(), mul.getLhs(),
                                  mul.getRhs(), update->load.getResult());
  rw.replaceOp(update->combine, fma);
  rw.eraseOp(mul);
  return success();
}
