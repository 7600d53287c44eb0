//===- DefaultSchedule.cpp - schedule every nest for the target -----------===//
//
// The schedule a plain `llmc compile` applies: rules keyed on the structure
// of each canonical block (spatial or reducing, which loops its accesses
// are contiguous in, its accumulator's type) and on the target description
// (vector width). Every decision is a call of a schedule primitive; a rule
// whose preconditions do not hold leaves the nest as it is (still correct,
// only slower).
//
//===----------------------------------------------------------------------===//
#include "Dialect/TL/Analysis/AffineIndex.h"
#include "Dialect/TL/Analysis/Independence.h"
#include "Dialect/TL/Analysis/NestEquivalence.h"
#include "Dialect/TL/Analysis/Reduction.h"
#include "Dialect/TL/IR/TL.h"
#include "Dialect/TL/Transforms/GPUSchedule.h"
#include "Dialect/TL/Transforms/Passes.h"
#include "Dialect/TL/Transforms/Schedule.h"
#include "Target/TargetOption.h"
#include "Target/Tuning.h"

#include <set>

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace llmc::tl {
#define GEN_PASS_DEF_TLDEFAULTSCHEDULE
#include "Dialect/TL/Transforms/Passes.h.inc"
} // namespace llmc::tl

using namespace mlir;
using namespace llmc;
using namespace llmc::tl;

