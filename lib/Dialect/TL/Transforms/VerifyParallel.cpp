//===- VerifyParallel.cpp - independence of concurrent loops --------------===//
#include "Dialect/TL/Analysis/Independence.h"
#include "Dialect/TL/IR/TL.h"
#include "Dialect/TL/Transforms/Passes.h"

namespace llmc::tl {
#define GEN_PASS_DEF_TLVERIFYPARALLEL
#include "Dialect/TL/Transforms/Passes.h.inc"
} // namespace llmc::tl

using namespace mlir;
using namespace llmc::tl;

namespace {
struct TLVerifyParallelPass
    : llmc::tl::impl::TLVerifyParallelBase<TLVerifyParallelPass> {
  void runOnOperation() override {
    WalkResult r = getOperation()->walk([&](ForOp loop) {
      switch (loop.getKind()) {
      case LoopKind::parallel:
        for (auto outer = loop->getParentOfType<ForOp>(); outer;
             outer = outer->getParentOfType<ForOp>())
          if (outer.getKind() == LoopKind::parallel) {
            InFlightDiagnostic d = loop.emitError(
                "tl-verify-parallel: a parallel loop inside another parallel "
                "loop");
            d.attachNote(outer.getLoc()) << "the enclosing parallel loop";
            return WalkResult::interrupt();
          }
        return failed(verifyIndependent(loop, "tl-verify-parallel"))
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      case LoopKind::thread_bound:
        // A GPU thread axis may also rest on a block's declaration.
        if (independentByDeclaration(loop))
          return WalkResult::advance();
        return failed(verifyIndependent(loop, "tl-verify-parallel"))
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      default:
        return WalkResult::advance();
      }
    });
    if (r.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
