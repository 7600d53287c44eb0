//===- InterleaveWeights.cpp - rows of weights side by side ---------------===//
//
// Weight pre-packing for products with one row per vector lane: see the
// pass description (Passes.td) and #graph.interleaved.
//
//===----------------------------------------------------------------------===//
#include "Dialect/Graph/IR/Graph.h"
#include "Dialect/Graph/Transforms/Passes.h"
#include "Target/TargetOption.h"

#include "llvm/ADT/StringMap.h"

namespace llmc::graph {
#define GEN_PASS_DEF_GRAPHINTERLEAVEWEIGHTS
#include "Dialect/Graph/Transforms/Passes.h.inc"
} // namespace llmc::graph

using namespace mlir;
using namespace llmc;
using namespace llmc::graph;

/// Whether `use` is the weight of a llama.cpp-mode integer product (8-bit
/// activations).
static bool isIntegerProduct(OpOperand &use) {
  auto mm = dyn_cast<MatmulOp>(use.getOwner());
  return mm && use.get() == mm.getWeight() && mm.getActType() &&
         isa<Q8_0Type, Q8_KType>(*mm.getActType());
}

/// Whether every use of `param` is such a product or the table of an
/// embedding (a tied output head: the gather reads the interleaved rows).
static bool onlyIntegerProductsAndGathers(ParamOp param) {
  return llvm::all_of(param->getUses(), [](OpOperand &use) {
    auto gather = dyn_cast<EmbeddingOp>(use.getOwner());
    return isIntegerProduct(use) ||
           (gather && use.get() == gather.getTable());
  });
}

/// Whether `use` is the weight of an f32 product (no act_type).
static bool isFloatProduct(OpOperand &use) {
  auto mm = dyn_cast<MatmulOp>(use.getOwner());
  return mm && use.get() == mm.getWeight() && !mm.getActType();
}

static bool onlyFloatProductsAndGathers(ParamOp param) {
  return llvm::all_of(param->getUses(), [](OpOperand &use) {
    auto gather = dyn_cast<EmbeddingOp>(use.getOwner());
    return isFloatProduct(use) || (gather && use.get() == gather.getTable());
  });
}

static bool hasFloatProduct(ParamOp param) {
  return llvm::any_of(param->getUses(), isFloatProduct);
}

static bool hasIntegerProduct(ParamOp param) {
  return llvm::any_of(param->getUses(), isIntegerProduct);
}

static bool hasGather(ParamOp param) {
  return llvm::any_of(param->getUses(), [](OpOperand &use) {
    return isa<EmbeddingOp>(use.getOwner());
  });
}

/// The vectors of rows a float matrix interleaves: those of the product's
/// register tile (tl-default-schedule's laneOutputTiles).
static constexpr int64_t kFloatVectors = 4;

namespace {
struct GraphInterleaveWeightsPass
    : graph::impl::GraphInterleaveWeightsBase<GraphInterleaveWeightsPass> {
  using Base::Base;
  void runOnOperation() override {
    auto desc =
        parseTargetOption(getOperation(), "graph-interleave-weights", target);
    if (failed(desc))
      return signalPassFailure();
    // One row per i32 lane of the widest vector (GPU targets: their own
    // mappings, a later issue).
    if (desc->kind != TargetKind::CPU)
      return;
    int64_t lanes = desc->lanes(32);
    // Params of one name are one tensor: interleaved all or none.
    llvm::StringMap<SmallVector<ParamOp>> byName;
    getOperation().walk(
        [&](ParamOp p) { byName[p.getName()].push_back(p); });
    for (auto &entry : byName) {
      SmallVector<ParamOp> &params = entry.second;
      RankedTensorType type = params.front().getResult().getType();
      Type element = type.getElementType();
      if (floats) {
        // The exact mode's f32 products: the elements of 4 vectors' rows
        // side by side (a register tile's columns, one run per element of
        // the reduction), fewer where the rows ask.
        int64_t rows = desc->f32Lanes() * kFloatVectors;
        while (rows > desc->f32Lanes() && type.getDimSize(0) % rows)
          rows /= 2;
        if (isInterleavableFloat(element) && !type.getEncoding() &&
            type.getRank() == 2 && type.getDimSize(0) % rows == 0 &&
            llvm::all_of(params, onlyFloatProductsAndGathers) &&
            llvm::any_of(params, hasFloatProduct))
          setLayout(params,
                    InterleavedAttr::get(&getContext(), rows,
                                         element.getIntOrFloatBitWidth() / 8));
        continue;
      }
      if (!isa<Q8_0Type, Q4_0Type, Q4_KType, Q6_KType>(element) ||
          type.getEncoding() ||
          type.getRank() != 2 ||
          !llvm::all_of(params, onlyIntegerProductsAndGathers) ||
          !llvm::any_of(params, hasIntegerProduct))
        continue;
      // The interleaved Q4_0 and Q4_K products take the f32 steps of ggml's
      // repacked kernels; llama.cpp runs those for matrices of a multiple
      // of 8 rows (the others through vec_dot, in its order). Q8_0's and
      // Q6_K's steps are vec_dot's (and sgemm's) own: any multiple of 4 rows.
      if (type.getDimSize(0) % (isa<Q8_0Type, Q6_KType>(element) ? 4 : 8))
        continue;
      // A tied head: llama.cpp keeps the table it gathers from unrepacked,
      // so its product runs vec_dot's steps; of the interleaved products
      // only Q8_0's and Q6_K's take those (Q4_0's and Q4_K's take the
      // repacked kernels' order).
      if (!isa<Q8_0Type, Q6_KType>(element) && llvm::any_of(params, hasGather))
        continue;
      int64_t rows = lanes;
      while (type.getDimSize(0) % rows)
        rows /= 2;
      setLayout(params, InterleavedAttr::get(&getContext(), rows,
                                             /*chunk=*/4));
    }
  }

  static void setLayout(MutableArrayRef<ParamOp> params,
                        InterleavedAttr layout) {
    RankedTensorType type = params.front().getResult().getType();
    auto packed =
        RankedTensorType::get(type.getShape(), type.getElementType(), layout);
    for (ParamOp p : params)
      p.getResult().setType(packed);
  }
};
} // namespace
