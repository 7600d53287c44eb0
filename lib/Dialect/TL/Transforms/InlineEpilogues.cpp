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
    IRRewriter rw(&getContext());
    // Blocks that do not qualify are not an error here.
    for (BlockOp block : spatialBlocksAloneInNests(getOperation()))
      (void)reverseComputeInline(rw, block, /*quiet=*/true);
  }
};
} // namespace
