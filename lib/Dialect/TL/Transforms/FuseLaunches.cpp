//===- FuseLaunches.cpp - independent launches as one grid ----------------===//
//
// Launch fusion (horizontal fusion): consecutive top-level nests that a GPU
// schedule mapped onto grids of workgroups, none touching what another
// writes, become one nest whose grid is the sum of theirs; each workgroup
// runs the part of the nest its index falls in. A decode step's products of
// one input (Q, K and V; gate and up) then cost one launch instead of one
// each.
//
// The fused nest, for launches of G0, G1, ... workgroups at offsets
// o0 = 0, o1 = G0, ...:
//
//   tl.for %w = 0 to G0 + G1 + ... kind(thread_bound) thread("blockIdx.x") {
//     <each part's stack buffers>
//     tl.for %g = max(%w, o_i) to min(%w + 1, o_i + G_i) {   // 0 or 1 time
//       <part i's workgroup body, its grid index %w - o_i>
//     }
//     ...
//   }
//
// Each part's body keeps its form (the workgroup's steps, loops bound to
// threadIdx.x); the guard is a serial loop whose bounds depend on the
// workgroup only, the form convert-tl-to-gpu takes for a serial loop of
// steps (a barrier inside stays in uniform control flow).
//
//===----------------------------------------------------------------------===//
#include "Dialect/TL/Analysis/Independence.h"
#include "Dialect/TL/IR/TL.h"
#include "Dialect/TL/Transforms/Schedule.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <numeric>

using namespace mlir;
using namespace llmc::tl;

namespace {
/// A launch's grid: its chain of loops bound to blockIdx axes (outermost
/// first) and the one of them with more than one iteration (null: one
/// workgroup).
struct Grid {
  SmallVector<ForOp> chain;
  ForOp wide;
  int64_t workgroups = 1;
};
} // namespace

static bool boundToBlocks(ForOp l) {
  return l.getKind() == LoopKind::thread_bound &&
         l.getThread()->starts_with("blockIdx");
}

/// The loop that continues the grid's chain in `l`'s body: the only op
/// there with a region, bound to a blockIdx axis, beside pure ops.
static ForOp nextGridLoop(ForOp l) {
  ForOp next;
  for (Operation &op : l.getBody()->without_terminator()) {
    if (op.getNumRegions() == 0 && isPure(&op))
      continue;
    auto inner = dyn_cast<ForOp>(op);
    if (!inner || next || !boundToBlocks(inner))
      return {};
    next = inner;
  }
  return next;
}

static FailureOr<Grid> gridOf(ForOp nest,
                              function_ref<void(const Twine &)> why) {
  Grid g;
  for (ForOp l = nest; l && boundToBlocks(l); l = nextGridLoop(l)) {
    std::optional<int64_t> n = threadAxisExtent(l);
    if (!n || !getConstantIntValue(l.getUpperBound())) {
      why("its grid's extent on " + *l.getThread() + " is not a constant");
      return failure();
    }
    if (*n > 1) {
      if (g.wide) {
        why("its grid has more than one workgroup on two axes");
        return failure();
      }
      g.wide = l;
    }
    g.workgroups *= std::max<int64_t>(*n, 0);
    g.chain.push_back(l);
  }
  // No grid: one workgroup, the nest its one step.
  if (g.chain.empty() && !(nest.getKind() == LoopKind::thread_bound &&
                           *nest.getThread() == "threadIdx.x")) {
    why("its top loop is bound to neither a blockIdx axis nor threadIdx.x");
    return failure();
  }
  return g;
}

