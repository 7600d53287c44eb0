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
// Five rules come first (the first that applies maps the nest):
// - reduceInWorkgroup: a reduction whose outputs are a constant number
//   (decode's matmuls and norms: one token) gets a workgroup per output (up
//   to 8 where each lane would get few iterations): consecutive threads take
//   consecutive iterations of its outermost loop (coalesced loads), each
//   accumulates a partial in workgroup memory (rfactor), and the partials
//   are summed by subgroup operations where the target's subgroups divide
//   the lanes, else in a tree (tree_reduce) whose levels, like every loop
//   bound to a thread axis, run one after another across the workgroup;
//   each thread sums its iterations in a register first;
// - matrixTiles (a target with matrix units): a prompt's matmul of f16
//   operands as bands of kind mma, a subgroup's fragments over 32 tokens
//   and 32 outputs;
// - tileTokensStaged (not on a CPU device): tileTokens with the reduction
//   in chunks, at each chunk the tokens' activations copied into workgroup
//   memory first (stage), every thread reading them there;
// - tileTokens: a prompt's matmul gives each thread 8 tokens of 4 outputs,
//   their sums in registers, so that each weight load serves 8 tokens and
//   each activation load 4 outputs;
// - stepsInWorkgroup: independent loops around a sequence of nests (the
//   attention's heads, and a prompt's tokens) get a workgroup each, the
//   nests its steps.
//
// Before the rules: residual adds go into their products (absorbAdds),
// decode's elementwise maps into the products that read them
// (mapsIntoProducts), a split attention's parts get a launch of their own
// (partsOntoGrid), a reduction to one row and its consumer become one
// workgroup's steps (pairReductionsWithConsumers). After them: runs of
// independent launches of equal width become one (fuseIndependentLaunches,
// launch fusion).
//
// A loop is independent as the analysis shows, or, for a thread axis, by
// its block's declaration of spatial variables (independentByDeclaration).
//
//===----------------------------------------------------------------------===//
#include "Dialect/TL/Transforms/GPUSchedule.h"
#include "Dialect/TL/Analysis/AffineIndex.h"
#include "Dialect/TL/Analysis/Independence.h"
#include "Dialect/TL/Analysis/MatrixBand.h"
#include "Dialect/TL/Analysis/Reduction.h"
#include "Dialect/TL/IR/TL.h"
#include "Dialect/TL/Transforms/Schedule.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/PatternMatch.h"

#include <functional>

using namespace mlir;
using namespace llmc;
using namespace llmc::tl;

/// Runs `fn` with diagnostics swallowed: a rule that does not apply is not
/// an error.
template <typename Fn> static auto quietly(MLIRContext *ctx, Fn fn) {
  ScopedDiagnosticHandler quiet(ctx, [](Diagnostic &) { return success(); });
  return fn();
}

/// Whether `l` is independent as the analysis shows, or by its block's
/// declaration.
static bool independentLoop(ForOp l) {
  return succeeded(quietly(l.getContext(),
                           [&] { return verifyIndependent(l, "gpu"); })) ||
         independentByDeclaration(l);
}

/// The nests (loops and blocks) directly in `body`.
static unsigned countNests(Block *body) {
  return llvm::count_if(body->without_terminator(),
                        [](Operation &o) { return isa<ForOp, BlockOp>(o); });
}

/// Binds `l` to `axis`: independent as the analysis shows, or by its
/// block's declaration (independentByDeclaration).
static LogicalResult bindLoop(ForOp l, StringRef axis) {
  bool declared =
      failed(quietly(l.getContext(),
                     [&] { return verifyIndependent(l, "gpu"); })) &&
      independentByDeclaration(l);
  return bind(l, axis, /*verify=*/!declared);
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

/// The extent of a normalised loop with a constant bound.
static std::optional<int64_t> constantExtent(ForOp l) {
  if (!normalised(l))
    return std::nullopt;
  return getConstantIntValue(l.getUpperBound());
}

/// The threads that share one reduction whose outermost loop runs
/// `extent` times: the largest power of two dividing it, up to a subgroup
/// or 64 threads (within the workgroup limit); 0 below 8.
static int64_t reductionLanes(const TargetDescription &target, int64_t extent) {
  int64_t cap = std::min<int64_t>(std::max<int64_t>(target.subgroupSize, 64),
                                  target.maxWorkgroupSize);
  int64_t lanes = 1;
  while (lanes * 2 <= cap && extent % (lanes * 2) == 0)
    lanes *= 2;
  return lanes >= 8 ? lanes : 0;
}

/// Vulkan's guaranteed workgroups per grid axis (maxComputeWorkGroupCount).
static constexpr int64_t kMaxGridAxis = 65535;

/// How the innermost of `chain`'s constant extents splits past the grid's
/// limit: 0 when it fits, else the inner factor of two exact ones (a
/// grid's extent cannot depend on another axis' id), -1 when none.
static int64_t gridSplitOf(ArrayRef<ForOp> chain) {
  int64_t n = *constantExtent(chain.back());
  if (n <= kMaxGridAxis)
    return 0;
  for (int64_t d = (n + kMaxGridAxis - 1) / kMaxGridAxis; d <= kMaxGridAxis;
       ++d)
    if (n % d == 0 && n / d <= kMaxGridAxis)
      return n / d;
  return -1;
}

/// Whether `chain` (the innermost of constant extent) binds to the grid:
/// each axis within the limit, the innermost split onto a free axis where
/// it is past it. An outer loop of a dynamic extent (a prompt's tokens) is
/// taken to fit, as the default mapping takes it (the sequence length's
/// limit).
static bool gridFits(ArrayRef<ForOp> chain) {
  if (llvm::any_of(chain.take_front(chain.size() - 1), [](ForOp l) {
        std::optional<int64_t> n = constantExtent(l);
        return n && *n > kMaxGridAxis;
      }))
    return false;
  int64_t split = gridSplitOf(chain);
  return split == 0 || (split > 0 && chain.size() < 3);
}

/// Binds `chain` (gridFits) to the grid: the innermost to blockIdx.x (and
/// y, split), the others outward.
static LogicalResult bindGrid(RewriterBase &rw, ArrayRef<ForOp> chain) {
  static const char *axes[] = {"blockIdx.x", "blockIdx.y", "blockIdx.z"};
  unsigned axis = 0;
  ForOp inner = chain.back();
  if (int64_t gridSplit = gridSplitOf(chain)) {
    auto split = tl::split(rw, inner, {-1, gridSplit});
    if (failed(split) || failed(bindLoop((*split)[1], axes[axis++])) ||
        failed(bindLoop((*split)[0], axes[axis++])))
      return failure();
  } else if (failed(bindLoop(inner, axes[axis++]))) {
    return failure();
  }
  for (ForOp l : llvm::reverse(chain.take_front(chain.size() - 1)))
    if (failed(bindLoop(l, axes[axis++])))
      return failure();
  return success();
}

/// A serial loop of one iteration around `op`.
static ForOp wrapInUnitLoop(RewriterBase &rw, Operation *op) {
  Location loc = op->getLoc();
  rw.setInsertionPoint(op);
  Value zero = arith::ConstantIndexOp::create(rw, loc, 0);
  Value one = arith::ConstantIndexOp::create(rw, loc, 1);
  auto unit = ForOp::create(rw, loc, zero, one, one, LoopKind::serial);
  rw.moveOpBefore(op, unit.getBody()->getTerminator());
  return unit;
}

/// A loop of one iteration around `op`, bound to `axis`.
static ForOp unitLoop(RewriterBase &rw, Operation *op, StringRef axis) {
  ForOp unit = wrapInUnitLoop(rw, op);
  (void)bindLoop(unit, axis);
  return unit;
}

/// The one reduction block (one output) of the perfect nest from `first`
/// inward, whose loops all have constant extents (but `first`'s, with
/// `anyRootExtent`) and whose spatial values come from outside `first` (the
/// loops bind only its reduction variables); null otherwise.
static BlockOp reductionNest(ForOp first, SmallVectorImpl<ForOp> &loops,
                             bool anyRootExtent = false) {
  BlockOp block = perfectNest(first, loops);
  if (!block || !block.hasReduction() || block.getWrites().size() != 1)
    return {};
  for (unsigned i = 0, e = block.getNumIters(); i < e; ++i) {
    if (block.getIterKind(i) != IterKind::spatial)
      continue;
    Value v = block.getIterValues()[i];
    Operation *def = v.getDefiningOp();
    Operation *owner =
        def ? def : cast<BlockArgument>(v).getOwner()->getParentOp();
    if (first->isAncestor(owner))
      return {};
  }
  if (llvm::any_of(ArrayRef<ForOp>(loops).drop_front(anyRootExtent ? 1 : 0),
                   [](ForOp l) { return !constantExtent(l); }))
    return {};
  return block;
}

/// The subgroup operation that combines partials as `kind` does, if any.
static std::optional<gpu::AllReduceOperation>
subgroupCombiner(arith::AtomicRMWKind kind) {
  switch (kind) {
  case arith::AtomicRMWKind::addf:
  case arith::AtomicRMWKind::addi:
    return gpu::AllReduceOperation::ADD;
  case arith::AtomicRMWKind::maximumf:
    return gpu::AllReduceOperation::MAXIMUMF;
  case arith::AtomicRMWKind::minimumf:
    return gpu::AllReduceOperation::MINIMUMF;
  case arith::AtomicRMWKind::maxnumf:
    return gpu::AllReduceOperation::MAXNUMF;
  case arith::AtomicRMWKind::minnumf:
    return gpu::AllReduceOperation::MINNUMF;
  default:
    return std::nullopt;
  }
}

/// The ancestor of `op` (or `op`) directly in `home`.
static Operation *topIn(Block *home, Operation *op) {
  while (op->getBlock() != home)
    op = op->getParentOp();
  return op;
}

/// Replaces the levels of `tree` (over segments of one subgroup each) by
/// one step in which every lane's partials become their subgroup's totals:
/// a block "<name>_subgroup" over the partials `parts` ([rows..., lanes]),
/// its lane loop bound to threadIdx.x around serial loops over the rows,
/// combining with gpu.subgroup_reduce. The step spans the whole workgroup
/// (a whole number of subgroups, no lane idle), as the operation, which
/// reads the other lanes' values, requires.
static LogicalResult subgroupStep(RewriterBase &rw, TreeReduceResult &tree,
                                  Value parts, gpu::AllReduceOperation op,
                                  Block *home) {
  MLIRContext *ctx = rw.getContext();
  Location loc = tree.final.getLoc();
  // Each level's outermost loop: the ancestor beside the final's nest.
  SmallVector<Operation *> levels;
  for (BlockOp level : tree.levels) {
    Operation *top = level;
    while (!top->getParentOp()->isProperAncestor(tree.final))
      top = top->getParentOp();
    levels.push_back(top);
  }
  ArrayRef<int64_t> shape = cast<MemRefType>(parts.getType()).getShape();
  unsigned rank = shape.size();
  rw.setInsertionPoint(topIn(home, tree.final));
  Value zero = arith::ConstantIndexOp::create(rw, loc, 0);
  Value one = arith::ConstantIndexOp::create(rw, loc, 1);
  // The lanes' loop outside, the rows' loops inside it.
  SmallVector<ForOp> loops;
  for (unsigned d = 0; d < rank; ++d) {
    int64_t extent = d == 0 ? shape.back() : shape[d - 1];
    Value count = arith::ConstantIndexOp::create(rw, loc, extent);
    loops.push_back(ForOp::create(rw, loc, zero, count, one, LoopKind::serial));
    rw.setInsertionPoint(loops.back().getBody()->getTerminator());
  }
  SmallVector<Value> ivs;
  for (unsigned d = 1; d < rank; ++d)
    ivs.push_back(loops[d].getInductionVar());
  ivs.push_back(loops[0].getInductionVar());
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank, ctx);
  ArrayAttr maps = rw.getArrayAttr({AffineMapAttr::get(id)});
  SmallVector<Attribute> kinds(rank, IterKindAttr::get(ctx, IterKind::spatial));
  auto block = BlockOp::create(
      rw, loc, rw.getStringAttr((tree.final.getName() + "_subgroup").str()),
      ivs, rw.getArrayAttr(kinds), ValueRange{parts}, maps, ValueRange{parts},
      maps);
  SmallVector<Type> types(rank, rw.getIndexType());
  SmallVector<Location> locs(rank, loc);
  Block *body = rw.createBlock(&block.getBody(), {}, types, locs);
  rw.setInsertionPointToStart(body);
  Value mine =
      affine::AffineLoadOp::create(rw, loc, parts, id, body->getArguments());
  // Not marked uniform: SPIR-V's uniform group operations need the Groups
  // capability, which Vulkan lacks; every lane takes part all the same.
  Value total = gpu::SubgroupReduceOp::create(rw, loc, mine, op,
                                              /*uniform=*/false);
  affine::AffineStoreOp::create(rw, loc, total, parts, id,
                                body->getArguments());
  YieldOp::create(rw, loc);
  for (Operation *level : levels)
    rw.eraseOp(level);
  tree.levels.clear();
  return bindLoop(loops[0], "threadIdx.x");
}

