//===- Schedule.cpp - schedule primitives on tl loop nests ----------------===//
#include "Dialect/TL/Transforms/Schedule.h"
#include "Dialect/TL/Analysis/AffineIndex.h"
#include "Dialect/TL/Analysis/Independence.h"
#include "Dialect/TL/Analysis/MatrixBand.h"
#include "Dialect/TL/Analysis/Reduction.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace llmc::tl;

//===----------------------------------------------------------------------===//
// Queries
//===----------------------------------------------------------------------===//

FailureOr<BlockOp> llmc::tl::getBlock(Operation *root, StringRef name) {
  SmallVector<BlockOp> found;
  root->walk([&](BlockOp b) {
    if (b.getName() == name)
      found.push_back(b);
  });
  if (found.size() == 1)
    return found.front();
  if (found.empty())
    return root->emitError("no tl.block named '") << name << "'";
  InFlightDiagnostic diag = root->emitError("")
                            << found.size() << " tl.blocks are named '" << name
                            << "'";
  for (BlockOp b : found)
    diag.attachNote(b.getLoc()) << "one is here";
  return diag;
}

SmallVector<ForOp> llmc::tl::getLoops(BlockOp block) {
  SmallVector<ForOp> loops;
  for (Operation *op = block->getParentOp(); op; op = op->getParentOp())
    if (auto loop = dyn_cast<ForOp>(op))
      loops.push_back(loop);
  std::reverse(loops.begin(), loops.end());
  return loops;
}

/// Loops with lower bound 0 and step 1: the form splits and fusions reason
/// about.
static LogicalResult checkNormalised(ForOp loop, StringRef primitive) {
  if (getConstantIntValue(loop.getLowerBound()) != 0 ||
      getConstantIntValue(loop.getStep()) != 1)
    return loop.emitError(primitive)
           << ": the loop must start at 0 with step 1";
  return success();
}

static AffineMap overArgsAsSymbols(AffineMap map);

/// Replaces `block`'s read and write regions.
static void setRegions(RewriterBase &rw, BlockOp block, ValueRange reads,
                       ArrayRef<Attribute> readMaps, ValueRange writes,
                       ArrayRef<Attribute> writeMaps) {
  rw.modifyOpInPlace(block, [&] {
    block.getReadsMutable().assign(reads);
    block.getWritesMutable().assign(writes);
    block.setReadMapsAttr(rw.getArrayAttr(readMaps));
    block.setWriteMapsAttr(rw.getArrayAttr(writeMaps));
  });
}

/// The chain of directly nested loops (sorted outermost first). Besides the
/// next loop, a loop's body may hold only side-effect-free scalar ops (the
/// index arithmetic that splits and fusions leave); makePerfect() moves
/// those out of the way.
static FailureOr<SmallVector<ForOp>> nestedChain(ArrayRef<ForOp> loopsIn,
                                                 StringRef primitive) {
  SmallVector<ForOp> chain(loopsIn.begin(), loopsIn.end());
  llvm::sort(chain, [](ForOp a, ForOp b) {
    return a->isProperAncestor(b);
  });
  for (size_t i = 0; i + 1 < chain.size(); ++i) {
    if (chain[i + 1]->getParentOp() != chain[i])
      return chain[i + 1].emitError(primitive)
             << ": the loops must be directly nested";
    for (Operation &op : chain[i].getBody()->without_terminator())
      if (&op != chain[i + 1].getOperation() &&
          (op.getNumRegions() || !isPure(&op)))
        return op.emitError(primitive)
               << ": the loops are not perfectly nested: this op sits "
                  "between them";
  }
  return chain;
}

/// Moves the scalar ops between the loops of `chain`: those computed from a
/// loop variable of the chain into the innermost body (in order, so they
/// still dominate their uses), the others before the outermost loop. Call
/// only after checking that no loop bound depends on a chain variable.
static void makePerfect(RewriterBase &rw, MutableArrayRef<ForOp> chain) {
  ForOp outer = chain.front(), inner = chain.back();
  Operation *sinkPoint = &inner.getBody()->front();
  for (size_t i = 0; i + 1 < chain.size(); ++i) {
    SmallVector<Operation *> ops;
    for (Operation &op : chain[i].getBody()->without_terminator())
      if (&op != chain[i + 1].getOperation())
        ops.push_back(&op);
    for (Operation *op : ops) {
      bool variant = llvm::any_of(op->getOperands(), [&](Value v) {
        return llvm::any_of(chain, [&](ForOp l) {
          return isComputedFrom(v, l.getInductionVar(), outer);
        });
      });
      if (variant)
        rw.moveOpBefore(op, sinkPoint);
      else
        rw.moveOpBefore(op, outer);
    }
  }
}

//===----------------------------------------------------------------------===//
// split
//===----------------------------------------------------------------------===//

/// Splits `loop` into (outer, inner) with an inner extent of `factor`.
/// With `exact`, the extent is known to be a multiple of `factor` (the
/// outer loop runs over extent / factor and the inner has no min bound).
static std::pair<ForOp, ForOp> splitOnce(RewriterBase &rw, ForOp loop,
                                         int64_t factor, bool exact = false,
                                         Value trips = {}) {
  Location loc = loop.getLoc();
  rw.setInsertionPoint(loop);
  Value ub = loop.getUpperBound();
  Value f = arith::ConstantIndexOp::create(rw, loc, factor);
  std::optional<int64_t> staticUb = getConstantIntValue(ub);
  Value outerUb;
  if (trips)
    outerUb = trips;
  else if (staticUb)
    outerUb = arith::ConstantIndexOp::create(rw, loc,
                                             llvm::divideCeil(*staticUb, factor));
  else if (exact)
    outerUb = arith::DivUIOp::create(rw, loc, ub, f);
  else
    outerUb = arith::CeilDivUIOp::create(rw, loc, ub, f);
  LoopKind outerKind =
      loop.getKind() == LoopKind::parallel ? LoopKind::parallel
                                           : LoopKind::serial;
  Value zero = arith::ConstantIndexOp::create(rw, loc, 0);
  Value one = arith::ConstantIndexOp::create(rw, loc, 1);
  auto outer = ForOp::create(rw, loc, zero, outerUb, one, outerKind);
  rw.setInsertionPoint(outer.getBody()->getTerminator());
  Value base = arith::MulIOp::create(rw, loc, outer.getInductionVar(), f);
  Value innerUb = f;
  if (!exact && (!staticUb || *staticUb % factor != 0)) {
    // The last outer iteration may be partial.
    Value left = arith::SubIOp::create(rw, loc, ub, base);
    innerUb = arith::MinUIOp::create(rw, loc, f, left);
  }
  auto inner = ForOp::create(rw, loc, zero, innerUb, one, LoopKind::serial);
  rw.setInsertionPoint(inner.getBody()->getTerminator());
  Value iv = arith::AddIOp::create(rw, loc, base, inner.getInductionVar());
  Block *old = loop.getBody();
  rw.eraseOp(old->getTerminator());
  rw.inlineBlockBefore(old, inner.getBody()->getTerminator(), {iv});
  rw.eraseOp(loop);
  return {outer, inner};
}

FailureOr<SmallVector<ForOp>> llmc::tl::split(RewriterBase &rw, ForOp loop,
                                              ArrayRef<int64_t> factors) {
  if (failed(checkNormalised(loop, "split")))
    return failure();
  if (factors.size() < 2)
    return loop.emitError("split: needs at least two factors");
  for (size_t i = 0; i < factors.size(); ++i)
    if (factors[i] <= 0 && !(i == 0 && factors[i] == -1))
      return loop.emitError("split: factor ")
             << i << " is " << factors[i]
             << "; factors must be positive (only the first may be -1, "
                "inferred)";
  int64_t inner = 1;
  for (int64_t f : factors.drop_front())
    inner *= f;
  if (std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound()))
    if (factors[0] != -1 && factors[0] * inner < *ub)
      return loop.emitError("split: factors cover ")
             << factors[0] * inner << " iterations of a loop of " << *ub;
  if (factors[0] != -1 &&
      !getConstantIntValue(loop.getUpperBound()).has_value())
    return loop.emitError("split: the extent is dynamic; give the first "
                          "factor as -1 (inferred)");
  SmallVector<ForOp> result;
  ForOp rest = loop;
  for (size_t i = 1; i < factors.size(); ++i) {
    int64_t product = 1;
    for (int64_t f : factors.drop_front(i))
      product *= f;
    // (An inner loop of one iteration is never partial: exact.)
    auto [outer, innerLoop] =
        splitOnce(rw, rest, product, /*exact=*/product == 1);
    result.push_back(outer);
    rest = innerLoop;
  }
  result.push_back(rest);
  return result;
}

FailureOr<PeeledSplit> llmc::tl::splitPeel(RewriterBase &rw, ForOp loop,
                                           ArrayRef<int64_t> innerFactors) {
  if (failed(checkNormalised(loop, "split")))
    return failure();
  if (innerFactors.empty())
    return loop.emitError("split: needs at least one inner factor");
  int64_t product = 1;
  for (auto [i, f] : llvm::enumerate(innerFactors)) {
    if (f <= 0)
      return loop.emitError("split: factor ")
             << i + 1 << " is " << f << "; inner factors must be positive";
    product *= f;
  }
  Location loc = loop.getLoc();
  Value ub = loop.getUpperBound();
  std::optional<int64_t> staticUb = getConstantIntValue(ub);
  PeeledSplit result;
  rw.setInsertionPoint(loop);
  Value p = arith::ConstantIndexOp::create(rw, loc, product);
  // The whole multiples: [0, ub - ub % product).
  Value trips =
      staticUb
          ? arith::ConstantIndexOp::create(rw, loc, *staticUb / product)
                .getResult()
          : arith::DivUIOp::create(rw, loc, ub, p).getResult();
  Value mainUb =
      staticUb ? arith::ConstantIndexOp::create(rw, loc,
                                                *staticUb / product * product)
                     .getResult()
               : arith::MulIOp::create(rw, loc, trips, p).getResult();
  if (!staticUb || *staticUb % product != 0) {
    // The tail: a copy of the loop over [mainUb, ub), normalised.
    rw.setInsertionPointAfter(loop);
    auto tail = cast<ForOp>(rw.clone(*loop));
    Value zero = arith::ConstantIndexOp::create(rw, loc, 0);
    Value extent =
        staticUb
            ? arith::ConstantIndexOp::create(rw, loc, *staticUb % product)
                  .getResult()
            : arith::SubIOp::create(rw, loc, ub, mainUb).getResult();
    // Constants first: the clone's bound operands must dominate it.
    zero.getDefiningOp()->moveBefore(tail);
    extent.getDefiningOp()->moveBefore(tail);
    rw.modifyOpInPlace(tail, [&] {
      tail.getLowerBoundMutable().set(zero);
      tail.getUpperBoundMutable().set(extent);
    });
    Value t = tail.getInductionVar();
    rw.setInsertionPointToStart(tail.getBody());
    auto shifted = arith::AddIOp::create(rw, loc, mainUb, t);
    rw.replaceAllUsesExcept(t, shifted.getResult(), shifted);
    tail.walk([&](BlockOp b) {
      rw.modifyOpInPlace(b, [&] { b.setName((b.getName() + "_tail").str()); });
    });
    result.tail = tail;
  }
  rw.modifyOpInPlace(loop, [&] { loop.getUpperBoundMutable().set(mainUb); });
  ForOp rest = loop;
  for (size_t i = 0; i < innerFactors.size(); ++i) {
    int64_t inner = 1;
    for (int64_t f : innerFactors.drop_front(i))
      inner *= f;
    auto [outer, innerLoop] =
        splitOnce(rw, rest, inner, /*exact=*/true, i == 0 ? trips : Value());
    result.loops.push_back(outer);
    rest = innerLoop;
  }
  result.loops.push_back(rest);
  return result;
}

//===----------------------------------------------------------------------===//
// reorder
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<ForOp>> llmc::tl::reorder(RewriterBase &rw,
                                                ArrayRef<ForOp> order) {
  if (order.size() < 2)
    return success(SmallVector<ForOp>(order.begin(), order.end()));
  llvm::SmallSetVector<Operation *, 4> unique;
  for (ForOp l : order)
    if (!unique.insert(l))
      return l.emitError("reorder: a loop is listed twice");
  auto chain = nestedChain(order, "reorder");
  if (failed(chain))
    return failure();
  // Bounds must not depend on any loop of the chain (they are moved).
  for (ForOp l : *chain)
    for (ForOp other : *chain)
      for (Value bound : {l.getLowerBound(), l.getUpperBound(), l.getStep()})
        if (other != l && isComputedFrom(bound, other.getInductionVar(),
                                    (*chain)[0]))
          return l.emitError("reorder: the bounds of this loop depend on "
                             "another loop of the nest");
  makePerfect(rw, *chain);
  // Keep the op structure; move each loop's bounds, kind and variable to its
  // new depth.
  struct LoopInfo {
    Value lb, ub, step;
    LoopKindAttr kind;
    StringAttr thread;
    SmallVector<OpOperand *> uses;
  };
  SmallVector<LoopInfo> infos;
  for (ForOp l : order) {
    LoopInfo info{l.getLowerBound(), l.getUpperBound(), l.getStep(),
                  l.getKindAttr(), l.getThreadAttr(), {}};
    for (OpOperand &use : l.getInductionVar().getUses())
      info.uses.push_back(&use);
    infos.push_back(info);
  }
  for (size_t depth = 0; depth < chain->size(); ++depth) {
    ForOp loop = (*chain)[depth];
    const LoopInfo &info = infos[depth];
    rw.modifyOpInPlace(loop, [&] {
      loop->setOperands({info.lb, info.ub, info.step});
      loop.setKindAttr(info.kind);
      if (info.thread)
        loop.setThreadAttr(info.thread);
      else
        loop.removeThreadAttr();
    });
    for (OpOperand *use : info.uses)
      rw.modifyOpInPlace(use->getOwner(),
                         [&] { use->set(loop.getInductionVar()); });
  }
  return *chain;
}

//===----------------------------------------------------------------------===//
// fuse
//===----------------------------------------------------------------------===//