FailureOr<LaunchShape>
llmc::tl::launchShape(ForOp nest, function_ref<void(const Twine &)> why) {
  FailureOr<Grid> grid = gridOf(nest, why);
  if (failed(grid))
    return failure();
  LaunchShape shape;
  shape.workgroups = grid->workgroups;
  // The workgroup's body: its steps (loops bound to threadIdx.x, serial
  // loops of them), stack buffers (workgroup memory) and index arithmetic.
  SmallVector<Operation *> body;
  if (grid->chain.empty())
    body.push_back(nest);
  else
    for (Operation &op : grid->chain.back().getBody()->without_terminator())
      body.push_back(&op);
  for (Operation *opp : body) {
    Operation &op = *opp;
    if (auto a = dyn_cast<memref::AllocaOp>(op)) {
      MemRefType t = a.getType();
      if (!t.hasStaticShape() || !t.getElementType().isIntOrFloat()) {
        why("a stack buffer of its workgroup has no static shape");
        return failure();
      }
      shape.sharedBytes += t.getNumElements() * t.getElementTypeBitWidth() / 8;
      continue;
    }
    auto l = dyn_cast<ForOp>(op);
    if (!l) {
      if (op.getNumRegions() || !isPure(&op)) {
        why("its workgroup's body holds " + op.getName().getStringRef() +
            ", not only steps, stack buffers and index arithmetic");
        return failure();
      }
      continue;
    }
    bool steps = l.getKind() == LoopKind::thread_bound;
    if (l.getKind() == LoopKind::serial)
      l.getBody()->walk([&](ForOp inner) {
        steps |= inner.getKind() == LoopKind::thread_bound;
      });
    if (!steps) {
      why("a loop of its workgroup's body is not a step (bound to "
          "threadIdx.x, or serial around such steps)");
      return failure();
    }
  }
  auto check = [&](ForOp l) {
    if (l.getKind() == LoopKind::mma) {
      why("it runs a matrix band");
      return WalkResult::interrupt();
    }
    if (l.getKind() != LoopKind::thread_bound)
      return WalkResult::advance();
    std::optional<int64_t> n = threadAxisExtent(l);
    if (*l.getThread() != "threadIdx.x" || !n) {
      why("a loop inside its grid is bound to " + *l.getThread() +
          (n ? "" : " without a constant extent") +
          " (a fused launch's steps are bound to threadIdx.x)");
      return WalkResult::interrupt();
    }
    shape.threads = std::max(shape.threads, *n);
    return WalkResult::advance();
  };
  for (Operation *op : body)
    if (op->walk(check).wasInterrupted())
      return failure();
  // Memory is touched inside blocks only, whose regions say where (what
  // launchesIndependent compares).
  auto outside = [&](Operation *op) {
    if (isa<BlockOp>(op))
      return WalkResult::skip();
    if (op->getNumRegions() || isPure(op) ||
        isa<ForOp, YieldOp, memref::AllocaOp>(op))
      return WalkResult::advance();
    why(op->getName().getStringRef() +
        " touches memory outside a block (no region says where)");
    return WalkResult::interrupt();
  };
  for (Operation *op : body)
    if (op->walk<WalkOrder::PreOrder>(outside).wasInterrupted())
      return failure();
  // Its workgroups independent as the analysis shows (a fused launch is
  // checked so): not by its blocks' declaration alone.
  if (grid->wide) {
    LogicalResult shown = success();
    {
      ScopedDiagnosticHandler quiet(nest.getContext(),
                                    [](Diagnostic &) { return success(); });
      shown = verifyIndependent(grid->wide, "fuse_launches");
    }
    if (failed(shown)) {
      why("the analysis cannot show its workgroups independent (they rest "
          "on its blocks' declaration)");
      return failure();
    }
  }
  return shape;
}

namespace {
/// One access of a nest's block to a buffer from outside the nest.
struct Access {
  Value buffer;
  AffineMap map;
  bool write;
};
} // namespace

static SmallVector<Access> accessesOf(ForOp nest) {
  SmallVector<Access> list;
  nest.walk([&](BlockOp block) {
    auto record = [&](OperandRange buffers, ArrayAttr maps, bool write) {
      for (auto [buffer, map] : llvm::zip(buffers, maps)) {
        Operation *def = viewedBuffer(buffer).getDefiningOp();
        if (def && nest->isAncestor(def))
          continue;
        list.push_back({buffer, cast<AffineMapAttr>(map).getValue(), write});
      }
    };
    record(block.getWrites(), block.getWriteMaps(), true);
    record(block.getReads(), block.getReadMaps(), false);
  });
  return list;
}

