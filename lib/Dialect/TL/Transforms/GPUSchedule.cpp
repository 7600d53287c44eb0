//===- GPUSchedule.cpp - map loop nests onto workgroups and threads -------===//
//
// The GPU targets' default schedule (every GPU back end shares it; the
// target description's limits are its only input): each top-level nest of a
// function becomes one kernel launch. The independent loops at the top of
// the nest (a chain of loops each holding only the next one) are bound to
// the grid: the innermost of them split into workgroups of threads
// (blockIdx.x x threadIdx.x), those around it to blockIdx.y and blockIdx.z.
// Every thread runs the rest of the nest serially, reductions included,
// in the canonical order. A nest with no such loop (a reduction at the top,
// a bare block) runs on one thread: a loop of one iteration is put around
// it and bound.
//
//===----------------------------------------------------------------------===//
#include "Dialect/TL/Transforms/GPUSchedule.h"
#include "Dialect/TL/Analysis/Independence.h"
#include "Dialect/TL/IR/TL.h"
#include "Dialect/TL/Transforms/Schedule.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace llmc;
using namespace llmc::tl;

/// Runs `fn` with diagnostics swallowed: a rule that does not apply is not
/// an error.
template <typename Fn> static auto quietly(MLIRContext *ctx, Fn fn) {
  ScopedDiagnosticHandler quiet(ctx, [](Diagnostic &) { return success(); });
  return fn();
}

/// The loop directly inside `loop` when it is the only op of its body with
/// a region and everything else there is pure (index arithmetic).
static ForOp onlyInnerLoop(ForOp loop) {
  ForOp inner;
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (auto l = dyn_cast<ForOp>(op)) {
      if (inner)
        return {};
      inner = l;
      continue;
    }
    if (op.getNumRegions() || !isPure(&op))
      return {};
  }
  return inner;
}

static bool normalised(ForOp loop) {
  return getConstantIntValue(loop.getLowerBound()) == 0 &&
         getConstantIntValue(loop.getStep()) == 1;
}

/// The threads of a workgroup for a loop of `extent` iterations (when
/// constant): enough subgroups for 64 threads, fewer for a short loop.
static int64_t workgroupThreads(const TargetDescription &target,
                                std::optional<int64_t> extent) {
  int64_t threads = std::max<int64_t>(target.subgroupSize, 64);
  threads = std::min<int64_t>(threads, target.maxWorkgroupSize);
  if (extent && *extent < threads)
    threads = std::max<int64_t>(*extent, 1);
  return threads;
}

/// Binds the grid of one top-level nest rooted at `root` (a loop or a bare
/// block).
static LogicalResult scheduleNest(RewriterBase &rw, Operation *root,
                                  const TargetDescription &target) {
  MLIRContext *ctx = root->getContext();
  // The chain of independent, normalised loops at the top.
  SmallVector<ForOp> chain;
  for (ForOp l = dyn_cast<ForOp>(root); l; l = onlyInnerLoop(l)) {
    if (l.getKind() != LoopKind::serial || !normalised(l) ||
        failed(quietly(ctx, [&] { return verifyIndependent(l, "gpu"); })))
      break;
    chain.push_back(l);
    if (chain.size() == 3)
      break;
  }
  if (chain.empty()) {
    // One thread: a loop of one iteration around the nest.
    Location loc = root->getLoc();
    rw.setInsertionPoint(root);
    Value zero = arith::ConstantIndexOp::create(rw, loc, 0);
    Value one = arith::ConstantIndexOp::create(rw, loc, 1);
    auto unit = ForOp::create(rw, loc, zero, one, one, LoopKind::serial);
    rw.moveOpBefore(root, unit.getBody()->getTerminator());
    chain.push_back(unit);
  }
  // The innermost bound loop: workgroups x threads.
  ForOp inner = chain.back();
  std::optional<int64_t> extent = getConstantIntValue(inner.getUpperBound());
  int64_t threads = workgroupThreads(target, extent);
  ForOp blocks, lanes;
  if (extent && *extent == threads) {
    lanes = inner;
  } else {
    FailureOr<SmallVector<ForOp>> split = tl::split(rw, inner, {-1, threads});
    if (failed(split))
      return failure();
    blocks = (*split)[0];
    lanes = (*split)[1];
  }
  static const char *outerAxes[] = {"blockIdx.z", "blockIdx.y"};
  const char *const *axis = outerAxes + (3 - chain.size());
  for (ForOp l : ArrayRef<ForOp>(chain).drop_back())
    if (failed(bind(l, *axis++)))
      return failure();
  if (blocks && failed(bind(blocks, "blockIdx.x")))
    return failure();
  return bind(lanes, "threadIdx.x");
}

LogicalResult llmc::tl::scheduleForGPU(func::FuncOp fn,
                                       const TargetDescription &target) {
  IRRewriter rw(fn.getContext());
  SmallVector<Operation *> roots;
  for (Operation &op : fn.getBody().getOps())
    if (isa<ForOp, BlockOp>(op))
      roots.push_back(&op);
  for (Operation *root : roots)
    if (failed(scheduleNest(rw, root, target)))
      return failure();
  return success();
}
