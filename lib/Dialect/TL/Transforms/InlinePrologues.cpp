//===- InlinePrologues.cpp - cheap elementwise producers into consumers ---===//
//
// compute_inline where the producer is a cheap elementwise map and no
// consumer reuses its elements (so nothing is computed more often than the
// consumers load it). The primitive checks everything before it changes
// anything, so an attempt that fails leaves the IR as it was.
//
//===----------------------------------------------------------------------===//
#include "Dialect/TL/IR/TL.h"
#include "Dialect/TL/Transforms/Passes.h"
#include "Dialect/TL/Transforms/Schedule.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace llmc::tl {
#define GEN_PASS_DEF_TLINLINEPROLOGUES
#include "Dialect/TL/Transforms/Passes.h.inc"
} // namespace llmc::tl

using namespace mlir;
using namespace llmc::tl;

namespace {

constexpr unsigned kMaxConsumers = 2;

/// No transcendental op: each extra computation costs a few multiplies.
bool isCheap(BlockOp block) {
  return !block.getBodyBlock()
              ->walk([](Operation *op) {
                return isa<math::MathDialect>(op->getDialect()) &&
                               !isa<math::FmaOp>(op)
                           ? WalkResult::interrupt()
                           : WalkResult::advance();
              })
              .wasInterrupted();
}

/// Whether the blocks reading `buffer` are at most kMaxConsumers and each
/// load of it has every variable of its block in its index.
bool consumersDoNotReuse(Value buffer, BlockOp producer) {
  SmallVector<BlockOp> consumers;
  for (Operation *user : buffer.getUsers()) {
    auto load = dyn_cast<affine::AffineLoadOp>(user);
    if (!load)
      continue;
    auto block = load->getParentOfType<BlockOp>();
    if (!block || block == producer)
      continue;
    if (!llvm::is_contained(consumers, block))
      consumers.push_back(block);
    FailureOr<AffineMap> at = accessOverIters(
        load.getAffineMap(), load.getMapOperands(), block.getBodyBlock());
    if (failed(at))
      return false;
    for (unsigned v = 0; v < block.getNumIters(); ++v)
      if (!at->isFunctionOfDim(v))
        return false;
  }
  return !consumers.empty() && consumers.size() <= kMaxConsumers;
}

struct TLInlineProloguesPass
    : llmc::tl::impl::TLInlineProloguesBase<TLInlineProloguesPass> {
  void runOnOperation() override {
    SmallVector<BlockOp> candidates;
    for (BlockOp b : spatialBlocksAloneInNests(getOperation())) {
      Value out = b.getWrites().size() == 1 ? b.getWrites()[0] : Value();
      if (out && out.getDefiningOp<memref::AllocOp>() && isCheap(b) &&
          consumersDoNotReuse(out, b))
        candidates.push_back(b);
    }
    IRRewriter rw(&getContext());
    // Blocks the primitive refuses are not an error here.
    for (BlockOp block : candidates)
      (void)computeInline(rw, block, /*quiet=*/true);
  }
};
} // namespace