FailureOr<ForOp> llmc::tl::fuse(RewriterBase &rw, ArrayRef<ForOp> loops) {
  if (loops.empty())
    return failure();
  if (loops.size() == 1)
    return loops.front();
  auto chain = nestedChain(loops, "fuse");
  if (failed(chain))
    return failure();
  for (ForOp l : *chain) {
    if (failed(checkNormalised(l, "fuse")))
      return failure();
    for (ForOp other : *chain)
      if (other != l && isComputedFrom(l.getUpperBound(), other.getInductionVar(),
                                  (*chain)[0]))
        return l.emitError("fuse: the extent of this loop depends on another "
                           "loop of the nest");
  }
  makePerfect(rw, *chain);
  ForOp outer = (*chain)[0];
  Location loc = outer.getLoc();
  rw.setInsertionPoint(outer);
  Value extent = outer.getUpperBound();
  for (ForOp l : ArrayRef<ForOp>(*chain).drop_front())
    extent = arith::MulIOp::create(rw, loc, extent, l.getUpperBound());
  Value zero = arith::ConstantIndexOp::create(rw, loc, 0);
  Value one = arith::ConstantIndexOp::create(rw, loc, 1);
  bool allParallel = llvm::all_of(*chain, [](ForOp l) {
    return l.getKind() == LoopKind::parallel;
  });
  auto fused = ForOp::create(rw, loc, zero, extent, one,
                             allParallel ? LoopKind::parallel
                                         : LoopKind::serial);
  rw.setInsertionPoint(fused.getBody()->getTerminator());
  // Recover each loop's variable from the fused one, innermost fastest.
  Value rest = fused.getInductionVar();
  SmallVector<Value> ivs(chain->size());
  for (int64_t i = chain->size() - 1; i > 0; --i) {
    Value ext = (*chain)[i].getUpperBound();
    ivs[i] = arith::RemUIOp::create(rw, loc, rest, ext);
    rest = arith::DivUIOp::create(rw, loc, rest, ext);
  }
  ivs[0] = rest;
  ForOp innermost = chain->back();
  Block *body = innermost.getBody();
  for (size_t i = 0; i + 1 < chain->size(); ++i)
    rw.replaceAllUsesWith((*chain)[i].getInductionVar(), ivs[i]);
  rw.eraseOp(body->getTerminator());
  rw.inlineBlockBefore(body, fused.getBody()->getTerminator(),
                       {ivs.back()});
  rw.eraseOp(outer);
  return fused;
}

//===----------------------------------------------------------------------===//
// fuseSiblings
//===----------------------------------------------------------------------===//

/// Moves the bodies of `rest` (in order) to the end of `first`'s body.
static void mergeBodies(RewriterBase &rw, ForOp first, ArrayRef<ForOp> rest) {
  for (ForOp l : rest) {
    Block *body = l.getBody();
    rw.eraseOp(body->getTerminator());
    rw.inlineBlockBefore(body, first.getBody()->getTerminator(),
                         {first.getInductionVar()});
    rw.eraseOp(l);
  }
}

FailureOr<ForOp> llmc::tl::fuseSiblings(RewriterBase &rw,
                                        ArrayRef<ForOp> loops) {
  if (loops.empty())
    return failure();
  ForOp first = loops.front();
  if (loops.size() == 1)
    return first;
  for (ForOp l : loops.drop_front()) {
    if (l->getBlock() != first->getBlock() || !first->isBeforeInBlock(l))
      return l.emitError("fuseSiblings: the loops must be siblings, in order");
    // Equal as loop bounds: the same value or the same constant.
    if (!isEqualConstantIntOrValue(l.getLowerBound(), first.getLowerBound()) ||
        !isEqualConstantIntOrValue(l.getUpperBound(), first.getUpperBound()) ||
        !isEqualConstantIntOrValue(l.getStep(), first.getStep()) ||
        l.getKind() != first.getKind())
      return l.emitError("fuseSiblings: the loop's bounds, step or kind differ "
                         "from the first loop's");
  }
  // What lies between them: scalar ops without effects, which move before
  // the first loop in their order (what they use is defined before it or
  // by one of them), and the loops themselves.
  SmallVector<Operation *> between;
  for (Operation *op = first->getNextNode(); op != loops.back();
       op = op->getNextNode()) {
    if (llvm::is_contained(loops, dyn_cast<ForOp>(op)))
      continue;
    if (op->getNumRegions() || !isPure(op))
      return op->emitError("fuseSiblings: an op with effects or regions lies "
                           "between the loops");
    between.push_back(op);
  }
  // Legality on a copy: fused, are the iterations independent?
  {
    OpBuilder::InsertionGuard guard(rw);
    rw.setInsertionPoint(loops.back()->getNextNode());
    IRMapping map;
    SmallVector<ForOp> copies;
    for (ForOp l : loops)
      copies.push_back(cast<ForOp>(rw.clone(*l, map)));
    mergeBodies(rw, copies.front(), ArrayRef<ForOp>(copies).drop_front());
    LogicalResult independent = success();
    {
      ScopedDiagnosticHandler quiet(rw.getContext(),
                                    [](Diagnostic &) { return success(); });
      independent = verifyIndependent(copies.front(), "fuseSiblings");
    }
    rw.eraseOp(copies.front());
    if (failed(independent))
      return first.emitError("fuseSiblings: the fused loop's iterations "
                             "would not be independent");
  }
  for (Operation *op : between)
    rw.moveOpBefore(op, first);
  mergeBodies(rw, first, loops.drop_front());
  return first;
}

//===----------------------------------------------------------------------===//
// distribute
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<ForOp>> llmc::tl::distribute(RewriterBase &rw,
                                                   ForOp loop) {
  if (failed(checkNormalised(loop, "distribute")))
    return failure();
  Block *body = loop.getBody();
  // The parts: the loop nests and blocks of the body, in order. Scalar ops
  // without effects are recomputed by every part that uses them; a stack
  // buffer goes with the one part that uses it.
  SmallVector<Operation *> parts;
  for (Operation &op : body->without_terminator()) {
    if (isa<memref::AllocaOp>(op) ||
        (op.getNumRegions() == 0 && isMemoryEffectFree(&op)))
      continue;
    if (!isa<ForOp, BlockOp>(op))
      return op.emitError("distribute: ")
             << op.getName() << " in the loop's body is neither a loop nor a "
             << "block nor a scalar op without effects";
    parts.push_back(&op);
  }
  if (parts.size() < 2)
    return loop.emitError("distribute: the loop's body has ")
           << parts.size() << " loop nests or blocks, not two or more";
  auto partOf = [&](Operation *user) -> Operation * {
    for (Operation *p : parts)
      if (p->isAncestor(user))
        return p;
    return nullptr;
  };
  for (Operation &op : body->without_terminator()) {
    auto alloca = dyn_cast<memref::AllocaOp>(op);
    if (!alloca)
      continue;
    SmallPtrSet<Operation *, 2> users;
    for (Operation *u : alloca->getUsers())
      users.insert(partOf(u));
    if (users.size() > 1 || users.contains(nullptr))
      return alloca.emitError("distribute: a stack buffer of the loop's body "
                              "is used by more than one part");
  }
  if (failed(verifyIndependent(loop, "distribute")))
    return failure();

  // One copy of the loop per part, before the original, each with the
  // scalar ops (and the stack buffer) its part uses, in the body's order.
  SmallVector<ForOp> result;
  rw.setInsertionPoint(loop);
  for (Operation *part : parts) {
    SetVector<Operation *> needed;
    SmallVector<Operation *> worklist = {part};
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      op->walk([&](Operation *inner) {
        for (Value v : inner->getOperands()) {
          Operation *def = v.getDefiningOp();
          if (def && def->getBlock() == body && def != part &&
              needed.insert(def))
            worklist.push_back(def);
        }
      });
    }
    auto copy = ForOp::create(rw, loop.getLoc(), loop.getLowerBound(),
                              loop.getUpperBound(), loop.getStep(),
                              loop.getKind());
    if (auto thread = loop.getThreadAttr())
      copy.setThreadAttr(thread);
    OpBuilder::InsertionGuard guard(rw);
    rw.setInsertionPoint(copy.getBody()->getTerminator());
    IRMapping map;
    map.map(loop.getInductionVar(), copy.getInductionVar());
    for (Operation &op : body->without_terminator())
      if (needed.contains(&op) || &op == part)
        rw.clone(op, map);
    result.push_back(copy);
  }
  rw.eraseOp(loop);
  return result;
}

//===----------------------------------------------------------------------===//
// expand
//===----------------------------------------------------------------------===//

/// The iteration variable of `block` bound to `loop`'s variable plus
/// multiples of `extent` (other loops' variables, outside values and a
/// constant, each times a multiple of it).
static std::optional<unsigned> varModExtent(BlockOp block, ForOp loop,
                                            int64_t extent) {
  for (auto [i, v] : llvm::enumerate(block.getIterValues())) {
    AffineIndexBuilder ab(loop);
    ab.dim(loop.getInductionVar());
    std::optional<AffineExpr> e = ab.build(v);
    if (!e)
      continue;
    unsigned n = ab.dims.size();
    if (linearCoefficient(*e, 0, n) != 1)
      continue;
    bool multiples = true;
    for (unsigned d = 1; d < n; ++d) {
      std::optional<int64_t> c = linearCoefficient(*e, d, n);
      multiples &= c && *c % extent == 0;
    }
    SmallVector<AffineExpr> zeros(n, getAffineConstantExpr(0, e->getContext()));
    auto k = dyn_cast<AffineConstantExpr>(
        simplifyAffineExpr(e->replaceDims(zeros), 0, 0));
    if (multiples && k && k.getValue() % extent == 0)
      return i;
  }
  return std::nullopt;
}

FailureOr<Value> llmc::tl::expand(RewriterBase &rw, Value buffer,
                                  ForOp loop) {
  if (failed(checkNormalised(loop, "expand")))
    return failure();
  std::optional<int64_t> extent = getConstantIntValue(loop.getUpperBound());
  if (!extent || *extent <= 0)
    return loop.emitError("expand: the loop's extent must be a constant");
  auto alloca = buffer.getDefiningOp<memref::AllocaOp>();
  if (!alloca || alloca->getBlock() != loop.getBody())
    return loop.emitError("expand: the buffer must be a stack buffer "
                          "allocated directly in the loop's body");
  MemRefType type = alloca.getType();
  if (!type.hasStaticShape() || !type.getLayout().isIdentity())
    return alloca.emitError("expand: the stack buffer must have a static "
                            "shape and the identity layout");
  // Its users: blocks, through their regions and affine accesses.
  SmallVector<BlockOp> blocks;
  for (Operation *user : buffer.getUsers()) {
    auto block = dyn_cast<BlockOp>(user);
    if (!block && isa<affine::AffineLoadOp, affine::AffineStoreOp>(user))
      block = user->getParentOfType<BlockOp>();
    if (!block)
      return user->emitError("expand: the stack buffer is used by ")
             << user->getName() << ", not by a block's accesses";
    if (!llvm::is_contained(blocks, block))
      blocks.push_back(block);
  }
  SmallVector<unsigned> vars;
  for (BlockOp block : blocks) {
    std::optional<unsigned> v = varModExtent(block, loop, *extent);
    if (!v)
      return block.emitError("expand: no iteration variable of tl.block '")
             << block.getName() << "' is the loop's variable plus multiples "
             << "of its extent " << *extent;
    vars.push_back(*v);
  }

  // --- Rewrite: one buffer before the loop, sliced by the variable mod E.
  rw.setInsertionPoint(loop);
  SmallVector<int64_t> shape = {*extent};
  llvm::append_range(shape, type.getShape());
  auto expanded = memref::AllocaOp::create(
      rw, alloca.getLoc(), MemRefType::get(shape, type.getElementType()),
      alloca.getAlignmentAttr());
  MLIRContext *ctx = rw.getContext();
  for (unsigned bi = 0; bi < blocks.size(); ++bi) {
    BlockOp block = blocks[bi];
    AffineExpr slice = getAffineDimExpr(vars[bi], ctx) % *extent;
    auto prepend = [&](AffineMap m) {
      SmallVector<AffineExpr> results = {slice};
      llvm::append_range(results, m.getResults());
      return AffineMap::get(m.getNumDims(), m.getNumSymbols(), results, ctx);
    };
    for (Region *region : {&block.getBody(), &block.getInit()}) {
      if (region->empty())
        continue;
      Block *body = &region->front();
      SmallVector<Operation *> accesses;
      body->walk([&](Operation *op) {
        if (auto l = dyn_cast<affine::AffineLoadOp>(op);
            l && l.getMemRef() == buffer)
          accesses.push_back(op);
        if (auto st = dyn_cast<affine::AffineStoreOp>(op);
            st && st.getMemRef() == buffer)
          accesses.push_back(op);
      });
      SmallVector<Value> args(body->getArguments());
      for (Operation *op : accesses) {
        rw.setInsertionPoint(op);
        if (auto l = dyn_cast<affine::AffineLoadOp>(op)) {
          AffineMap at =
              *accessOverIters(l.getAffineMap(), l.getMapOperands(), body);
          rw.replaceOpWithNewOp<affine::AffineLoadOp>(
              l, expanded, overArgsAsSymbols(prepend(at)), args);
          continue;
        }
        auto st = cast<affine::AffineStoreOp>(op);
        AffineMap at =
            *accessOverIters(st.getAffineMap(), st.getMapOperands(), body);
        rw.replaceOpWithNewOp<affine::AffineStoreOp>(
            st, st.getValueToStore(), expanded,
            overArgsAsSymbols(prepend(at)), args);
      }
    }
    auto remap = [&](OperandRange buffers, ArrayAttr maps,
                     SmallVector<Value> &newBuffers,
                     SmallVector<Attribute> &newMaps) {
      for (auto [b, m] : llvm::zip(buffers, maps)) {
        bool ours = b == buffer;
        newBuffers.push_back(ours ? Value(expanded) : b);
        newMaps.push_back(
            ours ? AffineMapAttr::get(prepend(cast<AffineMapAttr>(m).getValue()))
                 : m);
      }
    };
    SmallVector<Value> reads, writes;
    SmallVector<Attribute> readMaps, writeMaps;
    remap(block.getReads(), block.getReadMaps(), reads, readMaps);
    remap(block.getWrites(), block.getWriteMaps(), writes, writeMaps);
    setRegions(rw, block, reads, readMaps, writes, writeMaps);
  }
  rw.eraseOp(alloca);
  return Value(expanded);
}

//===----------------------------------------------------------------------===//
// reverse
//===----------------------------------------------------------------------===//