/// Whether distinct indices of `type` are distinct elements: an identity
/// layout, or strides each past the span of the dimensions inside it.
static bool injective(MemRefType type) {
  if (type.getLayout().isIdentity())
    return true;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (!type.hasStaticShape() ||
      failed(type.getStridesAndOffset(strides, offset)))
    return false;
  SmallVector<unsigned> order(strides.size());
  std::iota(order.begin(), order.end(), 0);
  llvm::sort(order,
             [&](unsigned x, unsigned y) { return strides[x] < strides[y]; });
  int64_t span = 0; // the last element the dimensions so far reach
  for (unsigned d : order) {
    if (ShapedType::isDynamic(strides[d]) || strides[d] <= span)
      return false;
    span += (type.getDimSize(d) - 1) * strides[d];
  }
  return true;
}

/// Whether accesses `a` and `b` of one buffer touch disjoint elements as
/// their regions show: the same view (whose indices are its elements'),
/// some dimension indexed by different constants (a layer's keys and
/// values in its KV cache).
static bool disjoint(const Access &a, const Access &b) {
  if (a.buffer != b.buffer || a.map.getNumResults() != b.map.getNumResults() ||
      !injective(cast<MemRefType>(a.buffer.getType())))
    return false;
  for (auto [x, y] : llvm::zip(a.map.getResults(), b.map.getResults())) {
    auto cx = dyn_cast<AffineConstantExpr>(x);
    auto cy = dyn_cast<AffineConstantExpr>(y);
    if (cx && cy && cx.getValue() != cy.getValue())
      return true;
  }
  return false;
}

bool llmc::tl::launchesIndependent(ForOp a, ForOp b) {
  SmallVector<Access> as = accessesOf(a), bs = accessesOf(b);
  for (const Access &x : as)
    for (const Access &y : bs)
      if ((x.write || y.write) &&
          viewedBuffer(x.buffer) == viewedBuffer(y.buffer) && !disjoint(x, y))
        return false;
  return true;
}

/// The constant `v` is `op(w, constant)` with, or nullopt.
template <typename Op>
static std::optional<int64_t> withConstant(Value v, Value w) {
  auto op = v.getDefiningOp<Op>();
  if (!op || op.getLhs() != w)
    return std::nullopt;
  return getConstantIntValue(op.getRhs());
}

std::optional<SmallVector<LaunchPart>> llmc::tl::fusedLaunchParts(ForOp loop) {
  if (loop.getKind() != LoopKind::thread_bound ||
      *loop.getThread() != "blockIdx.x")
    return std::nullopt;
  std::optional<int64_t> total = threadAxisExtent(loop);
  if (!total || !getConstantIntValue(loop.getUpperBound()))
    return std::nullopt;
  Value w = loop.getInductionVar();
  SmallVector<LaunchPart> parts;
  for (Operation &op : loop.getBody()->without_terminator()) {
    auto guard = dyn_cast<ForOp>(op);
    if (!guard) {
      if (op.getNumRegions() || !(isa<memref::AllocaOp>(op) || isPure(&op)))
        return std::nullopt;
      continue;
    }
    // From max(w, offset) (or w) to min(w + 1, end) (or w + 1).
    if (guard.getKind() != LoopKind::serial ||
        getConstantIntValue(guard.getStep()) != 1)
      return std::nullopt;
    Value lo = guard.getLowerBound(), hi = guard.getUpperBound();
    std::optional<int64_t> offset = lo == w
                                        ? std::optional<int64_t>(0)
                                        : withConstant<arith::MaxUIOp>(lo, w);
    std::optional<int64_t> end = *total;
    if (auto min = hi.getDefiningOp<arith::MinUIOp>()) {
      end = getConstantIntValue(min.getRhs());
      hi = min.getLhs();
    }
    if (!offset || !end || withConstant<arith::AddIOp>(hi, w) != 1 ||
        *end <= *offset)
      return std::nullopt;
    parts.push_back({guard, *offset, *end - *offset});
  }
  if (parts.size() < 2)
    return std::nullopt;
  return parts;
}

