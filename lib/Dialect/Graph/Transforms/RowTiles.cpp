//===- RowTiles.cpp - a scores tile per row for a GPU's flash attention ---===//
//
// See the pass description (Passes.td) and graph.attention's row_tiles.
//
//===----------------------------------------------------------------------===//
#include "Dialect/Graph/IR/Graph.h"
#include "Dialect/Graph/Transforms/Passes.h"
#include "Target/TargetOption.h"

namespace llmc::graph {
#define GEN_PASS_DEF_GRAPHROWTILES
#include "Dialect/Graph/Transforms/Passes.h.inc"
} // namespace llmc::graph

using namespace mlir;
using namespace llmc;
using namespace llmc::graph;

namespace {
struct GraphRowTilesPass : graph::impl::GraphRowTilesBase<GraphRowTilesPass> {
  using Base::Base;
  void runOnOperation() override {
    auto desc = parseTargetOption(getOperation(), "graph-row-tiles", target);
    if (failed(desc))
      return signalPassFailure();
    if (!desc->isGPU())
      return;
    getOperation().walk([&](AttentionOp op) {
      if (op.getKvTileAttr().getInt() > 0)
        op.setRowTilesAttr(BoolAttr::get(op.getContext(), true));
    });
  }
};
} // namespace