/// Whether `l`, a loop around nest `b` of register partials (`rf`, over the
/// lane of one `unit`), iterates the partials: up to 8 iterations, and in
/// the products' nest the lane of one or a loop over spatial variables (a
/// tile's tokens or outputs, a lane's rows).
static bool overPartials(BlockOp b, ForOp l, ForOp unit,
                         const RFactorResult &rf) {
  std::optional<int64_t> e = constantExtent(l);
  return e && *e <= 8 && (b != rf.rf || l == unit || boundKinds(b, l).spatial);
}

/// Sums in registers: reduction `block` factored (rfactor) over a lane of
/// one, `loop` (one of its reduction loops) split by 1, so that each
/// iteration of the loops around `loop` accumulates into partials of its
/// own, allocated before the reduction's outermost loop; then, in each of
/// the three nests rfactor made, the loops below the first that `isTop`
/// accepts and that iterate the partials (overPartials) are unrolled:
/// constant indices, which the back ends keep in registers.
static FailureOr<RFactorResult>
sumInRegisters(RewriterBase &rw, BlockOp block, ForOp loop,
               llvm::function_ref<bool(ForOp)> isTop) {
  MLIRContext *ctx = rw.getContext();
  auto unit = quietly(ctx, [&] { return tl::split(rw, loop, {-1, 1}); });
  if (failed(unit))
    return failure();
  auto rf = quietly(ctx, [&] { return rfactor(rw, block, {(*unit)[1]}); });
  if (failed(rf))
    return failure();
  for (BlockOp b : {rf->init, rf->rf, rf->writeBack})
    for (ForOp l = b->getParentOfType<ForOp>(); l && !isTop(l);
         l = l->getParentOfType<ForOp>())
      if (overPartials(b, l, (*unit)[1], *rf) && failed(unroll(l)))
        return failure();
  return rf;
}

/// Tokens of a prompt one thread's register tile covers.
static constexpr int64_t kTokenTile = 8;

/// Outputs of a prompt one thread's register tile covers (where they
/// divide the outputs): each activation it loads serves all of them.
static constexpr int64_t kOutputTile = 4;

/// Each lane's sum (partial `block` of a workgroup reduction, under its
/// `laneLoop`) accumulated in the thread's own memory over the reduction
/// loops inside the lane's, and added into its partial in workgroup memory
/// once: rfactor over a lane of one (the outermost of those loops split by
/// 1), its partials allocated inside the lane's loop, the loops over them
/// (a lane's rows, the lane of one) unrolled, so that they are registers.
/// Changes nothing where no reduction loop of a constant extent is directly
/// inside the lane's.
static LogicalResult accumulateInRegisters(RewriterBase &rw, BlockOp block,
                                           ForOp laneLoop) {
  ForOp inner = onlyInnerLoop(laneLoop);
  if (!inner || !constantExtent(inner))
    return success(); // (a run-time count: the lane of one would not be)
  // The loop must bind only reduction variables of the block.
  BoundKinds kinds = boundKinds(block, inner);
  if (!kinds.reduction || kinds.spatial)
    return success();
  // (The loops over the partials: a lane's rows, the lane of one.)
  return failure(failed(sumInRegisters(
      rw, block, inner, [&](ForOp l) { return l == laneLoop; })));
}

