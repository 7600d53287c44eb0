//===- KVLayout.cpp - the values' layout in the KV cache ------------------===//
//
// See the pass description (Passes.td) and !graph.kv_cache's
// values_by_position and values_block.
//
//===----------------------------------------------------------------------===//
#include "Dialect/Graph/IR/Graph.h"
#include "Dialect/Graph/Transforms/Passes.h"
#include "Target/TargetOption.h"

namespace llmc::graph {
#define GEN_PASS_DEF_GRAPHKVLAYOUT
#include "Dialect/Graph/Transforms/Passes.h.inc"
} // namespace llmc::graph

using namespace mlir;
using namespace llmc;
using namespace llmc::graph;

namespace {
struct GraphKVLayoutPass : graph::impl::GraphKVLayoutBase<GraphKVLayoutPass> {
  using Base::Base;
  void runOnOperation() override {
    auto desc = parseTargetOption(getOperation(), "graph-kv-layout", target);
    if (failed(desc))
      return signalPassFailure();
    if (desc->isGPU())
      return;
    // Every attention of the module runs flash attention, whose sums may
    // take any order (the two-pass softmax sums p.V in llama.cpp's order,
    // over rows of positions).
    bool flash = true;
    getOperation().walk(
        [&](AttentionOp op) { flash &= op.getKvTileAttr().getInt() > 0; });
    if (flash) {
      retypeKVCaches(getOperation(), [](KVCacheType cache) {
        return KVCacheType::get(cache.getContext(), cache.getLayers(),
                                cache.getMaxSeq(), cache.getKvHeads(),
                                cache.getHeadDim(), cache.getElementType(),
                                /*values_by_position=*/true,
                                /*keys_by_dim=*/true, /*values_block=*/0);
      });
      return;
    }
    // Two passes: the values stay transposed, in blocks of one f32 vector's
    // positions (p.V's lanes).
    int64_t block = desc->f32Lanes();
    retypeKVCaches(getOperation(), [&](KVCacheType cache) {
      if (cache.getValuesByPosition() || cache.getMaxSeq() % block != 0)
        return cache;
      return KVCacheType::get(cache.getContext(), cache.getLayers(),
                              cache.getMaxSeq(), cache.getKvHeads(),
                              cache.getHeadDim(), cache.getElementType(),
                              /*values_by_position=*/false,
                              /*keys_by_dim=*/false, block);
    });
  }
};
} // namespace
