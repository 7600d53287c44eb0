//===- ActQuant.cpp - llama.cpp's activation rounding on graph.matmul -----===//
//
// Records on each graph.matmul the type llama.cpp's CPU backend converts the
// activations to before its dot product (the weight type's vec_dot_type), so
// that the lowering can reproduce llama.cpp's numbers.
//
//===----------------------------------------------------------------------===//
#include "Dialect/Graph/IR/Graph.h"
#include "Dialect/Graph/Transforms/Passes.h"

namespace llmc::graph {
#define GEN_PASS_DEF_GRAPHACTQUANT
#include "Dialect/Graph/Transforms/Passes.h.inc"
} // namespace llmc::graph

using namespace mlir;
using namespace llmc::graph;

/// The exact mode's attention tile: positions whose keys and values (64
/// KiB each at head_dim 128 in f16) stay in L2 while the heads of a GQA
/// group read them, and long enough that p.V's lanes are summed across
/// once per 256 positions.
static constexpr int64_t kExactKvTile = 256;

/// The element type the weight has in the model file: its own, except for
/// an f32 parameter widened from 16-bit data (its param's source says).
static Type storedElementType(Value weight) {
  Type element = llvm::cast<RankedTensorType>(weight.getType()).getElementType();
  if (!element.isF32())
    return element;
  if (auto param = weight.getDefiningOp<ParamOp>())
    if (ExternalTensorAttr source = param.getSourceAttr())
      return source.getDtype();
  return element;
}

/// llama.cpp's vec_dot_type for a weight stored as `stored`, or null for
/// exact f32 products.
static Type llamaCppActType(Type stored) {
  MLIRContext *ctx = stored.getContext();
  if (stored.isF16() || stored.isBF16())
    return stored;
  if (llvm::isa<Q8_0Type, Q4_0Type>(stored))
    return Q8_0Type::get(ctx);
  if (llvm::isa<Q4_KType, Q6_KType>(stored))
    return Q8_KType::get(ctx);
  return {};
}

namespace {
struct GraphActQuantPass
    : llmc::graph::impl::GraphActQuantBase<GraphActQuantPass> {
  using Base::Base;
  void runOnOperation() override {
    if (mode != "exact" && mode != "llama.cpp") {
      getOperation().emitError("graph-act-quant: unknown mode '")
          << mode << "' (expected exact or llama.cpp)";
      return signalPassFailure();
    }
    bool llamaCpp = mode == "llama.cpp";
    getOperation().walk([&](RopeOp op) {
      op.setAngles(llamaCpp ? RopeAngles::iterated : RopeAngles::direct);
    });
    // ggml's soft_max over llama.cpp's padded KV view: runs of 16 (one
    // AVX-512 vector, the kernels this mode follows) summed in f32, the
    // positions padded to 64 (a multiple of every lane count a schedule
    // uses, so p.V's lanes hold the terms ggml's do; llama.cpp pads to 256);
    // with an f16 cache, q and the probabilities rounded to f16 as ggml's
    // mul_mat converts them.
    // The exact mode pads as well: its sums may run in any order, and
    // whole multiples of every lane count leave p.V no remainder (ordered,
    // one dependent add per position: at a short context all of p.V, 8.5x
    // its predicted time in an f16 decode). It runs flash attention, online
    // over tiles of kExactKvTile positions: the scores of one tile at a
    // time, whatever the context.
    getOperation().walk([&](AttentionOp op) {
      Builder b(op);
      op.setKvPadAttr(b.getI64IntegerAttr(64));
      op.setSoftmaxBlockAttr(b.getI64IntegerAttr(llamaCpp ? 16 : 0));
      op.setKvTileAttr(b.getI64IntegerAttr(llamaCpp ? 0 : kExactKvTile));
      if (llamaCpp)
        op.setRoundToCacheAttr(b.getBoolAttr(true));
      else
        op->removeAttr(op.getRoundToCacheAttrName());
    });
    getOperation().walk([&](MatmulOp op) {
      Type act = llamaCpp ? llamaCppActType(storedElementType(op.getWeight()))
                          : Type();
      if (act)
        op.setActTypeAttr(TypeAttr::get(act));
      else
        op.removeActTypeAttr();
    });
  }
};
} // namespace