/// Shares reduction `block` among a workgroup's threads over `laneLoop`
/// (a reduction loop of `lanes` iterations, a power of two, whose nest lies
/// in the workgroup's steps): each lane's partial in workgroup memory
/// (rfactor; the buffer moved to the start of the innermost grid loop's body
/// where the nest sits deeper), summed by subgroup operations where the
/// target's subgroups divide the lanes and the combiner has one, else in a
/// tree; every step on threadIdx.x, the write into the output (after the
/// original init) on one thread.
static LogicalResult shareReduction(RewriterBase &rw, BlockOp block,
                                    ForOp laneLoop, int64_t lanes,
                                    const TargetDescription &target) {
  MLIRContext *ctx = rw.getContext();
  Block *home = laneLoop->getBlock();
  auto rf = quietly(ctx, [&] { return rfactor(rw, block, {laneLoop}); });
  if (failed(rf))
    return failure();
  Value parts = rf->init.getWrites()[0];
  if (failed(accumulateInRegisters(rw, rf->rf, laneLoop)))
    return failure();
  for (auto grid = laneLoop->getParentOfType<ForOp>(); grid;
       grid = grid->getParentOfType<ForOp>())
    if (grid.getKind() == LoopKind::thread_bound) {
      parts.getDefiningOp()->moveBefore(&grid.getBody()->front());
      break;
    }
  // Where the target has subgroups that divide the lanes and an operation
  // for the combiner, each subgroup sums its lanes at once (no barrier) and
  // one thread adds the subgroups' totals; else a tree in workgroup memory.
  FailureOr<ReductionUpdate> update = matchReductionUpdate(rf->writeBack);
  std::optional<gpu::AllReduceOperation> subgroupOp =
      succeeded(update) ? subgroupCombiner(update->kind) : std::nullopt;
  int64_t subgroup = target.subgroupSize;
  bool bySubgroup = subgroupOp && subgroup > 1 && lanes % subgroup == 0;
  auto tree = quietly(ctx, [&] {
    return treeReduce(rw, rf->writeBack, bySubgroup ? subgroup : 0);
  });
  if (failed(tree))
    return failure();
  if (bySubgroup && failed(subgroupStep(rw, *tree, parts, *subgroupOp, home)))
    return failure();
  auto parentLoop = [](BlockOp b) { return b->getParentOfType<ForOp>(); };
  if (failed(bindLoop(parentLoop(rf->init), "threadIdx.x")) ||
      failed(bindLoop(laneLoop, "threadIdx.x")))
    return failure();
  for (BlockOp level : tree->levels)
    if (failed(bindLoop(parentLoop(level), "threadIdx.x")))
      return failure();
  // The write on one thread: with the subgroups' totals, around the loops
  // over the rows; after a tree, a step beside its levels (inside the rows'
  // loop, where several rows share the workgroup: a serial loop of steps).
  Block *steps =
      tree->levels.empty() ? home : parentLoop(tree->levels.back())->getBlock();
  unitLoop(rw, topIn(steps, tree->final), "threadIdx.x");
  return success();
}

/// Whether `buffer` is bound whole (a dynamic shape, or a static one whose
/// span fits the target's range): past it the kernel ABI binds it in
/// windows, which it reads element by element only.
static bool boundWhole(Value buffer, const TargetDescription &target) {
  auto type = cast<MemRefType>(buffer.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (!type.hasStaticShape() || !type.getElementType().isIntOrFloat())
    return true;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      llvm::any_of(strides, ShapedType::isDynamic))
    return false;
  int64_t last = 0;
  for (auto [size, stride] : llvm::zip(type.getShape(), strides))
    last += (size - 1) * stride;
  int64_t bytes = std::max<int64_t>(type.getElementTypeBitWidth() / 8, 1);
  return (last + 1) * bytes <= target.maxBufferRange;
}

/// Elements of reduction loop `k` (the only one of `block`) that a lane
/// reads with one of the target's widest loads (gpuLoadBytes: CUDA's 16
/// bytes): every read that uses `k` reads consecutive elements along it
/// (only its last index uses k, with coefficient 1), the narrowest element
/// setting the count; 1 where that does not hold or the target has no such
/// loads.
static int64_t vectorElements(BlockOp block, ForOp k,
                              const TargetDescription &target) {
  if (!target.gpuLoadBytes)
    return 1;
  AffineIndexBuilder ib(k.getOperation());
  int64_t narrowest = 0;
  for (auto [buffer, m] : llvm::zip(block.getReads(), block.getReadMaps())) {
    if (llvm::is_contained(block.getWrites(), buffer))
      continue;
    auto type = cast<MemRefType>(buffer.getType());
    auto exprs =
        ib.compose(cast<AffineMapAttr>(m).getValue(), block.getIterValues());
    if (!exprs)
      return 1;
    auto at = llvm::find(ib.dims, k.getInductionVar());
    if (at == ib.dims.end())
      continue;
    unsigned dim = at - ib.dims.begin(), n = ib.dims.size();
    // (The builder's dims are every read's so far: k may be one that this
    // read does not use, a residual's init.)
    if (llvm::none_of(*exprs,
                      [&](AffineExpr e) { return e.isFunctionOfDim(dim); }))
      continue;
    for (AffineExpr e : ArrayRef<AffineExpr>(*exprs).drop_back())
      if (e.isFunctionOfDim(dim))
        return 1;
    if (linearCoefficient(exprs->back(), dim, n) != 1 ||
        !type.isLastDimUnitStride() || !type.getElementType().isIntOrFloat() ||
        !boundWhole(buffer, target))
      return 1;
    int64_t bytes = type.getElementTypeBitWidth() / 8;
    if (bytes < 2 || bytes > target.gpuLoadBytes)
      return 1;
    narrowest = narrowest ? std::min(narrowest, bytes) : bytes;
  }
  return narrowest ? target.gpuLoadBytes / narrowest : 1;
}

/// The workgroup reduction rule (see the file comment). Applies to a nest
/// whose independent top loops `chain` (possibly none) have constant
/// extents and whose rest is a perfect nest of reduction loops around one
/// block; returns false, changing nothing, where it does not apply.
static FailureOr<bool> reduceInWorkgroup(RewriterBase &rw, Operation *root,
                                         ArrayRef<ForOp> chain,
                                         const TargetDescription &target) {
  auto top = dyn_cast<ForOp>(root);
  if (!top)
    return false;
  for (ForOp l : chain)
    if (!constantExtent(l))
      return false; // a prompt's rows: enough threads without it
  ForOp first = chain.empty() ? top : onlyInnerLoop(chain.back());
  if (!first)
    return false;
  SmallVector<ForOp> reduction;
  BlockOp block = reductionNest(first, reduction);
  if (!block)
    return false;
  int64_t iterations = 1;
  for (ForOp l : reduction)
    iterations *= *constantExtent(l);
  // The lanes' loop: the outermost reduction loop, or where it is too short
  // for 8 lanes (a Q6_K row's 4 super-blocks) the one inside it that gives
  // the most, the innermost of equals (consecutive lanes then read
  // consecutive elements).
  unsigned laneAt = 0;
  if (!reductionLanes(target, *constantExtent(first)))
    for (unsigned i = 1; i < reduction.size(); ++i)
      if (reductionLanes(target, *constantExtent(reduction[i])) >=
          reductionLanes(target, *constantExtent(reduction[laneAt])))
        laneAt = i;
  int64_t outer = *constantExtent(reduction[laneAt]);
  // Vector loads (a float row read along its one reduction loop): each lane
  // takes `vec` consecutive elements at a time, a vectorized loop inside
  // (its elements summed as a group), the lanes on the loop of vectors.
  int64_t vec =
      reduction.size() == 1 ? vectorElements(block, first, target) : 1;
  if (vec > 1 && (outer % vec || !reductionLanes(target, outer / vec)))
    vec = 1;
  outer /= vec;
  int64_t lanes = reductionLanes(target, outer);
  if (!lanes || iterations < 2 * lanes)
    return false;
  // The partials live in the workgroup's memory: within the target's.
  Type acc = cast<MemRefType>(block.getWrites()[0].getType()).getElementType();
  if (!acc.isIntOrFloat())
    return false;
  int64_t partBytes =
      lanes * std::max<int64_t>(acc.getIntOrFloatBitWidth() / 8, 1);
  if (partBytes > target.sharedMemory)
    return false;
  // The grid: the innermost output loop on blockIdx.x, split onto
  // blockIdx.y past Vulkan's guaranteed grid; the others on y and z.
  if (!chain.empty() && !gridFits(chain))
    return false;
  MLIRContext *ctx = root->getContext();
  // Without output loops, one workgroup (a loop of one iteration around
  // the nest, which keeps the workgroup's buffer inside it).
  // The nest's neighbours in the function (its own ops change below).
  Block *home = root->getBlock();
  Operation *before = root->getPrevNode(), *after = root->getNextNode();
  SmallVector<ForOp> grid(chain);
  if (grid.empty())
    grid.push_back(unitLoop(rw, root, "blockIdx.x"));
  // Rows per workgroup where each lane would get fewer than 4 iterations of
  // the outer loop (a short reduction over many outputs: the output head):
  // each lane then serves several outputs, their partials side by side.
  int64_t rows = 1;
  if (!chain.empty()) {
    int64_t n = *constantExtent(chain.back());
    while (outer / lanes * rows < 4 && rows < 8 && n % (rows * 2) == 0 &&
           2 * rows * partBytes <= target.sharedMemory)
      rows *= 2;
  }
  ForOp vecLoop;
  if (vec > 1) {
    auto split = tl::split(rw, reduction[0], {-1, vec});
    if (failed(split))
      return failure();
    reduction[0] = (*split)[0];
    vecLoop = (*split)[1];
  }
  ForOp rowLoop;
  if (rows > 1) {
    auto split = tl::split(rw, grid.back(), {-1, rows});
    if (failed(split))
      return failure();
    grid.back() = (*split)[0];
    rowLoop = (*split)[1];
  }
  // The lanes: the lanes' loop split, its lane part moved outside the rest
  // of the reduction (and the rows inside all of it).
  SmallVector<ForOp> order;
  if (outer != lanes) {
    auto split = quietly(ctx, [&] {
      return tl::split(rw, reduction[laneAt], {-1, lanes});
    });
    if (failed(split))
      return failure();
    order = {(*split)[1], (*split)[0]};
  } else {
    order = {reduction[laneAt]};
  }
  for (auto [i, l] : llvm::enumerate(reduction))
    if (i != laneAt)
      order.push_back(l);
  if (rowLoop)
    order.push_back(rowLoop);
  if (vecLoop)
    order.push_back(vecLoop);
  auto moved = quietly(ctx, [&] { return reorder(rw, order); });
  if (failed(moved))
    return failure();
  ForOp laneLoop = (*moved)[0];
  if (failed(shareReduction(rw, block, laneLoop, lanes, target)) ||
      failed(bindGrid(rw, grid)))
    return failure();
  // The vectors' loop (innermost around the lanes' products, rfactor kept
  // it) becomes the lanes' vector loads.
  if (vecLoop) {
    // (The nest's ops now lie between its old neighbours.)
    SmallVector<ForOp> vectors;
    for (Operation *op = before ? before->getNextNode() : &home->front();
         op != after; op = op->getNextNode())
      op->walk([&](ForOp l) {
        auto blocks = l.getBody()->getOps<BlockOp>();
        if (constantExtent(l) != vec || l.getKind() != LoopKind::serial ||
            !llvm::hasSingleElement(blocks))
          return;
        BoundKinds kinds = boundKinds(*blocks.begin(), l);
        if (kinds.reduction && !kinds.spatial)
          vectors.push_back(l);
      });
    for (ForOp l : vectors)
      if (failed(vectorize(l)))
        return failure();
  }
  return true;
}

