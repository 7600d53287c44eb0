//===- TLToGPU.cpp - outlined tl kernels to gpu.func and launches ---------===//
//
// Each kernel function `tl-outline-kernels` made (`llmc.kernel`: one nest
// whose top loops the GPU schedule bound to blockIdx/threadIdx) becomes a
// `gpu.func` of the module `@llmc_kernels` with the same arguments, and each
// call of it a `gpu.launch_func`:
// - a loop bound to blockIdx.{x,y,z} is the grid's extent on that axis (its
//   upper bound, computed in the caller from the call's operands); in the
//   kernel its variable is the workgroup's id;
// - a loop bound to threadIdx.{x,y,z} is the workgroup's extent: a constant,
//   or min(constant, x) (a split's last, partial tile), whose threads past
//   x run nothing (scf.if); its variable is the thread's id;
// - a workgroup's steps: where the innermost blockIdx loop (or the kernel)
//   holds several loops bound to threadIdx.x, each is one step of the
//   whole workgroup (the workgroup is as wide as the widest), with a
//   barrier between steps (tl's meaning: a bound loop completes before the
//   next op); the stack buffers beside them are the workgroup's memory
//   (workgroup attributions), which the steps share;
// - the rest of the nest lowers as on the CPU (unrolled loops copied,
//   serial loops to scf.for, blocks inlined with their accesses spelled
//   out; vectorized loops as vector code whose loads state their known
//   alignment); a parallel loop inside a kernel is an error.
//
//===----------------------------------------------------------------------===//
#include "Conversion/TLToGPU/TLToGPU.h"
#include "Conversion/TLToSCF/TLToSCF.h"
#include "Dialect/TL/Analysis/MatrixBand.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SmallBitVector.h"

namespace llmc {
#define GEN_PASS_DEF_CONVERTTLTOGPU
#include "Conversion/Passes.h.inc"
} // namespace llmc

using namespace mlir;
using namespace llmc;

