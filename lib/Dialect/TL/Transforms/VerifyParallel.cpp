//===- VerifyParallel.cpp - independence of concurrent loops --------------===//
#include "Dialect/TL/Analysis/Independence.h"
#include "Dialect/TL/Analysis/MatrixBand.h"
#include "Dialect/TL/IR/TL.h"
#include "Dialect/TL/Transforms/Passes.h"
#include "Dialect/TL/Transforms/Schedule.h"

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
    WalkResult r = getOperation()->walk<WalkOrder::PreOrder>([&](ForOp loop) {
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
        // A GPU thread axis may also rest on a block's declaration; a
        // fused launch's on its parts.
        if (independentByDeclaration(loop))
          return WalkResult::advance();
        if (fusedLaunchParts(loop))
          return failed(verifyFusedLaunch(loop, "tl-verify-parallel"))
                     ? WalkResult::interrupt()
                     : WalkResult::advance();
        return failed(verifyIndependent(loop, "tl-verify-parallel"))
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      case LoopKind::mma:
      case LoopKind::library: {
        // The band's first loop: its form, and rows and columns
        // independent; the loops inside must be the band's.
        LoopKind kind = loop.getKind();
        bool library = kind == LoopKind::library;
        auto outer = loop->getParentOfType<ForOp>();
        if (outer && outer.getKind() == kind)
          return WalkResult::advance();
        if (library && outer) {
          loop.emitError("tl-verify-parallel: a library band must be a whole "
                         "nest at the top of its function");
          return WalkResult::interrupt();
        }
        std::string reason;
        FailureOr<MatrixBand> band = matchMatrixBand(
            loop, [&](const Twine &why) { reason = why.str(); },
            /*anyRowCount=*/library);
        if (failed(band)) {
          loop.emitError("tl-verify-parallel: ") << reason;
          return WalkResult::interrupt();
        }
        if (band->cols.getKind() != kind || band->red.getKind() != kind) {
          loop.emitError("tl-verify-parallel: a matrix band's three loops "
                         "must all be of kind ")
              << stringifyLoopKind(kind);
          return WalkResult::interrupt();
        }
        return failed(verifyIndependent(loop, "tl-verify-parallel")) ||
                       failed(
                           verifyIndependent(band->cols, "tl-verify-parallel"))
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      }
      default:
        return WalkResult::advance();
      }
    });
    if (r.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