/// A reduction among a workgroup's steps over a count the kernel learns at
/// run time (a softmax's max and sum over a KV tile's positions): its loop
/// split into whole runs of 64 lanes (split_peel), the runs shared by the
/// workgroup (shareReduction), the rest a step on one thread. Returns false,
/// changing nothing, where the loop is not such a reduction.
static FailureOr<bool> reductionStep(RewriterBase &rw, ForOp l,
                                     const TargetDescription &target) {
  SmallVector<ForOp> loops;
  BlockOp block = reductionNest(l, loops, /*anyRootExtent=*/true);
  if (!block || !normalised(l) || failed(matchReductionUpdate(block)))
    return false;
  int64_t lanes = std::min<int64_t>(std::max<int64_t>(target.subgroupSize, 64),
                                    target.maxWorkgroupSize);
  MLIRContext *ctx = rw.getContext();
  auto peel = quietly(ctx, [&] { return splitPeel(rw, l, {lanes}); });
  if (failed(peel))
    return false;
  auto moved = quietly(ctx, [&] {
    return reorder(rw, {peel->loops[1], peel->loops[0]});
  });
  if (failed(moved) ||
      failed(shareReduction(rw, block, (*moved)[0], lanes, target)))
    return failure();
  if (peel->tail)
    unitLoop(rw, peel->tail, "threadIdx.x");
  return true;
}

/// A step's nest `bound` (on threadIdx.x) whose one block reduces over
/// loops inside it (attention's scores over the head's elements, its
/// values over a tile's positions): each thread sums its reduction in a
/// register (sumInRegisters over the outermost reduction loop) and adds it
/// into the output once, instead of a load and a store of the output around
/// every product (a memory round trip on the chain: the back end cannot keep
/// a storage buffer's element in a register, another binding may alias it).
/// Changes nothing where the nest is not such a reduction.
static LogicalResult sumStepInRegisters(RewriterBase &rw, ForOp bound) {
  SmallVector<ForOp> loops;
  BlockOp block = perfectNest(bound, loops);
  if (!block || !block.hasReduction() || block.getWrites().size() != 1 ||
      failed(matchReductionUpdate(block)))
    return success();
  ForOp first;
  for (ForOp l : ArrayRef<ForOp>(loops).drop_front()) {
    BoundKinds kinds = boundKinds(block, l);
    if (kinds.reduction && !kinds.spatial) {
      first = l;
      break;
    }
  }
  // Not where a loop around the step's also moves the reduction (the
  // partials would sit outside the threads' loop), nor over a loop of one
  // iteration (a write-back of partials summed already).
  if (!first || constantExtent(first) == 1)
    return success();
  for (auto l = bound->getParentOfType<ForOp>(); l;
       l = l->getParentOfType<ForOp>())
    if (boundKinds(block, l).reduction)
      return success();
  // (Where rfactor does not apply, the step stays as it was.)
  (void)sumInRegisters(rw, block, first, [&](ForOp l) { return l == bound; });
  return success();
}

/// Maps the sequence of nests in `body` (a workgroup's, or a serial loop's
/// inside it) onto the workgroup's threads, one step each: a nest whose
/// outer loop is independent and fits a workgroup runs its iterations on
/// threadIdx.x; a serial loop holding several nests (a flash attention's
/// KV tiles) keeps running them in order, each a step; anything else (a
/// reduction, a bare block) runs on one thread. With `inTurn`, a loop of
/// fewer iterations than a subgroup around one nest (GQA's query heads of a
/// KV head) runs them in turn, the nest inside on the threads; without it
/// (a staged matmul's steps, whose loops are its threads) on the threads.
static LogicalResult mapSteps(RewriterBase &rw, Block *body,
                              const TargetDescription &target,
                              bool inTurn = true) {
  MLIRContext *ctx = rw.getContext();
  SmallVector<Operation *> ops;
  for (Operation &op : body->without_terminator())
    if (isa<ForOp, BlockOp>(op))
      ops.push_back(&op);
  for (Operation *op : ops) {
    auto l = dyn_cast<ForOp>(op);
    // A serial loop whose steps are mapped already.
    if (l && l.getKind() == LoopKind::serial &&
        l.getBody()
            ->walk([](ForOp inner) {
              return inner.getKind() == LoopKind::thread_bound
                         ? WalkResult::interrupt()
                         : WalkResult::advance();
            })
            .wasInterrupted())
      continue;
    if (l && l.getKind() == LoopKind::serial) {
      std::optional<int64_t> n = threadAxisExtent(l);
      unsigned nests = countNests(l.getBody());
      // (A loop of one iteration around several nests: its steps.)
      if (n && *n <= target.maxWorkgroupSize && (*n > 1 || nests < 2) &&
          independentLoop(l)) {
        // Fewer iterations than a subgroup around one nest (the query heads
        // of a KV head): they run in turn, the nest inside on the threads.
        ForOp inner = onlyInnerLoop(l);
        if (inTurn && getConstantIntValue(l.getUpperBound()) &&
            *n < target.subgroupSize && inner && nests == 1) {
          if (failed(mapSteps(rw, l.getBody(), target)))
            return failure();
          continue;
        }
        if (failed(bindLoop(l, "threadIdx.x")) ||
            failed(sumStepInRegisters(rw, l)))
          return failure();
        continue;
      }
      if (nests > 1) {
        if (failed(mapSteps(rw, l.getBody(), target, inTurn)))
          return failure();
        continue;
      }
      FailureOr<bool> shared = reductionStep(rw, l, target);
      if (failed(shared))
        return failure();
      if (*shared)
        continue;
    }
    unitLoop(rw, op, "threadIdx.x");
  }
  return success();
}

/// The workgroup steps rule: a nest whose independent top loops `chain`
/// (decode's heads; a prompt's tokens and heads, the innermost of a
/// constant extent) hold a sequence of nests rather than one (a flash
/// attention's scores, softmax and values): the chain on the grid, one
/// workgroup each, and the sequence its steps (mapSteps). Returns false,
/// changing nothing, where it does not apply.
static FailureOr<bool> stepsInWorkgroup(RewriterBase &rw, ArrayRef<ForOp> chain,
                                        const TargetDescription &target) {
  if (chain.empty() || onlyInnerLoop(chain.back()) ||
      !constantExtent(chain.back()) || !gridFits(chain))
    return false;
  ForOp inner = chain.back();
  Block *body = inner.getBody();
  unsigned nests = countNests(body);
  if (nests < 2)
    return false;
  if (failed(bindGrid(rw, chain)) || failed(mapSteps(rw, body, target)))
    return failure();
  return true;
}

