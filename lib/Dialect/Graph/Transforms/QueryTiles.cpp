//===- QueryTiles.cpp - a CPU's flash attention in tiles of query rows ----===//
//
// See the pass description (Passes.td) and graph.attention's q_tile.
//
//===----------------------------------------------------------------------===//
#include "Dialect/Graph/IR/Graph.h"
#include "Dialect/Graph/Transforms/Passes.h"
#include "Target/TargetOption.h"

namespace llmc::graph {
#define GEN_PASS_DEF_GRAPHQUERYTILES
#include "Dialect/Graph/Transforms/Passes.h.inc"
} // namespace llmc::graph

using namespace mlir;
using namespace llmc;
using namespace llmc::graph;

namespace {
struct GraphQueryTilesPass
    : graph::impl::GraphQueryTilesBase<GraphQueryTilesPass> {
  using Base::Base;
  void runOnOperation() override {
    auto desc = parseTargetOption(getOperation(), "graph-query-tiles", target);
    if (failed(desc))
      return signalPassFailure();
    if (desc->isGPU())
      return;
    // A register tile of the rows' accumulators for 4 vectors of positions
    // (q.k) or of the head dim (p.V) each: 4 rows with 32 vector
    // registers, 2 with 16.
    int64_t rows = desc->vectorRegisters / 8;
    if (rows < 2)
      return;
    getOperation().walk([&](AttentionOp op) {
      if (!op.getRowTiles())
        op.setQTileAttr(
            IntegerAttr::get(IntegerType::get(op.getContext(), 64), rows));
    });
  }
};
} // namespace