LogicalResult llmc::tl::verifyFusedLaunch(ForOp loop, StringRef what) {
  std::optional<SmallVector<LaunchPart>> parts = fusedLaunchParts(loop);
  if (!parts)
    return loop.emitError(what) << ": not a fused launch";
  for (auto [i, p] : llvm::enumerate(*parts)) {
    for (LaunchPart q : ArrayRef(*parts).take_front(i))
      if (!launchesIndependent(q.guard, p.guard)) {
        InFlightDiagnostic d =
            p.guard.emitError(what)
            << ": a part of a fused launch accesses a buffer that another "
               "part writes (their workgroups run in any order)";
        d.attachNote(q.guard.getLoc()) << "the other part";
        return d;
      }
    // Its workgroups, each at one value of the fused index.
    if (p.workgroups > 1 && failed(verifyIndependent(loop, what, p.guard)))
      return failure();
  }
  return success();
}

/// Rewrites `part` (a copy of a launch, in the fused loop's body) into the
/// fused loop `fused` of `total` workgroups: its stack buffers before a
/// guard that runs once where the fused index is in [offset, offset + n),
/// its workgroup's body inside the guard with its grid's variables bound
/// to that index less offset (the wide axis) and 0.
static void rewritePart(RewriterBase &rw, ForOp fused, ForOp part,
                        int64_t offset, int64_t total) {
  Location loc = part.getLoc();
  Grid grid = *gridOf(part, [](const Twine &) {});
  int64_t n = grid.workgroups;
  rw.setInsertionPoint(part);
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(rw, loc, v);
  };
  Value w = fused.getInductionVar(), one = index(1);
  Value lo = offset ? arith::MaxUIOp::create(rw, loc, w, index(offset)) : w;
  Value next = arith::AddIOp::create(rw, loc, w, one);
  Value hi = offset + n < total
                 ? arith::MinUIOp::create(rw, loc, next, index(offset + n))
                 : next;
  auto guard = ForOp::create(rw, loc, lo, hi, one, LoopKind::serial);
  Operation *end = guard.getBody()->getTerminator();
  rw.setInsertionPoint(end);
  if (grid.chain.empty()) {
    rw.moveOpBefore(part, end);
    return;
  }
  Value at = offset ? arith::SubIOp::create(rw, loc, w, index(offset)) : w;
  Value zero = index(0);
  for (ForOp l : grid.chain)
    rw.replaceAllUsesWith(l.getInductionVar(), l == grid.wide ? at : zero);
  for (ForOp l : grid.chain)
    for (Operation &op :
         llvm::make_early_inc_range(l.getBody()->without_terminator())) {
      if (llvm::is_contained(grid.chain, dyn_cast<ForOp>(op)))
        continue;
      if (isa<memref::AllocaOp>(op))
        rw.moveOpBefore(&op, guard);
      else
        rw.moveOpBefore(&op, end);
    }
  rw.eraseOp(part);
}

bool llmc::tl::movesAcrossLaunches(Operation *op) {
  bool alloc = isa<memref::AllocOp>(op) && op->getNumOperands() == 0;
  return !op->getNumRegions() && (alloc || isPure(op));
}