LogicalResult llmc::tl::reverse(RewriterBase &rw, ForOp loop) {
  if (failed(checkNormalised(loop, "reverse")))
    return failure();
  Value iv = loop.getInductionVar();
  BlockOp unbound;
  bool any = false;
  loop.getBody()->walk([&](BlockOp b) {
    any = true;
    if (!unbound && llvm::none_of(b.getIterValues(), [&](Value v) {
          return isComputedFrom(v, iv, loop);
        }))
      unbound = b;
  });
  if (!any)
    return loop.emitError("reverse: the loop holds no tl.block");
  if (unbound) {
    InFlightDiagnostic d = loop.emitError(
        "reverse: a tl.block under the loop does not bind its variable (the "
        "loop would not enumerate the block's iterations)");
    d.attachNote(unbound.getLoc()) << "tl.block '" << unbound.getName() << "'";
    return d;
  }
  OpBuilder::InsertionGuard guard(rw);
  rw.setInsertionPointToStart(loop.getBody());
  MLIRContext *ctx = loop.getContext();
  AffineExpr d0 = getAffineDimExpr(0, ctx);
  affine::AffineApplyOp flipped;
  if (std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound())) {
    flipped = affine::AffineApplyOp::create(
        rw, loop.getLoc(), AffineMap::get(1, 0, *ub - 1 - d0), ValueRange{iv});
  } else {
    AffineExpr s0 = getAffineSymbolExpr(0, ctx);
    flipped = affine::AffineApplyOp::create(
        rw, loop.getLoc(), AffineMap::get(1, 1, s0 - 1 - d0),
        ValueRange{iv, loop.getUpperBound()});
  }
  rw.replaceAllUsesExcept(iv, flipped.getResult(), flipped);
  return success();
}

//===----------------------------------------------------------------------===//
// Loop kinds
//===----------------------------------------------------------------------===//

static void setKind(ForOp loop, LoopKind kind) {
  loop.setKindAttr(LoopKindAttr::get(loop.getContext(), kind));
  if (kind != LoopKind::thread_bound)
    loop.removeThreadAttr();
}

/// The loop of kind `kind` enclosing or inside `loop`, if any.
static ForOp nestedOfKind(ForOp loop, LoopKind kind) {
  for (Operation *p = loop->getParentOp(); p; p = p->getParentOp())
    if (auto l = dyn_cast<ForOp>(p); l && l.getKind() == kind)
      return l;
  ForOp inner;
  loop.getBody()->walk([&](ForOp l) {
    if (!inner && l.getKind() == kind)
      inner = l;
  });
  return inner;
}

LogicalResult llmc::tl::parallel(ForOp loop) {
  if (ForOp other = nestedOfKind(loop, LoopKind::parallel)) {
    InFlightDiagnostic diag =
        loop.emitError("parallel: the loop is nested with another parallel "
                       "loop; one loop of a nest runs on threads");
    diag.attachNote(other.getLoc()) << "the other parallel loop";
    return diag;
  }
  if (failed(verifyIndependent(loop, "parallel")))
    return failure();
  setKind(loop, LoopKind::parallel);
  return success();
}

/// True when `loop` is a group reduction loop: every block under it that it
/// binds binds it (directly or through index arithmetic, such as a split or
/// a reversal) to reduction variables only, updating one accumulator
/// (`acc = combine(acc, x)`) whose element does not depend on the loop.
static bool isGroupLoop(ForOp loop) {
  Value iv = loop.getInductionVar();
  bool binds = false, ok = true;
  loop.getBody()->walk([&](BlockOp block) {
    bool uses = false;
    for (unsigned i = 0, e = block.getNumIters(); i < e; ++i) {
      if (!isComputedFrom(block.getIterValues()[i], iv, loop))
        continue;
      uses = true;
      if (block.getIterKind(i) != IterKind::reduce)
        ok = false;
      for (Attribute m : block.getWriteMaps())
        if (cast<AffineMapAttr>(m).getValue().isFunctionOfDim(i))
          ok = false;
    }
    if (uses && failed(matchReductionUpdate(block)))
      ok = false;
    binds |= uses;
  });
  return binds && ok;
}

LogicalResult llmc::tl::vectorize(ForOp loop) {
  if (getConstantIntValue(loop.getLowerBound()) != 0 ||
      getConstantIntValue(loop.getStep()) != 1 ||
      !getConstantIntValue(loop.getUpperBound()))
    return loop.emitError("vectorize: the loop must run from 0 to a constant "
                          "with step 1");
  // Loops inside must already be lanes of the same vector (a band).
  ForOp inner;
  loop.getBody()->walk([&](ForOp l) {
    if (!inner && l.getKind() != LoopKind::vectorized)
      inner = l;
  });
  if (inner) {
    InFlightDiagnostic d = loop.emitError(
        "vectorize: the loops inside a vectorized loop must be vectorized "
        "first (innermost first)");
    d.attachNote(inner.getLoc()) << "this loop is not";
    return d;
  }
  // A loop carrying a reduction is vectorized as a group: its lanes are
  // reduced into the lanes of the loops around it. Groups nest: the loops
  // inside a group loop must be groups too.
  bool innerGroups = true;
  loop.getBody()->walk([&](ForOp l) { innerGroups &= isGroupLoop(l); });
  if (!(innerGroups && isGroupLoop(loop)) &&
      failed(verifyIndependent(loop, "vectorize")))
    return failure();
  setKind(loop, LoopKind::vectorized);
  return success();
}

LogicalResult llmc::tl::unroll(ForOp loop) {
  if (!getConstantIntValue(loop.getUpperBound()) ||
      !getConstantIntValue(loop.getLowerBound()) ||
      !getConstantIntValue(loop.getStep()))
    return loop.emitError("unroll: the loop bounds must be constants");
  setKind(loop, LoopKind::unrolled);
  return success();
}

/// Marks the matrix band rooted at `rows` as `kind` (the primitive's name):
/// its form (rows to any bound with `anyRowCount`), `where` (a condition
/// on its place, if any) and rows and columns independent.
static LogicalResult markBand(ForOp rows, LoopKind kind, bool anyRowCount,
                              function_ref<LogicalResult()> where = {}) {
  StringRef name = stringifyLoopKind(kind);
  std::string reason;
  FailureOr<MatrixBand> band = matchMatrixBand(
      rows, [&](const Twine &why) { reason = why.str(); }, anyRowCount);
  if (failed(band))
    return rows.emitError(name) << ": " << reason;
  if ((where && failed(where())) ||
      failed(verifyIndependent(band->rows, name)) ||
      failed(verifyIndependent(band->cols, name)))
    return failure();
  for (ForOp l : {band->rows, band->cols, band->red})
    setKind(l, kind);
  return success();
}

LogicalResult llmc::tl::mma(ForOp rows) {
  return markBand(rows, LoopKind::mma, /*anyRowCount=*/false);
}

LogicalResult llmc::tl::library(ForOp rows) {
  auto atTop = [&]() -> LogicalResult {
    if (isa<func::FuncOp>(rows->getParentOp()))
      return success();
    return rows.emitError("library: the band must be a whole nest at the top "
                          "of its function (the library is called from the "
                          "host, outside any loop)");
  };
  return markBand(rows, LoopKind::library, /*anyRowCount=*/true, atTop);
}

LogicalResult llmc::tl::bind(ForOp loop, StringRef thread, bool verify) {
  static const char *axes[] = {"threadIdx.x", "threadIdx.y", "threadIdx.z",
                               "blockIdx.x",  "blockIdx.y",  "blockIdx.z"};
  if (!llvm::is_contained(axes, thread))
    return loop.emitError("bind: unknown thread axis '")
           << thread
           << "' (expected threadIdx.x/y/z or blockIdx.x/y/z)";
  if (verify && failed(verifyIndependent(loop, "bind")))
    return failure();
  setKind(loop, LoopKind::thread_bound);
  loop.setThreadAttr(StringAttr::get(loop.getContext(), thread));
  return success();
}

//===----------------------------------------------------------------------===//
// decompose_reduction
//===----------------------------------------------------------------------===//

FailureOr<BlockOp> llmc::tl::decomposeReduction(RewriterBase &rw,
                                                BlockOp block, ForOp loop) {
  Block *init = block.getInitBlock();
  if (!init)
    return block.emitError("decompose_reduction: tl.block '")
           << block.getName() << "' has no init";
  if (!loop->isProperAncestor(block))
    return loop.emitError("decompose_reduction: the loop does not enclose "
                          "tl.block '")
           << block.getName() << "'";
  // Loops from `loop` inward may only feed reduction variables; spatial
  // variables must be computable before `loop`.
  for (unsigned i = 0, e = block.getNumIters(); i < e; ++i) {
    Value bound = block.getIterValues()[i];
    bool inside = false;
    for (ForOp l : getLoops(block))
      if ((l == loop || loop->isProperAncestor(l)) &&
          isComputedFrom(bound, l.getInductionVar(), loop))
        inside = true;
    if (block.getIterKind(i) == IterKind::spatial) {
      if (inside || (bound.getDefiningOp() &&
                     loop->isAncestor(bound.getDefiningOp())))
        return loop.emitError("decompose_reduction: spatial variable ")
               << i << " of tl.block '" << block.getName()
               << "' is bound inside the loop; pick a loop that encloses "
                  "only reduction loops";
    }
  }
  // The init block: the spatial variables, bound to the same values.
  SmallVector<Value> values;
  SmallVector<Attribute> kinds;
  SmallVector<unsigned> spatial;
  for (unsigned i = 0, e = block.getNumIters(); i < e; ++i)
    if (block.getIterKind(i) == IterKind::spatial) {
      spatial.push_back(i);
      values.push_back(block.getIterValues()[i]);
      kinds.push_back(IterKindAttr::get(block.getContext(), IterKind::spatial));
    }
  // Write maps over the spatial variables only (reduction ones must not
  // appear in them: the init writes each output once).
  MLIRContext *ctx = block.getContext();
  SmallVector<AffineExpr> repl(block.getNumIters(),
                               getAffineConstantExpr(0, ctx));
  for (auto [pos, i] : llvm::enumerate(spatial))
    repl[i] = getAffineDimExpr(pos, ctx);
  SmallVector<Attribute> writeMaps;
  for (Attribute a : block.getWriteMaps()) {
    AffineMap m = llvm::cast<AffineMapAttr>(a).getValue();
    for (unsigned i = 0, e = block.getNumIters(); i < e; ++i)
      if (block.getIterKind(i) == IterKind::reduce && m.isFunctionOfDim(i))
        return block.emitError("decompose_reduction: a write region of "
                               "tl.block '")
               << block.getName() << "' depends on a reduction variable";
    writeMaps.push_back(AffineMapAttr::get(
        m.replaceDimsAndSymbols(repl, {}, spatial.size(), 0)));
  }
  // What the init reads (a residual its sums start from), over the same.
  SmallVector<Value> reads;
  SmallVector<Attribute> readMaps;
  WalkResult opaque = init->walk([&](affine::AffineLoadOp l) {
    FailureOr<AffineMap> at =
        accessOverIters(l.getAffineMap(), l.getMapOperands(), init);
    if (failed(at))
      return WalkResult::interrupt();
    reads.push_back(l.getMemRef());
    readMaps.push_back(AffineMapAttr::get(
        at->replaceDimsAndSymbols(repl, {}, spatial.size(), 0)));
    return WalkResult::advance();
  });
  if (opaque.wasInterrupted())
    return block.emitError("decompose_reduction: the init of tl.block '")
           << block.getName() << "' reads other than by its variables";
  rw.setInsertionPoint(loop);
  auto initBlock = BlockOp::create(
      rw, block.getLoc(), rw.getStringAttr((block.getName() + "_init").str()),
      values, rw.getArrayAttr(kinds), reads, rw.getArrayAttr(readMaps),
      block.getWrites(), rw.getArrayAttr(writeMaps));
  // Move the init ops; reduction variables are zero where the init ran.
  Block *body = new Block();
  initBlock.getBody().push_back(body);
  SmallVector<Value> argRepl;
  rw.setInsertionPointToStart(body);
  Value zero = arith::ConstantIndexOp::create(rw, block.getLoc(), 0);
  for (unsigned i = 0, e = block.getNumIters(); i < e; ++i) {
    if (block.getIterKind(i) == IterKind::spatial)
      argRepl.push_back(body->addArgument(rw.getIndexType(), block.getLoc()));
    else
      argRepl.push_back(zero);
  }
  rw.eraseOp(init->getTerminator());
  rw.inlineBlockBefore(init, body, body->end(), argRepl);
  // Accesses in the init used all iteration variables as map operands; the
  // verifier wants them over this block's variables, which they now are
  // (reduction positions became the constant 0 through `zero`, which is not
  // an iteration variable): fold those constants into the maps.
  SmallVector<Operation *> accesses;
  body->walk([&](Operation *op) {
    if (isa<affine::AffineStoreOp, affine::AffineLoadOp>(op))
      accesses.push_back(op);
  });
  for (Operation *op : accesses) {
    rw.setInsertionPoint(op);
    auto fold = [&](AffineMap map, ValueRange operands,
                    SmallVectorImpl<Value> &newOperands) {
      SmallVector<AffineExpr> dims;
      for (Value v : operands) {
        if (v == zero) {
          dims.push_back(getAffineConstantExpr(0, ctx));
        } else {
          dims.push_back(getAffineDimExpr(newOperands.size(), ctx));
          newOperands.push_back(v);
        }
      }
      return simplifyAffineMap(map.replaceDimsAndSymbols(
          ArrayRef<AffineExpr>(dims).take_front(map.getNumDims()),
          ArrayRef<AffineExpr>(dims).drop_front(map.getNumDims()),
          newOperands.size(), 0));
    };
    if (auto store = dyn_cast<affine::AffineStoreOp>(op)) {
      SmallVector<Value> operands;
      AffineMap m = fold(store.getAffineMap(), store.getMapOperands(), operands);
      rw.replaceOpWithNewOp<affine::AffineStoreOp>(
          op, store.getValueToStore(), store.getMemRef(), m, operands);
    } else {
      auto load = cast<affine::AffineLoadOp>(op);
      SmallVector<Value> operands;
      AffineMap m = fold(load.getAffineMap(), load.getMapOperands(), operands);
      rw.replaceOpWithNewOp<affine::AffineLoadOp>(op, load.getMemRef(), m,
                                                  operands);
    }
  }
  if (zero.use_empty())
    rw.eraseOp(zero.getDefiningOp());
  rw.setInsertionPointToEnd(body);
  YieldOp::create(rw, block.getLoc());
  // The reduction block keeps only its update.
  rw.modifyOpInPlace(block, [&] {
    Region &r = block.getInit();
    while (!r.empty())
      r.front().erase();
  });
  return initBlock;
}

//===----------------------------------------------------------------------===//
// cache_read / cache_write
//===----------------------------------------------------------------------===//

/// Allocates a buffer shaped like `buffer` before `at`.
static Value allocLike(RewriterBase &rw, Value buffer, Operation *at) {
  rw.setInsertionPoint(at);
  auto type = llvm::cast<MemRefType>(buffer.getType());
  SmallVector<Value> dyn;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (type.isDynamicDim(i))
      dyn.push_back(memref::DimOp::create(rw, at->getLoc(), buffer, i));
  auto plain = MemRefType::get(type.getShape(), type.getElementType());
  return memref::AllocOp::create(rw, at->getLoc(), plain, dyn,
                                 rw.getI64IntegerAttr(64));
}