/// The reduction block of a prompt matmul: `chain` the tokens (a dynamic
/// count) and the outputs (a constant one) around a perfect nest of
/// reduction loops (into `reduction`) and one block updating its output;
/// null otherwise, and for the nest of the tokens a split left ("_tail",
/// fewer than a tile).
static BlockOp promptMatmul(ArrayRef<ForOp> chain,
                            SmallVectorImpl<ForOp> &reduction) {
  if (chain.size() != 2 || constantExtent(chain[0]) ||
      !constantExtent(chain[1]))
    return {};
  ForOp first = onlyInnerLoop(chain[1]);
  BlockOp block = first ? reductionNest(first, reduction) : BlockOp();
  if (!block || failed(matchReductionUpdate(block)) ||
      block.getName().ends_with("_tail"))
    return {};
  return block;
}

/// The prompt matmul rule: a nest whose independent top loops are the
/// tokens (a dynamic count) and the outputs (a constant one) around a
/// reduction gives each thread kTokenTile tokens of kOutputTile outputs
/// (where they divide the outputs), so that each weight element it loads
/// serves all the tokens and each activation all the outputs: the tokens'
/// loop split into whole tiles (split_peel; the rest run in a nest of their
/// own, which the other rules map), the outputs split by kOutputTile, the
/// tiles' loops moved inside the reduction, their sums kept in partials
/// (rfactor over a lane of one), unrolled so that they are registers; the
/// tiles on blockIdx.y, the threads' outputs on workgroups of threads. Returns
/// false, changing nothing, where it does not apply.
static FailureOr<bool> tileTokens(RewriterBase &rw, ArrayRef<ForOp> chain,
                                  const TargetDescription &target) {
  SmallVector<ForOp> reduction;
  BlockOp block = promptMatmul(chain, reduction);
  if (!block)
    return false;
  MLIRContext *ctx = rw.getContext();
  auto peel =
      quietly(ctx, [&] { return splitPeel(rw, chain[0], {kTokenTile}); });
  if (failed(peel))
    return false;
  ForOp tiles = peel->loops[0];
  // kOutputTile outputs a thread where they divide the outputs.
  ForOp outputs = chain[1], rows;
  if (*constantExtent(outputs) % kOutputTile == 0) {
    auto split = tl::split(rw, outputs, {-1, kOutputTile});
    if (failed(split))
      return failure();
    outputs = (*split)[0];
    rows = (*split)[1];
  }
  SmallVector<ForOp> order = {outputs};
  llvm::append_range(order, reduction);
  if (rows)
    order.push_back(rows);
  order.push_back(peel->loops[1]);
  auto moved = quietly(ctx, [&] { return reorder(rw, order); });
  if (failed(moved))
    return failure();
  outputs = (*moved)[0];
  // The tile's sums: partials over a lane of one (the first reduction loop
  // split by 1), the tile's loops (and the lanes of one) unrolled.
  if (failed(sumInRegisters(rw, block, (*moved)[1],
                            [&](ForOp l) { return l == outputs; })))
    return failure();
  // The grid: the whole tiles on blockIdx.y, the outputs split into
  // workgroups of threads.
  int64_t n = *constantExtent(outputs);
  int64_t threads = workgroupThreads(target, n);
  ForOp blocks, lanes = outputs;
  if (n != threads) {
    auto split = tl::split(rw, outputs, {-1, threads});
    if (failed(split))
      return failure();
    blocks = (*split)[0];
    lanes = (*split)[1];
  }
  if (failed(bindLoop(tiles, "blockIdx.y")) ||
      (blocks && failed(bindLoop(blocks, "blockIdx.x"))) ||
      failed(bindLoop(lanes, "threadIdx.x")))
    return failure();
  return true;
}

/// Holds the f32 activations `a` of matmul `block` (its nest rooted at
/// `root`) as two f16 halves (splitHalves), written by a nest before
/// `root`; another product's halves of the same activations (a layer's Q,
/// K and V), where nothing between writes them, serve this one too.
static LogicalResult splitActivations(RewriterBase &rw, BlockOp block, Value a,
                                      Operation *root) {
  unsigned read = llvm::find(block.getReads(), a) - block.getReads().begin();
  BlockOp reuse;
  for (Operation *op = root->getPrevNode(); op && !reuse;
       op = op->getPrevNode()) {
    bool writes = false;
    op->walk([&](BlockOp b) {
      if (b.getName().ends_with("_halves") && b.getReads().size() == 1 &&
          b.getReads()[0] == a && b.getWrites().size() == 2)
        reuse = b;
      writes |= llvm::is_contained(b.getWrites(), a);
    });
    if (writes && !reuse)
      break;
  }
  return splitHalves(rw, block, read, reuse);
}

/// The matrix band of a prompt's matmul `chain` (rows at chain[0]) on a
/// target's matrix units or GEMM library, its block and whether its
/// f32 activations need f16 halves; failure where it has none.
static FailureOr<MatrixBand> promptBand(ArrayRef<ForOp> chain, BlockOp &block,
                                        bool &halves) {
  SmallVector<ForOp> reduction;
  block = promptMatmul(chain, reduction);
  if (!block || reduction.size() != 1)
    return failure();
  FailureOr<MatrixBand> form =
      matchMatrixBand(chain[0], {}, /*anyRowCount=*/true);
  halves = failed(form);
  if (halves)
    form = matchMatrixBand(chain[0], {}, /*anyRowCount=*/true,
                           /*f32Rows=*/true);
  return form;
}

/// The GEMM library rule (a target with one: hasGemmLibrary, `+cublas`):
/// a prompt's matmul of an f16 weight whose products fit the matrix band's
/// form is the library's: its f32 activations held as two f16 halves (as
/// on the matrix units: two products, the low half's scaled), the band
/// marked kind library, which convert-tl-to-gpu turns into calls from the
/// host. A residual added into it (its init stores another buffer's
/// element) must be laid out as the output (contiguous rows: the dispatch
/// program copies it into the output first). Returns false, changing
/// nothing, where it does not apply.
static FailureOr<bool> libraryTiles(RewriterBase &rw, ArrayRef<ForOp> chain,
                                    const TargetDescription &target) {
  BlockOp block;
  bool halves = false;
  if (!target.hasGemmLibrary() || chain.empty() ||
      !isa<func::FuncOp>(chain[0]->getParentOp()))
    return false;
  FailureOr<MatrixBand> form = promptBand(chain, block, halves);
  if (failed(form))
    return false;
  if (form->initFrom &&
      (form->initLead != form->colCount || form->outLead != form->colCount))
    return false;
  // (The chain's loops are independent and the nest at the top: library
  // holds after the split, or the IR is not what the rule expects.)
  if ((halves && failed(splitActivations(rw, block, form->a, chain[0]))) ||
      failed(tl::library(chain[0])))
    return failure();
  return true;
}

/// Tokens a workgroup's matrix band covers (two fragments of rows).
static constexpr int64_t kMatrixRows = 2 * kMatrixTile;

/// The matrix units rule (a target with them: hasMatrixUnits): a prompt's
/// matmul of an f16 weight whose products fit the matrix band's form
/// (Analysis/MatrixBand.h) runs on them, its f32 activations held as two
/// f16 halves (splitHalves, one nest for every product of the same
/// activations; products whose activations are f16 already need none):
/// the tokens in
/// whole tiles of kMatrixRows (split_peel; the rest a nest of their own,
/// which the other rules map), the outputs split into workgroups of up to
/// 4 subgroups (operands bound whole: a fragment may span two windows), each
/// subgroup 32 outputs (16 where 32 do not divide them) of the tile's tokens
/// over the whole reduction: a band of kind mma (rows, columns, reduction), its
/// sums in the subgroup's fragments. The tiles on blockIdx.y, the workgroups on
/// blockIdx.x, the subgroups on threadIdx.y (the band's own lanes are
/// threadIdx.x). Returns false, changing nothing, where it does not apply.
static FailureOr<bool> matrixTiles(RewriterBase &rw, ArrayRef<ForOp> chain,
                                   const TargetDescription &target) {
  if (!target.hasMatrixUnits())
    return false;
  // f32 activations (the exact mode's) are split into two f16 halves
  // (splitHalves: near f32's precision, two products per step).
  BlockOp block;
  bool halves = false;
  FailureOr<MatrixBand> form = promptBand(chain, block, halves);
  if (failed(form) || !boundWhole(form->a, target) ||
      !boundWhole(form->b, target) || !boundWhole(form->out, target))
    return false;
  int64_t n = *constantExtent(chain[1]);
  int64_t cols = n % (2 * kMatrixTile) == 0 ? 2 * kMatrixTile : kMatrixTile;
  int64_t warps = 4;
  while (warps > 1 && (n % (warps * cols) ||
                       warps * target.subgroupSize > target.maxWorkgroupSize))
    warps /= 2;
  MLIRContext *ctx = rw.getContext();
  auto peel =
      quietly(ctx, [&] { return splitPeel(rw, chain[0], {kMatrixRows}); });
  if (failed(peel))
    return false;
  ForOp tiles = peel->loops[0], tile = peel->loops[1];
  SmallVector<int64_t> factors = {-1};
  if (warps > 1)
    factors.push_back(warps);
  factors.push_back(cols);
  auto split = tl::split(rw, chain[1], factors);
  if (failed(split))
    return failure();
  ForOp blocks = (*split)[0];
  ForOp subgroups = warps > 1 ? (*split)[1] : ForOp();
  // tiles, workgroups, subgroups, then the band: the tile's tokens, the
  // subgroup's outputs, the reduction.
  SmallVector<ForOp> order = {blocks};
  if (subgroups)
    order.push_back(subgroups);
  order.push_back(tile);
  auto moved = quietly(ctx, [&] { return reorder(rw, order); });
  if (failed(moved))
    return failure();
  blocks = (*moved)[0];
  if (subgroups)
    subgroups = (*moved)[1];
  tile = moved->back();
  // The halves last (a failure above leaves the IR as the other rules
  // expect), for the whole tiles only: the tail reads the f32 values.
  if (halves && failed(splitActivations(rw, block, form->a, tiles)))
    return failure();
  if (failed(tl::mma(tile)) || failed(bindLoop(tiles, "blockIdx.y")) ||
      failed(bindLoop(blocks, "blockIdx.x")) ||
      (subgroups && failed(bindLoop(subgroups, "threadIdx.y"))))
    return failure();
  return true;
}

