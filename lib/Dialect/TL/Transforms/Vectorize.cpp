//===- Vectorize.cpp - split and vectorize innermost spatial loops --------===//
#include "Dialect/TL/IR/TL.h"
#include "Dialect/TL/Transforms/Passes.h"
#include "Dialect/TL/Transforms/Schedule.h"
#include "Dialect/TL/Analysis/Independence.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace llmc::tl {
#define GEN_PASS_DEF_TLVECTORIZE
#include "Dialect/TL/Transforms/Passes.h.inc"
} // namespace llmc::tl

using namespace mlir;
using namespace llmc::tl;

namespace {
struct TLVectorizePass : llmc::tl::impl::TLVectorizeBase<TLVectorizePass> {
  using Base::Base;
  void runOnOperation() override {
    if (width <= 0) {
      getOperation().emitError("tl-vectorize: width must be positive");
      return signalPassFailure();
    }
    SmallVector<BlockOp> blocks;
    getOperation().walk([&](BlockOp b) { blocks.push_back(b); });
    IRRewriter rw(&getContext());
    for (BlockOp block : blocks) {
      SmallVector<ForOp> loops = getLoops(block);
      if (loops.empty())
        continue;
      ForOp inner = loops.back();
      std::optional<int64_t> extent =
          getConstantIntValue(inner.getUpperBound());
      if (!extent || *extent % width || *extent == width ||
          inner.getKind() != LoopKind::serial ||
          getConstantIntValue(inner.getLowerBound()) != 0 ||
          getConstantIntValue(inner.getStep()) != 1)
        continue;
      // Only loops whose iterations are independent (spatial); ask the
      // analysis on the unsplit loop, silently (a loop that does not
      // qualify is kept).
      {
        ScopedDiagnosticHandler quiet(&getContext(),
                                      [](Diagnostic &) { return success(); });
        if (failed(verifyIndependent(inner, "tl-vectorize")))
          continue;
      }
      auto split = llmc::tl::split(rw, inner, {-1, width});
      if (failed(split) || failed(vectorize(split->back())))
        return signalPassFailure();
    }
  }
};
} // namespace