/// Builds, at the insertion point, a loop nest over `from`'s shape with a
/// block `name` copying `from` into `to` element by element; with `values`,
/// each element of `from` gives one value per buffer of `to` (their types').
static BlockOp
buildCopy(RewriterBase &rw, Location loc, StringRef name, Value from,
          ValueRange to,
          function_ref<SmallVector<Value>(OpBuilder &, Value)> values = {}) {
  auto type = llvm::cast<MemRefType>(from.getType());
  unsigned rank = type.getRank();
  MLIRContext *ctx = rw.getContext();
  Value zero = arith::ConstantIndexOp::create(rw, loc, 0);
  Value one = arith::ConstantIndexOp::create(rw, loc, 1);
  SmallVector<Value> ivs;
  OpBuilder::InsertionGuard guard(rw);
  for (unsigned i = 0; i < rank; ++i) {
    Value ub = type.isDynamicDim(i)
                   ? memref::DimOp::create(rw, loc, from, i).getResult()
                   : arith::ConstantIndexOp::create(rw, loc,
                                                    type.getDimSize(i))
                         .getResult();
    auto loop = ForOp::create(rw, loc, zero, ub, one,
                              i == 0 ? LoopKind::parallel : LoopKind::serial);
    ivs.push_back(loop.getInductionVar());
    rw.setInsertionPoint(loop.getBody()->getTerminator());
  }
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank, ctx);
  SmallVector<Attribute> kinds(rank,
                               IterKindAttr::get(ctx, IterKind::spatial));
  SmallVector<Attribute> writeMaps(to.size(), AffineMapAttr::get(id));
  auto copy = BlockOp::create(rw, loc, rw.getStringAttr(name), ivs,
                              rw.getArrayAttr(kinds), ValueRange{from},
                              rw.getArrayAttr({AffineMapAttr::get(id)}), to,
                              rw.getArrayAttr(writeMaps));
  Block *body = new Block();
  copy.getBody().push_back(body);
  for (unsigned i = 0; i < rank; ++i)
    body->addArgument(rw.getIndexType(), loc);
  rw.setInsertionPointToStart(body);
  Value v = affine::AffineLoadOp::create(rw, loc, from, id,
                                         body->getArguments());
  SmallVector<Value> stored =
      values ? values(rw, v) : SmallVector<Value>(to.size(), v);
  for (auto [x, buffer] : llvm::zip(stored, to))
    affine::AffineStoreOp::create(rw, loc, x, buffer, id, body->getArguments());
  YieldOp::create(rw, loc);
  return copy;
}

/// Replaces `from` by `to` in `block`'s operands (reads, writes as chosen)
/// and in the accesses of its regions.
static void redirect(RewriterBase &rw, BlockOp block, Value from, Value to,
                     bool reads, bool writes) {
  rw.modifyOpInPlace(block, [&] {
    for (OpOperand &operand : block->getOpOperands()) {
      if (operand.get() != from)
        continue;
      unsigned n = operand.getOperandNumber();
      unsigned readsBegin = block.getNumIters();
      unsigned writesBegin = readsBegin + block.getReads().size();
      bool isRead = n >= readsBegin && n < writesBegin;
      if ((isRead && reads) || (!isRead && writes))
        operand.set(to);
    }
  });
  for (Region &region : block->getRegions())
    region.walk([&](Operation *op) {
      // Only the memref operand of an access can be a buffer.
      bool isLoad = isa<affine::AffineLoadOp>(op);
      bool isStore = isa<affine::AffineStoreOp>(op);
      if (!((isLoad && reads) || (isStore && writes)))
        return;
      for (OpOperand &operand : op->getOpOperands())
        if (operand.get() == from)
          rw.modifyOpInPlace(op, [&] { operand.set(to); });
    });
}

/// The outermost tl.for around `block` (the block itself if none).
static Operation *rootOf(BlockOp block) {
  SmallVector<ForOp> loops = getLoops(block);
  return loops.empty() ? block.getOperation() : loops.front().getOperation();
}