/// Elements of the activations one chunk of a staged prompt matmul's
/// reduction covers (8 tokens x 256 f32: 8 KiB of workgroup memory).
static constexpr int64_t kStageElements = 256;

/// The read of reduction `block` to stage for a prompt matmul: the one
/// buffer read at indices that use the tokens' variable (`tokens`) and not
/// the outputs' (`outputs`), the activations every thread of a workgroup
/// reads; none when there is not exactly one.
static std::optional<unsigned> activationRead(BlockOp block, ForOp tokens,
                                              ForOp outputs) {
  std::optional<unsigned> found;
  for (auto [r, buffer] : llvm::enumerate(block.getReads())) {
    if (llvm::is_contained(block.getWrites(), buffer))
      continue;
    AffineMap m = cast<AffineMapAttr>(block.getReadMaps()[r]).getValue();
    bool usesTokens = false, usesOutputs = false;
    for (unsigned i = 0, e = block.getNumIters(); i < e; ++i) {
      if (!m.isFunctionOfDim(i))
        continue;
      Value v = block.getIterValues()[i];
      usesTokens |= isComputedFrom(v, tokens.getInductionVar(), tokens);
      usesOutputs |= isComputedFrom(v, outputs.getInductionVar(), outputs);
    }
    if (!usesTokens || usesOutputs)
      continue;
    if (found)
      return std::nullopt;
    found = r;
  }
  return found;
}

/// The weight halves rule (a target with matrix units or a GEMM library): a
/// prompt's matmul whose weight is no f16 element (a quantized matrix's,
/// computed from its bytes: Q8_0, Q4_0, the K-quants; a bf16 or f32
/// matrix's), its f32 activations split into f16 halves (splitActivations)
/// and its weight written once per call as f16 halves [N, K]
/// (dequant_halves: exact for Q8_0, Q4_0 and bf16, near f32 for the rest),
/// then the library's or the matrix units' rule takes the
/// product's three-product band (x's high half times the weight's, and the
/// two cross terms scaled by 2^-11). Not for the rows of the call's logits
/// (output rows: one when generating). Where those then refuse the band,
/// the other rules map the dequantized product. Returns false, changing
/// nothing, where the product is no such matmul.
static FailureOr<bool> dequantTiles(RewriterBase &rw, ArrayRef<ForOp> chain,
                                    const TargetDescription &target) {
  if (!target.hasMatrixUnits() && !target.hasGemmLibrary())
    return false;
  SmallVector<ForOp> reduction;
  BlockOp block = promptMatmul(chain, reduction);
  if (!block)
    return false;
  // Not for the rows of the call's logits (graph-output-rows: the head's and
  // the last layer's products, one row when generating): a whole weight's
  // halves for so few rows would cost more than their products.
  ForOp rows = chain[0];
  auto fn = rows->getParentOfType<func::FuncOp>();
  for (BlockArgument arg : fn.getArguments())
    if (fn.getArgAttr(arg.getArgNumber(), "llmc.output_rows") &&
        isComputedFrom(rows.getUpperBound(), arg, fn))
      return false;
  std::optional<unsigned> read = activationRead(block, chain[0], chain[1]);
  int64_t k = 1;
  for (ForOp l : reduction)
    k *= constantExtent(l).value_or(0);
  // The band's extents (multiples of a fragment's edge), f32 activations.
  if (!read || *constantExtent(chain[1]) % kMatrixTile || !k ||
      k % kMatrixTile ||
      !cast<MemRefType>(block.getReads()[*read].getType())
           .getElementType()
           .isF32())
    return false;
  MLIRContext *ctx = rw.getContext();
  if (failed(quietly(ctx, [&] {
        return LogicalResult(dequantHalves(rw, block, /*check=*/true));
      })))
    return false;
  std::string name = block.getName().str();
  if (failed(splitActivations(rw, block, block.getReads()[*read], chain[0])))
    return failure();
  // (split_halves rebuilt the block.)
  BlockOp split;
  chain[0]->walk([&](BlockOp b) {
    if (b.getName() == name)
      split = b;
  });
  FailureOr<BlockOp> weight =
      split ? dequantHalves(rw, split) : FailureOr<BlockOp>(failure());
  if (failed(weight))
    return failure();
  // The weight's nest: its reduction's loops one (each thread an element
  // of a row of [N, K], consecutive threads consecutive elements), which
  // the grid rule maps with the columns around it.
  SmallVector<ForOp> weightLoops = getLoops(*weight);
  if (weightLoops.size() > 2)
    (void)quietly(ctx, [&] {
      return LogicalResult(
          tl::fuse(rw, ArrayRef<ForOp>(weightLoops).drop_front()));
    });
  FailureOr<bool> library = libraryTiles(rw, chain, target);
  if (failed(library) || *library)
    return library;
  return matrixTiles(rw, chain, target);
}

