//===- TLToSCF.cpp - lower tl loops and blocks to scf ---------------------===//
#include "Conversion/TLToSCF/TLToSCF.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace llmc {
#define GEN_PASS_DEF_CONVERTTLTOSCF
#include "Conversion/Passes.h.inc"
} // namespace llmc

using namespace mlir;
using namespace llmc;

namespace {

/// tl.for -> scf.parallel (parallel loops) or scf.for (the others; unrolled
/// loops were unrolled before).
struct ForToSCF : OpRewritePattern<tl::ForOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tl::ForOp op,
                                PatternRewriter &rewriter) const override {
    Block *body = op.getBody();
    rewriter.eraseOp(body->getTerminator());
    if (op.getKind() == tl::LoopKind::parallel) {
      auto loop = scf::ParallelOp::create(
          rewriter, op.getLoc(), ValueRange{op.getLowerBound()},
          ValueRange{op.getUpperBound()}, ValueRange{op.getStep()});
      Block *dest = loop.getBody();
      rewriter.inlineBlockBefore(body, dest->getTerminator(),
                                 {loop.getInductionVars()[0]});
      rewriter.eraseOp(op);
      return success();
    }
    auto loop = scf::ForOp::create(rewriter, op.getLoc(), op.getLowerBound(),
                                   op.getUpperBound(), op.getStep());
    rewriter.eraseOp(loop.getBody()->getTerminator());
    rewriter.mergeBlocks(body, loop.getBody(), {loop.getInductionVar()});
    rewriter.setInsertionPointToEnd(loop.getBody());
    scf::YieldOp::create(rewriter, op.getLoc());
    rewriter.eraseOp(op);
    return success();
  }
};

/// tl.prefetch -> one memref.prefetch per line of its bytes, into the
/// buffer's storage seen as one dimension, each index clamped to the last
/// element. Its cache level is LLVM's locality hint counted from the other
/// end (level 1, L1: locality 3, x86's prefetcht0; level 2: 2, prefetcht1).
struct PrefetchToMemRef : OpRewritePattern<tl::PrefetchOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tl::PrefetchOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<MemRefType>(op.getBuffer().getType());
    int64_t elementBytes =
        std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
    Value flat = op.getBuffer();
    if (type.getRank() != 1) {
      ReassociationIndices all;
      for (int64_t d = 0; d < type.getRank(); ++d)
        all.push_back(d);
      flat = memref::CollapseShapeOp::create(rewriter, loc, flat,
                                             ArrayRef<ReassociationIndices>{all});
    }
    Value last = arith::SubIOp::create(
        rewriter, loc, memref::DimOp::create(rewriter, loc, flat, 0),
        arith::ConstantIndexOp::create(rewriter, loc, 1));
    for (int64_t at = op.getDistance(); at < op.getDistance() + op.getBytes();
         at += op.getLine()) {
      Value index = arith::AddIOp::create(
          rewriter, loc, op.getOffset(),
          arith::ConstantIndexOp::create(rewriter, loc, at / elementBytes));
      index = arith::MinUIOp::create(rewriter, loc, index, last);
      memref::PrefetchOp::create(rewriter, loc, flat, ValueRange{index},
                                 /*isWrite=*/false,
                                 /*localityHint=*/4 - op.getLevel(),
                                 /*isDataCache=*/true);
    }
    rewriter.eraseOp(op);
    return success();
  }
};

