//===- SplitKV.cpp - decode's flash attention split over the positions ----===//
//
// See the pass description (Passes.td) and graph.attention's kv_splits.
//
//===----------------------------------------------------------------------===//
#include "Dialect/Graph/IR/Graph.h"
#include "Dialect/Graph/Transforms/Passes.h"
#include "Target/TargetOption.h"

namespace llmc::graph {
#define GEN_PASS_DEF_GRAPHSPLITKV
#include "Dialect/Graph/Transforms/Passes.h.inc"
} // namespace llmc::graph

using namespace mlir;
using namespace llmc;
using namespace llmc::graph;

namespace {
struct GraphSplitKVPass : graph::impl::GraphSplitKVBase<GraphSplitKVPass> {
  using Base::Base;
  void runOnOperation() override {
    auto desc = parseTargetOption(getOperation(), "graph-split-kv", target);
    if (failed(desc))
      return signalPassFailure();
    int64_t cores = desc->cores;
    getOperation().walk([&](AttentionOp op) {
      int64_t kvHeads = op.getNumKvHeads();
      if (op.getKvTileAttr().getInt() == 0 || kvHeads >= cores)
        return;
      // A CPU: a part per core, each core a share of every KV head. A GPU:
      // a workgroup per KV head and part, two for each compute unit.
      int64_t parts =
          desc->isGPU() ? llvm::divideCeil(2 * cores, kvHeads) : cores;
      // No more than the cache's positions can fill (parts are multiples
      // of kv_pad, at least 16, long).
      parts = std::min<int64_t>(
          parts, llvm::divideCeil(op.getCache().getType().getMaxSeq(),
                                  std::max<int64_t>(op.getKvPad(), 16)));
      if (parts < 2)
        return;
      op.setKvSplitsAttr(Builder(op).getI64IntegerAttr(parts));
    });
  }
};
} // namespace