/// The prompt matmul rule with the activations staged in workgroup memory
/// (applies where the outputs split into whole workgroups): a workgroup
/// takes kTokenTile tokens of `threads` x kOutputTile outputs, each thread
/// its tile of sums in registers as in tileTokens; the reduction runs in chunks
/// (its outer loop split so that a chunk covers up to kStageElements), and
/// at each chunk the workgroup first copies the tokens' activations for it
/// into workgroup memory (stage; consecutive threads copying consecutive
/// elements), then every thread reads them there. The chunks' loop runs
/// outside the threads' (a serial loop of two steps), so each thread's sums
/// live in a buffer indexed by its thread, which the GPU conversion gives
/// each thread as its own. Not on a CPU device (target.cpuDevice), whose
/// workgroup memory is ordinary memory: there the copies and barriers only
/// cost (measured on lavapipe: prompt matmuls 2.3x slower). Returns false,
/// changing nothing, where it does not apply.
static FailureOr<bool> tileTokensStaged(RewriterBase &rw, ArrayRef<ForOp> chain,
                                        const TargetDescription &target) {
  SmallVector<ForOp> reduction;
  BlockOp block = promptMatmul(chain, reduction);
  if (target.cpuDevice || !block)
    return false;
  ForOp first = reduction.front();
  int64_t n = *constantExtent(chain[1]);
  int64_t rowsPerThread = n % kOutputTile == 0 ? kOutputTile : 1;
  int64_t threads = workgroupThreads(target, n / rowsPerThread);
  std::optional<unsigned> read = activationRead(block, chain[0], chain[1]);
  if ((n / rowsPerThread) % threads || !read)
    return false;
  Value activations = block.getReads()[*read];
  // The chunk: the largest divisor of the outer reduction loop's extent
  // whose elements (times those of the inner loops) fit kStageElements and
  // split into whole rows of the workgroup's threads.
  int64_t perIteration = 1;
  for (ForOp l : ArrayRef<ForOp>(reduction).drop_front())
    perIteration *= *constantExtent(l);
  int64_t outer = *constantExtent(first), chunk = 0;
  for (int64_t c = 1; c <= outer; ++c)
    if (outer % c == 0 && c * perIteration <= kStageElements &&
        (c * perIteration) % threads == 0)
      chunk = c;
  int64_t staged = kTokenTile * chunk * perIteration;
  Type elem =
      cast<MemRefType>(block.getReads()[*read].getType()).getElementType();
  if (!chunk || !elem.isIntOrFloat() ||
      staged * std::max<int64_t>(elem.getIntOrFloatBitWidth() / 8, 1) >
          target.sharedMemory)
    return false;
  MLIRContext *ctx = rw.getContext();
  auto peel =
      quietly(ctx, [&] { return splitPeel(rw, chain[0], {kTokenTile}); });
  if (failed(peel))
    return false;
  ForOp tiles = peel->loops[0], tile = peel->loops[1];
  // Outputs: workgroups x threads x a thread's rows; reduction: chunks x
  // the rest.
  ForOp blocks, lanes = chain[1], rows;
  if (rowsPerThread > 1) {
    auto split = tl::split(rw, lanes, {-1, rowsPerThread});
    if (failed(split))
      return failure();
    lanes = (*split)[0];
    rows = (*split)[1];
  }
  if (n / rowsPerThread != threads) {
    auto split = tl::split(rw, lanes, {-1, threads});
    if (failed(split))
      return failure();
    blocks = (*split)[0];
    lanes = (*split)[1];
  }
  // (Split even into one chunk: the threads' loop then has a reduction
  // loop inside it, for the partials.)
  auto split = tl::split(rw, first, {-1, chunk});
  if (failed(split))
    return failure();
  ForOp chunks = (*split)[0], within = (*split)[1];
  // workgroups, chunks, threads, the chunk's reduction, the tile.
  SmallVector<ForOp> order;
  if (blocks)
    order.push_back(blocks);
  order.append({chunks, lanes, within});
  llvm::append_range(order, ArrayRef<ForOp>(reduction).drop_front());
  if (rows)
    order.push_back(rows);
  order.push_back(tile);
  auto moved = quietly(ctx, [&] { return reorder(rw, order); });
  if (failed(moved))
    return failure();
  unsigned at = blocks ? 1 : 0;
  if (blocks)
    blocks = (*moved)[0];
  chunks = (*moved)[at];
  lanes = (*moved)[at + 1];
  // The tile's sums: partials over a lane of one (the loop inside the
  // threads' split by 1), one per thread and token, the tile's loops (and
  // the lanes of one) unrolled.
  auto rf = sumInRegisters(rw, block, (*moved)[at + 2], [&](ForOp l) {
    return l == chunks || l == lanes || l == tiles || l == blocks;
  });
  if (failed(rf))
    return failure();
  // The activations of a chunk in workgroup memory (its buffer at the
  // workgroup's level); the copy's columns split into rows of threads, the
  // threads' loop outside.
  // (rfactor rebuilt the block: the activations' read found by its value.)
  auto at2 = llvm::find(rf->rf.getReads(), activations);
  auto copy =
      at2 == rf->rf.getReads().end()
          ? FailureOr<BlockOp>(failure())
          : quietly(ctx, [&] {
              return stage(rw, rf->rf, at2 - rf->rf.getReads().begin(), chunks);
            });
  if (succeeded(copy)) {
    Operation *buffer = copy->getWrites()[0].getDefiningOp();
    rw.moveOpBefore(buffer, chunks);
    SmallVector<ForOp> copyLoops = getLoops(*copy);
    copyLoops.erase(copyLoops.begin(), llvm::find(copyLoops, chunks) + 1);
    ForOp columns = copyLoops.back();
    // Where the columns do not split into whole rows of threads, the copy
    // keeps its loops (its outer one on the threads).
    auto split = quietly(ctx, [&] {
      return tl::split(rw, columns, {-1, threads});
    });
    if (succeeded(split)) {
      SmallVector<ForOp> copyOrder = {(*split)[1]};
      copyOrder.append(copyLoops.begin(), copyLoops.end() - 1);
      copyOrder.push_back((*split)[0]);
      (void)quietly(ctx, [&] { return reorder(rw, copyOrder); });
    }
  }
  // The chunk's steps: the copy (if staged), then its products on the
  // threads.
  if (failed(mapSteps(rw, chunks.getBody(), target, /*inTurn=*/false)))
    return failure();
  // The grid: the whole tiles on blockIdx.y, the outputs' workgroups on
  // blockIdx.x; the workgroup's steps: the partials' init, at each chunk
  // the copy and the products, the write-back.
  if (failed(bindLoop(tiles, "blockIdx.y")) ||
      (blocks && failed(bindLoop(blocks, "blockIdx.x"))))
    return failure();
  Block *body = (blocks ? blocks : tiles).getBody();
  if (failed(mapSteps(rw, body, target, /*inTurn=*/false)))
    return failure();
  return true;
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
        !independentLoop(l))
      break;
    chain.push_back(l);
    if (chain.size() == 3)
      break;
  }
  // The rules, first that applies: each returns false, changing nothing,
  // where it does not.
  std::pair<std::function<FailureOr<bool>()>, const char *> rules[] = {
      {[&] { return reduceInWorkgroup(rw, root, chain, target); },
       "split this reduction across a workgroup"},
      {[&] { return dequantTiles(rw, chain, target); },
       "put this quantized prompt matmul on the matrix units or the GEMM "
       "library"},
      {[&] { return libraryTiles(rw, chain, target); },
       "give this prompt matmul to the GEMM library"},
      {[&] { return matrixTiles(rw, chain, target); },
       "put this prompt matmul on the matrix units"},
      {[&] { return tileTokensStaged(rw, chain, target); },
       "stage this prompt matmul's activations"},
      {[&] { return tileTokens(rw, chain, target); },
       "tile this prompt matmul's tokens"},
      {[&] { return stepsInWorkgroup(rw, chain, target); },
       "map this nest's steps onto a workgroup"}};
  for (auto &[apply, what] : rules) {
    FailureOr<bool> applied = apply();
    if (failed(applied))
      return root->emitError("the GPU schedule could not ") << what;
    if (*applied)
      return success();
  }
  if (chain.empty()) // one thread: a loop of one iteration around the nest
    chain.push_back(wrapInUnitLoop(rw, root));
  // The innermost bound loop: workgroups x threads.
  ForOp inner = chain.back();
  std::optional<int64_t> extent = getConstantIntValue(inner.getUpperBound());
  int64_t threads = workgroupThreads(target, extent);
  // Up to twice that where it takes the whole loop and loops around it hold
  // the grid: a workgroup per iteration of theirs, the grid on one axis
  // (a layer's key and value stores, 128 elements a KV head: one launch
  // fuses them, fuseIndependentLaunches).
  if (extent && chain.size() > 1 && *extent > threads &&
      *extent <= 2 * threads && *extent <= target.maxWorkgroupSize)
    threads = *extent;
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
    if (failed(bindLoop(l, *axis++)))
      return failure();
  if (blocks && failed(bindLoop(blocks, "blockIdx.x")))
    return failure();
  return bindLoop(lanes, "threadIdx.x");
}

