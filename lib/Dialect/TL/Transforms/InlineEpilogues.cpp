//===- InlineEpilogues.cpp - elementwise consumers into their producers ---===//
//
// reverse_compute_inline wherever its preconditions hold. The primitive
// checks everything before it changes anything, so an attempt that fails
// leaves the IR as it was.
//
//===----------------------------------------------------------------------===//
#include "Dialect/TL/IR/TL.h"
#include "Dialect/TL/Transforms/Passes.h"
#include "Dialect/TL/Transforms/Schedule.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"

namespace llmc::tl {
#define GEN_PASS_DEF_TLINLINEEPILOGUES
#include "Dialect/TL/Transforms/Passes.h.inc"
} // namespace llmc::tl

using namespace mlir;
using namespace llmc::tl;

namespace {
struct TLInlineEpiloguesPass
    : llmc::tl::impl::TLInlineEpiloguesBase<TLInlineEpiloguesPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || !func.getBody().hasOneBlock())
      return;
    // Candidates: the blocks that are alone in a top-level loop nest.
    SmallVector<BlockOp> candidates;
    for (Operation &top : func.getBody().front()) {
      SmallVector<BlockOp> blocks;
      top.walk([&](BlockOp b) { blocks.push_back(b); });
      if (blocks.size() == 1 && !blocks.front().hasReduction())
        candidates.push_back(blocks.front());
    }
    IRRewriter rw(&getContext());
    // Blocks that do not qualify are not an error here.
    for (BlockOp block : candidates)
      (void)reverseComputeInline(rw, block, /*quiet=*/true);
  }
};
} // namespace