FailureOr<ForOp> llmc::tl::fuseLaunches(RewriterBase &rw,
                                        ArrayRef<ForOp> nests) {
  if (nests.empty())
    return failure();
  ForOp first = nests.front();
  if (nests.size() == 1)
    return first.emitError("fuse_launches: needs two launches or more");
  for (size_t i = 1; i < nests.size(); ++i)
    if (ForOp l = nests[i]; llvm::is_contained(nests.take_front(i), l))
      return l.emitError("fuse_launches: names this launch twice (two "
                         "blocks of one nest?)");
  for (size_t i = 1; i < nests.size(); ++i)
    if (ForOp l = nests[i];
        l->getBlock() != first->getBlock() || !nests[i - 1]->isBeforeInBlock(l))
      return l.emitError("fuse_launches: the launches must be top-level "
                         "nests of one block, in order");
  // Between them: index arithmetic, views and buffer allocations, which
  // move before the first launch.
  SmallVector<Operation *> between;
  for (Operation *op = first->getNextNode(); op != nests.back();
       op = op->getNextNode()) {
    if (llvm::is_contained(nests, dyn_cast<ForOp>(op)))
      continue;
    if (!movesAcrossLaunches(op))
      return op->emitError("fuse_launches: ")
             << op->getName() << " lies between the launches";
    between.push_back(op);
  }
  int64_t total = 0;
  for (ForOp l : nests) {
    std::string reason;
    FailureOr<LaunchShape> shape =
        launchShape(l, [&](const Twine &why) { reason = why.str(); });
    if (failed(shape))
      return l.emitError("fuse_launches: this launch cannot be fused: ")
             << reason;
    total += shape->workgroups;
  }
  for (size_t j = 0; j < nests.size(); ++j)
    for (ForOp earlier : nests.take_front(j))
      if (ForOp l = nests[j]; !launchesIndependent(earlier, l)) {
        InFlightDiagnostic d =
            l.emitError("fuse_launches: this launch accesses a buffer that "
                        "another of the launches writes (fused, their "
                        "workgroups run in any order)");
        d.attachNote(earlier.getLoc()) << "the other launch";
        return d;
      }

  Location loc = rw.getFusedLoc(
      llvm::map_to_vector(nests, [](ForOp l) { return l.getLoc(); }));
  // The fused nest at the insertion point, of the launches `parts` (the
  // launches themselves or copies), which it takes.
  SmallVector<Operation *> bounds;
  auto build = [&](ArrayRef<ForOp> parts) {
    bounds.clear();
    for (int64_t v : {int64_t(0), total, int64_t(1)})
      bounds.push_back(arith::ConstantIndexOp::create(rw, loc, v));
    auto fused =
        ForOp::create(rw, loc, bounds[0]->getResult(0), bounds[1]->getResult(0),
                      bounds[2]->getResult(0), LoopKind::thread_bound);
    fused.setThreadAttr(rw.getStringAttr("blockIdx.x"));
    int64_t offset = 0;
    for (ForOp part : parts) {
      int64_t n = gridOf(part, [](const Twine &) {})->workgroups;
      rw.moveOpBefore(part, fused.getBody()->getTerminator());
      rewritePart(rw, fused, part, offset, total);
      offset += n;
    }
    return fused;
  };
  // Legality on copies (after the last launch, where every value they use
  // is defined), nothing changed where it fails: each part's workgroups
  // independent over the fused index (each part's buffers its own, as
  // checked above).
  {
    OpBuilder::InsertionGuard guard(rw);
    rw.setInsertionPointAfter(nests.back());
    SmallVector<ForOp> copies;
    for (ForOp l : nests) {
      copies.push_back(cast<ForOp>(rw.clone(*l)));
      rw.setInsertionPointAfter(copies.back());
    }
    rw.setInsertionPointAfter(copies.back());
    ForOp fused = build(copies);
    std::string reason;
    LogicalResult independent = success();
    {
      ScopedDiagnosticHandler quiet(rw.getContext(), [&](Diagnostic &d) {
        if (reason.empty())
          reason = d.str();
        return success();
      });
      independent = verifyFusedLaunch(fused, "fuse_launches");
    }
    rw.eraseOp(fused);
    for (Operation *op : bounds)
      rw.eraseOp(op);
    if (failed(independent))
      return first.emitError("fuse_launches: the fused launch's workgroups "
                             "cannot be shown independent: ")
             << reason;
  }
  // The launches themselves: what lies between them first, then the fused
  // nest where the first was, each launch moved into it (the blocks and
  // loops inside keep their identity).
  for (Operation *op : between)
    rw.moveOpBefore(op, first);
  rw.setInsertionPoint(first);
  return build(nests);
}