/// Whether `l` reads a buffer that `block` writes.
static bool readsWhatWrites(ForOp l, BlockOp block) {
  return l
      .walk([&](BlockOp b) {
        return llvm::any_of(b.getReads(),
                            [&](Value r) {
                              return llvm::is_contained(block.getWrites(), r);
                            })
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

/// A reduction to one row followed by the nest that reads it (decode's
/// norms: the sum of squares, then the scale over the row) become the two
/// steps of one workgroup: a loop of one iteration around both, which
/// stepsInWorkgroup maps (the reduction shared by the lanes, the row's
/// elements on the threads), one launch and one barrier instead of two.
/// The reduction: a perfect nest of loops of constant extents with no
/// independent loop at its top (it would get a single workgroup anyway);
/// the consumer: a perfect nest whose top loop is independent and fits a
/// workgroup; nothing but pure ops between them.
static void pairReductionsWithConsumers(RewriterBase &rw, func::FuncOp fn,
                                        const TargetDescription &target) {
  MLIRContext *ctx = fn.getContext();
  SmallVector<std::pair<ForOp, ForOp>> pairs;
  SmallVector<Operation *> tops;
  for (Operation &op : fn.getBody().getOps())
    if (isa<ForOp, BlockOp>(op) || op.getNumRegions() || !isPure(&op))
      tops.push_back(&op);
  for (size_t i = 0; i + 1 < tops.size(); ++i) {
    auto a = dyn_cast<ForOp>(tops[i]);
    auto b = dyn_cast<ForOp>(tops[i + 1]);
    if (!a || !b || a.getKind() != LoopKind::serial ||
        b.getKind() != LoopKind::serial || !constantExtent(a))
      continue;
    SmallVector<ForOp> loops;
    BlockOp reduction = reductionNest(a, loops);
    if (!reduction ||
        succeeded(quietly(ctx, [&] { return verifyIndependent(a, "gpu"); })))
      continue;
    SmallVector<ForOp> inner;
    BlockOp consumer = perfectNest(b, inner);
    std::optional<int64_t> n = constantExtent(b);
    if (!consumer || !n || *n > target.maxWorkgroupSize ||
        !readsWhatWrites(b, reduction) ||
        failed(quietly(ctx, [&] { return verifyIndependent(b, "gpu"); })))
      continue;
    pairs.push_back({a, b});
    ++i;
  }
  for (auto [a, b] : pairs) {
    // The pure ops between the two (index arithmetic, which later nests may
    // use too) before both; the consumer after the reduction.
    for (Operation *op = a->getNextNode(); op && op != b.getOperation();) {
      Operation *next = op->getNextNode();
      rw.moveOpBefore(op, a);
      op = next;
    }
    ForOp unit = wrapInUnitLoop(rw, a);
    rw.moveOpBefore(b, unit.getBody()->getTerminator());
  }
}

/// Each residual add after a product (z = y + x, y the product's sums)
/// taken into the product (reverse_compute_inline into a reduction: its sums
/// start at x and accumulate in z): one launch instead of two, and y never
/// written. The same terms added in another order (exact mode: the GPU
/// targets' only one).
static void absorbAdds(RewriterBase &rw, func::FuncOp fn) {
  for (BlockOp b : spatialBlocksAloneInNests(fn))
    (void)reverseComputeInline(rw, b, /*quiet=*/true, /*intoReduction=*/true);
}

/// Maps into decode's products: an elementwise map of its inputs'
/// elements (each read indexed by every variable of the block: the MLP's
/// silu(gate) * up, not a norm's scale, which reads its row's reduction)
/// whose output only reductions of constant extents read (decode's
/// products: a workgroup per output row, each reading the whole vector) is
/// computed where they load it (`compute_inline`): one launch less, each
/// element computed once per workgroup (its rows' loads of it are one after
/// unrolling) where it was computed once. Exact: the same operations.
static void mapsIntoProducts(RewriterBase &rw, func::FuncOp fn) {
  auto constantNest = [](Operation *op) {
    auto top = op->getParentOfType<ForOp>();
    while (top && top->getParentOfType<ForOp>())
      top = top->getParentOfType<ForOp>();
    if (!top)
      return false;
    return !top->walk([](ForOp l) {
                 return constantExtent(l) ? WalkResult::advance()
                                          : WalkResult::interrupt();
               })
                .wasInterrupted();
  };
  for (BlockOp b : spatialBlocksAloneInNests(fn)) {
    if (b.getWrites().size() != 1 || !constantNest(b))
      continue;
    bool map = llvm::all_of(b.getReadMaps(), [&](Attribute m) {
      AffineMap read = cast<AffineMapAttr>(m).getValue();
      for (unsigned v = 0; v < b.getNumIters(); ++v)
        if (!read.isFunctionOfDim(v))
          return false;
      return true;
    });
    if (!map || b.getReads().empty())
      continue;
    bool products = true, any = false;
    for (Operation *user : b.getWrites()[0].getUsers()) {
      auto consumer = dyn_cast<BlockOp>(user);
      if (!consumer || consumer == b)
        continue;
      any = true;
      products &= consumer.hasReduction() && constantNest(consumer) &&
                  !llvm::is_contained(consumer.getWrites(), b.getWrites()[0]);
    }
    if (any && products)
      (void)computeInline(rw, b, /*quiet=*/true);
  }
}

/// Independent parts on the grid: where the innermost independent loop at
/// the top of a nest (decode's KV heads) holds, beside other nests, an
/// independent loop of a constant extent whose body is itself a sequence of
/// nests (a split attention's parts, each a flash attention over its share
/// of the positions, then the parts' merge), the outer loop is distributed
/// (`distribute`) so that the parts' loop gets a launch of its own, where
/// rule 5 puts it on the grid beside the heads: a workgroup per head and
/// part rather than a thread per part. The merge keeps the heads' launch.
static void partsOntoGrid(RewriterBase &rw, func::FuncOp fn) {
  SmallVector<ForOp> candidates;
  for (auto top : fn.getBody().getOps<ForOp>()) {
    ForOp inner;
    for (ForOp l = top; l && l.getKind() == LoopKind::serial && normalised(l) &&
                        independentLoop(l);
         l = onlyInnerLoop(l))
      inner = l;
    if (!inner || countNests(inner.getBody()) < 2)
      continue;
    for (auto p : inner.getBody()->getOps<ForOp>()) {
      std::optional<int64_t> n = constantExtent(p);
      if (p.getKind() == LoopKind::serial && n && *n > 1 &&
          countNests(p.getBody()) >= 2 && independentLoop(p)) {
        candidates.push_back(p);
        break;
      }
    }
  }
  // Each outer loop in three: the nests before the parts, the parts, the
  // nests after them (distributed, then those before and after fused back).
  for (ForOp parts : candidates) {
    auto outer = parts->getParentOfType<ForOp>();
    // (distribute makes a loop per nest of the body, in order.)
    unsigned index = 0;
    for (Operation &op : outer.getBody()->without_terminator()) {
      if (&op == parts.getOperation())
        break;
      index += isa<ForOp, BlockOp>(op);
    }
    quietly(fn.getContext(), [&] {
      FailureOr<SmallVector<ForOp>> loops = distribute(rw, outer);
      if (failed(loops) || loops->size() <= index)
        return;
      auto at = loops->begin() + index;
      for (ArrayRef<ForOp> run : {ArrayRef<ForOp>(loops->begin(), at),
                                  ArrayRef<ForOp>(std::next(at), loops->end())})
        if (run.size() > 1)
          (void)fuseSiblings(rw, run);
    });
  }
}

/// Launch fusion, after every nest is mapped: runs of consecutive launches
/// whose workgroups are equally wide, each independent of the others
/// (launchesIndependent), become one launch (fuseLaunches) within the
/// grid's and the workgroup memory's limits: a decode step's Q, K and V
/// products, its gate and up, its two RoPEs. A launch costs a GPU a few
/// microseconds however little it computes; a token of a small model
/// makes hundreds. Only index arithmetic, views and allocations may lie
/// between the launches of a run.
static void fuseIndependentLaunches(RewriterBase &rw, func::FuncOp fn,
                                    const TargetDescription &target) {
  SmallVector<SmallVector<ForOp>> runs;
  SmallVector<ForOp> run;
  LaunchShape sum;
  auto close = [&] {
    if (run.size() > 1)
      runs.push_back(run);
    run.clear();
  };
  for (Operation &op : fn.getBody().front()) {
    auto l = dyn_cast<ForOp>(op);
    if (!l) {
      if (!movesAcrossLaunches(&op))
        close();
      continue;
    }
    FailureOr<LaunchShape> shape = launchShape(l, [](const Twine &) {});
    bool joins =
        succeeded(shape) && !run.empty() && shape->threads == sum.threads &&
        sum.workgroups + shape->workgroups <= kMaxGridAxis &&
        sum.sharedBytes + shape->sharedBytes <= target.sharedMemory &&
        llvm::all_of(run, [&](ForOp r) { return launchesIndependent(r, l); });
    if (joins) {
      run.push_back(l);
      sum.workgroups += shape->workgroups;
      sum.sharedBytes += shape->sharedBytes;
      continue;
    }
    close();
    if (succeeded(shape)) {
      run.push_back(l);
      sum = *shape;
    }
  }
  close();
  for (ArrayRef<ForOp> r : runs)
    (void)quietly(fn.getContext(), [&] { return fuseLaunches(rw, r); });
}

LogicalResult llmc::tl::scheduleForGPU(func::FuncOp fn,
                                       const TargetDescription &target) {
  IRRewriter rw(fn.getContext());
  absorbAdds(rw, fn);
  mapsIntoProducts(rw, fn);
  partsOntoGrid(rw, fn);
  pairReductionsWithConsumers(rw, fn, target);
  // Every top-level nest not yet mapped, until none is left (a rule may
  // add one: a peeled tail); each mapping binds its nest's top loop.
  unsigned nests = 0;
  for (Operation &op : fn.getBody().getOps())
    nests += isa<ForOp, BlockOp>(op);
  for (unsigned round = 0;; ++round) {
    // (A rule adds at most two nests of its own: a peeled tail, a matmul's
    // activation halves.)
    if (round > 4 * nests + 16)
      return fn.emitError("the GPU schedule keeps adding nests to map");
    Operation *next = nullptr;
    for (Operation &op : fn.getBody().getOps()) {
      auto l = dyn_cast<ForOp>(op);
      if (isa<BlockOp>(op) || (l && l.getKind() != LoopKind::thread_bound &&
                               l.getKind() != LoopKind::library)) {
        next = &op;
        break;
      }
    }
    if (!next) {
      fuseIndependentLaunches(rw, fn, target);
      return success();
    }
    if (failed(scheduleNest(rw, next, target)))
      return failure();
    // The same op still unbound at the top (compared as a pointer only: a
    // mapping may have erased it) would loop forever.
    for (Operation &op : fn.getBody().getOps())
      if (&op == next &&
          (isa<BlockOp>(op) ||
           (cast<ForOp>(op).getKind() != LoopKind::thread_bound &&
            cast<ForOp>(op).getKind() != LoopKind::library)))
        return op.emitError("the GPU schedule left this nest unmapped");
  }
}