/// Loop kinds the loops of a CPU cannot honour: thread_bound (a GPU thread
/// axis), mma (a GPU's matrix units) and library (a GPU's GEMM library)
/// anywhere, and a parallel loop inside
/// another (one level of threads).
static LogicalResult checkKinds(Operation *root) {
  WalkResult r = root->walk([](tl::ForOp loop) {
    if (loop.getKind() == tl::LoopKind::thread_bound) {
      loop.emitOpError("is bound to GPU thread axis ")
          << loop.getThreadAttr()
          << ", which the loops of a CPU cannot honour (bind is for GPU "
             "targets)";
      return WalkResult::interrupt();
    }
    if (loop.getKind() == tl::LoopKind::mma) {
      loop.emitOpError("is a loop of a matrix band (kind mma), which runs on "
                       "a GPU's matrix units; the loops of a CPU cannot "
                       "honour it");
      return WalkResult::interrupt();
    }
    if (loop.getKind() == tl::LoopKind::library) {
      loop.emitOpError("is a loop of a library band (kind library), which a "
                       "GPU target's GEMM library computes; the loops of a "
                       "CPU cannot honour it");
      return WalkResult::interrupt();
    }
    if (loop.getKind() == tl::LoopKind::parallel)
      if (auto outer = loop->getParentOfType<tl::ForOp>()) {
        for (; outer; outer = outer->getParentOfType<tl::ForOp>())
          if (outer.getKind() == tl::LoopKind::parallel) {
            InFlightDiagnostic d = loop.emitOpError(
                "is a parallel loop inside another parallel loop; the CPU "
                "runs one level of threads");
            d.attachNote(outer.getLoc()) << "the enclosing parallel loop";
            return WalkResult::interrupt();
          }
      }
    return WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}

/// Rewrites the affine accesses of `block` into memref accesses with the
/// index arithmetic spelled out, so the block can be inlined where its
/// iteration variables are no longer affine dimensions.
static LogicalResult expandAccesses(Block *block, PatternRewriter &rewriter) {
  SmallVector<Operation *> accesses;
  block->walk([&](Operation *op) {
    if (isa<affine::AffineLoadOp, affine::AffineStoreOp>(op))
      accesses.push_back(op);
  });
  for (Operation *op : accesses) {
    rewriter.setInsertionPoint(op);
    if (auto load = dyn_cast<affine::AffineLoadOp>(op)) {
      auto indices = affine::expandAffineMap(rewriter, op->getLoc(),
                                             load.getAffineMap(),
                                             load.getMapOperands());
      if (!indices)
        return failure();
      rewriter.replaceOpWithNewOp<memref::LoadOp>(op, load.getMemRef(),
                                                  *indices);
    } else {
      auto store = cast<affine::AffineStoreOp>(op);
      auto indices = affine::expandAffineMap(rewriter, op->getLoc(),
                                             store.getAffineMap(),
                                             store.getMapOperands());
      if (!indices)
        return failure();
      rewriter.replaceOpWithNewOp<memref::StoreOp>(
          op, store.getValueToStore(), store.getMemRef(), *indices);
    }
  }
  return success();
}

/// tl.block -> its body inlined in place, with the init region under an
/// scf.if that holds when every reduction variable is zero.
struct BlockToSCF : OpRewritePattern<tl::BlockOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tl::BlockOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SmallVector<Value> iters(op.getIterValues());
    if (failed(expandAccesses(op.getBodyBlock(), rewriter)))
      return rewriter.notifyMatchFailure(op, "cannot expand an access map");
    if (Block *init = op.getInitBlock()) {
      if (failed(expandAccesses(init, rewriter)))
        return rewriter.notifyMatchFailure(op, "cannot expand an access map");
      rewriter.setInsertionPoint(op);
      Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
      Value cond;
      for (unsigned i = 0, e = op.getNumIters(); i < e; ++i) {
        if (op.getIterKind(i) != tl::IterKind::reduce)
          continue;
        Value isFirst = arith::CmpIOp::create(
            rewriter, loc, arith::CmpIPredicate::eq, iters[i], zero);
        cond = cond ? arith::AndIOp::create(rewriter, loc, cond, isFirst)
                          .getResult()
                    : isFirst;
      }
      auto ifOp = scf::IfOp::create(rewriter, loc, cond, /*else=*/false);
      rewriter.eraseOp(init->getTerminator());
      rewriter.inlineBlockBefore(init, ifOp.thenBlock()->getTerminator(),
                                 iters);
    }
    Block *body = op.getBodyBlock();
    rewriter.eraseOp(body->getTerminator());
    rewriter.inlineBlockBefore(body, op, iters);
    rewriter.eraseOp(op);
    return success();
  }
};

/// Replaces an `unrolled` loop (constant bounds, checked by the unroll
/// primitive and here) by copies of its body, one per iteration.
static LogicalResult unrollFully(tl::ForOp loop) {
  auto lb = getConstantIntValue(loop.getLowerBound());
  auto ub = getConstantIntValue(loop.getUpperBound());
  auto step = getConstantIntValue(loop.getStep());
  if (!lb || !ub || !step || *step <= 0)
    return loop.emitOpError("an unrolled loop needs constant bounds");
  OpBuilder b(loop);
  for (int64_t i = *lb; i < *ub; i += *step) {
    IRMapping map;
    map.map(loop.getInductionVar(),
            arith::ConstantIndexOp::create(b, loop.getLoc(), i).getResult());
    for (Operation &op : loop.getBody()->without_terminator())
      b.clone(op, map);
  }
  loop.erase();
  return success();
}

struct ConvertTLToSCFPass
    : llmc::impl::ConvertTLToSCFBase<ConvertTLToSCFPass> {
  void runOnOperation() override {
    if (failed(checkKinds(getOperation())))
      return signalPassFailure();
    // Unroll first (innermost first), then lower what is left.
    if (failed(unrollLoops(getOperation())))
      return signalPassFailure();
    // Vectorized bands become vector code.
    IRRewriter rw(&getContext());
    if (failed(vectorizeBands(getOperation(), rw)))
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    populateTLToSCFPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    WalkResult left = getOperation()->walk([](Operation *op) {
      if (isa<tl::TLDialect>(op->getDialect())) {
        op->emitOpError("could not be lowered to scf");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace

LogicalResult llmc::unrollLoops(Operation *root) {
  SmallVector<tl::ForOp> unrolled;
  root->walk([&](tl::ForOp loop) {
    if (loop.getKind() == tl::LoopKind::unrolled)
      unrolled.push_back(loop);
  });
  for (tl::ForOp loop : unrolled)
    if (failed(unrollFully(loop)))
      return failure();
  return success();
}

void llmc::populateTLToSCFPatterns(RewritePatternSet &patterns) {
  patterns.add<ForToSCF, BlockToSCF, PrefetchToMemRef>(patterns.getContext());
}
