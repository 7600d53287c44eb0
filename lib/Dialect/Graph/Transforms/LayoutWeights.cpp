//===- LayoutWeights.cpp - assign parameters their weight-blob offsets ----===//
#include "Dialect/Graph/IR/Graph.h"
#include "Dialect/Graph/Transforms/Passes.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MathExtras.h"

namespace llmc::graph {
#define GEN_PASS_DEF_GRAPHLAYOUTWEIGHTS
#include "Dialect/Graph/Transforms/Passes.h.inc"
} // namespace llmc::graph

using namespace mlir;
using namespace llmc::graph;

namespace {
struct GraphLayoutWeightsPass
    : llmc::graph::impl::GraphLayoutWeightsBase<GraphLayoutWeightsPass> {
  using Base::Base;
  void runOnOperation() override {
    if (alignment <= 0 || !llvm::isPowerOf2_64(alignment)) {
      getOperation().emitError("alignment must be a positive power of two");
      return signalPassFailure();
    }
    llvm::StringMap<std::pair<int64_t, RankedTensorType>> placed;
    int64_t end = 0;
    Builder b(&getContext());
    WalkResult result = getOperation().walk([&](ParamOp param) {
      RankedTensorType type = param.getResult().getType();
      auto [it, inserted] =
          placed.try_emplace(param.getName(), end, type);
      if (!inserted && it->second.second != type) {
        param.emitOpError("parameter '")
            << param.getName() << "' is used with types " << it->second.second
            << " and " << type;
        return WalkResult::interrupt();
      }
      if (inserted) {
        int64_t bytes = storageBytes(type);
        it->second.first = end;
        end = llvm::alignTo(end + bytes, alignment);
      }
      param.setBlobOffsetAttr(b.getI64IntegerAttr(it->second.first));
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return signalPassFailure();
    getOperation()->setAttr("graph.weights_bytes", b.getI64IntegerAttr(end));
  }
};
} // namespace