namespace {

/// The key of the tuning choice a nest was scheduled with (its top-level
/// loops'; tl-outline-kernels keeps it on the kernel's nest).
constexpr llvm::StringLiteral kTuneAttr = "llmc.tune";

std::optional<int64_t> extentOf(ForOp l) {
  if (getConstantIntValue(l.getLowerBound()) != 0 ||
      getConstantIntValue(l.getStep()) != 1)
    return std::nullopt;
  return getConstantIntValue(l.getUpperBound());
}

int64_t floorPow2(int64_t x) {
  int64_t p = 1;
  while (p * 2 <= x)
    p *= 2;
  return p;
}

/// How the accesses of a block move when `loop`'s variable grows by one:
/// contiguous (by 1 in the last index, nowhere else), fixed, or otherwise.
struct Stride {
  bool writesContiguous = true, readsContiguous = true;
};

/// With `run` > 1, an access is contiguous too when it moves by 1 within
/// aligned runs of `run` iterations (lanes of a blocked layout: the KV
/// cache's values in blocks of positions).
Stride strideIn(BlockOp block, ForOp loop, int64_t run = 1) {
  Stride s;
  AffineIndexBuilder ab(loop, /*opaqueInside=*/true);
  ab.dim(loop.getInductionVar());
  auto check = [&](OperandRange buffers, ArrayAttr maps, bool &ok,
                   bool write) {
    for (auto [buf, attr] : llvm::zip(buffers, maps)) {
      auto exprs = ab.compose(cast<AffineMapAttr>(attr).getValue(),
                              block.getIterValues());
      if (!exprs) {
        ok = false;
        continue;
      }
      unsigned n = std::max<unsigned>(ab.dims.size(), 1);
      for (auto [i, e] : llvm::enumerate(*exprs)) {
        if (!e.isFunctionOfDim(0))
          continue;
        auto c = runCoefficient(e, 0, n, run);
        bool last = i + 1 == exprs->size();
        if (!c || !last || *c != 1 || (write && *c == 0))
          ok = false;
      }
      if (write && llvm::none_of(*exprs, [](AffineExpr e) {
            return e.isFunctionOfDim(0);
          }))
        ok = false;
    }
  };
  check(block.getWrites(), block.getWriteMaps(), s.writesContiguous, true);
  check(block.getReads(), block.getReadMaps(), s.readsContiguous, false);
  return s;
}

/// True when every op of the block's regions is something vector lanes
/// compute well: elementwise arithmetic (no loops, no calls the C library
/// would make one lane at a time).
bool vectorFriendly(BlockOp block) {
  WalkResult r = block->walk([&](Operation *op) {
    if (op == block.getOperation() || isa<YieldOp>(op) ||
        isa<affine::AffineLoadOp, affine::AffineStoreOp,
            affine::AffineApplyOp>(op))
      return WalkResult::advance();
    if (isa<math::SinOp, math::CosOp, math::PowFOp, math::LogOp>(op) ||
        op->getNumRegions() ||
        !(op->hasTrait<OpTrait::Elementwise>() ||
          isa<arith::SelectOp, arith::ConstantOp>(op)))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return !r.wasInterrupted();
}

/// Whether `inner` is the only op of `outer`'s body besides side-effect-free
/// scalar ops (index arithmetic).
bool perfectlyAround(ForOp outer, ForOp inner) {
  if (inner->getParentOp() != outer)
    return false;
  for (Operation &op : outer.getBody()->without_terminator())
    if (&op != inner.getOperation() &&
        (op.getNumRegions() || !isPure(&op)))
      return false;
  return true;
}

/// The loops directly in `outer`'s body, in order.
SmallVector<ForOp> loopsIn(ForOp outer) {
  SmallVector<ForOp> loops;
  for (Operation &op : outer.getBody()->without_terminator())
    if (auto inner = dyn_cast<ForOp>(&op))
      loops.push_back(inner);
  return loops;
}

/// The one loop directly in `outer`'s body, or null when there are none or
/// several.
ForOp onlyLoopIn(ForOp outer) {
  ForOp only;
  for (Operation &op : outer.getBody()->without_terminator())
    if (auto inner = dyn_cast<ForOp>(&op)) {
      if (only)
        return {};
      only = inner;
    }
  return only;
}

/// Whether `outer` steps over tiles (a constant step above 1) through a
/// sequence of nests: flash attention's tiles of positions.
bool overNests(ForOp outer) {
  std::optional<int64_t> step = getConstantIntValue(outer.getStep());
  return step && *step > 1 && loopsIn(outer).size() > 1;
}

/// `outer` and the loops perfectly nested in it, outermost first.
SmallVector<ForOp> perfectChain(ForOp outer) {
  SmallVector<ForOp> chain = {outer};
  for (ForOp inner = onlyLoopIn(outer);
       inner && perfectlyAround(chain.back(), inner); inner = onlyLoopIn(inner))
    chain.push_back(inner);
  return chain;
}

/// Whether some read of `block` that moves with the innermost loop of `band`
/// (directly nested, outermost first, constant extents) covers a contiguous
/// range over the band: its last index is linear in the band's loops with
/// coefficients that are, in some order, 1, e0, e0 * e1, ... (loops it does
/// not depend on are replicated).
bool contiguousOver(BlockOp block, ArrayRef<ForOp> band) {
  AffineIndexBuilder ab(band.front(), /*opaqueInside=*/true);
  for (ForOp l : band)
    ab.dim(l.getInductionVar());
  unsigned nb = band.size();
  for (auto [buf, attr] : llvm::zip(block.getReads(), block.getReadMaps())) {
    auto exprs = ab.compose(cast<AffineMapAttr>(attr).getValue(),
                            block.getIterValues());
    if (!exprs || exprs->empty())
      continue;
    AffineExpr last = exprs->back();
    unsigned n = std::max<unsigned>(ab.dims.size(), 1);
    if (!last.isFunctionOfDim(nb - 1))
      continue;
    SmallVector<std::pair<int64_t, int64_t>> terms; // (coefficient, extent)
    bool linear = true;
    for (unsigned d = 0; d < nb && linear; ++d) {
      if (!last.isFunctionOfDim(d))
        continue;
      auto c = linearCoefficient(last, d, n);
      std::optional<int64_t> e =
          getConstantIntValue(ForOp(band[d]).getUpperBound());
      if (!c || !e || *c <= 0)
        linear = false;
      else
        terms.push_back({*c, *e});
    }
    if (!linear)
      continue;
    llvm::sort(terms);
    int64_t expect = 1;
    bool ok = true;
    for (auto [c, e] : terms) {
      if (c != expect)
        ok = false;
      expect *= e;
    }
    if (ok)
      return true;
  }
  return false;
}

/// The loops around `block` that hold no other block (innermost last): the
/// ones a rule for this block alone may reorder or split. A loop around
/// other blocks too (an attention row's, around its softmax) is the nest's.
SmallVector<ForOp> ownLoops(BlockOp block) {
  SmallVector<ForOp> loops = getLoops(block);
  auto owned = [&](ForOp l) {
    WalkResult r = l->walk([&](BlockOp b) {
      return b == block ? WalkResult::advance() : WalkResult::interrupt();
    });
    return !r.wasInterrupted();
  };
  auto first = llvm::find_if(loops, owned);
  return SmallVector<ForOp>(first, loops.end());
}

/// The kinds of variables of `block` that `loop` binds.
std::pair<bool, bool> bindsKinds(BlockOp block, ForOp loop) {
  bool spatial = false, reduce = false;
  for (unsigned i = 0, e = block.getNumIters(); i < e; ++i)
    if (isComputedFrom(block.getIterValues()[i], loop.getInductionVar(), loop))
      (block.getIterKind(i) == IterKind::reduce ? reduce : spatial) = true;
  return {spatial, reduce};
}

class Scheduler {
public:
  Scheduler(MLIRContext *ctx, const TargetDescription &target, bool reuse,
            Tuning tuning = {})
      : rw(ctx), target(target), lanes32(target.f32Lanes()),
        vectorBytes(target.vectorBits / 8), reuse(reuse),
        tuning(std::move(tuning)) {}

  void run(func::FuncOp fn) {
    auto phase = fn->getAttrOfType<StringAttr>("llmc.phase");
    decode = phase && phase.getValue() == "decode";
    SmallVector<ForOp> roots;
    for (Operation &op : fn.getBody().front())
      if (auto l = dyn_cast<ForOp>(&op))
        roots.push_back(l);
    // Equal nests (the layers' copies of one computation) are scheduled
    // once: the first of each kind; the others get a copy of its schedule
    // over their own buffers (what the rules would have made of them: they
    // read only the nest's structure and the kinds of values it uses).
    SmallVector<ForOp> firsts;
    DenseMap<Operation *, SmallVector<Copy>> copies;
    groupEqualNests(roots, firsts, copies);
    for (ForOp root : firsts) {
      // (The nest's copies by its op, which scheduling may replace.)
      SmallVector<Copy> &rootCopies = copies[root.getOperation()];
      Block *body = root->getBlock();
      Operation *prev = root->getPrevNode(), *next = root->getNextNode();
      nestKey.clear();
      nestThreaded = false;
      scheduleNest(root);
      SmallVector<Operation *> range;
      for (Operation *op = prev ? prev->getNextNode() : &body->front();
           op != next; op = op->getNextNode())
        range.push_back(op);
      for (Operation *op : range)
        if (auto nest = dyn_cast<ForOp>(op))
          rethread(nest);
      // In decode, a nest streaming a weight: how far ahead it prefetches
      // is tunable per weight shape.
      if (decode && nestKey.empty())
        nestKey = streamKey(range);
      // A nest tuning decided (its tail's included) carries its key, for
      // the kernels' metadata and `llmc tune`.
      if (!nestKey.empty())
        for (Operation *op : range)
          if (isa<ForOp>(op))
            op->setAttr(kTuneAttr, rw.getStringAttr(nestKey));
      for (Copy &copy : rootCopies)
        replaceWithCopy(copy, range);
    }
    unrollRegisterTiles(fn);
    prefetchStreams(fn);
    hoistUnpacking(fn);
  }

private:
  /// A nest equal to an earlier one: what it uses from outside in place of
  /// the earlier one's values, and its blocks' names in place of those.
  struct Copy {
    Operation *nest;
    IRMapping outside;
    SmallVector<std::pair<StringRef, StringAttr>> names;
  };

  /// Splits `roots` into the first nest of each kind and, for each of
  /// those, the later nests equal to it.
  void groupEqualNests(ArrayRef<ForOp> roots, SmallVectorImpl<ForOp> &firsts,
                       DenseMap<Operation *, SmallVector<Copy>> &copies) {
    // Values from outside pair up when they are the same kind of value:
    // equal constants, results of the same operation, or arguments.
    NestEquivalence eq([](Value x, Value y) {
      Operation *dx = x.getDefiningOp(), *dy = y.getDefiningOp();
      if (!dx || !dy)
        return !dx && !dy;
      if (dx->hasTrait<OpTrait::ConstantLike>() ||
          dy->hasTrait<OpTrait::ConstantLike>())
        return dx->getName() == dy->getName() &&
               dx->getAttrDictionary() == dy->getAttrDictionary();
      return dx->getName() == dy->getName();
    });
    DenseMap<size_t, SmallVector<ForOp>> byHash;
    for (ForOp root : roots) {
      SmallVector<ForOp> &same = byHash[size_t(NestEquivalence::hash(root))];
      ForOp first;
      for (ForOp f : reuse ? ArrayRef<ForOp>(same) : ArrayRef<ForOp>()) {
        eq.reset();
        if (eq.equal(f, root)) {
          first = f;
          break;
        }
      }
      if (!first) {
        same.push_back(root);
        firsts.push_back(root);
        continue;
      }
      Copy copy{root, {}, {}};
      for (auto [x, y] : eq.mapping().getValueMap())
        if (!first->isAncestor(x.getParentRegion()->getParentOp()))
          copy.outside.map(x, y);
      SmallVector<BlockOp> a, b;
      first->walk([&](BlockOp op) { a.push_back(op); });
      root->walk([&](BlockOp op) { b.push_back(op); });
      for (auto [x, y] : llvm::zip(a, b))
        copy.names.push_back({x.getName(), y.getNameAttr()});
      // Longest names first: a block's name starts with the name of the
      // block the schedule made it from.
      llvm::sort(copy.names, [](auto &l, auto &r) {
        return l.first.size() > r.first.size();
      });
      copies[first.getOperation()].push_back(std::move(copy));
    }
  }

  /// Puts a copy of the scheduled `range` in place of `copy.nest`.
  void replaceWithCopy(Copy &copy, ArrayRef<Operation *> range) {
    OpBuilder b(copy.nest);
    for (Operation *op : range) {
      Operation *clone = b.clone(*op, copy.outside);
      clone->walk([&](BlockOp block) {
        StringRef name = block.getName();
        for (auto &[from, to] : copy.names) {
          if (name == from || (name.starts_with(from) &&
                               name.drop_front(from.size()).starts_with("_"))) {
            block.setName((to.getValue() + name.drop_front(from.size())).str());
            break;
          }
        }
      });
    }
    copy.nest->erase();
  }

  /// Runs a primitive with its diagnostics silenced: a rule that does not
  /// apply falls back to a simpler schedule, not to an error.
  template <typename Fn> auto quietly(Fn fn) {
    ScopedDiagnosticHandler quiet(rw.getContext(),
                                  [](Diagnostic &) { return success(); });
    return fn();
  }

  void scheduleNest(ForOp root, bool tileTokens = true) {
    SmallVector<BlockOp> blocks;
    ForOp tail;
    // The blocks of the nest but its tail's (a nest of its own), found
    // between the ops around it: a rule may put several nests in its place
    // (parallelize's distribution of split rows).
    Block *body = root->getBlock();
    Operation *prev = root->getPrevNode(), *next = root->getNextNode();
    auto collect = [&] {
      blocks.clear();
      for (Operation *op = prev ? prev->getNextNode() : &body->front();
           op != next; op = op->getNextNode())
        op->walk([&](BlockOp b) {
          if (!tail || !tail->isAncestor(b))
            blocks.push_back(b);
        });
    };
    collect();
    fuseHeads(root);
    root = cacheStationary(root, blocks);
    root = weightsStationary(root, blocks, tileTokens, tail);
    root = laneOutputTiles(root, blocks, tileTokens, tail);
    nestThreaded |= parallelize(root);
    // Again: a tile may have distributed loops over copies of them.
    collect();
    for (BlockOp b : blocks)
      scheduleBlock(b);
    // The tokens after the last whole tile, one at a time.
    if (tail)
      scheduleNest(tail, /*tileTokens=*/false);
  }

  /// Prefill attention with no KV heads to split (MQA, one KV head): the
  /// token loop holds a loop over the query heads per block, and cannot take
  /// the threads, its tokens sharing each head's scores row. The blocks'
  /// loops over the heads fuse into one (each head's steps in turn; the
  /// heads are independent), which parallelize then puts outermost, on the
  /// threads. Only where the token loop's iterations are not independent
  /// and every loop directly inside it runs over the same heads, or (flash
  /// attention's loop over the tiles of positions) holds only such loops:
  /// those fuse into one, which moves outside it (each head's tiles in
  /// turn), when its iterations are independent.
  void fuseHeads(ForOp root) {
    if (decode || extentOf(root) || onlyLoopIn(root))
      return;
    SmallVector<ForOp> loops = loopsIn(root);
    // The heads: the loops with a static extent (the others hold them).
    std::optional<int64_t> heads;
    for (ForOp l : loops)
      if ((heads = extentOf(l)))
        break;
    if (loops.size() < 2 || !heads ||
        *heads < std::max<int64_t>(target.cores, 2) ||
        !overHeadsOnly(root, *heads) ||
        succeeded(quietly([&] { return verifyIndependent(root, "parallel"); })))
      return;
    for (ForOp &l : loops) {
      if (extentOf(l) == heads)
        continue;
      FailureOr<ForOp> hoisted = hoistHeads(l, *heads);
      if (failed(hoisted))
        return;
      l = *hoisted;
    }
    (void)quietly([&] { return fuseSiblings(rw, loops); });
  }

  /// Whether every block under `l` sits in a loop over `heads`, reached
  /// through loops that hold only loops (and index arithmetic): what
  /// fuseHeads may move the heads out of.
  static bool overHeadsOnly(ForOp l, int64_t heads) {
    for (Operation &op : l.getBody()->without_terminator()) {
      auto inner = dyn_cast<ForOp>(&op);
      if (!inner) {
        if (op.getNumRegions() || !isPure(&op))
          return false;
        continue;
      }
      if (extentOf(inner) != heads && !overHeadsOnly(inner, heads))
        return false;
    }
    return true;
  }

  /// fuseHeads' step for a loop `l` over something else than the heads
  /// (flash attention's tiles, or the parts of a split row around them)
  /// whose loops run over the heads or are such loops themselves: those
  /// fuse into one loop over the heads, which moves outside `l`, where its
  /// iterations must still be independent (else `l` goes back outside).
  /// Returns the loop over the heads, now around `l`.
  FailureOr<ForOp> hoistHeads(ForOp l, int64_t heads) {
    SmallVector<ForOp> inner = loopsIn(l);
    if (inner.empty())
      return failure();
    for (ForOp &i : inner) {
      if (extentOf(i) == heads)
        continue;
      FailureOr<ForOp> hoisted = hoistHeads(i, heads);
      if (failed(hoisted))
        return failure();
      i = *hoisted;
    }
    auto fused = quietly([&] { return fuseSiblings(rw, inner); });
    if (failed(fused))
      return failure();
    auto moved = quietly([&] { return reorder(rw, {*fused, l}); });
    if (failed(moved))
      return failure();
    if (failed(quietly(
            [&] { return verifyIndependent((*moved)[0], "parallel"); }))) {
      (void)quietly([&] { return reorder(rw, {(*moved)[1], (*moved)[0]}); });
      return failure();
    }
    return (*moved)[0];
  }

  /// Prefill attention: the rows' nest over (tokens, KV heads, ...) whose
  /// blocks run over a dynamic number of positions and read a buffer per KV
  /// head that every token reads alike (the KV cache): KV heads outermost,
  /// so that one KV head's keys and values stay in the cache while every
  /// token reads them, rather than every head's streamed once per token
  /// (and the threads split the KV heads). Returns the new root.
  ForOp cacheStationary(ForOp root, ArrayRef<BlockOp> blocks) {
    if (decode || extentOf(root))
      return root;
    ForOp heads = onlyLoopIn(root);
    if (!heads || extentOf(heads).value_or(0) < 2 ||
        !perfectlyAround(root, heads))
      return root;
    AffineIndexBuilder ab(root, /*opaqueInside=*/true);
    ab.dim(root.getInductionVar());
    ab.dim(heads.getInductionVar());
    bool shared = false;
    for (BlockOp b : blocks) {
      bool positions = llvm::any_of(getLoops(b), [&](ForOp l) {
        return l != root && root->isAncestor(l) && !extentOf(l);
      });
      if (!positions)
        continue;
      for (auto [buf, attr] : llvm::zip(b.getReads(), b.getReadMaps())) {
        auto exprs = ab.compose(cast<AffineMapAttr>(attr).getValue(),
                                b.getIterValues());
        if (!exprs)
          continue;
        auto uses = [&](unsigned d) {
          return llvm::any_of(*exprs,
                              [&](AffineExpr e) { return e.isFunctionOfDim(d); });
        };
        shared |= !uses(0) && uses(1);
      }
    }
    if (!shared)
      return root;
    auto order = quietly([&] { return reorder(rw, {heads, root}); });
    return succeeded(order) ? (*order)[0] : root;
  }

  /// A prefill product over (tokens, rows) of a weight that integer dot
  /// products read block by block: rows outermost, so that each row of the
  /// weight is read from memory once and reused by every token from the
  /// cache (and the threads split the rows). Float matmuls are tiled over
  /// both instead (tileMatmul). Returns the new root.
  ///
  /// With `tileTokens`, a register tile of kIntTileRows rows x
  /// kIntTileTokens tokens shares each block's loads: (t0, t1, r0, r1, blk)
  /// -> (r0, t0, blk, r1, t1) with r1 and t1 unrolled, each output's sums in
  /// the order of its own dot product; the remaining tokens go to `tail`,
  /// a nest of their own.
  ForOp weightsStationary(ForOp root, ArrayRef<BlockOp> blocks,
                          bool tileTokens, ForOp &tail) {
    if (decode || extentOf(root))
      return root;
    ForOp rows = onlyLoopIn(root);
    if (!rows || !extentOf(rows) || !perfectlyAround(root, rows))
      return root;
    // Integer sums of products with a weight (not the activations' own
    // sums, whose rows are the token's blocks: nothing to keep in cache).
    bool intDot = llvm::any_of(blocks, [](BlockOp b) {
      return b.hasReduction() && b.getWrites().size() == 1 &&
             cast<MemRefType>(b.getWrites()[0].getType())
                 .getElementType()
                 .isInteger(32) &&
             llvm::any_of(b.getReads(),
                          [](Value v) { return bool(weightView(v)); });
    });
    if (!intDot)
      return root;
    for (BlockOp b : blocks) {
      auto [sp0, red0] = bindsKinds(b, root);
      auto [sp1, red1] = bindsKinds(b, rows);
      if (red0 || red1)
        return root;
    }
    ForOp blk = onlyLoopIn(rows);
    if (tileTokens && *extentOf(rows) % kIntTileRows == 0 && blk &&
        perfectlyAround(rows, blk))
      return tileIntDot(root, tail);
    auto order = quietly([&] { return reorder(rw, {rows, root}); });
    if (failed(order))
      return root;
    if (tileTokens && *extentOf(rows) >= 2)
      tileTokenLanes((*order)[1], tail);
    return (*order)[0];
  }

  /// The exact mode's products over float rows interleaved by whole
  /// vectors of lanes (#graph.interleaved, 4 vectors' rows with AVX-512 and
  /// AVX2: the lowering's (tokens, groups, k, rows), the group's rows
  /// innermost, its weights one run per element of the reduction): the rows
  /// in lanes, FMAs of a broadcast activation into accumulators that stay
  /// in registers across the reduction, added to the output once after it
  /// (no horizontal sum). A prompt's tile is `tokens` x the group's vectors
  /// (6 x 4 with 32 vector registers: each weight vector serves 6 tokens,
  /// each broadcast 4 vectors), a group's weights streamed from L2 by every
  /// token tile: (g, s0, k, s1, r1, r0), per element of the reduction 4
  /// loads and 6 broadcasts for 24 FMAs, where the dot-product tile (k in
  /// lanes) loaded a vector per 4 FMAs. A group's weights larger than half
  /// of L2 block the reduction around the token tiles, (g, kb, s0, k, ...).
  /// The tokens after the last whole tile run one at a time in the same
  /// loop over the groups, (g, [s0, k, s1, r1, r0], [s, k, r1, r0]); decode
  /// runs (g, k, r1, r0), one stream of the weight.
  /// Returns the nest's new root (the groups, for the threads), or `root`
  /// where the nest is not such a product.
  ForOp laneOutputTiles(ForOp root, ArrayRef<BlockOp> blocks, bool tileTokens,
                        ForOp &tail) {
    if (blocks.size() != 1)
      return root;
    BlockOp block = blocks.front();
    SmallVector<ForOp> loops = getLoops(block);
    if (loops.size() < 3 || loops.size() > 4 || loops.front() != root)
      return root;
    for (size_t i = 0; i + 1 < loops.size(); ++i)
      if (!perfectlyAround(loops[i], loops[i + 1]))
        return root;
    bool tokens = loops.size() == 4;
    ForOp g = loops[loops.size() - 3], k = loops[loops.size() - 2],
          r = loops.back();
    auto only = [&](ForOp l, bool spatial) {
      auto [sp, red] = bindsKinds(block, l);
      return spatial ? sp && !red : red && !sp;
    };
    std::optional<int64_t> ge = extentOf(g), ke = extentOf(k), re = extentOf(r);
    FailureOr<ReductionUpdate> update = matchReductionUpdate(block);
    Stride sr = strideIn(block, r);
    if (!ge || !ke || !re || *re % lanes32 || !only(g, true) ||
        !only(k, false) || !only(r, true) ||
        (tokens && !only(loops.front(), true)) || failed(update) ||
        !productOf(*update) || !sr.writesContiguous || !sr.readsContiguous ||
        llvm::none_of(block.getReads(),
                      [](Value v) { return bool(weightView(v)); }))
      return root;
    // The tile: the group's vectors by tokens, 3/4 of the vector registers
    // for the accumulators.
    int64_t vecs = *re / lanes32;
    int64_t tokenTile =
        std::max<int64_t>(1, target.vectorRegisters * 3 / 4 / vecs);
    ForOp s0, s1;
    if (tokens && tileTokens && tokenTile > 1 && !extentOf(loops.front())) {
      FailureOr<PeeledSplit> split =
          quietly([&] { return splitPeel(rw, loops.front(), {tokenTile}); });
      if (failed(split))
        return root;
      if (split->tail)
        tail = split->tail;
      s0 = split->loops[0];
      s1 = split->loops[1];
    } else if (tokens) {
      s0 = loops.front();
    }
    // From here on the nest has changed: what fails leaves it correct.
    tiled.insert(block);
    loops = getLoops(block);
    ForOp kk = loops[loops.size() - 2], r0 = loops.back(), r1;
    if (vecs > 1) {
      auto parts = quietly([&] { return split(rw, r0, {-1, lanes32}); });
      if (failed(parts))
        return getLoops(block).front();
      r1 = (*parts)[0];
      r0 = (*parts)[1];
    }
    // A group's weights stay in L2 while every token tile streams them
    // (per element of the reduction 4 vectors for 24 FMAs, well within
    // what L2 delivers): the reduction is blocked only where they would
    // take more than half of L2 (or 1/R for `llmc tune`'s r<R>; none for
    // r0), in the largest divisor that fits. (Blocks sized for L1, the
    // token tiles' activations staged, measured 0.89x: the output's
    // partial sums read and written per block, the copies.)
    ForOp kb;
    if (s1) {
      nestKey = tuneKey(block, *ke, *ge * *re);
      choice = tuning.lookup(nestKey);
    }
    if (s1 && choice.reductionShare > 0) {
      int64_t budget = target.l2 / choice.reductionShare / (*re * 4);
      int64_t kc = 0;
      for (int64_t d = std::min(*ke, budget); d >= 1; --d)
        if (*ke % d == 0) {
          kc = d;
          break;
        }
      if (kc >= lanes32 && kc < *ke) {
        auto parts = quietly([&] { return split(rw, kk, {-1, kc}); });
        if (succeeded(parts)) {
          kb = (*parts)[0];
          kk = (*parts)[1];
        }
      }
    }
    SmallVector<ForOp> order = {
        getLoops(block)[getLoops(block).size() - (kb ? 4 : 3) - (r1 ? 1 : 0)]};
    if (kb)
      order.push_back(kb);
    if (s0)
      order.push_back(s0);
    order.push_back(kk);
    if (s1)
      order.push_back(s1);
    if (r1)
      order.push_back(r1);
    order.push_back(r0);
    auto moved = quietly([&] { return reorder(rw, order); });
    if (failed(moved))
      return getLoops(block).front();
    ForOp newRoot = moved->front();
    kk = (*moved)[(kb ? 1 : 0) + (s0 ? 1 : 0) + 1];
    if (failed(quietly([&] { return vectorize(moved->back()); })))
      return newRoot;
    FailureOr<RFactorResult> rf =
        quietly([&] { return rfactor(rw, block, {}, kk); });
    if (failed(rf))
      return newRoot;
    tiled.insert(rf->rf);
    tiled.insert(rf->init);
    tiled.insert(rf->writeBack);
    (void)quietly([&] { return contract(rw, rf->rf); });
    // Where the reduction is blocked, a token tile's activations (its rows
    // of the block), copied next to each other when they take at most a
    // quarter of L1: rows of the prompt a multiple of 4 KiB apart sit in
    // one set of L1.
    std::optional<int64_t> kcExtent = kb ? extentOf(kk) : std::nullopt;
    if (s1 && kb && kcExtent && tokenTile * *kcExtent * 4 <= target.l1d / 4) {
      // (g, kb, s0, k, s1, r1, r0): at s0, its reads of the activations.
      SmallVector<ForOp> rl = getLoops(rf->rf);
      ForOp at = rl[rl.size() - 4 - (r1 ? 1 : 0)];
      std::string name = rf->rf.getName().str();
      // (The activations: the read that is neither the weight nor the
      // partials.)
      OperandRange reads = rf->rf.getReads();
      auto act = llvm::find_if(reads, [](Value v) {
        return !weightView(v) && !v.getDefiningOp<memref::AllocaOp>();
      });
      unsigned index = act - reads.begin();
      FailureOr<BlockOp> copy = failure();
      if (act != reads.end())
        copy = quietly([&] { return stage(rw, rf->rf, index, at); });
      if (succeeded(copy)) {
        keepLoop(kk);
        tiled.insert(*copy);
        at->walk([&](BlockOp b) {
          if (b.getName() == name)
            rf->rf = b;
        });
        tiled.insert(rf->rf);
        vectorizeLoop(getLoops(*copy).back(), lanes32);
      }
    }
    unsigned tiles = (s1 ? 1 : 0) + (r1 ? 1 : 0);
    finishRFactor(*rf, tiles, /*tree=*/false);
    // The write-back's lanes and tiles, as the partials'.
    vectorizeBand(rf->writeBack, 1);
    SmallVector<ForOp> wb = getLoops(rf->writeBack);
    for (unsigned t = 1; t <= tiles && t < wb.size(); ++t)
      (void)quietly([&] { return unroll(wb[wb.size() - 1 - t]); });
    if (!s1 || !tail)
      return newRoot;
    // The tokens after the last whole tile, in the same loop over the
    // groups: each group's weights, which the whole tiles just read, are
    // still in cache for them (a nest of their own streamed the weights
    // once more, from memory).
    SmallVector<BlockOp> tailBlocks;
    tail->walk([&](BlockOp b) { tailBlocks.push_back(b); });
    ForOp none;
    ForOp tailRoot = laneOutputTiles(tail, tailBlocks, false, none);
    tail = {};
    auto fused = quietly([&] { return fuseSiblings(rw, {newRoot, tailRoot}); });
    if (succeeded(fused))
      return *fused;
    (void)parallelize(tailRoot);
    return newRoot;
  }

  static constexpr int64_t kIntTileRows = 2, kIntTileTokens = 4;
  static constexpr int64_t kStreamPrefetches = 4;

  /// A stack buffer of a register tile (partial sums) stays in registers
  /// only where every index into it is a constant: the serial loops with
  /// constant extents that index one are unrolled. So are those that choose
  /// a bit field (a shift's amount): a constant shift of bytes in vector
  /// lanes is an instruction or two, a variable one a sequence.
  void unrollRegisterTiles(func::FuncOp fn) {
    SmallVector<ForOp> loops;
    fn->walk([&](ForOp l) {
      if (l.getKind() == LoopKind::serial && extentOf(l) &&
          (indexesStackBuffer(l) || selectsBitFields(l)) &&
          !l->hasAttr(kKeepLoop))
        loops.push_back(l);
    });
    for (ForOp l : loops)
      (void)quietly([&] { return unroll(l); });
    fn->walk([&](ForOp l) { l->removeAttr(kKeepLoop); });
  }

  /// Marks a loop that indexes a stack buffer but stays a loop
  /// (unrollRegisterTiles leaves it, in the nest and in the copies of its
  /// schedule): the tiles of rows of a blocked reduction
  /// (blockReductionForL1), which index their partials, and the steps of a
  /// reduction over a staged tile of activations (laneOutputTiles).
  static constexpr StringLiteral kKeepLoop = "llmc.keep_loop";
  void keepLoop(ForOp l) { l->setAttr(kKeepLoop, rw.getUnitAttr()); }

  /// A prompt's quantized products run, per group of weight rows, every
  /// token over the same weight bytes, and unpack them for each (nibbles
  /// shifted and masked, 6-bit scales assembled, f16 scales widened): the
  /// operand of each widening (ext) that is computed from loads and holds
  /// still across a loop of run-time extent (the tokens) is computed once,
  /// before that loop, for the iterations of the loops inside it that it
  /// uses (hoistValue), into a stack buffer the product then reads. The
  /// buffers of one loop together stay within half of L1 (the activations
  /// stream through the rest); a row group too long for that keeps its
  /// unpacking per token.
  void hoistUnpacking(func::FuncOp fn) {
    SmallVector<BlockOp> blocks;
    fn.walk([&](BlockOp b) { blocks.push_back(b); });
    DenseMap<Operation *, int64_t> held; // bytes hoisted before each loop
    for (BlockOp block : blocks) {
      SmallVector<ForOp> loops = getLoops(block);
      // The loop whose iterations each hold the value still: the one
      // around the outermost loop of a run-time extent.
      ForOp at;
      for (unsigned i = 1; i < loops.size() && !at; ++i)
        if (!extentOf(loops[i]))
          at = loops[i - 1];
      if (!at)
        continue;
      // One widening at a time: a hoist takes away the ops only its value
      // used, which may have held another's.
      // An integer's conversion to f32 is hoisted with the value (its
      // lanes then a load, where the narrow integer took a widening and a
      // conversion per use: Q4_K's mins, f32 products).
      DenseSet<Operation *> tried;
      for (;;) {
        Operation *ext = nullptr;
        // (Conversions first: once their operand's widening is hoisted,
        // they would read the hoisted buffer, written under the loop.)
        SmallVector<Operation *> candidates = getIntToFloats(block);
        llvm::append_range(candidates, getWidenings(block));
        for (Operation *op : candidates) {
          Operation *d = op->getOperand(0).getDefiningOp();
          if (!tried.contains(op) && d &&
              d->getBlock() == block.getBodyBlock() &&
              !isa<affine::AffineLoadOp>(d)) {
            ext = op;
            break;
          }
        }
        if (!ext)
          break;
        tried.insert(ext);
        Value v = isa<arith::UIToFPOp, arith::SIToFPOp>(ext)
                      ? ext->getResult(0)
                      : ext->getOperand(0);
        int64_t bytes = 0;
        if (failed(hoistValue(rw, block, v, at, /*quiet=*/true, &bytes)))
          continue;
        int64_t &total = held[at.getOperation()];
        if (total + bytes > target.l1d / 2)
          continue;
        if (succeeded(hoistValue(rw, block, v, at, /*quiet=*/true)))
          total += bytes;
      }
    }
  }

  /// Decode reads every weight once per token: together far more than the
  /// caches hold, each a stream from memory. A core that computes on what
  /// it loads keeps too few loads in flight to stream at the memory's rate
  /// (its reorder window holds an iteration or two), so a serial loop whose
  /// iterations read consecutive runs of a buffer, each its own run (the
  /// blocks of an interleaved weight's row group), fetches target.prefetch
  /// bytes ahead: per iteration, the run that many bytes further
  /// (tl.prefetch). The outermost such loop of each buffer gets it, for
  /// buffers of at least kStreamPrefetches times the distance (shorter ones
  /// end before a prefetch pays).
  void prefetchStreams(func::FuncOp fn) {
    if (!decode)
      return prefetchStrided(fn);
    // Serial loops first; then the parallel loops, for the buffers no loop
    // inside or around them streams (a dense weight that `llmc tune` gave a
    // distance and tiles of rows, t2/t4, the parallel loop's iterations:
    // each thread runs a range of consecutive iterations, so fetching ahead
    // stays mostly in its range).
    SmallVector<ForOp> loops;
    for (LoopKind kind : {LoopKind::serial, LoopKind::parallel})
      fn->walk<WalkOrder::PreOrder>([&](ForOp l) {
        if (l.getKind() == kind)
          loops.push_back(l);
      });
    DenseMap<Value, SmallVector<ForOp>> streamed;
    for (ForOp loop : loops) {
      for (Value buf : readBuffers(loop)) {
        if (llvm::any_of(streamed[buf], [&](ForOp other) {
              return other->isAncestor(loop) || loop->isAncestor(other);
            }))
          continue;
        if (prefetchStream(loop, buf))
          streamed[buf].push_back(loop);
      }
    }
  }

  /// The prefetch distance of `loop`'s nest for `buf`: what `llmc tune`
  /// measured for its key, else the target's. Into L1, none for an f32 or
  /// f16 weight: its GEMV reads a row at a time (a stream the hardware's
  /// prefetcher follows, with little work per byte), and prefetches into
  /// L1 took fill buffers from its loads (znver4: f32 1.4-1.6x without,
  /// one row per step; f16 Llama-110M tg128 1.25x). Into L2 (the default)
  /// every weight gets it: on Emerald Rapids f16 decode went 1.21-1.37x
  /// faster, f32 0.98-1.07x, the quantized rows 1.03-1.17x (which had it
  /// into L1 before; docs/performance.md, step 17).
  int64_t prefetchDistance(ForOp loop, Value buf) {
    Operation *root = loop;
    while (root->getParentOp() && !isa<func::FuncOp>(root->getParentOp()))
      root = root->getParentOp();
    if (auto key = root->getAttrOfType<StringAttr>(kTuneAttr)) {
      ScheduleChoice c = tuning.lookup(key.getValue());
      if (c.prefetchKiB >= 0)
        return c.prefetchKiB * 1024;
    }
    if (MemRefType weight = weightView(buf);
        target.prefetchLevel == 1 && weight &&
        (weight.getElementType().isF32() || weight.getElementType().isF16()))
      return 0;
    return target.prefetch;
  }

  /// The buffers the blocks inside `loop` read, in order of first read.
  static SetVector<Value> readBuffers(ForOp loop) {
    SetVector<Value> buffers;
    loop->walk([&](BlockOp b) {
      for (Value buf : b.getReads())
        buffers.insert(buf);
    });
    return buffers;
  }

  /// The reads of `buf` inside `loop` as one linear element offset (the
  /// buffer row-major, its leading size possibly dynamic): `outer`, the
  /// terms of values from outside the loops inside `loop` (`ab`'s dims; the
  /// same for every read, else none), and [lo, hi], what constants and the
  /// loops inside add to it; `coeff`, outer's multiple of loop's variable.
  struct LinearReads {
    AffineIndexBuilder ab;
    AffineExpr outer;
    int64_t lo = INT64_MAX, hi = INT64_MIN, coeff = 0, elementBytes = 1;
  };
  static std::optional<LinearReads> linearReads(ForOp loop, Value buf) {
    auto type = dyn_cast<MemRefType>(buf.getType());
    if (!type || !type.getLayout().isIdentity() ||
        type.getElementTypeBitWidth() % 8 ||
        llvm::any_of(type.getShape().drop_front(), ShapedType::isDynamic))
      return std::nullopt;
    LinearReads r{AffineIndexBuilder(loop->getParentOfType<func::FuncOp>()),
                  AffineExpr()};
    r.elementBytes = type.getElementTypeBitWidth() / 8;
    AffineIndexBuilder &ab = r.ab;
    AffineExpr iv = ab.dim(loop.getInductionVar());
    std::optional<AffineExpr> outer;
    bool ok = true;
    loop->walk([&](BlockOp b) {
      for (auto [read, attr] : llvm::zip(b.getReads(), b.getReadMaps())) {
        if (read != buf || !ok)
          continue;
        auto exprs =
            ab.compose(cast<AffineMapAttr>(attr).getValue(), b.getIterValues());
        if (!exprs) {
          ok = false;
          return;
        }
        AffineExpr linear = getAffineConstantExpr(0, loop.getContext());
        int64_t stride = 1;
        for (int64_t d = type.getRank() - 1; d >= 0; --d) {
          linear = linear + (*exprs)[d] * stride;
          if (d > 0)
            stride *= type.getDimSize(d);
        }
        // Split into the inner loops' part (its range) and the rest.
        unsigned numDims = ab.dims.size();
        AffineExpr rest = linear;
        int64_t minInner = 0, maxInner = 0;
        for (unsigned d = 0; d < numDims; ++d) {
          auto inner = dyn_cast<BlockArgument>(ab.dims[d]);
          auto l = inner ? dyn_cast<ForOp>(inner.getOwner()->getParentOp())
                         : ForOp();
          if (!l || l == loop || !loop->isAncestor(l))
            continue;
          auto coeff = linearCoefficient(linear, d, numDims);
          auto extent = extentOf(l);
          if (!coeff || !extent) {
            ok = false;
            return;
          }
          (*coeff < 0 ? minInner : maxInner) += *coeff * (*extent - 1);
          rest = rest.replace(getAffineDimExpr(d, loop.getContext()),
                              getAffineConstantExpr(0, loop.getContext()));
        }
        rest = simplifyAffineExpr(rest, numDims, 0);
        int64_t constant = 0;
        if (auto c = dyn_cast<AffineConstantExpr>(rest))
          constant = c.getValue();
        else if (auto add = dyn_cast<AffineBinaryOpExpr>(rest);
                 add && add.getKind() == AffineExprKind::Add)
          if (auto c = dyn_cast<AffineConstantExpr>(add.getRHS())) {
            constant = c.getValue();
            rest = add.getLHS();
          }
        if (isa<AffineConstantExpr>(rest))
          rest = getAffineConstantExpr(0, loop.getContext());
        if (outer && *outer != rest) {
          ok = false;
          return;
        }
        outer = rest;
        r.lo = std::min(r.lo, constant + minInner);
        r.hi = std::max(r.hi, constant + maxInner);
      }
    });
    if (!ok || !outer)
      return std::nullopt;
    auto coeff = linearCoefficient(*outer, cast<AffineDimExpr>(iv).getPosition(),
                                   ab.dims.size());
    if (!coeff)
      return std::nullopt;
    r.outer = *outer;
    r.coeff = *coeff;
    return r;
  }

  /// A tl.prefetch of `buf` at the reads' offset `r.outer + r.lo` plus
  /// `extra` (over `extraOperands`, dims after r.ab's), `distance` bytes
  /// ahead, `bytes` long, at the start of `body`.
  void emitPrefetch(Block *body, Location loc, Value buf, const LinearReads &r,
                    AffineExpr extra, ValueRange extraOperands,
                    int64_t distance, int64_t bytes) {
    MLIRContext *ctx = buf.getContext();
    AffineExpr at = r.outer + r.lo;
    SmallVector<Value> operands;
    SmallVector<AffineExpr> renumber;
    for (unsigned d = 0; d < r.ab.dims.size(); ++d) {
      renumber.push_back(getAffineDimExpr(operands.size(), ctx));
      if (at.isFunctionOfDim(d))
        operands.push_back(r.ab.dims[d]);
    }
    at = at.replaceDims(renumber);
    SmallVector<AffineExpr> shift;
    for (unsigned d = 0; d < extraOperands.size(); ++d)
      shift.push_back(getAffineDimExpr(operands.size() + d, ctx));
    at = at + extra.replaceDims(shift);
    llvm::append_range(operands, extraOperands);
    OpBuilder b = OpBuilder::atBlockBegin(body);
    Value offset = affine::AffineApplyOp::create(
        b, loc, AffineMap::get(operands.size(), 0, at), operands);
    PrefetchOp::create(b, loc, buf, offset, distance, bytes, target.cacheLine,
                       target.prefetchLevel);
  }

  /// prefetchStreams for one loop and buffer: whether it applied.
  bool prefetchStream(ForOp loop, Value buf) {
    auto type = dyn_cast<MemRefType>(buf.getType());
    if (!type || !type.hasStaticShape())
      return false;
    int64_t distance = prefetchDistance(loop, buf);
    if (distance <= 0)
      return false;
    auto step = getConstantIntValue(loop.getStep());
    if (!step || *step <= 0)
      return false;
    std::optional<LinearReads> r = linearReads(loop, buf);
    if (!r ||
        type.getNumElements() * r->elementBytes < kStreamPrefetches * distance)
      return false;
    // One iteration's run is the next after the previous iteration's.
    int64_t run = (r->hi - r->lo + 1) * r->elementBytes;
    if (r->coeff * *step * r->elementBytes != run || run < target.cacheLine)
      return false;
    // Spread over the iterations of the loops inside, a part each.
    MLIRContext *ctx = loop.getContext();
    int64_t lines = llvm::divideCeil(run, target.cacheLine);
    SmallVector<ForOp> spread = spreadLoops(loop, buf, lines);
    int64_t partBytes =
        llvm::divideCeil(lines, tripProduct(spread)) * target.cacheLine;
    AffineExpr part = getAffineConstantExpr(0, ctx);
    SmallVector<Value> partOperands;
    for (ForOp l : spread) {
      part = part * *extentOf(l) + getAffineDimExpr(partOperands.size(), ctx);
      partOperands.push_back(l.getInductionVar());
    }
    emitPrefetch(spread.empty() ? loop.getBody() : spread.back().getBody(),
                 loop.getLoc(), buf, *r, part * (partBytes / r->elementBytes),
                 partOperands, distance, spread.empty() ? run : partBytes);
    return true;
  }

  /// A prompt's loop over its tokens reads, besides the rows it streams,
  /// a few lines per token of other rows (a matmul's epilogue: the gate's
  /// row for SiLU x up, the residual's), a row apart: kStridedMin bytes or
  /// more, farther than a hardware prefetcher follows (Intel's stride
  /// prefetcher: 2 KiB), so each is a miss the long iteration waits for
  /// (Qwen3-0.6B's up projection: 13 % of its samples on the load of the
  /// gate, 12 KiB a token apart). A serial loop with at least
  /// kStridedMinTrips iterations (or a dynamic count) whose reads of a
  /// buffer move by such a stride and span at most kStridedMaxLines lines
  /// an iteration fetches those lines kStridedAhead iterations ahead (2
  /// and 4 measured on that projection: its time against the gate's,
  /// which reads no such row, went from 1.36-1.43x to 1.09-1.11x and
  /// 1.09-1.10x). Not at `prefetch=0`.
  static constexpr int64_t kStridedMin = 2048, kStridedMaxLines = 4,
                           kStridedAhead = 4, kStridedMinTrips = 8;
  void prefetchStrided(func::FuncOp fn) {
    if (target.prefetch <= 0)
      return;
    SmallVector<ForOp> loops;
    fn->walk([&](ForOp l) {
      auto trips = extentOf(l);
      if (l.getKind() == LoopKind::serial &&
          (!trips || *trips >= kStridedMinTrips))
        loops.push_back(l);
    });
    for (ForOp loop : loops) {
      auto step = getConstantIntValue(loop.getStep());
      if (!step || *step <= 0)
        continue;
      for (Value buf : readBuffers(loop)) {
        std::optional<LinearReads> r = linearReads(loop, buf);
        if (!r)
          continue;
        int64_t stride = r->coeff * *step * r->elementBytes;
        int64_t run = (r->hi - r->lo + 1) * r->elementBytes;
        if (stride < kStridedMin || run > kStridedMaxLines * target.cacheLine)
          continue;
        emitPrefetch(loop.getBody(), loop.getLoc(), buf, *r,
                     getAffineConstantExpr(0, loop.getContext()), {},
                     kStridedAhead * stride, run);
      }
    }
  }

  /// The loops a prefetch of `lines` cache lines per iteration of `loop`
  /// spreads over, outermost first: each the first loop in the body of the
  /// one before (of `loop`'s, for the first), serial or unrolled, of
  /// constant extent, reading `buf`, while their iterations together are
  /// at most `lines`. Each iteration of the last fetches its part of the
  /// lines. Issued at once, more prefetches than the core has fill buffers
  /// stall it with nothing to compute until the memory answers, where one
  /// or two among the products keep both going (a C probe streaming
  /// 512 MiB with two vector operations a line, Emerald Rapids: 15.5 GB/s
  /// with a prefetch every line, 11.2 with 52 at a time).
  static SmallVector<ForOp> spreadLoops(ForOp loop, Value buf, int64_t lines) {
    SmallVector<ForOp> spread;
    int64_t parts = 1;
    Block *body = loop.getBody();
    while (true) {
      auto it =
          llvm::find_if(*body, [](Operation &op) { return isa<ForOp>(op); });
      if (it == body->end())
        break;
      auto inner = cast<ForOp>(*it);
      auto extent = extentOf(inner);
      if (!extent || *extent < 2 || parts * *extent > lines ||
          (inner.getKind() != LoopKind::serial &&
           inner.getKind() != LoopKind::unrolled))
        break;
      bool reads = inner
                       ->walk([&](BlockOp blk) {
                         return llvm::is_contained(blk.getReads(), buf)
                                    ? WalkResult::interrupt()
                                    : WalkResult::advance();
                       })
                       .wasInterrupted();
      if (!reads)
        break;
      spread.push_back(inner);
      parts *= *extent;
      body = inner.getBody();
    }
    return spread;
  }

  /// Whether a block inside `loop` shifts by an amount computed from the
  /// loop's variable.
  static bool selectsBitFields(ForOp loop) {
    WalkResult r = loop->walk([&](BlockOp b) {
      Block *body = b.getBodyBlock();
      for (auto [arg, iter] :
           llvm::zip(body->getArguments(), b.getIterValues())) {
        if (!isComputedFrom(iter, loop.getInductionVar(), loop))
          continue;
        Value bitsOf = arg;
        WalkResult shifts = b->walk([&](Operation *op) {
          if (isa<arith::ShRUIOp, arith::ShRSIOp, arith::ShLIOp>(op) &&
              isComputedFrom(op->getOperand(1), bitsOf, b))
            return WalkResult::interrupt();
          return WalkResult::advance();
        });
        if (shifts.wasInterrupted())
          return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    return r.wasInterrupted();
  }

  static bool indexesStackBuffer(ForOp loop) {
    WalkResult r = loop->walk([&](BlockOp b) {
      auto check = [&](OperandRange buffers, ArrayAttr maps) {
        for (auto [buf, attr] : llvm::zip(buffers, maps)) {
          if (!buf.getDefiningOp<memref::AllocaOp>())
            continue;
          AffineMap map = cast<AffineMapAttr>(attr).getValue();
          for (unsigned d = 0; d < map.getNumDims(); ++d)
            if (map.isFunctionOfDim(d) &&
                isComputedFrom(b.getIterValues()[d], loop.getInductionVar(),
                               loop))
              return true;
        }
        return false;
      };
      return check(b.getReads(), b.getReadMaps()) ||
                     check(b.getWrites(), b.getWriteMaps())
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    });
    return r.wasInterrupted();
  }

  /// weightsStationary's register tile of (tokens `root`, rows, blocks),
  /// a perfect nest; returns the new root (where a primitive refuses, the
  /// nest as far as it got, still whole).
  ForOp tileIntDot(ForOp root, ForOp &tail) {
    auto tokens = quietly([&] { return splitPeel(rw, root, {kIntTileTokens}); });
    if (failed(tokens))
      return root;
    tail = tokens->tail;
    ForOp t0 = tokens->loops[0], t1 = tokens->loops[1];
    ForOp rows = onlyLoopIn(t1);
    auto rowParts = quietly([&] { return split(rw, rows, {-1, kIntTileRows}); });
    if (failed(rowParts))
      return t0;
    ForOp r0 = (*rowParts)[0], r1 = (*rowParts)[1];
    ForOp blk = onlyLoopIn(r1);
    auto order =
        quietly([&] { return reorder(rw, {r0, t0, blk, r1, t1}); });
    if (failed(order))
      return t0;
    for (ForOp l : ArrayRef<ForOp>(*order).take_back(2))
      (void)quietly([&] { return unroll(l); });
    return (*order)[0];
  }

  /// The stack buffers allocated directly in `loop`'s body.
  static SmallVector<Value> stackBuffersIn(ForOp loop) {
    SmallVector<Value> buffers;
    for (Operation &op : loop.getBody()->without_terminator())
      if (auto alloca = dyn_cast<memref::AllocaOp>(&op))
        buffers.push_back(alloca.getResult());
    return buffers;
  }

  /// weightsStationary's register tile where each token keeps its outputs'
  /// partial sums in stack buffers of its own (the interleaved Q8_0 and
  /// Q6_K products: vec_dot's 8 lanes per row, for the rows in vector
  /// lanes), the loop over the weight's blocks inside the token loop `t`
  /// with the blocks' integer sums in a stack buffer per block (Q6_K's
  /// first made per lane, lanesOutermost):
  ///   t { lanes; init; blk { isum; i1 { dot }; i1 { scale } }; out }
  /// -> t0 { lanes[T]; t1 { init };
  ///         blk { isum[T]; i1 { t1 { dot; scale } } }; t1 { out } }
  /// so one load of a chunk of the weight (and Q6_K's unpacking of it)
  /// serves T tokens, each output's sums in the order of its own dot
  /// product. Only where the block's loops fuse into one over the chunks
  /// (each chunk's integer sum then lives for one chunk, not the block:
  /// a tile of sums over the whole block spilled, -20 %). T is as many
  /// tokens as the lanes of their partial sums leave vector registers for
  /// the weight chunk, the activations and the scales (a quarter of the
  /// registers); the tokens after the last whole tile go to `tail`. Where a
  /// primitive refuses, the nest stays as far as it got (each step keeps it
  /// whole).
  void tileTokenLanes(ForOp t, ForOp &tail) {
    if (extentOf(t))
      return;
    int64_t laneBytes = 0;
    for (Value buf : stackBuffersIn(t)) {
      auto type = cast<MemRefType>(buf.getType());
      if (!type.hasStaticShape())
        return;
      laneBytes += type.getNumElements() * type.getElementTypeBitWidth() / 8;
    }
    ForOp blk;
    for (Operation &op : t.getBody()->without_terminator())
      if (auto l = dyn_cast<ForOp>(&op); l && !stackBuffersIn(l).empty()) {
        if (blk)
          return;
        blk = l;
      }
    if (!laneBytes || !blk)
      return;
    int64_t freeBytes = int64_t(target.vectorRegisters) * 3 / 4 * vectorBytes;
    int64_t tile = std::min<int64_t>(freeBytes / laneBytes, kIntTileTokens);
    if (tile < 2)
      return;
    // Q6_K's lane sums then live through a lane's runs, a register per
    // token more, which the tile does not count: 3 tokens (some spills)
    // measured faster than 2 (znver4, Qwen3-0.6B's Q6_K ffn_down in
    // prefill: 0.54 of its predicted time against 0.58-0.63 and 0.63-0.65
    // without a tile). A block whose lanes moved only part of the way
    // keeps its tokens one at a time.
    if (lanesOutermost(blk) == Moved::partly)
      return;
    SmallVector<ForOp> chunks(blk.getBody()->getOps<ForOp>());
    if (chunks.empty() ||
        (chunks.size() > 1 &&
         failed(quietly([&] { return fuseSiblings(rw, chunks); }))))
      return;
    auto tokens = quietly([&] { return splitPeel(rw, t, {tile}); });
    if (failed(tokens))
      return;
    tail = tokens->tail;
    sinkTile(tokens->loops[1]);
  }

  /// Moves the token loop `t1` of a tile inward: its stack buffers
  /// expanded (a slice per token), through the loops perfectly nested in
  /// it, and where its body holds several nests, distributed over them and
  /// each part moved on. It stops around nests of one block each (a
  /// block's own lanes).
  void sinkTile(ForOp t1) {
    for (Value buf : stackBuffersIn(t1))
      if (failed(quietly([&] { return expand(rw, buf, t1); })))
        return;
    auto oneBlock = [](ForOp l) {
      int n = 0;
      l->walk([&](BlockOp) { ++n; });
      return n == 1;
    };
    if (llvm::all_of(t1.getBody()->getOps<ForOp>(), oneBlock))
      return;
    // Its iterations share nothing now (each token's buffers its own
    // slice): any loop may move around it.
    if (failed(quietly([&] { return verifyIndependent(t1, "tile"); })))
      return;
    if (ForOp inner = onlyLoopIn(t1); inner && perfectlyAround(t1, inner)) {
      auto moved = quietly([&] { return reorder(rw, {inner, t1}); });
      if (succeeded(moved))
        sinkTile((*moved)[1]);
      return;
    }
    auto parts = quietly([&] { return distribute(rw, t1); });
    if (failed(parts))
      return;
    for (ForOp part : *parts)
      sinkTile(part);
  }

  /// How far lanesOutermost got.
  enum class Moved { no, partly, fully };

  /// A blocks loop `blk` whose integer sums (a stack buffer of lanes x
  /// rows) are summed by a nest of runs around the lanes and scaled by a
  /// loop over the lanes after it (Q6_K: runs (hf, qa, qb) around lanes
  /// (l1, l0a)):
  ///   blk { isum; hf { qa { qb { l1 { l0a { dot; sum } } } } };
  ///         i1 { scale } }
  /// -> blk { isum; l1 { l0a { hf { qa { qb { dot; sum } } }; scale } } }
  /// so that each lane's sums live for one lane's runs, not the whole
  /// block. Integer sums (an add into the sums, the other blocks there
  /// writing only stack buffers of the innermost loop) in another order:
  /// exact.
  Moved lanesOutermost(ForOp blk) {
    SmallVector<ForOp> loops(blk.getBody()->getOps<ForOp>());
    SmallVector<Value> buffers = stackBuffersIn(blk);
    if (loops.size() != 2 || buffers.size() != 1 || !extentOf(loops[1]))
      return Moved::no;
    Value sums = buffers[0];
    if (!cast<MemRefType>(sums.getType()).getElementType().isInteger(32))
      return Moved::no;
    SmallVector<ForOp> chain = perfectChain(loops[0]);
    // The block of the innermost loop that adds into the sums, and the
    // loops of the chain its index into them uses (by their coefficient,
    // largest first).
    BlockOp sum;
    bool privateWrites = true;
    chain.back()->walk([&](BlockOp b) {
      if (b.getWrites().size() == 1 && b.getWrites()[0] == sums) {
        sum = b;
        return;
      }
      for (Value w : b.getWrites()) {
        auto alloca = w.getDefiningOp<memref::AllocaOp>();
        privateWrites &= alloca && chain.back()->isAncestor(alloca);
      }
    });
    if (!sum || !privateWrites)
      return Moved::no;
    FailureOr<ReductionUpdate> update = matchReductionUpdate(sum);
    if (failed(update) || update->kind != arith::AtomicRMWKind::addi)
      return Moved::no;
    AffineIndexBuilder ab(blk, /*opaqueInside=*/true);
    for (ForOp l : chain)
      ab.dim(l.getInductionVar());
    auto exprs = ab.compose(
        cast<AffineMapAttr>(sum.getWriteMaps()[0]).getValue(),
        sum.getIterValues());
    if (!exprs || exprs->size() != 1)
      return Moved::no;
    SmallVector<std::pair<int64_t, ForOp>> lanes;
    SmallVector<ForOp> runs;
    for (auto [d, l] : llvm::enumerate(chain)) {
      if (!exprs->front().isFunctionOfDim(d)) {
        runs.push_back(l);
        continue;
      }
      auto c = linearCoefficient(exprs->front(), d, ab.dims.size());
      if (!c || !extentOf(l))
        return Moved::no;
      lanes.push_back({*c, l});
    }
    int64_t count = 1;
    for (auto &[c, l] : lanes)
      count *= *extentOf(l);
    if (lanes.empty() || runs.empty() || count != *extentOf(loops[1]))
      return Moved::no;
    llvm::sort(lanes, [](auto &x, auto &y) { return x.first > y.first; });
    SmallVector<ForOp> order;
    SmallVector<int64_t> factors;
    for (auto &[c, l] : lanes) {
      order.push_back(l);
      factors.push_back(*extentOf(l));
    }
    llvm::append_range(order, runs);
    // Each step keeps the nest whole; the first that refuses ends it.
    auto moved = quietly([&] { return reorder(rw, order); });
    if (failed(moved))
      return Moved::no;
    auto scale = factors.size() == 1
                     ? FailureOr<SmallVector<ForOp>>(SmallVector<ForOp>{loops[1]})
                     : quietly([&] { return split(rw, loops[1], factors); });
    if (failed(scale))
      return Moved::partly;
    for (size_t i = 0; i < factors.size(); ++i)
      if (failed(quietly([&] {
            return fuseSiblings(rw, {(*moved)[i], (*scale)[i]});
          })))
        return Moved::partly;
    return Moved::fully;
  }

  /// Threads: the outermost loop common to every block of the nest that
  /// runs more than once and binds no reduction, when the nest is big
  /// enough to pay for starting threads. Whether a loop went on the
  /// threads. With `serialOnly` (a scheduled nest), only a serial loop.
  bool parallelize(ForOp root, bool serialOnly = false) {
    int64_t work = 1;
    root->walk([&](ForOp l) {
      std::optional<int64_t> e = extentOf(l);
      work = std::min<int64_t>(work * (e ? *e : 64), int64_t(1) << 40);
    });
    if (work < 16384)
      return false;
    auto threads = [&](ForOp l) {
      return (!serialOnly || l.getKind() == LoopKind::serial) &&
             succeeded(quietly([&] { return parallel(l); }));
    };
    for (ForOp l = root; l;) {
      std::optional<int64_t> e = extentOf(l);
      if (!e || *e > 1) {
        if (ForOp parts = partsOutermost(l, serialOnly))
          return threads(parts) || llvm::any_of(loopsIn(parts), [&](ForOp i) {
                   return extentOf(i).value_or(0) > 1 && threads(i);
                 });
        if (threads(l))
          return true;
        // A loop that carries state through a sequence of nests (flash
        // attention's tiles): each nest gets its own threads.
        if (overNests(l)) {
          bool any = false;
          // (Collected first: a nest's rules may replace it by several.)
          for (ForOp inner : loopsIn(l))
            any |= parallelize(inner, serialOnly);
          return any;
        }
        // The outermost candidate carries something, or no analysis tells
        // its iterations apart (a KV store's positions, written at a
        // stride): a loop perfectly nested below it with an iteration per
        // core whose iterations are independent (the heads) goes
        // outermost, on the threads.
        SmallVector<ForOp> chain = {l};
        for (ForOp inner = onlyLoopIn(l);
             inner && perfectlyAround(chain.back(), inner);
             inner = onlyLoopIn(inner)) {
          chain.push_back(inner);
          std::optional<int64_t> ie = extentOf(inner);
          if (!ie || *ie < std::max<int64_t>(target.cores, 2) ||
              (serialOnly && inner.getKind() != LoopKind::serial) ||
              failed(quietly([&] {
                return verifyIndependent(inner, "parallel");
              })))
            continue;
          SmallVector<ForOp> order = {inner};
          order.append(chain.begin(), chain.end() - 1);
          auto moved = quietly([&] { return reorder(rw, order); });
          return succeeded(moved) && threads((*moved)[0]);
        }
        return false;
      }
      l = onlyLoopIn(l);
    }
    return false;
  }

  /// Decode's rows split into parts (flash attention's kv_splits): a loop
  /// of fewer iterations than cores (the KV heads) whose first nest is the
  /// loop over the parts of its rows' positions (it holds a loop over
  /// tiles). The loop is distributed over its body and the parts' loop
  /// moved outside its first copy, so the threads take the parts (each
  /// every KV head's share of its positions); the merge's nests after it,
  /// over the KV heads again, fuse back into one, a nest of its own
  /// (`rethread` gives it threads). Returns the loop for the threads (the
  /// heads' around the parts where the interchange fails), or null where
  /// this does not apply (the loop unchanged).
  ForOp partsOutermost(ForOp l, bool serialOnly) {
    std::optional<int64_t> e = extentOf(l);
    if (!decode || serialOnly || !e || *e >= target.cores)
      return {};
    SmallVector<ForOp> inner = loopsIn(l);
    std::optional<int64_t> parts =
        inner.size() >= 2 ? extentOf(inner.front()) : std::nullopt;
    if (!parts || *parts < 2 ||
        llvm::none_of(loopsIn(inner.front()), overNests))
      return {};
    auto copies = quietly([&] { return distribute(rw, l); });
    if (failed(copies))
      return {};
    // (From here on `l` is gone: the copies stand for it.)
    ForOp first = copies->front();
    SmallVector<ForOp> rest(copies->begin() + 1, copies->end());
    (void)quietly([&] { return fuseSiblings(rw, rest); });
    ForOp partsLoop = onlyLoopIn(first);
    if (!partsLoop)
      return first;
    auto moved = quietly([&] { return reorder(rw, {partsLoop, first}); });
    return succeeded(moved) ? (*moved)[0] : first;
  }

  /// A block's rules may move the loop on the threads inside others (a GQA
  /// group's heads into a register tile, inside the positions of p.V's
  /// reduction): a parallel region per position is never what the threads
  /// were for. Such a loop goes back to serial; a nest left with no loop on
  /// the threads gets the outermost serial loop its schedule allows (MQA's
  /// decode: the positions of q.k, the outputs of p.V). A loop over several
  /// nests (flash attention's tiles of positions, a few per row) may hold
  /// parallel loops: a region per tile and step.
  void rethread(ForOp root) {
    bool threaded = false;
    SmallVector<ForOp> inner;
    root->walk([&](ForOp l) {
      if (l.getKind() != LoopKind::parallel)
        return;
      for (Operation *p = l->getParentOp(); p != root->getParentOp();
           p = p->getParentOp())
        if (auto o = dyn_cast<ForOp>(p);
            o && o.getKind() != LoopKind::parallel &&
            !getConstantIntValue(o.getUpperBound()) && !overNests(o)) {
          inner.push_back(l);
          return;
        }
      threaded = true;
    });
    for (ForOp l : inner)
      l.setKind(LoopKind::serial);
    if (!threaded && (nestThreaded || !inner.empty()))
      (void)parallelize(root, /*serialOnly=*/true);
  }

  void scheduleBlock(BlockOp block) {
    if (!block->getParentOfType<ForOp>() || tiled.contains(block))
      return;
    if (!block.hasReduction())
      return scheduleSpatial(block);
    // Outputs innermost (the rows of an interleaved weight's steps, each
    // its own chain): those in lanes, the reduction around them unchanged.
    {
      SmallVector<ForOp> loops = getLoops(block);
      auto [sp, red] = bindsKinds(block, loops.back());
      if (sp && !red) {
        scheduleSpatial(block);
        // A sum into what the output holds (flash attention's p.V, values
        // by position) keeps its outputs in registers.
        ForOp lanes = getLoops(block).back();
        FailureOr<ReductionUpdate> update = matchReductionUpdate(block);
        if (lanes.getKind() == LoopKind::vectorized && succeeded(update))
          accumulateInRegisters(block, lanes, *update);
        return;
      }
    }
    FailureOr<ReductionUpdate> update = matchReductionUpdate(block);
    if (failed(update))
      return;
    Type acc =
        cast<MemRefType>(block.getWrites()[0].getType()).getElementType();
    if (acc.isInteger(32))
      return scheduleIntDot(block);
    if (acc.isF32())
      return scheduleReduction(block, *update);
    // f64 sums stay serial, as ggml adds them.
  }

  /// Elementwise: the innermost loop in vector lanes. A transposing copy
  /// (the values into their [dim][position] cache) writes along another
  /// loop: that one moves innermost, into lanes, its stores whole vectors
  /// and its reads gathered lane by lane (each a cache line and a page
  /// apart in the other order: lines and page walks per element).
  void scheduleSpatial(BlockOp block) {
    SmallVector<ForOp> loops = ownLoops(block);
    if (loops.empty() || !vectorFriendly(block))
      return;
    ForOp inner = loops.back();
    Stride s = strideIn(block, inner);
    if (s.writesContiguous && s.readsContiguous) {
      vectorizeLoop(inner, lanes32);
      return;
    }
    if (s.writesContiguous || loops.size() < 2)
      return;
    for (size_t i = loops.size() - 1; i-- > 0;) {
      if (!strideIn(block, loops[i]).writesContiguous)
        continue;
      // (l, the loops inside it) -> (the loops inside it, l).
      SmallVector<ForOp> want(loops.begin() + i + 1, loops.end());
      want.push_back(loops[i]);
      auto moved = quietly([&] { return reorder(rw, want); });
      if (succeeded(moved))
        vectorizeLoop(moved->back(), lanes32);
      return;
    }
  }

  /// Splits `loop` by `lanes` (peeling the remainder) and vectorizes the
  /// lanes; returns the lane loop, or null.
  ForOp vectorizeLoop(ForOp loop, int64_t lanes) {
    std::optional<int64_t> e = extentOf(loop);
    if (e) {
      if (*e < 4)
        return {};
      lanes = std::min(lanes, floorPow2(*e));
    }
    if (e && *e == lanes) {
      if (succeeded(quietly([&] { return vectorize(loop); })))
        return loop;
      return {};
    }
    FailureOr<PeeledSplit> split =
        quietly([&] { return splitPeel(rw, loop, {lanes}); });
    if (failed(split))
      return {};
    ForOp inner = split->loops.back();
    if (failed(quietly([&] { return vectorize(inner); })))
      return {};
    return inner;
  }

  /// Vectorizes the lanes of the partials rfactor made and of their tree,
  /// and unrolls the tile loops around them.
  void finishRFactor(const RFactorResult &rf, unsigned tileLoops,
                     bool tree, int64_t segment = 0, unsigned rfBand = 1) {
    // Vectorizes the `band` innermost loops of `b` (innermost first) and
    // unrolls the `tiles` loops directly around them.
    auto lanesAndTiles = [&](BlockOp b, unsigned band, unsigned tiles) {
      SmallVector<ForOp> loops = getLoops(b);
      unsigned n = loops.size();
      for (unsigned k = 0; k < band && k < n; ++k) {
        ForOp l = loops[n - 1 - k];
        if (l.getKind() != LoopKind::vectorized &&
            extentOf(l).value_or(0) >= 2)
          (void)quietly([&] { return vectorize(l); });
      }
      for (unsigned k = 0; k < tiles && k + band < n; ++k)
        (void)quietly([&] { return unroll(loops[n - 1 - band - k]); });
    };
    lanesAndTiles(rf.rf, rfBand, tileLoops);
    lanesAndTiles(rf.init, 1, tileLoops);
    if (!tree)
      return;
    FailureOr<TreeReduceResult> t =
        quietly([&] { return treeReduce(rw, rf.writeBack, segment); });
    if (failed(t)) {
      unrollAround(rf.writeBack, tileLoops);
      return;
    }
    // A segmented tree loops over the segments too (unrolled).
    unsigned extra = t->final == rf.writeBack ? 1 : 0;
    for (BlockOp level : t->levels)
      lanesAndTiles(level, 1, tileLoops + extra);
    unrollAround(t->final, tileLoops + extra);
  }

  void unrollAround(BlockOp b, unsigned count) {
    SmallVector<ForOp> loops = getLoops(b);
    for (unsigned k = 0; k < count && k < loops.size(); ++k)
      (void)quietly([&] { return unroll(loops[loops.size() - 1 - k]); });
  }

  /// f32 reductions: matmuls register-tiled, others in lanes.
  void scheduleReduction(BlockOp block, const ReductionUpdate &update) {
    SmallVector<ForOp> loops = getLoops(block);
    if (loops.empty())
      return;
    ForOp r = loops.back();
    auto [rSpatial, rReduce] = bindsKinds(block, r);
    if (!rReduce || rSpatial)
      return;
    bool add = update.kind == arith::AtomicRMWKind::addf;
    // The reduction's loops: those binding reduction variables.
    SmallVector<ForOp> reduceLoops, spatialLoops;
    for (ForOp l : loops) {
      auto [sp, red] = bindsKinds(block, l);
      if (red)
        reduceLoops.push_back(l);
      else if (sp)
        spatialLoops.push_back(l);
    }
    Stride st = strideIn(block, r, lanes32);
    if (!st.readsContiguous && reduceLoops.size() == 1) {
      // p.V: the reduction reads across rows; put the innermost spatial
      // loop (contiguous) in lanes instead, the reduction serial around it.
      if (!spatialLoops.empty()) {
        ForOp sp = spatialLoops.back();
        if (r->getParentOp() == sp && tilePositionLanes(block, r, sp, update))
          return;
        lanesAroundReduction(block, r, sp);
      }
      return;
    }
    std::optional<int64_t> e = extentOf(r);
    if (add && reduceLoops.size() == 1) {
      arith::MulFOp mul = productOf(update);
      if (!mul) {
        // A plain sum: one vector's worth summed horizontally (the runs of
        // ggml's soft_max), a longer one in lanes.
        if (e && *e >= 2 && llvm::isPowerOf2_64(*e) && *e <= lanes32)
          lanesFor(block, r, *e, 0, /*fma=*/false);
        else if (!e || *e > lanes32)
          lanesFor(block, r, lanes32, 0, /*fma=*/false);
        return;
      }
      // A matmul is register-tiled (products of 16-bit pairs in the
      // instruction's order where the target has one).
      auto fmaFn = [&](BlockOp b, ForOp l, unsigned t) {
        return fmaLanes(b, l, t);
      };
      auto bf16Fn = [&](BlockOp b, ForOp l, unsigned t) {
        return bf16Lanes(b, l, t);
      };
      if (e && isBF16Product(mul) && target.hasBF16Dot() &&
          tileMatmul(block, spatialLoops, r, *e, decode ? 64 : 32, bf16Fn))
        return;
      // Decode in vec_dot's lanes, prefill in sgemm's (one vector) when the
      // reduction is a multiple of it (as ggml's condition for sgemm).
      if (e && tileMatmul(block, spatialLoops, r, *e,
                          decode ? dotLanes() : lanes32, fmaFn))
        return;
      // Other dot products run ggml's vec_dot order: four vectors of lanes
      // (FMAs), a tree, then the remainder in order; prefill's dynamic ones
      // (p.V) its sgemm order, one vector.
      int64_t lanes = (!e && !decode) ? lanes32 : dotLanes();
      if (e && *e < lanes)
        return vecDotTail(r); // ggml adds short rows in order
      // The heads of a GQA group (q.k, p.V) in a register tile that loads
      // their shared keys or values once.
      // Prefill's p.V tiles 4 outputs too: its accumulators, group x 4
      // vectors, and q.k's, group x its lanes' vectors, must leave half the
      // vector registers for the loads.
      int64_t perHead = (!e && !decode) ? 4 : lanes / lanes32;
      ForOp group = sharedOperandTile(block, spatialLoops,
                                      target.vectorRegisters / 2 / perHead);
      if (!e && !decode &&
          tileDynamicDot(block, spatialLoops, r, lanes, group))
        return;
      if (group && tileGroupDot(block, group, spatialLoops.back(), r, lanes))
        return;
      lanesFor(block, r, lanes, /*tiles=*/0, /*fma=*/true);
      return;
    }
    // Several reduction loops (dequantizing matmuls, the f32 steps of
    // llama.cpp's products): the innermost ones whose lanes fit a vector,
    // factored together; max/min in any order.
    SmallVector<ForOp> chain;
    int64_t product = 1;
    for (auto it = reduceLoops.rbegin(); it != reduceLoops.rend(); ++it) {
      std::optional<int64_t> ext = extentOf(*it);
      // Only through perfectly nested loops: a loop that also runs other
      // blocks (the integer sums an f32 step reads, per block) keeps its
      // order.
      if (!ext || product * *ext > lanes32 ||
          (!chain.empty() && !perfectlyAround(*it, chain.front())))
        break;
      // (Lanes that read strided, such as Q6_K's scales, are gathered.)
      auto [sp, red] = bindsKinds(block, *it);
      if (sp)
        break;
      chain.insert(chain.begin(), *it);
      product *= *ext;
    }
    if (product >= 4 && (product == lanes32 || chain.size() > 1 ||
                         reduceLoops.size() > chain.size())) {
      FailureOr<RFactorResult> rf =
          quietly([&] { return rfactor(rw, block, chain); });
      if (succeeded(rf)) {
        (void)quietly([&] { return contract(rw, rf->rf); });
        vectorizeBand(rf->rf, chain.size());
        finishRFactor(*rf, 0, llvm::isPowerOf2_64(product));
      }
      return;
    }
    // A long or dynamic reduction: lanes of the target's width (a max or
    // min gives the same result in any order).
    if ((e && *e > lanes32) || (!e && !add))
      lanesFor(block, r, lanes32, 0, /*fma=*/false);
  }

  /// The product a sum adds (`acc += a * b`), or null.
  static arith::MulFOp productOf(const ReductionUpdate &update) {
    if (update.kind != arith::AtomicRMWKind::addf || !update.operand)
      return {};
    return update.operand.getDefiningOp<arith::MulFOp>();
  }

  /// The number of iterations of `loops` together (constant extents).
  static int64_t tripProduct(ArrayRef<ForOp> loops) {
    int64_t n = 1;
    for (ForOp l : loops)
      n *= *extentOf(l);
    return n;
  }

  /// The spatial loop `sp` (contiguous) directly around or beside the
  /// reduction `r` in lanes, the reduction serial around it.
  void lanesAroundReduction(BlockOp block, ForOp r, ForOp sp) {
    if (sp->getParentOp() != r->getParentOp() && r->getParentOp() != sp)
      return;
    Stride ss = strideIn(block, sp);
    if (ss.writesContiguous && ss.readsContiguous && succeeded(quietly([&] {
          return reorder(rw, {r, sp});
        })))
      vectorizeLoop(getLoops(block).back(), lanes32);
  }

  /// q.k with the keys by dim (flash attention in the exact mode): the
  /// positions `x` (spatial, of a run-time extent, the keys contiguous
  /// along them) directly around the head dim `r` (the reduction, of a
  /// constant extent). Tiles of vectors of positions move outside the
  /// reduction and accumulate in registers: per element of the head dim one
  /// broadcast of the query and a load of the keys per vector, FMAs into
  /// the tile's own lanes, no horizontal sum (by position, each position's
  /// dot product ended in one). The rows around the positions (rowLoops: a
  /// query tile's, a GQA group's heads) move inside the head dim, each load
  /// of the keys serving all of them: (rows, x, r) -> (x0, r, rows, x1,
  /// x2) with x2 in lanes, 4 vectors per row or as many as half of the
  /// vector registers hold for all rows. The positions after the last
  /// whole tile (none when the lowering rounded them up) keep lanes around
  /// the reduction.
  bool tilePositionLanes(BlockOp block, ForOp r, ForOp x,
                         const ReductionUpdate &update) {
    // The rows around the positions (a query tile's, a GQA group's heads)
    // and the vectors of positions each keeps: 4, or as many as half of
    // the vector registers hold for all rows.
    int64_t budgetVecs = target.vectorRegisters / 2;
    SmallVector<ForOp> rows = rowLoops(block, x, budgetVecs);
    int64_t rowCount = tripProduct(rows);
    int64_t tile =
        std::min<int64_t>(4, floorPow2(budgetVecs / rowCount)) * lanes32;
    std::optional<int64_t> xe = extentOf(x), re = extentOf(r);
    Stride sx = strideIn(block, x);
    if (!re || (xe && *xe < tile) || !productOf(update) ||
        !perfectlyAround(x, r) || !sx.writesContiguous || !sx.readsContiguous)
      return false;
    // The rows inside the positions first (the split's bounds are then
    // computed outside the rows).
    if (!rows.empty()) {
      SmallVector<ForOp> order = {x};
      order.append(rows.begin(), rows.end());
      auto moved = quietly([&] { return reorder(rw, order); });
      if (failed(moved))
        rows.clear();
      else
        x = moved->front();
    }
    FailureOr<PeeledSplit> split =
        quietly([&] { return splitPeel(rw, x, {tile}); });
    if (failed(split))
      return false;
    // From here on the nest has changed: a step that fails leaves the rest
    // as it is, still whole, and reports true.
    BlockOp tail;
    if (split->tail)
      split->tail->walk([&](BlockOp b) { tail = b; });
    ForOp x0 = split->loops[0], x1 = split->loops[1];
    // (x0, x1, rows, r) -> (x0, r, rows, x1)
    SmallVector<ForOp> loops = getLoops(block);
    ForOp rr = loops.back();
    SmallVector<ForOp> order = {x0, rr};
    order.append(loops.end() - 1 - rows.size(), loops.end() - 1);
    order.push_back(x1);
    if (succeeded(quietly([&] { return reorder(rw, order); }))) {
      ForOp lanes = vectorizeLoop(getLoops(block).back(), lanes32);
      if (lanes)
        accumulateInRegisters(block, lanes, update, /*zeroInit=*/true);
    } else {
      loops = getLoops(block);
      lanesAroundReduction(block, loops.back(), loops[loops.size() - 2]);
    }
    if (tail) {
      SmallVector<ForOp> tl = getLoops(tail);
      if (tl.size() >= 2)
        lanesAroundReduction(tail, tl.back(), tl[tl.size() - 2]);
    }
    return true;
  }

  /// A sum of products into an output in memory, the reduction serial
  /// around its outputs' lanes (`laneLoop`, innermost, with constant loops
  /// between it and the reduction: the exact mode's p.V, values by
  /// position): the outputs accumulate in registers, with FMAs, and are
  /// added to the output once after the reduction (rfactor over no lanes),
  /// where each step loaded, added and stored them (the output's buffer
  /// may alias what the step reads, as far as the compiler knows). The
  /// rows around the reduction (rowLoops) move inside it, each load of the
  /// values serving all of them; where the rows' vectors exceed half of
  /// the vector registers, the head dim's vectors that fit stay inside and
  /// the rest goes outside the positions. Only
  /// for a block that adds to what its output holds (no init) or, with
  /// `zeroInit` (q.k's tiles), a sum from 0, and whose accumulators take at
  /// most half of the vector registers. (Not for the other sums with an
  /// init: the llama.cpp mode's interleaved rows keep ggml's order.)
  void accumulateInRegisters(BlockOp block, ForOp laneLoop,
                             const ReductionUpdate &update,
                             bool zeroInit = false) {
    if (!productOf(update) || (block.getInitBlock() && !zeroInit))
      return;
    SmallVector<ForOp> loops = getLoops(block);
    ForOp r;
    int64_t outputs = 1;
    unsigned tiles = 0;
    for (ForOp l : llvm::reverse(loops)) {
      auto [sp, red] = bindsKinds(block, l);
      if (red) {
        r = l;
        break;
      }
      std::optional<int64_t> e = extentOf(l);
      if (!e)
        return;
      outputs *= *e;
      if (l != laneLoop)
        ++tiles;
    }
    int64_t budget = lanes32 * target.vectorRegisters / 2;
    if (!r || outputs > budget)
      return;
    // The rows around the positions (a query tile's, a GQA group's heads)
    // move inside them: each load of the values then serves every row,
    // whose accumulators are independent chains of FMAs (one row's are a
    // chain per vector). Where the rows' vectors would exceed the budget,
    // the vectors of each row that fit stay inside, the rest of the head
    // dim goes outside the positions (its tile loop split).
    int64_t budgetVecs = budget / lanes32;
    int64_t vecs = outputs / extentOf(laneLoop).value_or(lanes32);
    SmallVector<ForOp> rows = rowLoops(block, r, budgetVecs);
    if (!rows.empty()) {
      int64_t rowCount = tripProduct(rows);
      int64_t fit = floorPow2(budgetVecs / rowCount);
      ForOp tile = dyn_cast<ForOp>(laneLoop->getParentOp());
      ForOp outer;
      if (vecs > fit) {
        // (One tile loop of whole multiples of `fit` vectors, directly in
        // the positions' loop.)
        if (tiles != 1 || !tile || tile->getParentOp() != r || vecs % fit)
          return finishAccumulate(block, tiles);
        auto parts = quietly([&] { return split(rw, tile, {-1, fit}); });
        if (failed(parts))
          return finishAccumulate(block, tiles);
        auto moved = quietly([&] { return reorder(rw, {(*parts)[0], r}); });
        if (failed(moved))
          return finishAccumulate(block, tiles);
        outer = moved->front();
        r = (*moved)[1];
      }
      SmallVector<ForOp> order;
      if (outer)
        order.push_back(outer);
      order.push_back(r);
      order.append(rows.begin(), rows.end());
      if (succeeded(quietly([&] { return reorder(rw, order); })))
        tiles += rows.size();
    }
    finishAccumulate(block, tiles);
  }

  /// accumulateInRegisters' rfactor over no lanes, FMAs, lanes and tiles
  /// (`tiles` loops between the reduction and the lanes). Its accumulators
  /// fit the budget: the rows and the head dim's vectors inside the
  /// reduction were chosen so.
  void finishAccumulate(BlockOp block, unsigned tiles) {
    FailureOr<RFactorResult> rf =
        quietly([&] { return rfactor(rw, block, {}); });
    if (failed(rf))
      return;
    (void)quietly([&] { return contract(rw, rf->rf); });
    finishRFactor(*rf, tiles, /*tree=*/false);
    // The write-back's lanes and tiles, as the partials'.
    vectorizeBand(rf->writeBack, 1);
    SmallVector<ForOp> wb = getLoops(rf->writeBack);
    for (unsigned k = 1; k <= tiles && k < wb.size(); ++k)
      (void)quietly([&] { return unroll(wb[wb.size() - 1 - k]); });
  }

  /// Vectorizes the `count` innermost loops of a block, innermost first.
  void vectorizeBand(BlockOp block, unsigned count) {
    SmallVector<ForOp> loops = getLoops(block);
    for (unsigned k = 0; k < count && k < loops.size(); ++k)
      (void)quietly([&] { return vectorize(loops[loops.size() - 1 - k]); });
  }

  int64_t dotLanes() const { return std::min<int64_t>(64, 4 * lanes32); }

  /// The remainder of a vec_dot (after its lanes), added in order as
  /// ggml's build of it does: the products of whole groups of 8 rounded
  /// (GCC multiplies them as one vector), those of the last (remainder % 8)
  /// fused into the adds (its scalar epilogue, contracted).
  void vecDotTail(ForOp tail) {
    std::optional<int64_t> rem = extentOf(tail);
    if (!rem)
      return;
    ForOp last = tail;
    if (*rem >= 8) {
      if (*rem % 8 == 0)
        return;
      FailureOr<PeeledSplit> split =
          quietly([&] { return splitPeel(rw, tail, {8}); });
      if (failed(split) || !split->tail)
        return;
      last = split->tail;
    }
    last->walk([&](BlockOp b) {
      (void)quietly([&] { return contract(rw, b); });
    });
  }

  /// Prefill's p.V, a dot product of dynamic length per output: register
  /// tiles of 4 outputs of the spatial loop `n` around the reduction `k`
  /// share each step's load of the other operand, each output keeping
  /// lanesFor's order (its own lanes, tree, then the remainder in order):
  /// (n, k) -> (n0, k0, n1, k1) and the remainder (n0, k', n1).
  ///
  /// With `group` (the loop directly around `n`, see sharedOperandTile) the
  /// tile also spans the group: (g, n, k) -> (n0, k0, g, n1, k1), and the
  /// remainder (n0, k', g, n1).
  bool tileDynamicDot(BlockOp block, ArrayRef<ForOp> spatialLoops, ForOp k,
                      int64_t lanes, ForOp group = {}) {
    if (spatialLoops.empty())
      return false;
    ForOp n = spatialLoops.back();
    std::optional<int64_t> ne = extentOf(n);
    if (!ne || *ne % 4 || *ne == 4 || !perfectlyAround(n, k))
      return false;
    auto nSplit = quietly([&] { return split(rw, n, {-1, 4}); });
    if (failed(nSplit))
      return false;
    // From here on the nest has changed: the caller's loops are stale, so
    // a step that fails leaves the rest serial but still reports true.
    ForOp n0 = (*nSplit)[0], n1 = (*nSplit)[1];
    ForOp kk = getLoops(block).back();
    SmallVector<ForOp> order = {kk, n1};
    if (group)
      order = {n0, kk, group, n1};
    if (failed(quietly([&] { return reorder(rw, order); })))
      return true;
    unsigned tiles = group ? 2 : 1;
    SmallVector<ForOp> loops = getLoops(block);
    kk = loops[loops.size() - 1 - tiles];
    FailureOr<PeeledSplit> kSplit =
        quietly([&] { return splitPeel(rw, kk, {lanes}); });
    if (failed(kSplit))
      return true;
    loops = getLoops(block);
    SmallVector<ForOp> inner(loops.end() - tiles, loops.end());
    inner.push_back(loops[loops.size() - 1 - tiles]);
    if (succeeded(quietly([&] { return reorder(rw, inner); })))
      laneReduction(block, getLoops(block).back(), tiles, /*fma=*/true);
    return true;
  }

  /// A loop of a few outputs of `block` (a GQA group's heads, 2 to
  /// `maxExtent`) directly around its innermost spatial loop, whose writes
  /// move with it while some read does not (the keys or values the heads
  /// share): a register tile over it loads that read once for all of them.
  /// Null when there is none.
  ForOp sharedOperandTile(BlockOp block, ArrayRef<ForOp> spatialLoops,
                          int64_t maxExtent) {
    if (spatialLoops.size() < 2)
      return {};
    ForOp g = spatialLoops[spatialLoops.size() - 2];
    std::optional<int64_t> e = extentOf(g);
    if (!e || *e < 2 || *e > maxExtent ||
        !perfectlyAround(g, spatialLoops.back()) ||
        !llvm::is_contained(ownLoops(block), g))
      return {};
    return sharesRead(block, g) ? g : ForOp();
  }

  /// Whether every write of `block` moves with loop `l` while some read
  /// does not (what a register tile over `l` loads once for all of it).
  static bool sharesRead(BlockOp block, ForOp l) {
    AffineIndexBuilder ab(l, /*opaqueInside=*/true);
    ab.dim(l.getInductionVar());
    // Whether every access of `buffers` moves with l.
    auto allMove = [&](OperandRange buffers, ArrayAttr maps) {
      return llvm::all_of(llvm::zip(buffers, maps), [&](auto access) {
        auto exprs =
            ab.compose(cast<AffineMapAttr>(std::get<1>(access)).getValue(),
                       block.getIterValues());
        return !exprs || llvm::any_of(*exprs, [](AffineExpr x) {
          return x.isFunctionOfDim(0);
        });
      });
    };
    return !allMove(block.getReads(), block.getReadMaps()) &&
           allMove(block.getWrites(), block.getWriteMaps());
  }

  /// The rows of a register tile around `inner`: the loops perfectly
  /// around it (outermost first) of constant extents, binding only spatial
  /// variables of `block`, each sharing a read (sharesRead): a query
  /// tile's rows and a GQA group's heads, as many as `maxRows` rows hold.
  SmallVector<ForOp> rowLoops(BlockOp block, ForOp inner, int64_t maxRows) {
    SmallVector<ForOp> rows;
    int64_t count = 1;
    SmallVector<ForOp> own = ownLoops(block);
    for (auto l = dyn_cast<ForOp>(inner->getParentOp()); l;
         l = dyn_cast<ForOp>(l->getParentOp())) {
      std::optional<int64_t> e = extentOf(l);
      auto [sp, red] = bindsKinds(block, l);
      if (!e || *e < 2 || count * *e > maxRows || !sp || red ||
          !perfectlyAround(l, inner) || !llvm::is_contained(own, l) ||
          !sharesRead(block, l))
        break;
      rows.insert(rows.begin(), l);
      count *= *e;
      inner = l;
    }
    return rows;
  }

  /// The outputs of `group` x `n` (n innermost, around the reduction `k`)
  /// with the group in a register tile: (g, n, k) -> (n, k0, g, k1), each
  /// output's lanes (k1), tree and remainder (n, k', g) in lanesFor's order.
  bool tileGroupDot(BlockOp block, ForOp group, ForOp n, ForOp k,
                    int64_t lanes) {
    if (!perfectlyAround(n, k))
      return false;
    auto order = quietly([&] { return reorder(rw, {n, k, group}); });
    if (failed(order))
      return false;
    // The nest has changed: from here on a failed step leaves the sum
    // serial (as lanesFor does) but reports true.
    if (!splitLanes((*order)[1], lanes, /*fma=*/true))
      return true;
    SmallVector<ForOp> loops = getLoops(block);
    auto moved = quietly([&] {
      return reorder(rw, {loops.back(), loops[loops.size() - 2]});
    });
    if (succeeded(moved))
      laneReduction(block, (*moved)[1], /*tiles=*/1, /*fma=*/true);
    return true;
  }

  /// Whether `mul` multiplies two values widened from bf16.
  static bool isBF16Product(arith::MulFOp mul) {
    auto fromBF16 = [](Value v) {
      auto ext = v.getDefiningOp<arith::ExtFOp>();
      return ext && ext.getIn().getType().isBF16();
    };
    return fromBF16(mul.getLhs()) && fromBF16(mul.getRhs());
  }

  /// The reduction loop `r` of `block` in `lanes` lanes: split (remainder
  /// peeled, added in order after the lanes), factored, summed in a tree;
  /// with `fma`, each lane accumulates with fused multiply-adds.
  void lanesFor(BlockOp block, ForOp r, int64_t lanes, unsigned tiles,
                bool fma) {
    if (ForOp laneLoop = splitLanes(r, lanes, fma))
      laneReduction(block, laneLoop, tiles, fma);
  }

  /// `r` split into whole runs of `lanes` (the remainder peeled after them,
  /// added in vec_dot's order with `fma`); returns the lane loop (r itself
  /// when its extent is `lanes`), or null.
  ForOp splitLanes(ForOp r, int64_t lanes, bool fma) {
    std::optional<int64_t> e = extentOf(r);
    if (e && *e == lanes)
      return r;
    FailureOr<PeeledSplit> split =
        quietly([&] { return splitPeel(rw, r, {lanes}); });
    if (failed(split))
      return {};
    if (fma && split->tail)
      vecDotTail(split->tail);
    return split->loops.back();
  }

  /// The partials of `block` over its lane loop `laneLoop` (the innermost,
  /// `tiles` tile loops around it): factored, vectorized, summed in a tree;
  /// with `fma`, each lane accumulating with fused multiply-adds.
  void laneReduction(BlockOp block, ForOp laneLoop, unsigned tiles, bool fma) {
    FailureOr<RFactorResult> rf =
        quietly([&] { return rfactor(rw, block, {laneLoop}); });
    if (failed(rf))
      return;
    if (fma)
      (void)quietly([&] { return contract(rw, rf->rf); });
    vectorizeBand(rf->rf, 1);
    finishRFactor(*rf, tiles, true);
  }

  /// How the lanes of a register tile accumulate: given the block and its
  /// lane loop (the reduction's innermost `lanes` iterations) and the
  /// number of tile loops around it, factors and vectorizes them.
  using LaneFn = llvm::function_ref<bool(BlockOp, ForOp, unsigned)>;

  /// A matmul (spatial loops [rows of the weight] in decode, [tokens, rows]
  /// in prefill, then the reduction): 4 rows of the weight (and 4 tokens)
  /// per step, each output's partials in `lanes` vector lanes, the x and w
  /// vectors loaded once per step. The remaining tokens (fewer than 4) get
  /// the same lanes, one token at a time.
  bool tileMatmul(BlockOp block, SmallVector<ForOp> spatialLoops, ForOp k,
                  int64_t kExtent, int64_t lanes, LaneFn finish) {
    if (spatialLoops.empty() || spatialLoops.size() > 2)
      return false;
    ForOp n = spatialLoops.back();
    std::optional<int64_t> nExtent = extentOf(n);
    bool prefill = spatialLoops.size() == 2;
    if (!nExtent || *nExtent % 4 || kExtent % lanes ||
        (prefill && n->getParentOp() != spatialLoops.front()->getParentOp() &&
         n->getParentOp() != spatialLoops.front().getOperation()) ||
        k->getParentOp() != n)
      return false;
    if (!prefill) {
      // One row per step: one stream of the weight, which the hardware's
      // prefetcher follows (f16: its lanes' accumulators and conversions,
      // a VCVTPH2PS per vector, stay in registers, where 4 rows spilled,
      // 1.2-1.35x on znver5; f32: 1.4-1.6x the 4-row tile's decode on
      // znver4, where the tile's 4 streams left a core at half the read
      // bandwidth, and mainline llama.cpp's one-row walk reads at the
      // tile's rate on znver5). bf16 (VDPBF16PS on pairs) keeps 4 rows.
      // Or as `llmc tune` measured for the weight.
      bool bf16 = false;
      block->walk([&](arith::ExtFOp ext) {
        bf16 |= ext.getIn().getType().isBF16();
      });
      nestKey = streamKey({block.getOperation()});
      int64_t rows = bf16 ? 4 : 1;
      if (int t = tuning.lookup(nestKey).decodeRows; t > 0)
        rows = t;
      return tileRows(block, {}, {}, n, k, lanes, finish, rows);
    }
    // The cache blocking of this shape: the rule, or what `llmc tune`
    // measured for its key (recorded on the nest for the tuner).
    nestKey = tuneKey(block, kExtent, *nExtent);
    choice = tuning.lookup(nestKey);
    // Whole tiles of 4 tokens, then the remaining tokens.
    ForOp s = spatialLoops.front();
    FailureOr<PeeledSplit> rows = quietly([&] { return splitPeel(rw, s, {4}); });
    if (failed(rows))
      return false;
    BlockOp tail;
    if (rows->tail)
      rows->tail->walk([&](BlockOp b) { tail = b; });
    SmallVector<ForOp> loops = getLoops(block);
    // (.., s0, s1, n, k)
    unsigned ns = loops.size();
    if (!tileRows(block, loops[ns - 4], loops[ns - 3], loops[ns - 2],
                  loops[ns - 1], lanes, finish))
      return false;
    if (tail) {
      SmallVector<ForOp> tl = getLoops(tail);
      tileRows(tail, {}, {}, tl[tl.size() - 2], tl.back(), lanes, finish);
    }
    return true;
  }

  /// The type of `v` when it is a weight: a view of the function's
  /// weights argument (GraphToTL's graph.param); else null.
  static MemRefType weightView(Value v) {
    auto view = v.getDefiningOp<memref::ViewOp>();
    if (!view || !isa<BlockArgument>(view.getSource()))
      return {};
    return dyn_cast<MemRefType>(v.getType());
  }

  /// A decode nest's key when it reads a weight (a view of the function's
  /// weights argument): the largest one's shape and element type
  /// (`matmul.decode.w768x768.f32`, an interleaved Q8_0 weight's
  /// `matmul.decode.w64x17408.i8`).
  static std::string streamKey(ArrayRef<Operation *> range) {
    MemRefType widest;
    for (Operation *op : range)
      op->walk([&](BlockOp b) {
        for (Value r : b.getReads()) {
          MemRefType type = weightView(r);
          if (!type || !type.hasStaticShape() || type.getRank() != 2)
            continue;
          if (!widest || type.getNumElements() * type.getElementTypeBitWidth() >
                             widest.getNumElements() *
                                 widest.getElementTypeBitWidth())
            widest = type;
        }
      });
    if (!widest)
      return "";
    std::string key;
    llvm::raw_string_ostream os(key);
    os << kDecodeKeyPrefix << "w" << widest.getDimSize(0) << "x"
       << widest.getDimSize(1) << "." << widest.getElementType();
    return key;
  }

  /// A prefill matmul's key: its reduction and rows, and the element types
  /// it reads (`matmul.prefill.k3072.n1024.f16.f32`).
  static std::string tuneKey(BlockOp block, int64_t k, int64_t n) {
    std::set<std::string> types;
    for (Value r : block.getReads()) {
      std::string t;
      llvm::raw_string_ostream os(t);
      os << cast<MemRefType>(r.getType()).getElementType();
      types.insert(t);
    }
    std::string key =
        kPrefillKeyPrefix.str() + "k" + std::to_string(k) + ".n" + std::to_string(n);
    for (const std::string &t : types)
      key += "." + t;
    return key;
  }

  /// (s0, s1,) n, k -> (s0,) n0, k0, (s1,) n1, k1 with n1 = `rowTile` rows and k1 =
  /// `lanes`; then `finish` makes the partials of each (s1, n1).
  bool tileRows(BlockOp block, ForOp s0, ForOp s1, ForOp n, ForOp k,
                int64_t lanes, LaneFn finish, int64_t rowTile = 4) {
    std::optional<int64_t> ke = extentOf(k), ne = extentOf(n);
    if (!ke || !ne || *ke % lanes || *ne % rowTile)
      return false;
    auto nSplit = quietly([&] { return split(rw, n, {-1, rowTile}); });
    if (failed(nSplit))
      return false;
    ForOp kk = getLoops(block).back();
    auto kSplit = quietly([&] { return split(rw, kk, {-1, lanes}); });
    if (failed(kSplit))
      return false;
    ForOp n0 = (*nSplit)[0], n1 = (*nSplit)[1];
    ForOp k0 = (*kSplit)[0];
    SmallVector<ForOp> want;
    if (s1)
      want = {n0, k0, s1, n1, (*kSplit)[1]};
    else
      want = {n0, k0, n1, (*kSplit)[1]};
    // The chain being reordered is the nest below s0 (or n0).
    if (failed(quietly([&] { return reorder(rw, want); })))
      return false;
    if (s1) {
      // (.., s0, n0, k0, s1, n1, k1), the loops the reorder made.
      SmallVector<ForOp> loops = getLoops(block);
      blockRowsForCache(loops[loops.size() - 6], loops[loops.size() - 5], *ke);
      blockReductionForL1(block);
    }
    return finish(block, getLoops(block).back(), s1 ? 2 : 1);
  }

  /// Prefill's cache blocking: (s0, n0, ...) -> (nc, s0, n0', ...), the
  /// weight's rows in chunks that stay in the L2 cache (half of it, at
  /// 4 bytes an element) while every tile of tokens reads them, rather than
  /// the whole weight streamed once per tile of tokens. The chunks are what
  /// the threads share when there are enough of them.
  void blockRowsForCache(ForOp s0, ForOp n0, int64_t kExtent) {
    std::optional<int64_t> tiles = extentOf(n0);
    if (!tiles || n0->getParentOp() != s0)
      return;
    if (choice.chunkShare <= 0)
      return;
    int64_t budgetRows = target.l2 / choice.chunkShare / (kExtent * 4);
    // The most tiles of 4 rows within the budget that divide the rows, in a
    // number of chunks the threads share evenly where one is: 3 chunks on 2
    // threads keep one of them idle a third of the time (Llama-110M's
    // 768x768 weights, whose 64-tile chunks were 3, took 0.77x the time
    // at 2 threads that they took at 1), 4 chunks of 48 tiles none.
    int64_t chunk = 0, even = 0;
    bool threaded = s0.getKind() == LoopKind::parallel && target.cores > 1;
    for (int64_t c = std::min<int64_t>(*tiles, budgetRows / 4); c >= 1; --c) {
      if (*tiles % c)
        continue;
      if (!chunk)
        chunk = c;
      if (!threaded || (*tiles / c) % target.cores == 0) {
        even = c;
        break;
      }
    }
    // (A weight that fits stays whole; an even split's chunks must be at
    // least half the largest.)
    if (chunk == 0 || chunk == *tiles)
      return;
    if (even && 2 * even >= chunk)
      chunk = even;
    auto parts = quietly([&] { return split(rw, n0, {-1, chunk}); });
    if (failed(parts))
      return;
    ForOp nc = (*parts)[0];
    // The perfect chain below n0: every loop of it is reordered.
    SmallVector<ForOp> chain = {nc, s0};
    for (ForOp l = (*parts)[1]; l; l = onlyLoopIn(l))
      chain.push_back(l);
    LoopKind kind = s0.getKind();
    auto order = quietly([&] { return reorder(rw, chain); });
    if (failed(order))
      return;
    ForOp chunks = (*order)[0], tokens = (*order)[1];
    if (kind == LoopKind::parallel && *tiles / chunk >= target.cores) {
      tokens.setKind(LoopKind::serial);
      if (failed(quietly([&] { return parallel(chunks); })))
        tokens.setKind(LoopKind::parallel);
    }
  }

  /// Prefill's reduction blocking: (.., n0, k0, s1, n1, k1) -> (.., kc, n0,
  /// k0', s1, n1, k1) when a tile of tokens' activations over the whole
  /// reduction (s1 rows of f32) would not stay in half the L1 cache while
  /// every tile of weight rows reads it: the reduction in blocks that do,
  /// each read by all the tiles of rows of the chunk (when their partials
  /// fit half of L1: a chunk of blockRowsForCache). Each output's
  /// products still accumulate in the same lanes in the same order: rfactor
  /// keeps the partials of every tile of rows (a buffer outside kc, one
  /// register tile each) until the last block.
  void blockReductionForL1(BlockOp block) {
    SmallVector<ForOp> loops = getLoops(block);
    if (loops.size() < 5)
      return;
    unsigned n = loops.size();
    ForOp n0 = loops[n - 5], k0 = loops[n - 4], s1 = loops[n - 3],
          n1 = loops[n - 2], k1 = loops[n - 1];
    std::optional<int64_t> steps = extentOf(k0), tokens = extentOf(s1),
                           rows = extentOf(n1), lanes = extentOf(k1),
                           tiles = extentOf(n0);
    if (!steps || !tokens || !rows || !lanes || !tiles ||
        k0->getParentOp() != n0)
      return;
    // The partials of every tile of rows wait in a buffer (on the stack,
    // its tree unrolled): only for a chunk of rows whose partials take at
    // most half of L1.
    if (*tiles * *tokens * *rows * *lanes * 4 > target.l1d / 2)
      return;
    if (choice.reductionShare <= 0)
      return;
    int64_t bytesPerStep = *tokens * *lanes * 4;
    int64_t budget = target.l1d / choice.reductionShare / bytesPerStep;
    if (*steps <= budget)
      return;
    int64_t factor = 0;
    for (int64_t d = std::min(*steps, budget); d >= 1; --d)
      if (*steps % d == 0) {
        factor = d;
        break;
      }
    if (factor <= 1)
      return;
    auto parts = quietly([&] { return split(rw, k0, {-1, factor}); });
    if (failed(parts))
      return;
    // The perfect chain below n0, kc first.
    SmallVector<ForOp> chain = {(*parts)[0], n0};
    for (ForOp l = (*parts)[1]; l; l = onlyLoopIn(l))
      chain.push_back(l);
    auto order = quietly([&] { return reorder(rw, chain); });
    // The tiles of rows index the partials' buffer but hold the reduction's
    // steps: they stay a loop (not a register tile to unroll).
    if (succeeded(order))
      keepLoop((*order)[1]);
  }

  /// Lanes that accumulate with FMAs, summed in a tree (ggml's f32/f16
  /// vec_dot and sgemm).
  bool fmaLanes(BlockOp block, ForOp laneLoop, unsigned tiles) {
    FailureOr<RFactorResult> rf =
        quietly([&] { return rfactor(rw, block, {laneLoop}); });
    if (failed(rf))
      return false;
    (void)quietly([&] { return contract(rw, rf->rf); });
    vectorizeBand(rf->rf, 1);
    finishRFactor(*rf, tiles, true);
    return true;
  }

  /// Products of bf16 pairs as AVX512-BF16's VDPBF16PS adds them: each f32
  /// lane takes a pair of adjacent elements, the odd one first (a reversed
  /// pair loop, a group of the vector). 32 elements (one instruction, one
  /// accumulator: llamafile's sgemm) or 64 (two accumulators, reduced
  /// separately and then added: ggml_vec_dot_bf16) per step.
  bool bf16Lanes(BlockOp block, ForOp laneLoop, unsigned tiles) {
    std::optional<int64_t> e = extentOf(laneLoop);
    if (e != 32 && e != 64)
      return false;
    SmallVector<int64_t> factors = {-1, 16, 2};
    if (*e == 64)
      factors = {2, 16, 2};
    auto parts = quietly([&] { return split(rw, laneLoop, factors); });
    if (failed(parts))
      return false;
    ForOp pair = parts->back();
    if (failed(quietly([&] { return reverse(rw, pair); })))
      return false;
    SmallVector<ForOp> lanes(parts->begin(), parts->end() - 1);
    if (*e == 32)
      lanes = {(*parts)[1]};
    FailureOr<RFactorResult> rf =
        quietly([&] { return rfactor(rw, block, lanes); });
    if (failed(rf))
      return false;
    // The pair (group), then the lanes.
    finishRFactor(*rf, tiles, true, /*segment=*/16, 1 + lanes.size());
    return true;
  }

  /// llama.cpp's integer products: groups of four bytes (the innermost
  /// loop) reduced into i32 lanes, the lanes being the block's own lane
  /// loops (spatial) or, where it has none, the reduction loops around the
  /// group factored into partials.
  void scheduleIntDot(BlockOp block) {
    SmallVector<ForOp> loops = getLoops(block);
    if (loops.empty())
      return;
    ForOp g = loops.back();
    if (extentOf(g) != 4) {
      // Other integer sums (the K-quants' scaled sums, write-backs of
      // partials): the innermost loops of one kind, perfectly nested, in
      // vector lanes: spatial ones as lanes, reduction ones as a group
      // summed into each output.
      auto [sp, red] = bindsKinds(block, g);
      if (sp == red)
        return;
      SmallVector<ForOp> band;
      int64_t count = 1;
      for (int k = loops.size() - 1; k >= 0; --k) {
        ForOp l = loops[k];
        std::optional<int64_t> e = extentOf(l);
        auto [lsp, lred] = bindsKinds(block, l);
        if (!e || lsp != sp || lred != red || count * *e > vectorBytes / 4 ||
            (!band.empty() && !perfectlyAround(l, band.back())))
          break;
        band.push_back(l);
        count *= *e;
      }
      if (count < 2) {
        // A longer sum (the activations' sums of 32 that the interleaved
        // products take their offsets through): lanes of the target's
        // width and a tree, exact in any order.
        std::optional<int64_t> e = extentOf(g);
        if (red && e && *e > lanes32 && *e % lanes32 == 0)
          lanesFor(block, g, lanes32, 0, /*fma=*/false);
        return;
      }
      for (ForOp l : band)
        if (failed(quietly([&] { return vectorize(l); })))
          return;
      return;
    }
    // The loops perfectly nested around the group: when the spatial lanes
    // next to it would read scattered bytes (Q4_K's 64-element groups), the
    // reduction loops go inside them, to be the lanes.
    {
      SmallVector<ForOp> band = {g};
      while (band.size() < loops.size()) {
        ForOp outer = loops[loops.size() - 1 - band.size()];
        if (!perfectlyAround(outer, band.front()) || !extentOf(outer))
          break;
        band.insert(band.begin(), outer);
      }
      SmallVector<ForOp> spatialLoops, reduceLoops;
      for (ForOp l : ArrayRef<ForOp>(band).drop_back()) {
        auto [sp, red] = bindsKinds(block, l);
        if (sp == red)
          break;
        (sp ? spatialLoops : reduceLoops).push_back(l);
      }
      if (spatialLoops.size() + reduceLoops.size() + 1 == band.size() &&
          !spatialLoops.empty() && !reduceLoops.empty() &&
          bindsKinds(block, band[band.size() - 2]).first) {
        // The lanes would be the spatial loops next to the group.
        SmallVector<ForOp> lanesBand;
        for (ForOp l : llvm::reverse(ArrayRef<ForOp>(band).drop_back())) {
          if (!bindsKinds(block, l).first)
            break;
          lanesBand.insert(lanesBand.begin(), l);
        }
        lanesBand.push_back(g);
        if (!contiguousOver(block, lanesBand)) {
          SmallVector<ForOp> order(spatialLoops);
          llvm::append_range(order, reduceLoops);
          order.push_back(g);
          if (succeeded(quietly([&] { return reorder(rw, order); })))
            loops = getLoops(block);
        }
      }
    }
    int64_t bytes = 4;
    SmallVector<ForOp> lanes, reduceLanes;
    for (int k = loops.size() - 2; k >= 0; --k) {
      ForOp l = loops[k];
      std::optional<int64_t> e = extentOf(l);
      auto [sp, red] = bindsKinds(block, l);
      if (!e || bytes * *e > vectorBytes || (sp && red))
        break;
      if (sp && reduceLanes.empty()) {
        lanes.push_back(l);
      } else if (red && lanes.empty()) {
        reduceLanes.push_back(l);
      } else {
        break;
      }
      bytes *= *e;
    }
    if (!reduceLanes.empty()) {
      SmallVector<ForOp> chain(reduceLanes.rbegin(), reduceLanes.rend());
      FailureOr<RFactorResult> rf =
          quietly([&] { return rfactor(rw, block, chain); });
      if (failed(rf))
        return;
      vectorizeBand(rf->rf, chain.size() + 1);
      vectorizeBand(rf->init, 1);
      vectorizeBand(rf->writeBack, 1);
      return;
    }
    vectorizeBand(block, lanes.size() + 1);
  }

  IRRewriter rw;
  const TargetDescription &target;
  int64_t lanes32, vectorBytes;
  /// Whether equal nests share one schedule.
  bool reuse;
  /// Whether the function being scheduled is the decode step (one token).
  bool decode = false;
  /// Blocks a nest rule scheduled whole (laneOutputTiles): scheduleBlock
  /// leaves them as they are.
  llvm::DenseSet<Operation *> tiled;
  /// Measured choices per kernel key, and the choice of the matmul being
  /// tiled.
  Tuning tuning;
  ScheduleChoice choice;
  /// The key of the nest being scheduled, when tuning decided any of it.
  std::string nestKey;
  /// Whether the nest being scheduled got a loop on the threads.
  bool nestThreaded = false;
};

struct TLDefaultSchedulePass
    : llmc::tl::impl::TLDefaultScheduleBase<TLDefaultSchedulePass> {
  using Base::Base;
  void runOnOperation() override {
    auto desc =
        parseTargetOption(getOperation(), "tl-default-schedule", target);
    if (failed(desc))
      return signalPassFailure();
    if (desc->isGPU()) {
      // Workgroups and threads (GPUSchedule.cpp), shared by the GPU targets.
      for (auto fn : getOperation().getOps<func::FuncOp>())
        if (!fn.isExternal() && failed(scheduleForGPU(fn, *desc)))
          return signalPassFailure();
      return;
    }
    auto tunedChoices = Tuning::parse(tuning);
    if (!tunedChoices) {
      getOperation().emitError("tl-default-schedule: ")
          << llvm::toString(tunedChoices.takeError());
      return signalPassFailure();
    }
    Scheduler scheduler(&getContext(), *desc, reuse, *tunedChoices);
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (!fn.isExternal())
        scheduler.run(fn);
  }
};

} // namespace
