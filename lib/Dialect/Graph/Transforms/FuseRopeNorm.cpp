//===- FuseRopeNorm.cpp - a head's RMS norm into the RoPE that follows ----===//
//
// reshape [seq, heads*hd] -> [seq, heads, hd], rms_norm, reshape back, rope
// becomes one rope with a norm operand (Qwen3's q/k norms).
//
//===----------------------------------------------------------------------===//
#include "Dialect/Graph/IR/Graph.h"
#include "Dialect/Graph/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace llmc::graph {
#define GEN_PASS_DEF_GRAPHFUSEROPENORM
#include "Dialect/Graph/Transforms/Passes.h.inc"
} // namespace llmc::graph

using namespace mlir;
using namespace llmc::graph;

namespace {

/// The per-head norm `rope` reads through two reshapes, when nothing else
/// uses it: {the rows before the first reshape, the norm}.
std::optional<std::pair<Value, RMSNormOp>> headNormOf(RopeOp rope) {
  if (rope.getNormWeight())
    return std::nullopt;
  auto back = rope.getInput().getDefiningOp<ReshapeOp>();
  if (!back || !back->hasOneUse())
    return std::nullopt;
  auto norm = back.getInput().getDefiningOp<RMSNormOp>();
  if (!norm || !norm->hasOneUse())
    return std::nullopt;
  auto split = norm.getInput().getDefiningOp<ReshapeOp>();
  if (!split)
    return std::nullopt;
  Value rows = split.getInput();
  auto headsType = llvm::cast<RankedTensorType>(norm.getType());
  // The norm runs over exactly one head: [seq, heads, head_dim] of the
  // rope's own rows.
  if (rows.getType() != rope.getInput().getType() || headsType.getRank() != 3 ||
      headsType.getDimSize(2) != static_cast<int64_t>(rope.getHeadDim()))
    return std::nullopt;
  return std::make_pair(rows, norm);
}

struct GraphFuseRopeNormPass
    : llmc::graph::impl::GraphFuseRopeNormBase<GraphFuseRopeNormPass> {
  void runOnOperation() override {
    SmallVector<RopeOp> ropes;
    getOperation().walk([&](RopeOp op) { ropes.push_back(op); });
    for (RopeOp rope : ropes) {
      auto found = headNormOf(rope);
      if (!found)
        continue;
      auto [rows, norm] = *found;
      OpBuilder b(rope);
      auto fused = RopeOp::create(
          b, rope.getLoc(), rope.getType(), rows, rope.getPos0(),
          norm.getWeight(), rope.getHeadDimAttr(), rope.getThetaAttr(),
          rope.getStyleAttr(), rope.getAnglesAttr(), norm.getEpsAttr());
      Operation *back = rope.getInput().getDefiningOp();
      Operation *split = norm.getInput().getDefiningOp();
      rope.replaceAllUsesWith(fused.getResult());
      rope.erase();
      back->erase();
      norm.erase();
      if (split->use_empty())
        split->erase();
    }
  }
};
} // namespace