/// Whether a block of the nest at `root` writes `buffer`.
static bool nestWrites(Operation *root, Value buffer) {
  return root
      ->walk([&](BlockOp other) {
        return llvm::is_contained(other.getWrites(), buffer)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

/// Whether `block` has a read `readIndex`; if not, an error of `primitive`
/// saying how many it has.
static LogicalResult checkRead(BlockOp block, unsigned readIndex,
                               StringRef primitive) {
  if (readIndex < block.getReads().size())
    return success();
  return block.emitError(primitive)
         << ": tl.block '" << block.getName() << "' has "
         << block.getReads().size() << " reads, no read " << readIndex;
}

FailureOr<BlockOp> llmc::tl::splitHalves(RewriterBase &rw, BlockOp block,
                                         unsigned readIndex, BlockOp reuse) {
  auto fail = [&](const Twine &why) {
    return block.emitError("split_halves: ") << why;
  };
  if (failed(checkRead(block, readIndex, "split_halves")))
    return failure();
  Value buffer = block.getReads()[readIndex];
  auto type = cast<MemRefType>(buffer.getType());
  if (!type.getElementType().isF32() ||
      llvm::is_contained(block.getWrites(), buffer))
    return fail("read " + Twine(readIndex) +
                " must be of an f32 buffer the block does not write");
  // acc + v * f (or fma(v, f, acc)) with v the one load of the buffer.
  FailureOr<ReductionUpdate> update = matchReductionUpdate(block);
  affine::AffineLoadOp load;
  for (Operation &op : *block.getBodyBlock())
    if (auto l = dyn_cast<affine::AffineLoadOp>(op);
        l && l.getMemRef() == buffer)
      load = load ? affine::AffineLoadOp() : l;
  Operation *mul = nullptr;
  if (succeeded(update) && update->kind == arith::AtomicRMWKind::addf)
    mul = update->fma ? update->combine
                      : update->operand.getDefiningOp<arith::MulFOp>();
  if (!load || !mul || !load->hasOneUse() || *load->user_begin() != mul ||
      mul->getOperand(0) == mul->getOperand(1))
    return fail("the block must add the product of the read's one load and "
                "another value into its accumulator");
  Operation *root = rootOf(block);
  if (nestWrites(root, buffer))
    return fail("the nest writes the buffer of read " + Twine(readIndex));
  // The halves, shaped like the buffer, written by a nest of their own
  // before the block's (or by `reuse`, such a nest already there).
  Location loc = block.getLoc();
  Type f16 = rw.getF16Type();
  BlockOp halves = reuse;
  if (halves &&
      (halves.getReads().size() != 1 || halves.getReads()[0] != buffer ||
       halves.getWrites().size() != 2))
    return fail("the halves to reuse must be of the same buffer");
  if (!halves) {
    auto half = [&] {
      rw.setInsertionPoint(root);
      SmallVector<Value> dyn;
      for (int64_t i = 0; i < type.getRank(); ++i)
        if (type.isDynamicDim(i))
          dyn.push_back(memref::DimOp::create(rw, loc, buffer, i));
      return memref::AllocOp::create(rw, loc,
                                     MemRefType::get(type.getShape(), f16), dyn,
                                     rw.getI64IntegerAttr(64));
    };
    Value high = half(), low = half();
    // hi = f16(v), lo = f16((v - hi) * 2^11) (scaled so that small
    // values keep their bits: no f16 subnormals); the nest's loops serial
    // (a schedule maps them).
    rw.setInsertionPoint(root);
    halves = buildCopy(rw, loc, (block.getName() + "_halves").str(), buffer,
                       ValueRange{high, low}, [&](OpBuilder &b, Value v) {
                         Value hi = arith::TruncFOp::create(b, loc, f16, v);
                         Value rest = arith::SubFOp::create(
                             b, loc, v,
                             arith::ExtFOp::create(b, loc, b.getF32Type(), hi));
                         Value scaled = arith::MulFOp::create(
                             b, loc, rest,
                             arith::ConstantOp::create(
                                 b, loc, b.getF32FloatAttr(kLowHalfScale)));
                         return SmallVector<Value>{
                             hi, arith::TruncFOp::create(b, loc, f16, scaled)};
                       });
    for (ForOp l : getLoops(halves))
      setKind(l, LoopKind::serial);
  }
  Value high = halves.getWrites()[0], low = halves.getWrites()[1];
  // The block reads both halves where it read the buffer: its product
  // v * f becomes ext(hi) * f + ext(lo) * f.
  SmallVector<Value> reads(block.getReads());
  SmallVector<Attribute> readMaps(block.getReadMaps().getValue());
  reads[readIndex] = high;
  reads.insert(reads.begin() + readIndex + 1, low);
  readMaps.insert(readMaps.begin() + readIndex + 1, readMaps[readIndex]);
  rw.setInsertionPoint(block);
  auto split = BlockOp::create(rw, block.getLoc(), block.getNameAttr(),
                               block.getIterValues(), block.getIterKindsAttr(),
                               reads, rw.getArrayAttr(readMaps),
                               block.getWrites(), block.getWriteMapsAttr());
  rw.inlineRegionBefore(block.getInit(), split.getInit(),
                        split.getInit().end());
  rw.inlineRegionBefore(block.getBody(), split.getBody(),
                        split.getBody().end());
  rw.eraseOp(block);
  rw.setInsertionPoint(load);
  auto loadHalf = [&](Value from) -> Value {
    Value h = affine::AffineLoadOp::create(rw, loc, from, load.getAffineMap(),
                                           load.getMapOperands());
    return arith::ExtFOp::create(rw, loc, rw.getF32Type(), h);
  };
  Value vh = loadHalf(high), vl = loadHalf(low);
  unsigned at = mul->getOperand(0) == load.getResult() ? 0 : 1;
  Value f = mul->getOperand(1 - at);
  rw.setInsertionPoint(mul);
  auto times = [&](Value h) -> Value {
    return at == 0 ? arith::MulFOp::create(rw, loc, h, f).getResult()
                   : arith::MulFOp::create(rw, loc, f, h).getResult();
  };
  // hi * f + (lo * f) * 2^-11
  Value low2 = arith::MulFOp::create(
      rw, loc, times(vl),
      arith::ConstantOp::create(rw, loc,
                                rw.getF32FloatAttr(1.0 / kLowHalfScale)));
  Value sum = arith::AddFOp::create(rw, loc, times(vh), low2);
  if (isa<math::FmaOp>(mul)) {
    // fma(v, f, acc) -> acc + (hi * f + (lo * f) * 2^-11)
    Value acc = mul->getOperand(2);
    rw.replaceOp(mul, arith::AddFOp::create(rw, loc, acc, sum).getResult());
  } else {
    rw.replaceOp(mul, sum);
  }
  rw.eraseOp(load);
  return halves;
}

FailureOr<BlockOp> llmc::tl::cacheRead(RewriterBase &rw, BlockOp block,
                                       unsigned readIndex) {
  if (failed(checkRead(block, readIndex, "cache_read")))
    return failure();
  Value buffer = block.getReads()[readIndex];
  if (llvm::is_contained(block.getWrites(), buffer))
    return block.emitError("cache_read: tl.block '")
           << block.getName() << "' also writes the buffer of read "
           << readIndex;
  Operation *root = rootOf(block);
  if (nestWrites(root, buffer))
    return block.emitError("cache_read: the buffer of read ")
           << readIndex << " is written inside the loop nest of tl.block '"
           << block.getName() << "'; a copy made before it would be stale";
  Value cache = allocLike(rw, buffer, root);
  rw.setInsertionPoint(root);
  BlockOp copy = buildCopy(rw, block.getLoc(),
                           (block.getName() + "_cache_read").str(), buffer,
                           cache);
  redirect(rw, block, buffer, cache, /*reads=*/true, /*writes=*/false);
  rw.setInsertionPointAfter(root);
  memref::DeallocOp::create(rw, block.getLoc(), cache);
  return copy;
}

FailureOr<BlockOp> llmc::tl::cacheWrite(RewriterBase &rw, BlockOp block,
                                        unsigned writeIndex) {
  if (writeIndex >= block.getWrites().size())
    return block.emitError("cache_write: tl.block '")
           << block.getName() << "' has " << block.getWrites().size()
           << " writes, no write " << writeIndex;
  Value buffer = block.getWrites()[writeIndex];
  if (llvm::is_contained(block.getReads(), buffer) && !block.getInitBlock())
    return block.emitError("cache_write: tl.block '")
           << block.getName()
           << "' reads the buffer it writes without an init; the cache "
              "would be read before it is written";
  Operation *root = rootOf(block);
  WalkResult shared = root->walk([&](BlockOp other) {
    if (other == block)
      return WalkResult::advance();
    return llvm::is_contained(other.getWrites(), buffer) ||
                   llvm::is_contained(other.getReads(), buffer)
               ? WalkResult::interrupt()
               : WalkResult::advance();
  });
  if (shared.wasInterrupted())
    return block.emitError("cache_write: another block in the loop nest of "
                           "tl.block '")
           << block.getName() << "' accesses the buffer of write "
           << writeIndex;
  Value cache = allocLike(rw, buffer, root);
  redirect(rw, block, buffer, cache, /*reads=*/true, /*writes=*/true);
  rw.setInsertionPointAfter(root);
  BlockOp copy = buildCopy(rw, block.getLoc(),
                           (block.getName() + "_cache_write").str(), cache,
                           buffer);
  Operation *copyRoot = rootOf(copy);
  rw.setInsertionPointAfter(copyRoot);
  memref::DeallocOp::create(rw, block.getLoc(), cache);
  return copy;
}

//===----------------------------------------------------------------------===//
// compute_at
//===----------------------------------------------------------------------===//

FailureOr<BlockOp> llmc::tl::computeAt(RewriterBase &rw, BlockOp block,
                                       ForOp loop) {
  MLIRContext *ctx = block.getContext();
  auto error = [&](const Twine &msg) {
    return block.emitError("compute_at: ") << msg;
  };
  // --- The producer: alone in a nest of loops bound to its variables.
  SmallVector<ForOp> ownLoops = getLoops(block);
  if (ownLoops.empty())
    return error("tl.block '" + block.getName() + "' has no loop nest");
  ForOp root = ownLoops.front();
  if (root->isAncestor(loop))
    return error("the loop is inside the block's own loop nest");
  Operation *loopRoot = loop;
  while (loopRoot->getParentOp() && isa<ForOp>(loopRoot->getParentOp()))
    loopRoot = loopRoot->getParentOp();
  if (loopRoot->getBlock() != root->getBlock() ||
      !root->isBeforeInBlock(loopRoot))
    return error("the loop must be in a loop nest that follows the block's "
                 "own nest");
  unsigned blocksInNest = 0;
  root->walk([&](BlockOp) { ++blocksInNest; });
  if (blocksInNest != 1)
    return error("tl.block '" + block.getName() +
                 "' must be the only block of its loop nest");
  for (ForOp l : ownLoops)
    if (getConstantIntValue(l.getLowerBound()) != 0 ||
        getConstantIntValue(l.getStep()) != 1)
      return error("the block's loops must start at 0 with step 1");
  // Each variable is a loop of the nest or a constant (a dimension of one,
  // such as the token of a decode step).
  SmallVector<ForOp> iterLoop(block.getNumIters());
  for (unsigned i = 0, e = block.getNumIters(); i < e; ++i) {
    if (getConstantIntValue(block.getIterValues()[i]))
      continue;
    auto it = llvm::find_if(ownLoops, [&](ForOp l) {
      return l.getInductionVar() == block.getIterValues()[i];
    });
    if (it == ownLoops.end())
      return error("iteration variable " + Twine(i) +
                   " is not bound to a loop of the block's nest");
    iterLoop[i] = *it;
  }
  for (ForOp l : ownLoops) {
    for (ForOp other : ownLoops)
      if (l != other && isComputedFrom(l.getUpperBound(),
                                  other.getInductionVar(), root))
        return error("the block's loop bounds depend on each other");
    Operation *ubDef = l.getUpperBound().getDefiningOp();
    if (ubDef && root->isAncestor(ubDef) &&
        !getConstantIntValue(l.getUpperBound()))
      return error("the block's loop bounds are computed inside its nest");
  }
  if (block.getWrites().size() != 1)
    return error("the block must write exactly one buffer");
  Value out = block.getWrites()[0];
  AffineMap writeMap =
      llvm::cast<AffineMapAttr>(block.getWriteMaps()[0]).getValue();
  SmallVector<int> dimOfIter(block.getNumIters(), -1);
  for (auto [d, e] : llvm::enumerate(writeMap.getResults())) {
    auto de = dyn_cast<AffineDimExpr>(e);
    if (!de || block.getIterKind(de.getPosition()) != IterKind::spatial ||
        dimOfIter[de.getPosition()] != -1)
      return error("the write region must be one spatial variable per "
                   "dimension");
    dimOfIter[de.getPosition()] = d;
  }
  for (unsigned i = 0, e = block.getNumIters(); i < e; ++i)
    if (block.getIterKind(i) == IterKind::spatial && dimOfIter[i] == -1)
      return error("spatial variable " + Twine(i) +
                   " does not index the output");
  // The block's regions must not use values computed inside its nest.
  WalkResult inner = block->walk([&](Operation *op) {
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp())
        if (root->isAncestor(def) && !block->isAncestor(def))
          return WalkResult::interrupt();
    return WalkResult::advance();
  });
  if (inner.wasInterrupted())
    return error("the block uses values computed inside its loop nest");

  // --- The consumers: every later reader of `out` is under `loop`.
  SmallVector<std::pair<BlockOp, AffineMap>> reads;
  bool outside = false;
  for (Operation *op = root->getNextNode(); op; op = op->getNextNode())
    op->walk([&](BlockOp c) {
      for (auto [buf, m] : llvm::zip(c.getReads(), c.getReadMaps())) {
        if (buf != out)
          continue;
        if (!loop->isAncestor(c))
          outside = true;
        else
          reads.push_back({c, llvm::cast<AffineMapAttr>(m).getValue()});
      }
    });
  if (outside)
    return error("the output is also read outside the loop");
  if (reads.empty())
    return error("no block under the loop reads the output");

  // --- The region each iteration of `loop` needs, per output dimension:
  // first analysed for every read (so that a failure changes nothing), then
  // materialised.
  unsigned rank = writeMap.getNumResults();
  struct Bound {
    AffineMap low, high; // one result each, over `values`
    SmallVector<Value> values;
    unsigned dim;
  };
  SmallVector<Bound> bounds;
  for (auto [consumer, map] : reads) {
    AffineIndexBuilder ab(loop);
    SmallVector<AffineExpr> bindings;
    for (Value v : consumer.getIterValues()) {
      auto e = ab.build(v);
      if (!e)
        return error("an index of consumer tl.block '" + consumer.getName() +
                     "' is not affine in the loop variables");
      bindings.push_back(*e);
    }
    // Loops inside `loop` (and their extents) range; everything else is
    // fixed for one iteration.
    SmallVector<AffineExpr> atMin, atMax;
    SmallVector<Value> dimValues = ab.dims;
    for (size_t i = 0; i < ab.dims.size(); ++i) {
      AffineExpr d = getAffineDimExpr(i, ctx);
      atMin.push_back(d);
      atMax.push_back(d);
    }
    SmallVector<std::pair<unsigned, ForOp>> ranging;
    for (auto [i, v] : llvm::enumerate(ab.dims)) {
      auto arg = dyn_cast<BlockArgument>(v);
      auto l = arg ? dyn_cast<ForOp>(arg.getOwner()->getParentOp()) : ForOp();
      if (!l || l == loop || !loop->isProperAncestor(l))
        continue;
      if (getConstantIntValue(l.getLowerBound()) != 0 ||
          getConstantIntValue(l.getStep()) != 1)
        return error("loops under the target loop must start at 0 with "
                     "step 1");
      Operation *ubDef = l.getUpperBound().getDefiningOp();
      if (ubDef && loop->isAncestor(ubDef) &&
          !getConstantIntValue(l.getUpperBound()))
        return error("the extent of a loop under the target loop varies "
                     "within it");
      ranging.push_back({static_cast<unsigned>(i), l});
    }
    for (auto [i, l] : ranging) {
      // ub - 1 as an expression over a new dim for ub (or a constant).
      AffineExpr ubExpr;
      if (auto c = getConstantIntValue(l.getUpperBound())) {
        ubExpr = getAffineConstantExpr(*c, ctx);
      } else {
        dimValues.push_back(l.getUpperBound());
        ubExpr = getAffineDimExpr(dimValues.size() - 1, ctx);
      }
      atMin[i] = getAffineConstantExpr(0, ctx);
      atMax[i] = ubExpr - 1;
    }
    unsigned numDims = dimValues.size();
    for (unsigned d = 0; d < rank; ++d) {
      AffineExpr e = map.getResult(d).replaceDims(bindings);
      // Linear with a constant coefficient in every ranging loop.
      SmallVector<AffineExpr> lowSub(atMin), highSub(atMin);
      for (auto [i, l] : ranging) {
        SmallVector<AffineExpr> zero(numDims), one(numDims), two(numDims);
        for (unsigned k = 0; k < numDims; ++k)
          zero[k] = one[k] = two[k] = getAffineDimExpr(k, ctx);
        zero[i] = getAffineConstantExpr(0, ctx);
        one[i] = getAffineConstantExpr(1, ctx);
        two[i] = getAffineConstantExpr(2, ctx);
        AffineExpr d1 = simplifyAffineExpr(e.replaceDims(one) -
                                               e.replaceDims(zero),
                                           numDims, 0);
        AffineExpr d2 = simplifyAffineExpr(e.replaceDims(two) -
                                               e.replaceDims(one),
                                           numDims, 0);
        auto c1 = dyn_cast<AffineConstantExpr>(d1);
        if (!c1 || d1 != d2)
          return error("a read of consumer tl.block '" + consumer.getName() +
                       "' is not linear in the loops under the target loop");
        if (c1.getValue() < 0) {
          lowSub[i] = atMax[i];
          highSub[i] = atMin[i];
        } else {
          lowSub[i] = atMin[i];
          highSub[i] = atMax[i];
        }
      }
      bounds.push_back(
          {AffineMap::get(numDims, 0, e.replaceDims(lowSub)),
           AffineMap::get(numDims, 0, e.replaceDims(highSub) + 1), dimValues,
           d});
    }
  }
  SmallVector<Value> lo(rank), hi(rank);
  Location loc = loop.getLoc();
  rw.setInsertionPointToStart(loop.getBody());
  for (Bound &b : bounds) {
    Value l0 = (*affine::expandAffineMap(rw, loc, b.low, b.values))[0];
    Value h0 = (*affine::expandAffineMap(rw, loc, b.high, b.values))[0];
    lo[b.dim] = lo[b.dim]
                    ? arith::MinSIOp::create(rw, loc, lo[b.dim], l0).getResult()
                    : l0;
    hi[b.dim] = hi[b.dim]
                    ? arith::MaxSIOp::create(rw, loc, hi[b.dim], h0).getResult()
                    : h0;
  }

  // --- The new nest: one loop per output dimension over [lo, hi), then the
  // reduction loops as they were.
  Value zero = arith::ConstantIndexOp::create(rw, loc, 0);
  Value one = arith::ConstantIndexOp::create(rw, loc, 1);
  IRMapping mapping;
  SmallVector<Value> dimValue(rank);
  SmallVector<bool> constantDim(rank, false);
  for (unsigned i = 0, e = block.getNumIters(); i < e; ++i)
    if (dimOfIter[i] >= 0 && !iterLoop[i])
      constantDim[dimOfIter[i]] = true;
  for (unsigned d = 0; d < rank; ++d) {
    if (constantDim[d])
      continue; // the block writes one index there, whatever is read
    Value extent = arith::SubIOp::create(rw, loc, hi[d], lo[d]);
    auto l = ForOp::create(rw, loc, zero, extent, one, LoopKind::serial);
    rw.setInsertionPoint(l.getBody()->getTerminator());
    dimValue[d] = arith::AddIOp::create(rw, loc, lo[d], l.getInductionVar());
  }
  for (unsigned i = 0, e = block.getNumIters(); i < e; ++i)
    if (dimOfIter[i] >= 0 && iterLoop[i])
      mapping.map(iterLoop[i].getInductionVar(), dimValue[dimOfIter[i]]);
  // Bounds of the remaining (reduction) loops: constants are rebuilt, other
  // values come from outside the old nest.
  auto bound = [&](Value v) -> Value {
    if (auto c = getConstantIntValue(v))
      return arith::ConstantIndexOp::create(rw, loc, *c);
    return v;
  };
  for (ForOp l : ownLoops) {
    if (mapping.contains(l.getInductionVar()))
      continue;
    auto r = ForOp::create(rw, loc, bound(l.getLowerBound()),
                           bound(l.getUpperBound()), bound(l.getStep()),
                           l.getKind());
    mapping.map(l.getInductionVar(), r.getInductionVar());
    rw.setInsertionPoint(r.getBody()->getTerminator());
  }
  auto moved = cast<BlockOp>(rw.clone(*block, mapping));
  rw.eraseOp(root);
  return moved;
}

//===----------------------------------------------------------------------===//
// stage
//===----------------------------------------------------------------------===//

FailureOr<BlockOp> llmc::tl::stage(RewriterBase &rw, BlockOp block,
                                   unsigned readIndex, ForOp loop) {
  MLIRContext *ctx = block.getContext();
  auto error = [&](const Twine &msg) {
    return block.emitError("stage: ") << msg;
  };
  if (failed(checkRead(block, readIndex, "stage")))
    return failure();
  if (!loop->isProperAncestor(block))
    return error("the loop is not around tl.block '" + block.getName() + "'");
  Value buffer = block.getReads()[readIndex];
  auto type = cast<MemRefType>(buffer.getType());
  if (llvm::is_contained(block.getWrites(), buffer))
    return error("tl.block '" + block.getName() +
                 "' also writes the buffer it would read staged");
  WalkResult written = loop->walk([&](BlockOp other) {
    return llvm::is_contained(other.getWrites(), buffer)
               ? WalkResult::interrupt()
               : WalkResult::advance();
  });
  if (written.wasInterrupted())
    return error("the buffer is written under the loop; a copy made at the "
                 "start of an iteration would be stale");
  AffineMap region =
      cast<AffineMapAttr>(block.getReadMaps()[readIndex]).getValue();
  // The block's accesses of the buffer: loads of its declared region.
  SmallVector<std::pair<affine::AffineLoadOp, Block *>> loads;
  for (Region *r : {&block.getBody(), &block.getInit()}) {
    if (r->empty())
      continue;
    WalkResult other = r->walk([&](Operation *op) {
      if (llvm::none_of(op->getOperands(),
                        [&](Value v) { return v == buffer; }))
        return WalkResult::advance();
      auto load = dyn_cast<affine::AffineLoadOp>(op);
      FailureOr<AffineMap> at = failure();
      if (load)
        at = accessOverIters(load.getAffineMap(), load.getMapOperands(),
                             &r->front());
      if (failed(at) || *at != region)
        return WalkResult::interrupt();
      loads.push_back({load, &r->front()});
      return WalkResult::advance();
    });
    if (other.wasInterrupted())
      return error("tl.block '" + block.getName() +
                   "' accesses the buffer other than by loads of its "
                   "declared read region");
  }
  // The region at one iteration of `loop`: per dimension, its start (over
  // values fixed in the iteration) and its constant extent.
  AffineIndexBuilder ab(loop);
  SmallVector<AffineExpr> bindings;
  for (Value v : block.getIterValues()) {
    std::optional<AffineExpr> e = ab.build(v);
    if (!e)
      return error("an iteration variable of tl.block '" + block.getName() +
                   "' is not affine in the loops");
    bindings.push_back(*e);
  }
  unsigned n = ab.dims.size();
  SmallVector<ForOp> inner(n); // the loop under `loop` a dim stands for
  for (auto [i, v] : llvm::enumerate(ab.dims)) {
    auto arg = dyn_cast<BlockArgument>(v);
    Operation *owner = arg ? arg.getOwner()->getParentOp() : v.getDefiningOp();
    if (!owner || !loop->isProperAncestor(owner))
      continue;
    auto l = dyn_cast<ForOp>(owner);
    if (!l || l.getInductionVar() != v)
      return error("an index of tl.block '" + block.getName() +
                   "' uses a value computed under the loop");
    inner[i] = l;
  }
  unsigned rank = region.getNumResults();
  SmallVector<int64_t> extents(rank, 1);
  SmallVector<AffineExpr> starts(rank);
  // Whether a dimension's offset comes from loops of reduction variables
  // (the new variable then is one: the init runs where every reduction
  // variable is 0, which this one is where the others are).
  SmallVector<bool> reduces(rank, false);
  for (unsigned d = 0; d < rank; ++d) {
    bool spatialLoops = false, reductionLoops = false;
    AffineExpr e = region.getResult(d).replaceDims(bindings);
    SmallVector<AffineExpr> atLow;
    for (unsigned i = 0; i < n; ++i)
      atLow.push_back(getAffineDimExpr(i, ctx));
    for (unsigned i = 0; i < n; ++i) {
      if (!inner[i])
        continue;
      std::optional<int64_t> c = linearCoefficient(e, i, n);
      if (!c)
        return error("the read region is not linear in the loops under the "
                     "loop");
      if (*c == 0)
        continue;
      std::optional<int64_t> ub = getConstantIntValue(inner[i].getUpperBound());
      if (!ub || getConstantIntValue(inner[i].getLowerBound()) != 0 ||
          getConstantIntValue(inner[i].getStep()) != 1)
        return error("a loop under the loop that the read region uses must "
                     "run from 0 with step 1 to a constant");
      extents[d] += std::abs(*c) * (*ub - 1);
      atLow[i] = getAffineConstantExpr(*c > 0 ? 0 : *ub - 1, ctx);
      if (*ub == 1)
        continue; // (a loop of one iteration moves nothing)
      BoundKinds kinds = boundKinds(block, inner[i]);
      spatialLoops |= kinds.spatial;
      reductionLoops |= kinds.reduction;
    }
    if (spatialLoops && reductionLoops)
      return error("dimension " + Twine(d) +
                   " of the read region moves with loops of both spatial "
                   "and reduction variables");
    reduces[d] = reductionLoops;
    starts[d] = simplifyAffineExpr(e.replaceDims(atLow), n, 0);
  }

  // --- The stack buffer and its copy at the start of the loop's body: the
  // copy's variables are the source's indices and, for the buffer, their
  // offsets in the region (the copy's loops).
  Location loc = block.getLoc();
  OpBuilder::InsertionGuard guard(rw);
  rw.setInsertionPointToStart(loop.getBody());
  auto staged = memref::AllocaOp::create(
      rw, loc, MemRefType::get(extents, type.getElementType()),
      rw.getI64IntegerAttr(64));
  Value zero = arith::ConstantIndexOp::create(rw, loc, 0);
  Value one = arith::ConstantIndexOp::create(rw, loc, 1);
  SmallVector<Value> outer; // the dims fixed in an iteration, in order
  SmallVector<AffineExpr> renumber(n, getAffineConstantExpr(0, ctx));
  for (unsigned i = 0; i < n; ++i)
    if (!inner[i]) {
      renumber[i] = getAffineDimExpr(outer.size(), ctx);
      outer.push_back(ab.dims[i]);
    }
  SmallVector<Value> firsts;
  for (AffineExpr start : starts)
    firsts.push_back(affine::AffineApplyOp::create(
        rw, loc, AffineMap::get(outer.size(), 0, start.replaceDims(renumber)),
        outer));
  SmallVector<Value> indices, offsets;
  for (unsigned d = 0; d < rank; ++d) {
    Value count = arith::ConstantIndexOp::create(rw, loc, extents[d]);
    auto l = ForOp::create(rw, loc, zero, count, one, LoopKind::serial);
    rw.setInsertionPoint(l.getBody()->getTerminator());
    indices.push_back(
        arith::AddIOp::create(rw, loc, firsts[d], l.getInductionVar()));
    offsets.push_back(l.getInductionVar());
  }
  SmallVector<Value> copyValues(indices);
  copyValues.append(offsets);
  SmallVector<AffineExpr> sourceExprs, slotExprs;
  for (unsigned d = 0; d < rank; ++d) {
    sourceExprs.push_back(getAffineDimExpr(d, ctx));
    slotExprs.push_back(getAffineDimExpr(rank + d, ctx));
  }
  AffineMap source = AffineMap::get(2 * rank, 0, sourceExprs, ctx);
  AffineMap slot = AffineMap::get(2 * rank, 0, slotExprs, ctx);
  SmallVector<Attribute> copyKinds(2 * rank,
                                   IterKindAttr::get(ctx, IterKind::spatial));
  auto copy = BlockOp::create(
      rw, loc, rw.getStringAttr((block.getName() + "_stage").str()), copyValues,
      rw.getArrayAttr(copyKinds), ValueRange{buffer},
      rw.getArrayAttr({AffineMapAttr::get(source)}), ValueRange{staged},
      rw.getArrayAttr({AffineMapAttr::get(slot)}));
  Block *body = rw.createBlock(&copy.getBody(), {},
                               SmallVector<Type>(2 * rank, rw.getIndexType()),
                               SmallVector<Location>(2 * rank, loc));
  rw.setInsertionPointToStart(body);
  Value v = affine::AffineLoadOp::create(
      rw, loc, buffer, overArgsAsSymbols(source), body->getArguments());
  affine::AffineStoreOp::create(rw, loc, v, staged, overArgsAsSymbols(slot),
                                body->getArguments());
  YieldOp::create(rw, loc);

  // --- The block reads the stack buffer through a variable per dimension
  // of more than one element, bound to the element's offset in the region
  // (the loops under `loop`: a reduction variable where the dimension's
  // index uses one); a copy of the block with those variables added.
  unsigned n0 = block.getNumIters();
  SmallVector<Value> values(block.getIterValues());
  SmallVector<Attribute> kinds(block.getIterKinds().getValue());
  SmallVector<AffineExpr> stagedExprs;
  rw.setInsertionPoint(block);
  for (unsigned d = 0; d < rank; ++d) {
    if (extents[d] == 1) {
      stagedExprs.push_back(getAffineConstantExpr(0, ctx));
      continue;
    }
    AffineExpr offset = simplifyAffineExpr(
        region.getResult(d).replaceDims(bindings) - starts[d], n, 0);
    SmallVector<Value> innerValues;
    SmallVector<AffineExpr> renumberInner(n, getAffineConstantExpr(0, ctx));
    for (unsigned i = 0; i < n; ++i)
      if (inner[i]) {
        renumberInner[i] = getAffineDimExpr(innerValues.size(), ctx);
        innerValues.push_back(ab.dims[i]);
      }
    AffineExpr e = offset.replaceDims(renumberInner);
    Value at;
    if (auto de = dyn_cast<AffineDimExpr>(e))
      at = innerValues[de.getPosition()];
    else
      at = affine::AffineApplyOp::create(
          rw, loc, AffineMap::get(innerValues.size(), 0, e), innerValues);
    stagedExprs.push_back(getAffineDimExpr(values.size(), ctx));
    values.push_back(at);
    kinds.push_back(IterKindAttr::get(ctx, reduces[d] ? IterKind::reduce
                                                      : IterKind::spatial));
  }
  unsigned total = values.size();
  auto widen = [&](Attribute m) -> Attribute {
    AffineMap map = cast<AffineMapAttr>(m).getValue();
    return AffineMapAttr::get(AffineMap::get(total, 0, map.getResults(), ctx));
  };
  SmallVector<Value> reads(block.getReads());
  SmallVector<Attribute> readMaps, writeMaps;
  for (Attribute m : block.getReadMaps())
    readMaps.push_back(widen(m));
  for (Attribute m : block.getWriteMaps())
    writeMaps.push_back(widen(m));
  AffineMap stagedRegion = AffineMap::get(total, 0, stagedExprs, ctx);
  reads[readIndex] = staged;
  readMaps[readIndex] = AffineMapAttr::get(stagedRegion);
  auto replacement =
      BlockOp::create(rw, block.getLoc(), block.getNameAttr(), values,
                      rw.getArrayAttr(kinds), reads, rw.getArrayAttr(readMaps),
                      block.getWrites(), rw.getArrayAttr(writeMaps));
  for (auto [from, to] :
       {std::pair(&block.getInit(), &replacement.getInit()),
        std::pair(&block.getBody(), &replacement.getBody())}) {
    if (from->empty())
      continue;
    rw.inlineRegionBefore(*from, *to, to->end());
    for (unsigned i = n0; i < total; ++i)
      to->front().addArgument(rw.getIndexType(), loc);
  }
  for (auto [load, args] : loads) {
    Block *moved = load->getBlock();
    while (moved->getParentOp() != replacement)
      moved = moved->getParentOp()->getBlock();
    rw.setInsertionPoint(load);
    rw.replaceOpWithNewOp<affine::AffineLoadOp>(
        load, staged, overArgsAsSymbols(stagedRegion), moved->getArguments());
  }
  rw.eraseOp(block);
  return copy;
}

//===----------------------------------------------------------------------===//
// hoist_value
//===----------------------------------------------------------------------===//

SmallVector<Operation *> llmc::tl::getWidenings(BlockOp block) {
  SmallVector<Operation *> found;
  block.getBodyBlock()->walk([&](Operation *op) {
    if (isa<arith::ExtUIOp, arith::ExtSIOp, arith::ExtFOp>(op))
      found.push_back(op);
  });
  return found;
}

SmallVector<Operation *> llmc::tl::getIntToFloats(BlockOp block) {
  SmallVector<Operation *> found;
  block.getBodyBlock()->walk([&](Operation *op) {
    if (isa<arith::UIToFPOp, arith::SIToFPOp>(op))
      found.push_back(op);
  });
  return found;
}

FailureOr<BlockOp> llmc::tl::hoistValue(RewriterBase &rw, BlockOp block,
                                        Value value, ForOp loop, bool quiet,
                                        int64_t *bytes) {
  MLIRContext *ctx = block.getContext();
  auto error = [&](const Twine &msg) -> FailureOr<BlockOp> {
    if (!quiet)
      block.emitError("hoist_value: ") << msg;
    return failure();
  };
  Block *body = block.getBodyBlock();
  Operation *def = value.getDefiningOp();
  if (!def || def->getBlock() != body)
    return error("the value is not computed in the body of tl.block '" +
                 block.getName() + "'");
  if (!loop->isProperAncestor(block))
    return error("the loop is not around tl.block '" + block.getName() + "'");
  Type type = value.getType();
  if (!type.isIntOrFloat())
    return error("the value is not a scalar");
  // Values an iteration of `loop` holds fixed: its index and what is
  // defined outside it.
  auto fixed = [&](Value v) {
    return v == loop.getInductionVar() ||
           !loop->isAncestor(v.getParentRegion()->getParentOp());
  };
  // The ops `value` comes from (in the body), the variables they use.
  llvm::SetVector<Operation *> slice;
  llvm::SmallSetVector<unsigned, 8> vars;
  SmallVector<Operation *> work = {def};
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (!slice.insert(op))
      continue;
    if (auto load = dyn_cast<affine::AffineLoadOp>(op)) {
      Value buffer = load.getMemRef();
      WalkResult written = loop->walk([&](BlockOp other) {
        return llvm::is_contained(other.getWrites(), buffer)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      });
      if (written.wasInterrupted())
        return error("the value reads a buffer written under the loop");
    } else if (op->getNumRegions() || !isPure(op)) {
      return error("the value comes from an op with effects or regions");
    }
    for (Value v : op->getOperands()) {
      if (auto arg = dyn_cast<BlockArgument>(v);
          arg && arg.getOwner() == body) {
        vars.insert(arg.getArgNumber());
        continue;
      }
      Operation *from = v.getDefiningOp();
      if (from && from->getBlock() == body) {
        work.push_back(from);
        continue;
      }
      if (!fixed(v))
        return error("the value uses a value computed under the loop");
    }
  }
  // The loops under `loop` the variables are bound to, outermost first.
  SmallVector<ForOp> around = getLoops(block);
  SmallVector<ForOp> staged;
  DenseMap<Operation *, unsigned> varOfLoop;
  for (unsigned j : vars) {
    Value bound = block.getIterValues()[j];
    if (fixed(bound))
      continue;
    auto arg = dyn_cast<BlockArgument>(bound);
    auto l = arg ? dyn_cast<ForOp>(arg.getOwner()->getParentOp()) : ForOp();
    if (!l || l.getInductionVar() != bound)
      return error("a variable the value uses is bound to a value computed "
                   "under the loop, not to a loop's index");
    if (getConstantIntValue(l.getLowerBound()) != 0 ||
        getConstantIntValue(l.getStep()) != 1 ||
        !getConstantIntValue(l.getUpperBound()))
      return error("a loop the value uses must run from 0 by 1 to a constant");
    varOfLoop.try_emplace(l.getOperation(), j);
  }
  for (ForOp l : around)
    if (varOfLoop.count(l.getOperation()))
      staged.push_back(l);
  SmallVector<int64_t> extents;
  int64_t elements = 1;
  for (ForOp l : staged) {
    extents.push_back(*getConstantIntValue(l.getUpperBound()));
    elements *= extents.back();
  }
  // The hoisted block's reads: the value's loads, over the variables.
  SmallVector<Value> reads;
  SmallVector<Attribute> readMaps;
  for (Operation *op : slice)
    if (auto load = dyn_cast<affine::AffineLoadOp>(op)) {
      FailureOr<AffineMap> at =
          accessOverIters(load.getAffineMap(), load.getMapOperands(), body);
      if (failed(at))
        return error("a load of the value is not affine in the variables");
      reads.push_back(load.getMemRef());
      readMaps.push_back(AffineMapAttr::get(*at));
    }
  if (bytes) {
    *bytes = elements * llvm::divideCeil(type.getIntOrFloatBitWidth(), 8);
    return block;
  }

  // --- The buffer and the nest computing it, at the start of the loop's
  // body. Its block has the variables of `block`: those the value uses
  // bound to the copies of their loops, the others to 0.
  Location loc = block.getLoc();
  OpBuilder::InsertionGuard guard(rw);
  rw.setInsertionPointToStart(loop.getBody());
  // (One dimension, the loops' indices row-major: the lanes of a band of
  // vectorized loops then run along it, a vector access.)
  auto buffer = memref::AllocaOp::create(
      rw, loc, MemRefType::get({elements}, type), rw.getI64IntegerAttr(64));
  Value zero = arith::ConstantIndexOp::create(rw, loc, 0);
  Value one = arith::ConstantIndexOp::create(rw, loc, 1);
  unsigned n = block.getNumIters();
  SmallVector<Value> values(n, zero);
  for (unsigned j = 0; j < n; ++j)
    if (fixed(block.getIterValues()[j]))
      values[j] = block.getIterValues()[j];
  SmallVector<AffineExpr> slots;
  for (auto [l, extent] : llvm::zip(staged, extents)) {
    Value count = arith::ConstantIndexOp::create(rw, loc, extent);
    LoopKind kind =
        l.getKind() == LoopKind::parallel ? LoopKind::serial : l.getKind();
    auto copy = ForOp::create(rw, loc, zero, count, one, kind);
    rw.setInsertionPoint(copy.getBody()->getTerminator());
    unsigned j = varOfLoop.lookup(l.getOperation());
    for (unsigned k : vars)
      if (block.getIterValues()[k] == l.getInductionVar())
        values[k] = copy.getInductionVar();
    slots.push_back(getAffineDimExpr(j, ctx));
  }
  AffineExpr flat = getAffineConstantExpr(0, ctx);
  for (auto [e, extent] : llvm::zip(slots, extents))
    flat = flat * extent + e;
  AffineMap slot = AffineMap::get(n, 0, flat, ctx);
  SmallVector<Attribute> spatial(n, IterKindAttr::get(ctx, IterKind::spatial));
  auto hoisted = BlockOp::create(
      rw, loc, rw.getStringAttr((block.getName() + "_hoist").str()), values,
      rw.getArrayAttr(spatial), reads, rw.getArrayAttr(readMaps),
      ValueRange{buffer}, rw.getArrayAttr({AffineMapAttr::get(slot)}));
  Block *hbody = rw.createBlock(&hoisted.getBody(), {},
                                SmallVector<Type>(n, rw.getIndexType()),
                                SmallVector<Location>(n, loc));
  rw.setInsertionPointToStart(hbody);
  IRMapping mapping;
  mapping.map(body->getArguments(), hbody->getArguments());
  for (Operation &op : *body)
    if (slice.contains(&op))
      rw.clone(op, mapping);
  affine::AffineStoreOp::create(rw, loc, mapping.lookup(value), buffer,
                                overArgsAsSymbols(slot), hbody->getArguments());
  YieldOp::create(rw, loc);

  // --- `block` reads the buffer where it computed the value; what only
  // the value used goes, and with it the reads nothing else makes.
  rw.setInsertionPoint(def);
  Value loaded = affine::AffineLoadOp::create(
      rw, loc, buffer, overArgsAsSymbols(slot), body->getArguments());
  rw.replaceAllUsesWith(value, loaded);
  SmallVector<Operation *> inOrder;
  for (Operation &op : *body)
    if (slice.contains(&op))
      inOrder.push_back(&op);
  for (Operation *op : llvm::reverse(inOrder))
    if (op->use_empty())
      rw.eraseOp(op);
  auto used = [&](Value buffer) {
    for (Region *r : {&block.getBody(), &block.getInit()})
      for (Operation *user : buffer.getUsers())
        if (r->isAncestor(user->getParentRegion()))
          return true;
    return false;
  };
  SmallVector<Value> keptReads;
  SmallVector<Attribute> keptMaps;
  for (auto [read, map] : llvm::zip(block.getReads(), block.getReadMaps()))
    if (used(read)) {
      keptReads.push_back(read);
      keptMaps.push_back(map);
    }
  keptReads.push_back(buffer);
  keptMaps.push_back(AffineMapAttr::get(slot));
  SmallVector<Value> writes(block.getWrites());
  setRegions(rw, block, keptReads, keptMaps, writes,
             SmallVector<Attribute>(block.getWriteMaps().getValue()));
  return hoisted;
}

//===----------------------------------------------------------------------===//
// reverse_compute_inline
//===----------------------------------------------------------------------===//

/// `map` (over a block's variables) as the map of an access whose operands
/// are all the block's arguments, as symbols.
static AffineMap overArgsAsSymbols(AffineMap map) {
  SmallVector<AffineExpr> syms;
  for (unsigned i = 0; i < map.getNumDims(); ++i)
    syms.push_back(getAffineSymbolExpr(i, map.getContext()));
  return map.replaceDimsAndSymbols(syms, {}, 0, map.getNumDims());
}

/// Whether `consumer`'s body is `store(load(buffer) + x)` (either order), x
/// not computed from the buffer: f(y) = y + x, so f(init + sum) = f(init) +
/// sum.
static LogicalResult addsToBuffer(BlockOp consumer, Value buffer) {
  Block *body = consumer.getBodyBlock();
  affine::AffineStoreOp store;
  for (Operation &op : body->without_terminator())
    if (auto s = dyn_cast<affine::AffineStoreOp>(op))
      store = store ? affine::AffineStoreOp() : s;
  auto add = store ? store.getValueToStore().getDefiningOp<arith::AddFOp>()
                   : arith::AddFOp();
  if (!add)
    return failure();
  auto loadsBuffer = [&](Value v) {
    auto l = v.getDefiningOp<affine::AffineLoadOp>();
    return l && l.getMemRef() == buffer;
  };
  unsigned loads = 0;
  body->walk([&](affine::AffineLoadOp l) { loads += l.getMemRef() == buffer; });
  bool lhs = loadsBuffer(add.getLhs());
  if (loads != 1 || !(lhs || loadsBuffer(add.getRhs())))
    return failure();
  // x must not be computed from y (y + f(y) is no sum plus a value).
  Value y = lhs ? add.getLhs() : add.getRhs();
  Value x = lhs ? add.getRhs() : add.getLhs();
  return success(!isComputedFrom(x, y, consumer));
}

LogicalResult llmc::tl::reverseComputeInline(RewriterBase &rw, BlockOp consumer,
                                             bool quiet, bool intoReduction) {
  auto error = [&](const Twine &msg) -> LogicalResult {
    if (!quiet)
      consumer.emitError("reverse_compute_inline: ") << msg;
    return failure();
  };
  // --- The consumer: elementwise over one buffer its producer writes.
  if (consumer.hasReduction() || consumer.getInitBlock())
    return error("tl.block '" + consumer.getName() +
                 "' has reduction variables");
  if (consumer.getWrites().size() != 1)
    return error("tl.block '" + consumer.getName() + "' writes " +
                 Twine(consumer.getWrites().size()) + " buffers, not one");
  Value out = consumer.getWrites()[0];
  Block *cBody = consumer.getBodyBlock();
  unsigned n = consumer.getNumIters();
  // The read of a buffer that one other block writes, one variable per
  // dimension in order.
  std::optional<unsigned> readIndex;
  BlockOp producer;
  Operation *scope = consumer->getParentOfType<func::FuncOp>().getOperation();
  if (!scope)
    return error("tl.block '" + consumer.getName() + "' is not in a function");
  for (auto [i, read] : llvm::enumerate(consumer.getReads())) {
    Value candidate = read;
    AffineMap map = cast<AffineMapAttr>(consumer.getReadMaps()[i]).getValue();
    if (!map.isIdentity() || map.getNumDims() != n)
      continue;
    // Its writers among its users (one writing through a view makes the
    // view a user, which the checks below refuse).
    SmallVector<BlockOp> writers;
    for (Operation *user : candidate.getUsers())
      if (auto b = dyn_cast<BlockOp>(user);
          b && b != consumer && llvm::is_contained(b.getWrites(), candidate) &&
          !llvm::is_contained(writers, b))
        writers.push_back(b);
    // A buffer of the function's own (an argument or a view is seen by
    // others), written by one block and read once here.
    if (!candidate.getDefiningOp<memref::AllocOp>() || writers.size() != 1 ||
        llvm::count(consumer.getReads(), candidate) != 1)
      continue;
    // Of several, the buffer produced last (the one just computed, not a
    // residual stream written long before).
    if (producer && !rootOf(producer)->isBeforeInBlock(rootOf(writers.front())))
      continue;
    readIndex = i;
    producer = writers.front();
  }
  if (!readIndex)
    return error("tl.block '" + consumer.getName() +
                 "' reads no buffer of the function's own that a single "
                 "other block writes, one variable per dimension");
  Value buffer = consumer.getReads()[*readIndex];
  // --- The producer: spatial, writes the buffer with one store; or (with
  // intoReduction) a reduction adding into it, which the consumer adds one
  // value to (z = y + x: x is added to the init's value instead).
  bool reduction = producer.hasReduction();
  FailureOr<ReductionUpdate> update = failure();
  if (reduction) {
    update = matchReductionUpdate(producer);
    if (!intoReduction || failed(update) ||
        update->kind != arith::AtomicRMWKind::addf ||
        update->store.getMemRef() != buffer || !producer.getInitBlock())
      return error("its producer tl.block '" + producer.getName() +
                   "' has reduction variables");
    if (failed(addsToBuffer(consumer, buffer)))
      return error("tl.block '" + consumer.getName() +
                   "' must add one value to its producer's sums (z = y + x)");
    // Each element of z from one element of y (several would accumulate
    // into one sum, where the last one's value was the result).
    if (!cast<AffineMapAttr>(consumer.getWriteMaps()[0])
             .getValue()
             .isPermutation())
      return error("tl.block '" + consumer.getName() +
                   "' must write each element once, at its own variables "
                   "(a permutation of them)");
  } else if (producer.getInitBlock()) {
    return error("its producer tl.block '" + producer.getName() +
                 "' has reduction variables");
  }
  if (llvm::count(producer.getWrites(), buffer) != 1 ||
      (!reduction && llvm::is_contained(producer.getReads(), buffer)))
    return error("its producer tl.block '" + producer.getName() +
                 "' must write the buffer once and not read it");
  // After the move the producer computes the consumer's elements as it goes:
  // it must not itself touch the consumer's output or write what the
  // consumer reads.
  for (Value r : consumer.getReads())
    if (r != buffer && llvm::is_contained(producer.getWrites(), r))
      return error("its producer tl.block '" + producer.getName() +
                   "' writes another buffer it reads");
  if (llvm::is_contained(producer.getReads(), out) ||
      llvm::is_contained(producer.getWrites(), out))
    return error("its producer tl.block '" + producer.getName() +
                 "' accesses its output");
  // (A reduction's: the store of its init, the value its sums start from.)
  Block *pBody = reduction ? producer.getInitBlock() : producer.getBodyBlock();
  SmallVector<affine::AffineStoreOp> stores;
  pBody->walk([&](affine::AffineStoreOp s) {
    if (s.getMemRef() == buffer)
      stores.push_back(s);
  });
  if (stores.size() != 1 || stores.front()->getBlock() != pBody)
    return error("its producer tl.block '" + producer.getName() +
                 "' must store the buffer once, in its body");
  affine::AffineStoreOp store = stores.front();
  // --- No one else uses the buffer; nothing in between interferes.
  for (Operation *user : buffer.getUsers())
    if (!producer->isAncestor(user) && !consumer->isAncestor(user) &&
        !isa<memref::DeallocOp>(user))
      return error("the buffer it reads is used by " +
                   user->getName().getStringRef() + " as well");
  Operation *pRoot = rootOf(producer), *cRoot = rootOf(consumer);
  unsigned blocksInNest = 0;
  cRoot->walk([&](BlockOp) { ++blocksInNest; });
  if (blocksInNest != 1)
    return error("tl.block '" + consumer.getName() +
                 "' must be the only block of its loop nest");
  if (pRoot->getBlock() != cRoot->getBlock() || !pRoot->isBeforeInBlock(cRoot))
    return error("its producer's loop nest must precede its own, in one block");
  SmallVector<Value> otherReads;
  for (auto [i, b] : llvm::enumerate(consumer.getReads()))
    if (i != *readIndex)
      otherReads.push_back(b);
  for (Operation *op = pRoot->getNextNode(); op != cRoot;
       op = op->getNextNode()) {
    if (op->getNumRegions() == 0 && isMemoryEffectFree(op))
      continue;
    if (isa<memref::AllocOp, memref::DeallocOp, memref::ViewOp>(op))
      continue;
    bool interferes = !isa<ForOp, BlockOp>(op);
    op->walk([&](BlockOp b) {
      for (Value w : b.getWrites())
        interferes |= llvm::is_contained(otherReads, w) || w == out;
      interferes |= llvm::is_contained(b.getReads(), out);
    });
    if (interferes)
      return error("an op between the producer's loop nest and its own "
                   "accesses what it reads or writes");
  }
  // Into a reduction the consumer's output is written from the sums' first
  // step on: no other block of the producer's nest may touch it, or write
  // what the consumer reads.
  if (reduction) {
    bool interferes = false;
    pRoot->walk([&](BlockOp b) {
      if (b == producer)
        return;
      for (Value w : b.getWrites())
        interferes |= llvm::is_contained(otherReads, w) || w == out;
      interferes |= llvm::is_contained(b.getReads(), out);
    });
    if (interferes)
      return error("another block of its producer's loop nest accesses what "
                   "it reads or writes");
  }
  // The consumer's nest runs over the whole buffer: per dimension a loop
  // from 0 to its size, step 1, bound to the variable of that dimension (a
  // dimension of one: the constant 0).
  auto bufferType = cast<MemRefType>(buffer.getType());
  SmallVector<ForOp> cLoops = getLoops(consumer);
  unsigned loopsSeen = 0;
  for (unsigned d = 0; d < n; ++d) {
    Value iv = consumer.getIterValues()[d];
    if (bufferType.getDimSize(d) == 1 && getConstantIntValue(iv) == 0)
      continue;
    auto it = llvm::find_if(cLoops,
                            [&](ForOp l) { return l.getInductionVar() == iv; });
    bool whole = it != cLoops.end() &&
                 getConstantIntValue(it->getLowerBound()) == 0 &&
                 getConstantIntValue(it->getStep()) == 1;
    if (whole) {
      Value ub = it->getUpperBound();
      if (!bufferType.isDynamicDim(d)) {
        whole = getConstantIntValue(ub) == bufferType.getDimSize(d);
      } else {
        auto alloc = buffer.getDefiningOp<memref::AllocOp>();
        whole = alloc &&
                alloc.getDynamicSizes()[bufferType.getDynamicDimIndex(d)] == ub;
      }
    }
    if (!whole)
      return error("its loops do not run over the whole buffer it reads");
    ++loopsSeen;
  }
  if (loopsSeen != cLoops.size())
    return error("its loop nest has loops of no dimension of the buffer");
  // Its body: loads and stores over its variables, no regions.
  for (Operation &op : cBody->without_terminator()) {
    if (op.getNumRegions() != 0)
      return error("its body has an op with regions");
    if (auto load = dyn_cast<affine::AffineLoadOp>(op);
        load && failed(accessOverIters(load.getAffineMap(),
                                       load.getMapOperands(), cBody)))
      return error("an access of its body is not over its variables");
    if (auto st = dyn_cast<affine::AffineStoreOp>(op);
        st && (st.getMemRef() != out ||
               failed(accessOverIters(st.getAffineMap(), st.getMapOperands(),
                                      cBody))))
      return error("a store of its body is not to its write");
  }
  // Everything the consumer uses from outside must exist at the producer;
  // an allocation made between the two nests moves up, if its sizes are
  // known there.
  DominanceInfo dom(scope);
  SmallVector<Value> outside(otherReads);
  outside.push_back(out);
  cBody->walk([&](Operation *op) {
    for (Value v : op->getOperands())
      if (!consumer->isAncestor(v.getParentBlock()->getParentOp()))
        outside.push_back(v);
  });
  SmallVector<Operation *> toMove;
  for (Value v : outside) {
    if (dom.properlyDominates(v, producer))
      continue;
    auto alloc = v.getDefiningOp<memref::AllocOp>();
    if (alloc && alloc->getBlock() == pRoot->getBlock() &&
        llvm::all_of(alloc->getOperands(), [&](Value s) {
          return dom.properlyDominates(s, pRoot);
        })) {
      if (!llvm::is_contained(toMove, alloc.getOperation()))
        toMove.push_back(alloc);
      continue;
    }
    return error("a value it uses is not defined before its producer");
  }
  for (Operation *alloc : toMove)
    rw.moveOpBefore(alloc, pRoot);

  // --- Rewrite: the consumer's variables are the producer's write indices.
  AffineMap e =
      cast<AffineMapAttr>(
          producer.getWriteMaps()[llvm::find(producer.getWrites(), buffer) -
                                  producer.getWrites().begin()])
          .getValue();
  SmallVector<Value> pArgs(pBody->getArguments());
  rw.setInsertionPoint(store);
  IRMapping map;
  for (Operation &op : cBody->without_terminator()) {
    if (auto load = dyn_cast<affine::AffineLoadOp>(op)) {
      if (load.getMemRef() == buffer) {
        map.map(load.getResult(), store.getValueToStore());
        continue;
      }
      auto access =
          accessOverIters(load.getAffineMap(), load.getMapOperands(), cBody);
      auto moved = affine::AffineLoadOp::create(
          rw, load.getLoc(), load.getMemRef(),
          overArgsAsSymbols(access->compose(e)), pArgs);
      map.map(load.getResult(), moved.getResult());
      continue;
    }
    if (auto st = dyn_cast<affine::AffineStoreOp>(op)) {
      auto access =
          accessOverIters(st.getAffineMap(), st.getMapOperands(), cBody);
      affine::AffineStoreOp::create(
          rw, st.getLoc(), map.lookupOrDefault(st.getValueToStore()), out,
          overArgsAsSymbols(access->compose(e)), pArgs);
      continue;
    }
    rw.clone(op, map);
  }
  rw.eraseOp(store);
  // A reduction's init whose value was 0 stores x itself (0 + x is x but
  // for the sign of a zero).
  if (reduction)
    pBody->walk([&](affine::AffineStoreOp st) {
      auto add = st.getValueToStore().getDefiningOp<arith::AddFOp>();
      if (!add)
        return;
      for (auto [zero, x] : {std::pair(add.getLhs(), add.getRhs()),
                             std::pair(add.getRhs(), add.getLhs())}) {
        auto c = zero.getDefiningOp<arith::ConstantOp>();
        auto f = c ? dyn_cast<FloatAttr>(c.getValue()) : FloatAttr();
        if (f && f.getValue().isZero()) {
          rw.modifyOpInPlace(st, [&] { st.getValueMutable().assign(x); });
          if (add->use_empty())
            rw.eraseOp(add);
          return;
        }
      }
    });
  // A reduction's sums accumulate in the consumer's output, over the same
  // variables as its write.
  AffineMap outMap =
      cast<AffineMapAttr>(consumer.getWriteMaps()[0]).getValue().compose(e);
  if (reduction)
    for (Operation *acc :
         {update->load.getOperation(), update->store.getOperation()}) {
      rw.setInsertionPoint(acc);
      SmallVector<Value> args(producer.getBodyBlock()->getArguments());
      if (auto l = dyn_cast<affine::AffineLoadOp>(acc))
        rw.replaceOpWithNewOp<affine::AffineLoadOp>(
            l, out, overArgsAsSymbols(outMap), args);
      else
        rw.replaceOpWithNewOp<affine::AffineStoreOp>(
            acc, cast<affine::AffineStoreOp>(acc).getValueToStore(), out,
            overArgsAsSymbols(outMap), args);
    }
  // The regions: the consumer's other reads and its write, over the
  // producer's variables, in place of the buffer.
  SmallVector<Attribute> readMaps(producer.getReadMaps().getValue());
  SmallVector<Value> reads(producer.getReads());
  for (auto [i, b] : llvm::enumerate(reads))
    if (b == buffer) { // (a reduction's own sums)
      b = out;
      readMaps[i] = AffineMapAttr::get(outMap);
    }
  for (auto [i, b] : llvm::enumerate(consumer.getReads())) {
    if (i == *readIndex)
      continue;
    reads.push_back(b);
    readMaps.push_back(AffineMapAttr::get(
        cast<AffineMapAttr>(consumer.getReadMaps()[i]).getValue().compose(e)));
  }
  SmallVector<Attribute> writeMaps(producer.getWriteMaps().getValue());
  SmallVector<Value> writes(producer.getWrites());
  unsigned w = llvm::find(writes, buffer) - writes.begin();
  writes[w] = out;
  writeMaps[w] = AffineMapAttr::get(outMap);
  setRegions(rw, producer, reads, readMaps, writes, writeMaps);
  rw.eraseOp(cRoot);
  // The buffer is dead: so are its allocation and its free.
  for (Operation *user : llvm::make_early_inc_range(buffer.getUsers()))
    if (isa<memref::DeallocOp>(user))
      rw.eraseOp(user);
  if (Operation *def = buffer.getDefiningOp();
      def && isa<memref::AllocOp>(def) && def->use_empty())
    rw.eraseOp(def);
  return success();
}

SmallVector<BlockOp> llmc::tl::spatialBlocksAloneInNests(func::FuncOp func) {
  SmallVector<BlockOp> found;
  if (func.isExternal() || !func.getBody().hasOneBlock())
    return found;
  for (Operation &top : func.getBody().front()) {
    SmallVector<BlockOp> blocks;
    top.walk([&](BlockOp b) { blocks.push_back(b); });
    if (blocks.size() == 1 && !blocks.front().hasReduction())
      found.push_back(blocks.front());
  }
  return found;
}

//===----------------------------------------------------------------------===//
// compute_inline
//===----------------------------------------------------------------------===//

/// The allocation or argument `v` is a view of.
static Value viewBase(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

LogicalResult llmc::tl::computeInline(RewriterBase &rw, BlockOp producer,
                                      bool quiet) {
  auto error = [&](const Twine &msg) -> LogicalResult {
    if (!quiet)
      producer.emitError("compute_inline: ") << msg;
    return failure();
  };
  std::string name = ("tl.block '" + producer.getName() + "'").str();
  // --- The producer: spatial, one store of one buffer of its own.
  if (producer.hasReduction() || producer.getInitBlock())
    return error(name + " has reduction variables");
  if (producer.getWrites().size() != 1)
    return error(name + " has " + Twine(producer.getWrites().size()) +
                 " write regions, not one");
  Value buffer = producer.getWrites()[0];
  if (!buffer.getDefiningOp<memref::AllocOp>())
    return error("the buffer " + name +
                 " writes is not an allocation of the function's own");
  if (llvm::is_contained(producer.getReads(), buffer))
    return error(name + " reads the buffer it writes");
  unsigned np = producer.getNumIters();
  AffineMap write =
      cast<AffineMapAttr>(producer.getWriteMaps()[0]).getValue();
  // Which variable each dimension is, each variable once: a consumer's
  // index then names the producer's instance that computes it.
  SmallVector<int> dimOfVar(np, -1);
  bool oneToOne = write.getNumResults() == np;
  for (auto [d, e] : llvm::enumerate(write.getResults())) {
    auto dim = dyn_cast<AffineDimExpr>(e);
    if (!oneToOne || !dim || dimOfVar[dim.getPosition()] >= 0) {
      oneToOne = false;
      break;
    }
    dimOfVar[dim.getPosition()] = d;
  }
  if (!oneToOne)
    return error("the write region of " + name +
                 " is not one variable per dimension, each variable once");
  Block *pBody = producer.getBodyBlock();
  affine::AffineStoreOp store;
  for (Operation &op : pBody->without_terminator()) {
    if (op.getNumRegions() != 0)
      return error("the body of " + name + " has an op with regions");
    if (auto st = dyn_cast<affine::AffineStoreOp>(op)) {
      if (store)
        return error(name + " must store the buffer once, in its body");
      store = st;
    } else if (auto load = dyn_cast<affine::AffineLoadOp>(op)) {
      if (failed(accessOverIters(load.getAffineMap(), load.getMapOperands(),
                                 pBody)))
        return error("an access of the body of " + name +
                     " is not over its variables");
    } else if (!isMemoryEffectFree(&op)) {
      return error("the body of " + name + " has an op with memory effects");
    }
  }
  if (!store)
    return error(name + " must store the buffer once, in its body");
  Operation *pRoot = rootOf(producer);
  unsigned blocksInNest = 0;
  pRoot->walk([&](BlockOp) { ++blocksInNest; });
  if (blocksInNest != 1)
    return error(name + " must be the only block of its loop nest");
  // --- Its consumers: blocks after its nest that read the buffer.
  SmallVector<BlockOp> consumers;
  for (Operation *user : buffer.getUsers()) {
    if (producer->isAncestor(user) || isa<memref::DeallocOp>(user))
      continue;
    auto load = dyn_cast<affine::AffineLoadOp>(user);
    auto block = user->getParentOfType<BlockOp>();
    if (auto b = dyn_cast<BlockOp>(user)) {
      if (llvm::is_contained(b.getWrites(), buffer))
        return error("tl.block '" + b.getName() +
                     "' writes the buffer as well");
      if (!llvm::is_contained(consumers, b))
        consumers.push_back(b);
      continue;
    }
    if (!load || !block ||
        failed(accessOverIters(load.getAffineMap(), load.getMapOperands(),
                               block.getBodyBlock())))
      return error("the buffer is used by " + user->getName().getStringRef() +
                   " other than as an affine load over a block's variables");
  }
  if (consumers.empty())
    return error("no block reads the buffer " + name + " writes");
  Operation *last = pRoot;
  for (BlockOp c : consumers) {
    Operation *cRoot = rootOf(c);
    if (cRoot->getBlock() != pRoot->getBlock() || !pRoot->isBeforeInBlock(cRoot))
      return error("tl.block '" + c.getName() +
                   "' is not in a loop nest after the producer's, in one block");
    if (last->isBeforeInBlock(cRoot))
      last = cRoot;
  }
  // --- Nothing in between changes what the producer reads.
  SmallVector<Value> readBases;
  for (Value r : producer.getReads())
    readBases.push_back(viewBase(r));
  for (Operation *op = pRoot->getNextNode(); op != last->getNextNode();
       op = op->getNextNode()) {
    if (op->getNumRegions() == 0 && isMemoryEffectFree(op))
      continue;
    if (isa<memref::AllocOp, memref::AllocaOp, memref::ViewOp>(op))
      continue;
    if (!isa<ForOp, BlockOp>(op))
      return error("an op between it and its last consumer (" +
                   op->getName().getStringRef() + ") may write what it reads");
    bool clobbers = false;
    op->walk([&](BlockOp b) {
      for (Value w : b.getWrites())
        clobbers |= llvm::is_contained(readBases, viewBase(w));
    });
    if (clobbers)
      return error("a block between it and its last consumer writes what it "
                   "reads");
  }
  // Values its body uses from outside must exist at every consumer.
  Operation *scope = producer->getParentOfType<func::FuncOp>().getOperation();
  if (!scope)
    return error(name + " is not in a function");
  DominanceInfo dom(scope);
  bool visible = true;
  pBody->walk([&](Operation *op) {
    for (Value v : op->getOperands())
      if (!producer->isAncestor(v.getParentBlock()->getParentOp()))
        for (BlockOp c : consumers)
          visible &= dom.properlyDominates(v, c);
  });
  if (!visible)
    return error("a value " + name +
                 " uses is not defined before its consumers");

  // --- Rewrite: every load of the buffer computes its element.
  MLIRContext *ctx = producer.getContext();
  for (BlockOp consumer : consumers) {
    Block *cBody = consumer.getBodyBlock();
    unsigned nc = consumer.getNumIters();
    SmallVector<Value> cArgs(cBody->getArguments());
    SmallVector<affine::AffineLoadOp> loads;
    cBody->walk([&](affine::AffineLoadOp l) {
      if (l.getMemRef() == buffer)
        loads.push_back(l);
    });
    // The producer's read regions at the consumer's instances.
    SmallVector<Value> newReads;
    SmallVector<Attribute> newMaps;
    auto addRead = [&](Value b, AffineMap m) {
      for (auto [rb, rm] : llvm::zip(newReads, newMaps))
        if (rb == b && cast<AffineMapAttr>(rm).getValue() == m)
          return;
      newReads.push_back(b);
      newMaps.push_back(AffineMapAttr::get(m));
    };
    for (auto [b, m] : llvm::zip(consumer.getReads(), consumer.getReadMaps()))
      if (b != buffer)
        addRead(b, cast<AffineMapAttr>(m).getValue());
    for (affine::AffineLoadOp load : loads) {
      AffineMap at = *accessOverIters(load.getAffineMap(),
                                      load.getMapOperands(), cBody);
      // sigma: the producer's variables as functions of the consumer's.
      SmallVector<AffineExpr> sigma;
      for (unsigned v = 0; v < np; ++v)
        sigma.push_back(at.getResult(dimOfVar[v]));
      AffineMap sigmaMap = AffineMap::get(nc, 0, sigma, ctx);
      rw.setInsertionPoint(load);
      IRMapping map;
      for (unsigned v = 0; v < np; ++v) {
        BlockArgument arg = pBody->getArgument(v);
        // Loads and the store are rebuilt from sigma; other uses (index
        // arithmetic) need the value.
        if (llvm::all_of(arg.getUses(), [&](OpOperand &u) {
              return isa<affine::AffineLoadOp>(u.getOwner()) ||
                     (u.getOwner() == store.getOperation() &&
                      u.get() != store.getValueToStore());
            }))
          continue;
        if (auto d = dyn_cast<AffineDimExpr>(sigma[v])) {
          map.map(arg, cArgs[d.getPosition()]);
          continue;
        }
        map.map(arg, affine::AffineApplyOp::create(
                         rw, load.getLoc(),
                         AffineMap::get(nc, 0, sigma[v]), cArgs));
      }
      Value element;
      for (Operation &op : pBody->without_terminator()) {
        if (auto l = dyn_cast<affine::AffineLoadOp>(op)) {
          AffineMap there = simplifyAffineMap(
              accessOverIters(l.getAffineMap(), l.getMapOperands(), pBody)
                  ->compose(sigmaMap));
          auto moved = affine::AffineLoadOp::create(
              rw, l.getLoc(), l.getMemRef(), overArgsAsSymbols(there), cArgs);
          map.map(l.getResult(), moved.getResult());
          addRead(l.getMemRef(), there);
          continue;
        }
        if (&op == store.getOperation()) {
          element = map.lookupOrDefault(store.getValueToStore());
          continue;
        }
        rw.clone(op, map);
      }
      rw.replaceOp(load, element);
    }
    // Its writes stay; copied first (an operand range assigned from the
    // op's own operands would read storage the assignment rewrites).
    SmallVector<Value> writes(consumer.getWrites());
    SmallVector<Attribute> writeMaps(consumer.getWriteMaps().getValue());
    setRegions(rw, consumer, newReads, newMaps, writes, writeMaps);
  }
  rw.eraseOp(pRoot);
  for (Operation *user : llvm::make_early_inc_range(buffer.getUsers()))
    if (isa<memref::DeallocOp>(user))
      rw.eraseOp(user);
  if (Operation *def = buffer.getDefiningOp(); def && def->use_empty())
    rw.eraseOp(def);
  return success();
}