namespace {

/// The bound loops of one kernel, by axis (0..2 = x, y, z).
struct Binding {
  std::array<tl::ForOp, 3> blocks, threads;
  std::array<int64_t, 3> threadCount = {1, 1, 1};
  /// The workgroup's steps (loops bound to threadIdx.x side by side), and
  /// its shared stack buffers; empty for a single chain of thread loops.
  SmallVector<tl::ForOp> steps;
  SmallVector<memref::AllocaOp> shared;
  /// A matrix band right after the chain (kind mma): one subgroup per
  /// workgroup slot of the chain, its lanes on threadIdx.x.
  tl::ForOp band;
};

/// The alignment (bytes) of every buffer a kernel is given: the arena's
/// views and the weights start at multiples of 64 (tl-plan-arena,
/// graph-layout-weights), windows at multiples of 256, device allocations
/// more.
static constexpr int64_t kBufferAlignment = 64;

/// Lanes of the subgroup a matrix band runs on (a warp: the band is lowered
/// to WMMA, NVIDIA's).
static constexpr int64_t kBandLanes = 32;

/// Collects the workgroup's steps in `body`: every loop there bound to
/// threadIdx.x with a constant extent, beside pure ops and stack buffers
/// of a static shape (the workgroup's memory).
static LogicalResult collectSteps(Block *body, Binding &b, bool top = true) {
  for (Operation &op : body->without_terminator()) {
    if (auto l = dyn_cast<tl::ForOp>(op)) {
      // A serial loop of steps (its bounds the same in every thread): its
      // steps run in order at each iteration.
      bool holdsSteps = false;
      l.getBody()->walk([&](tl::ForOp inner) {
        holdsSteps |= inner.getKind() == tl::LoopKind::thread_bound;
      });
      if (l.getKind() == tl::LoopKind::serial && holdsSteps) {
        if (failed(collectSteps(l.getBody(), b, false)))
          return failure();
        continue;
      }
      // (threadAxisExtent: from 0 with step 1, a constant or min(C, x).)
      std::optional<int64_t> n = tl::threadAxisExtent(l);
      if (l.getKind() != tl::LoopKind::thread_bound ||
          *l.getThread() != "threadIdx.x" || !n || *n < 1)
        return l.emitOpError("beside other steps of a workgroup, a loop "
                             "must be bound to threadIdx.x from 0 with step "
                             "1 and a constant extent");
      b.steps.push_back(l);
      b.threadCount[0] = std::max(b.threadCount[0], *n);
      continue;
    }
    if (auto a = dyn_cast<memref::AllocaOp>(op); a && top) {
      if (!a.getType().hasStaticShape())
        return a.emitOpError("a workgroup's shared buffer needs a static "
                             "shape");
      b.shared.push_back(a);
      continue;
    }
    if (op.getNumRegions() || !isPure(&op))
      return op.emitOpError("a workgroup's steps hold only loops bound to "
                            "threadIdx.x, serial loops of steps, stack "
                            "buffers (outside those) and pure ops between "
                            "them");
  }
  return success();
}

/// Collects and checks the bound loops of kernel `fn`: the chain of
/// thread_bound loops at the top of its one nest, each axis once, blockIdx
/// loops outside threadIdx ones.
static FailureOr<Binding> collectBinding(func::FuncOp fn) {
  Binding b;
  SmallVector<tl::ForOp> tops;
  for (auto l : fn.getBody().getOps<tl::ForOp>())
    tops.push_back(l);
  if (tops.empty())
    return fn.emitOpError("a GPU kernel must hold one loop nest (has none)");
  bool inThreads = false;
  // Several loops: the steps of one workgroup, without a grid.
  if (tops.size() > 1 && failed(collectSteps(&fn.getBody().front(), b)))
    return failure();
  for (tl::ForOp l = b.steps.empty() ? tops[0] : tl::ForOp();
       l && l.getKind() == tl::LoopKind::thread_bound;) {
    StringRef axis = *l.getThread();
    bool isBlock = axis.starts_with("blockIdx");
    unsigned dim = axis.back() - 'x';
    auto &slot = isBlock ? b.blocks[dim] : b.threads[dim];
    if (slot)
      return l.emitOpError("binds ") << axis << " a second time";
    if (isBlock && inThreads)
      return l.emitOpError("is bound to ")
             << axis << " inside a loop bound to a thread axis";
    if (getConstantIntValue(l.getLowerBound()) != 0 ||
        getConstantIntValue(l.getStep()) != 1)
      return l.emitOpError("a loop bound to a GPU axis must run from 0 "
                           "with step 1");
    if (!isBlock) {
      std::optional<int64_t> n = tl::threadAxisExtent(l);
      if (!n || *n < 1)
        return l.emitOpError("a loop bound to ")
               << axis << " needs a constant extent (or min(constant, x))";
      b.threadCount[dim] = *n;
      inThreads = true;
    } else if (Operation *def = l.getUpperBound().getDefiningOp();
               def && !isa<func::FuncOp>(def->getParentOp()) &&
               !getConstantIntValue(l.getUpperBound())) {
      return l.emitOpError("the grid's extent on ")
             << axis << " must not depend on the loops around it";
    }
    slot = l;
    // The next loop of the chain: the only loop in the body (unless the
    // body is the workgroup's steps).
    SmallVector<tl::ForOp> inner(l.getBody()->getOps<tl::ForOp>());
    bool steps =
        inner.size() > 1 ||
        (inner.size() == 1 && inner[0].getKind() == tl::LoopKind::serial);
    if (isBlock && steps) {
      if (failed(collectSteps(l.getBody(), b)))
        return failure();
      break;
    }
    l = inner.size() == 1 ? inner[0] : tl::ForOp();
    if (l && l.getKind() == tl::LoopKind::mma) {
      if (b.threads[0])
        return l.emitOpError("a matrix band's lanes are threadIdx.x, which "
                             "the loops around it bind already");
      b.band = l;
      b.threadCount[0] = kBandLanes;
    }
  }

  // Every other loop must be one the kernel runs serially (or a matrix
  // band's).
  WalkResult r = fn.walk([&](tl::ForOp l) {
    if (l.getKind() == tl::LoopKind::thread_bound &&
        !llvm::is_contained(b.blocks, l) && !llvm::is_contained(b.threads, l) &&
        !llvm::is_contained(b.steps, l)) {
      l.emitOpError("is bound to ")
          << *l.getThread()
          << " but is not in the chain of bound loops at the top of the nest";
      return WalkResult::interrupt();
    }
    auto parent = l->getParentOfType<tl::ForOp>();
    if (l.getKind() == tl::LoopKind::mma && l != b.band &&
        !(parent && parent.getKind() == tl::LoopKind::mma)) {
      l.emitOpError("is a loop of a matrix band (kind mma), which must "
                    "follow the chain of bound loops at the top of the nest");
      return WalkResult::interrupt();
    }
    if (l.getKind() == tl::LoopKind::parallel) {
      l.emitOpError("is parallel, which a GPU kernel does not lower (bind it "
                    "to a thread axis, or leave it serial)");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (r.wasInterrupted())
    return failure();
  if (b.steps.empty() &&
      llvm::none_of(b.threads, [](tl::ForOp l) { return bool(l); }) &&
      llvm::none_of(b.blocks, [](tl::ForOp l) { return bool(l); }))
    return fn.emitOpError("a GPU kernel's nest must bind its top loops to "
                          "blockIdx/threadIdx (the GPU schedule does)");
  return b;
}

/// The dimension of workgroup buffer `a` that every access indexes by the
/// thread of the step around it (the variable of the step's loop bound to
/// threadIdx.x, as an iteration variable of the accessing block): each
/// thread then touches only its own slice, which it can keep in its own
/// memory (a prompt matmul's register tiles, whose chunk loop runs outside
/// the threads'). None when there is no such dimension.
static std::optional<unsigned> threadSlicedDim(memref::AllocaOp a,
                                               ArrayRef<tl::ForOp> steps) {
  unsigned rank = a.getType().getRank();
  llvm::SmallBitVector dims(rank, true);
  // The dims an access (a map over `block`'s variables) indexes by the
  // thread of `step`.
  auto narrow = [&](tl::BlockOp block, tl::ForOp step, AffineMap m) {
    llvm::SmallBitVector ok(rank, false);
    for (unsigned d = 0; d < rank; ++d)
      if (auto e = dyn_cast<AffineDimExpr>(m.getResult(d)))
        ok[d] =
            block.getIterValues()[e.getPosition()] == step.getInductionVar();
    dims &= ok;
  };
  auto stepOf = [&](Operation *op) -> tl::ForOp {
    for (auto l = op->getParentOfType<tl::ForOp>(); l;
         l = l->getParentOfType<tl::ForOp>())
      if (llvm::is_contained(steps, l))
        return l;
    return {};
  };
  for (Operation *user : a->getUsers()) {
    auto block = dyn_cast<tl::BlockOp>(user);
    tl::BlockOp owner = block ? block : user->getParentOfType<tl::BlockOp>();
    tl::ForOp step = owner ? stepOf(owner) : tl::ForOp();
    if (!step)
      return std::nullopt;
    if (block) {
      for (auto [v, m] : llvm::zip(block.getReads(), block.getReadMaps()))
        if (v == a.getResult())
          narrow(block, step, cast<AffineMapAttr>(m).getValue());
      for (auto [v, m] : llvm::zip(block.getWrites(), block.getWriteMaps()))
        if (v == a.getResult())
          narrow(block, step, cast<AffineMapAttr>(m).getValue());
      continue;
    }
    FailureOr<AffineMap> at = failure();
    Block *body = nullptr;
    for (Region *r : {&owner.getBody(), &owner.getInit()})
      if (!r->empty() && r->isAncestor(user->getParentRegion()))
        body = &r->front();
    if (auto load = dyn_cast<affine::AffineLoadOp>(user); load && body)
      at =
          tl::accessOverIters(load.getAffineMap(), load.getMapOperands(), body);
    if (auto store = dyn_cast<affine::AffineStoreOp>(user);
        store && body && store.getMemRef() == a.getResult())
      at = tl::accessOverIters(store.getAffineMap(), store.getMapOperands(),
                               body);
    if (failed(at))
      return std::nullopt;
    narrow(owner, step, *at);
  }
  int first = dims.find_first();
  if (first < 0)
    return std::nullopt;
  return first;
}

/// Gives each thread its own slice of workgroup buffer `a` (dimension
/// `dim` indexed by the thread everywhere): a stack buffer without that
/// dimension, which each thread of the kernel allocates for itself.
static void privatize(RewriterBase &rw, memref::AllocaOp a, unsigned dim) {
  MemRefType t = a.getType();
  SmallVector<int64_t> shape(t.getShape());
  shape.erase(shape.begin() + dim);
  rw.setInsertionPoint(a);
  auto own = memref::AllocaOp::create(
      rw, a.getLoc(), MemRefType::get(shape, t.getElementType()),
      a.getAlignmentAttr());
  auto drop = [&](Attribute m) -> Attribute {
    return AffineMapAttr::get(
        cast<AffineMapAttr>(m).getValue().dropResult(dim));
  };
  for (Operation *user : llvm::make_early_inc_range(a->getUsers())) {
    if (auto block = dyn_cast<tl::BlockOp>(user)) {
      SmallVector<Attribute> reads(block.getReadMaps().getValue()),
          writes(block.getWriteMaps().getValue());
      for (auto [i, v] : llvm::enumerate(block.getReads()))
        if (v == a.getResult())
          reads[i] = drop(reads[i]);
      for (auto [i, v] : llvm::enumerate(block.getWrites()))
        if (v == a.getResult())
          writes[i] = drop(writes[i]);
      rw.modifyOpInPlace(block, [&] {
        block.setReadMapsAttr(rw.getArrayAttr(reads));
        block.setWriteMapsAttr(rw.getArrayAttr(writes));
      });
      continue;
    }
    rw.setInsertionPoint(user);
    if (auto load = dyn_cast<affine::AffineLoadOp>(user)) {
      rw.replaceOpWithNewOp<affine::AffineLoadOp>(
          load, own, load.getAffineMap().dropResult(dim),
          load.getMapOperands());
      continue;
    }
    auto store = cast<affine::AffineStoreOp>(user);
    rw.replaceOpWithNewOp<affine::AffineStoreOp>(
        store, store.getValueToStore(), own,
        store.getAffineMap().dropResult(dim), store.getMapOperands());
  }
  rw.replaceAllUsesWith(a.getResult(), own.getResult());
  rw.eraseOp(a);
}

/// Replaces bound loop `l` (in the kernel) by its body, its variable the
/// axis' id, guarded by id < bound unless the launch covers it exactly.
static void inlineBound(RewriterBase &rw, tl::ForOp l, bool isBlock,
                        unsigned dim, int64_t count) {
  Location loc = l.getLoc();
  rw.setInsertionPoint(l);
  auto d = static_cast<gpu::Dimension>(dim);
  Value id = isBlock ? gpu::BlockIdOp::create(rw, loc, d).getResult()
                     : gpu::ThreadIdOp::create(rw, loc, d).getResult();
  Block *body = l.getBody();
  rw.eraseOp(body->getTerminator());
  bool exact = isBlock || getConstantIntValue(l.getUpperBound()) == count;
  if (exact) {
    rw.inlineBlockBefore(body, l, {id});
  } else {
    Value inRange = arith::CmpIOp::create(rw, loc, arith::CmpIPredicate::ult,
                                          id, l.getUpperBound());
    auto guard = scf::IfOp::create(rw, loc, inRange, /*else=*/false);
    rw.inlineBlockBefore(body, guard.thenBlock()->getTerminator(), {id});
  }
  rw.eraseOp(l);
}

/// The iteration values of band `band`'s block at its point (r, c, k): the
/// pure ops of the band's bodies cloned at `rw`'s insertion point with its
/// loops' variables mapped.
static SmallVector<Value> bandIterValues(RewriterBase &rw, tl::MatrixBand band,
                                         Value r, Value c, Value k) {
  IRMapping map;
  map.map(band.rows.getInductionVar(), r);
  map.map(band.cols.getInductionVar(), c);
  map.map(band.red.getInductionVar(), k);
  for (tl::ForOp l : {band.rows, band.cols, band.red})
    for (Operation &op : l.getBody()->without_terminator())
      if (!op.getNumRegions())
        rw.clone(op, map);
  SmallVector<Value> iters;
  for (Value v : band.block.getIterValues())
    iters.push_back(map.lookupOrDefault(v));
  return iters;
}

/// Lowers matrix band `rows` (kind mma; Analysis/MatrixBand.h) to WMMA on
/// the subgroup that runs it: a 16 x 16 fragment of sums per tile of out
/// (zero, loaded from the buffer the init copies, or from out where the
/// block has no init), a loop over the
/// reduction in steps of 16 that loads each row tile's fragment of `a` (and
/// of its low half, where a is split: its products from zero, scaled by
/// 2^-11 and added) and each column tile's of `b` (transposed: b's rows are
/// the columns) and multiplies them into the sums, then the sums stored
/// into out.
static LogicalResult lowerMatrixBand(RewriterBase &rw, tl::ForOp rows) {
  std::string reason;
  FailureOr<tl::MatrixBand> band =
      tl::matchMatrixBand(rows, [&](const Twine &why) { reason = why.str(); });
  if (failed(band))
    return rows.emitOpError(reason);
  Location loc = rows.getLoc();
  rw.setInsertionPoint(rows);
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(rw, loc, v);
  };
  // The indices of access `m` at the band's point (r, c, k): the pure ops
  // of the band's bodies cloned with its loops' variables mapped.
  auto indices = [&](Value r, Value c, Value k, AffineMap m) {
    SmallVector<Value> iters = bandIterValues(rw, *band, r, c, k);
    SmallVector<Value> at;
    for (unsigned i = 0; i < m.getNumResults(); ++i)
      at.push_back(
          affine::AffineApplyOp::create(rw, loc, m.getSubMap({i}), iters));
    return at;
  };
  constexpr int64_t t = tl::kMatrixTile;
  Type f16 = rw.getF16Type(), f32 = rw.getF32Type();
  auto aType = gpu::MMAMatrixType::get({t, t}, f16, "AOp");
  auto bType = gpu::MMAMatrixType::get({t, t}, f16, "BOp");
  auto cType = gpu::MMAMatrixType::get({t, t}, f32, "COp");
  auto lead = [&](int64_t v) { return rw.getIndexAttr(v); };
  int64_t rowTiles = band->rowCount / t, colTiles = band->colCount / t;
  Value zero = index(0);
  SmallVector<Value> sums;
  Value zeroSum = arith::ConstantOp::create(rw, loc, rw.getF32FloatAttr(0.0));
  for (int64_t i = 0; i < rowTiles; ++i)
    for (int64_t j = 0; j < colTiles; ++j)
      if (band->zeroInit) {
        sums.push_back(
            gpu::SubgroupMmaConstantMatrixOp::create(rw, loc, cType, zeroSum));
      } else {
        // From out's values, or from the buffer the init copies (the same
        // element: a residual).
        Value from = band->initFrom ? band->initFrom : band->out;
        int64_t fromLead = band->initFrom ? band->initLead : band->outLead;
        sums.push_back(gpu::SubgroupMmaLoadMatrixOp::create(
            rw, loc, cType, from,
            indices(index(i * t), index(j * t), zero, band->outMap),
            lead(fromLead), UnitAttr()));
      }
  Value zeros, lowScale;
  if (band->aLow || band->bLow) {
    zeros = gpu::SubgroupMmaConstantMatrixOp::create(rw, loc, cType, zeroSum);
    lowScale = gpu::SubgroupMmaConstantMatrixOp::create(
        rw, loc, cType,
        arith::ConstantOp::create(rw, loc,
                                  rw.getF32FloatAttr(1.0 / tl::kLowHalfScale)));
  }
  auto steps = scf::ForOp::create(
      rw, loc, zero, index(band->redCount), index(t), sums,
      [&](OpBuilder &b, Location, Value k, ValueRange acc) {
        rw.setInsertionPoint(b.getInsertionBlock(), b.getInsertionPoint());
        SmallVector<Value> as, lows, bs, bLows, next;
        for (int64_t i = 0; i < rowTiles; ++i)
          for (Value a : {band->a, band->aLow})
            if (a)
              (a == band->a ? as : lows)
                  .push_back(gpu::SubgroupMmaLoadMatrixOp::create(
                      rw, loc, aType, a,
                      indices(index(i * t), zero, k, band->aMap),
                      lead(band->aLead), UnitAttr()));
        for (int64_t j = 0; j < colTiles; ++j)
          for (Value b : {band->b, band->bLow})
            if (b)
              (b == band->b ? bs : bLows)
                  .push_back(gpu::SubgroupMmaLoadMatrixOp::create(
                      rw, loc, bType, b,
                      indices(zero, index(j * t), k, band->bMap),
                      lead(band->bLead), rw.getUnitAttr()));
        for (int64_t i = 0; i < rowTiles; ++i)
          for (int64_t j = 0; j < colTiles; ++j) {
            Value sum = gpu::SubgroupMmaComputeOp::create(
                rw, loc, cType, as[i], bs[j], acc[i * colTiles + j], UnitAttr(),
                rw.getUnitAttr());
            if (!lows.empty() || !bLows.empty()) {
              // The low halves' products on their own, scaled into the
              // sums: aLow * b, and a * bLow where b is split too.
              Value low = zeros;
              if (!lows.empty())
                low = gpu::SubgroupMmaComputeOp::create(rw, loc, cType, lows[i],
                                                        bs[j], low, UnitAttr(),
                                                        rw.getUnitAttr());
              if (!bLows.empty())
                low = gpu::SubgroupMmaComputeOp::create(
                    rw, loc, cType, as[i], bLows[j], low, UnitAttr(),
                    rw.getUnitAttr());
              low = gpu::SubgroupMmaElementwiseOp::create(
                  rw, loc, cType, ValueRange{low, lowScale},
                  gpu::MMAElementwiseOp::MULF);
              sum = gpu::SubgroupMmaElementwiseOp::create(
                  rw, loc, cType, ValueRange{sum, low},
                  gpu::MMAElementwiseOp::ADDF);
            }
            next.push_back(sum);
          }
        scf::YieldOp::create(rw, loc, next);
      });
  rw.setInsertionPointAfter(steps);
  for (int64_t i = 0; i < rowTiles; ++i)
    for (int64_t j = 0; j < colTiles; ++j)
      gpu::SubgroupMmaStoreMatrixOp::create(
          rw, loc, steps.getResult(i * colTiles + j), band->out,
          indices(index(i * t), index(j * t), zero, band->outMap),
          lead(band->outLead), UnitAttr());
  rw.eraseOp(rows);
  return success();
}

/// Lowers matrix band `rows` (kind library, a whole nest at the top of a
/// host function) to the GEMM library's calls: `tl.library_gemm` of each
/// operand's matrix (a subview at the element its access takes at the
/// band's origin: rows x k of a, columns x k of b, rows x columns of out
/// and of the buffer the init copies), the sums from zero (beta 0), from
/// out's values or from the init's buffer (beta 1); for a's two f16 halves
/// a second call adds the low half's products scaled by 2^-11, and where b
/// is split too (dequant_halves) a third a's high half's with b's low.
static LogicalResult lowerLibraryBand(RewriterBase &rw, tl::ForOp rows) {
  std::string reason;
  FailureOr<tl::MatrixBand> band = tl::matchMatrixBand(
      rows, [&](const Twine &why) { reason = why.str(); },
      /*anyRowCount=*/true);
  if (failed(band))
    return rows.emitOpError(reason);
  Location loc = rows.getLoc();
  rw.setInsertionPoint(rows);
  Value zero = arith::ConstantIndexOp::create(rw, loc, 0);
  SmallVector<Value> iters = bandIterValues(rw, *band, zero, zero, zero);
  Value height = rows.getUpperBound();
  int64_t staticHeight =
      getConstantIntValue(height).value_or(ShapedType::kDynamic);
  // The matrix `buffer` holds in its last two dimensions from the element
  // `map` takes at the origin: `h` rows of `w`.
  auto matrix = [&](Value buffer, AffineMap map, OpFoldResult h, int64_t sh,
                    int64_t w) -> FailureOr<Value> {
    auto type = cast<MemRefType>(buffer.getType());
    int64_t rank = type.getRank();
    // (A matrix of one row in a buffer of more dimensions: which unit
    // dimension the subview drops would be ambiguous.)
    if (rank > 2 && sh == 1)
      return rows.emitOpError("a library band of one row must read a "
                              "matrix buffer (rank 2), got ")
                 << buffer.getType(),
             failure();
    // The dimensions before the last two index by values the band's loops
    // do not change (one matrix of the buffer).
    for (int64_t d = 0; d + 2 < rank; ++d)
      for (auto [p, v] : llvm::enumerate(band->block.getIterValues()))
        if (map.getResult(d).isFunctionOfDim(p) &&
            band->rows->isAncestor(v.getParentBlock()->getParentOp()))
          return rows.emitOpError("a library band's operand ")
                     << buffer.getType()
                     << " must hold one matrix in its last two dimensions",
                 failure();
    std::optional<SmallVector<Value, 8>> at =
        affine::expandAffineMap(rw, loc, map, iters);
    if (!at)
      return rows.emitOpError("cannot express the origin of a library "
                              "band's operand"),
             failure();
    SmallVector<OpFoldResult> offsets(at->begin(), at->end());
    SmallVector<OpFoldResult> sizes(rank, rw.getIndexAttr(1));
    SmallVector<OpFoldResult> strides(rank, rw.getIndexAttr(1));
    sizes[rank - 2] = h;
    sizes[rank - 1] = rw.getIndexAttr(w);
    MemRefType viewType = memref::SubViewOp::inferRankReducedResultType(
        {sh, w}, type, offsets, sizes, strides);
    return memref::SubViewOp::create(rw, loc, viewType, buffer, offsets, sizes,
                                     strides)
        .getResult();
  };
  OpFoldResult m = staticHeight == ShapedType::kDynamic
                       ? OpFoldResult(height)
                       : OpFoldResult(rw.getIndexAttr(staticHeight));
  OpFoldResult n = rw.getIndexAttr(band->colCount);
  FailureOr<Value> a =
      matrix(band->a, band->aMap, m, staticHeight, band->redCount);
  FailureOr<Value> b =
      matrix(band->b, band->bMap, n, band->colCount, band->redCount);
  FailureOr<Value> out =
      matrix(band->out, band->outMap, m, staticHeight, band->colCount);
  if (failed(a) || failed(b) || failed(out))
    return failure();
  Value init;
  if (band->initFrom) {
    FailureOr<Value> i =
        matrix(band->initFrom, band->outMap, m, staticHeight, band->colCount);
    if (failed(i))
      return failure();
    init = *i;
  }
  tl::LibraryGemmOp::create(rw, loc, *a, *b, *out, init,
                            rw.getF64FloatAttr(1.0),
                            rw.getF64FloatAttr(band->zeroInit ? 0.0 : 1.0));
  if (band->aLow) {
    FailureOr<Value> low =
        matrix(band->aLow, band->aMap, m, staticHeight, band->redCount);
    if (failed(low))
      return failure();
    tl::LibraryGemmOp::create(rw, loc, *low, *b, *out, Value(),
                              rw.getF64FloatAttr(1.0 / tl::kLowHalfScale),
                              rw.getF64FloatAttr(1.0));
  }
  if (band->bLow) {
    FailureOr<Value> low =
        matrix(band->bLow, band->bMap, n, band->colCount, band->redCount);
    if (failed(low))
      return failure();
    tl::LibraryGemmOp::create(rw, loc, *a, *low, *out, Value(),
                              rw.getF64FloatAttr(1.0 / tl::kLowHalfScale),
                              rw.getF64FloatAttr(1.0));
  }
  rw.eraseOp(rows);
  return success();
}

/// Clones the computation of `v` (pure ops of the kernel function's body,
/// from its arguments) at `b`'s insertion point, its arguments mapped.
static FailureOr<Value> cloneFromArgs(OpBuilder &b, Value v, IRMapping &map) {
  if (Value m = map.lookupOrNull(v))
    return m;
  Operation *def = v.getDefiningOp();
  if (!def || def->getNumRegions() || !isPure(def))
    return failure();
  for (Value o : def->getOperands())
    if (failed(cloneFromArgs(b, o, map)))
      return failure();
  b.clone(*def, map);
  return map.lookup(v);
}

struct ConvertTLToGPUPass : llmc::impl::ConvertTLToGPUBase<ConvertTLToGPUPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    // The GEMM library's bands: calls from the host.
    SmallVector<tl::ForOp> bands;
    for (auto fn : module.getOps<func::FuncOp>())
      for (auto l : fn.getBody().getOps<tl::ForOp>())
        if (l.getKind() == tl::LoopKind::library)
          bands.push_back(l);
    IRRewriter brw(ctx);
    for (tl::ForOp l : bands)
      if (failed(lowerLibraryBand(brw, l)))
        return signalPassFailure();
    SmallVector<func::FuncOp> kernels;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn->hasAttr("llmc.kernel"))
        kernels.push_back(fn);
    if (kernels.empty())
      return;
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(ctx));
    OpBuilder mb(ctx);
    mb.setInsertionPointToEnd(module.getBody());
    auto gpuModule =
        gpu::GPUModuleOp::create(mb, module.getLoc(), "llmc_kernels");
    SymbolTable kernelSymbols(gpuModule);
    IRRewriter rw(ctx);
    SymbolTable symbols(module);
    for (func::FuncOp fn : kernels) {
      FailureOr<Binding> binding = collectBinding(fn);
      if (failed(binding))
        return signalPassFailure();
      // Workgroup buffers each thread uses only its own slice of: the
      // thread's own.
      llvm::erase_if(binding->shared, [&](memref::AllocaOp a) {
        std::optional<unsigned> dim = threadSlicedDim(a, binding->steps);
        if (dim)
          privatize(rw, a, *dim);
        return dim.has_value();
      });
      // The kernel: the function's arguments, its body with the bound
      // loops replaced by ids.
      rw.setInsertionPointToEnd(gpuModule.getBody());
      auto kernel = gpu::GPUFuncOp::create(rw, fn.getLoc(), fn.getName(),
                                           fn.getFunctionType());
      kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                      UnitAttr::get(ctx));
      kernel.setKnownBlockSizeAttr(rw.getDenseI32ArrayAttr(
          {int32_t(binding->threadCount[0]), int32_t(binding->threadCount[1]),
           int32_t(binding->threadCount[2])}));
      Block &entry = kernel.getBody().front();
      IRMapping map;
      for (auto [from, to] : llvm::zip(fn.getArguments(), entry.getArguments()))
        map.map(from, to);
      rw.setInsertionPointToEnd(&entry);
      for (Operation &op : fn.getBody().front().without_terminator())
        rw.clone(op, map);
      gpu::ReturnOp::create(rw, fn.getLoc());
      for (unsigned dim = 0; dim < 3; ++dim) {
        if (tl::ForOp l = binding->blocks[dim])
          inlineBound(rw, cast<tl::ForOp>(map.lookup(l.getOperation())), true,
                      dim, 0);
      }
      for (unsigned dim = 0; dim < 3; ++dim) {
        if (tl::ForOp l = binding->threads[dim])
          inlineBound(rw, cast<tl::ForOp>(map.lookup(l.getOperation())), false,
                      dim, binding->threadCount[dim]);
      }
      // The workgroup's steps, a barrier before each but the first (inside a
      // serial loop of steps, also between its iterations); its shared
      // buffers in workgroup memory.
      for (auto [i, l] : llvm::enumerate(binding->steps)) {
        auto step = cast<tl::ForOp>(map.lookup(l.getOperation()));
        if (i) {
          rw.setInsertionPoint(step);
          gpu::BarrierOp::create(rw, step.getLoc());
        }
        inlineBound(rw, step, false, 0, binding->threadCount[0]);
      }
      for (memref::AllocaOp a : binding->shared) {
        auto local = cast<memref::AllocaOp>(map.lookup(a.getOperation()));
        MemRefType t = local.getType();
        auto workgroup = MemRefType::get(
            t.getShape(), t.getElementType(), t.getLayout(),
            gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup));
        BlockArgument memory =
            kernel.addWorkgroupAttribution(workgroup, local.getLoc());
        rw.replaceAllUsesWith(local.getResult(), memory);
        rw.eraseOp(local);
      }
      if (binding->band &&
          failed(lowerMatrixBand(
              rw, cast<tl::ForOp>(map.lookup(binding->band.getOperation())))))
        return signalPassFailure();
      // Vectorized loops (a lane's consecutive elements) as vector code,
      // each load stating the alignment it is known to have: a kernel's
      // buffers start at multiples of kBufferAlignment.
      if (failed(unrollLoops(kernel)) ||
          failed(vectorizeBands(kernel, rw, kBufferAlignment)))
        return signalPassFailure();
      RewritePatternSet patterns(ctx);
      populateTLToSCFPatterns(patterns);
      if (failed(applyPatternsGreedily(kernel, std::move(patterns))))
        return signalPassFailure();
      // The launches.
      std::optional<SymbolTable::UseRange> uses =
          symbols.getSymbolUses(fn, module);
      SmallVector<func::CallOp> calls;
      if (uses)
        for (const SymbolTable::SymbolUse &use : *uses) {
          auto call = dyn_cast<func::CallOp>(use.getUser());
          if (!call) {
            use.getUser()->emitOpError("uses GPU kernel ")
                << fn.getName() << " other than by a call";
            return signalPassFailure();
          }
          calls.push_back(call);
        }
      for (func::CallOp call : calls) {
        OpBuilder b(call);
        IRMapping args;
        for (auto [from, to] : llvm::zip(fn.getArguments(), call.getOperands()))
          args.map(from, to);
        Value one = arith::ConstantIndexOp::create(b, call.getLoc(), 1);
        gpu::KernelDim3 grid{one, one, one}, block{one, one, one};
        Value *gridDims[] = {&grid.x, &grid.y, &grid.z};
        Value *blockDims[] = {&block.x, &block.y, &block.z};
        for (unsigned dim = 0; dim < 3; ++dim) {
          if (tl::ForOp l = binding->blocks[dim]) {
            FailureOr<Value> extent = cloneFromArgs(b, l.getUpperBound(), args);
            if (failed(extent)) {
              l.emitOpError("the grid's extent is not computed from the "
                            "kernel's arguments");
              return signalPassFailure();
            }
            *gridDims[dim] = *extent;
          }
          *blockDims[dim] = arith::ConstantIndexOp::create(
              b, call.getLoc(), binding->threadCount[dim]);
        }
        gpu::LaunchFuncOp::create(b, call.getLoc(), kernel, grid, block,
                                  /*dynamicSharedMemorySize=*/Value(),
                                  call.getOperands());
        call.erase();
      }
      fn.erase();
    }
  }
};

} // namespace
