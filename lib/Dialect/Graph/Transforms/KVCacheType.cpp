//===- KVCacheType.cpp - the KV cache's element type ----------------------===//
//
// Retypes the functions' !graph.kv_cache arguments: the attention ops that
// read them see the new element type through the value; the lowering
// rounds what it stores and widens what it reads.
//
//===----------------------------------------------------------------------===//
#include "Dialect/Graph/IR/Graph.h"
#include "Dialect/Graph/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace llmc::graph {
#define GEN_PASS_DEF_GRAPHKVCACHETYPE
#include "Dialect/Graph/Transforms/Passes.h.inc"
} // namespace llmc::graph

using namespace mlir;
using namespace llmc::graph;

void llmc::graph::retypeKVCaches(
    ModuleOp module, llvm::function_ref<KVCacheType(KVCacheType)> retype) {
  MLIRContext *ctx = module.getContext();
  for (auto func : module.getOps<func::FuncOp>()) {
    SmallVector<Type> inputs(func.getArgumentTypes());
    bool changed = false;
    for (auto [i, type] : llvm::enumerate(inputs)) {
      auto cache = dyn_cast<KVCacheType>(type);
      if (!cache)
        continue;
      KVCacheType next = retype(cache);
      if (next == cache)
        continue;
      type = next;
      if (!func.isExternal())
        func.getArgument(i).setType(type);
      changed = true;
    }
    if (changed)
      func.setType(FunctionType::get(ctx, inputs, func.getResultTypes()));
  }
}

namespace {
struct GraphKVCacheTypePass
    : llmc::graph::impl::GraphKVCacheTypeBase<GraphKVCacheTypePass> {
  using GraphKVCacheTypeBase::GraphKVCacheTypeBase;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    Type element = elementType == "f16"   ? Type(Float16Type::get(ctx))
                   : elementType == "f32" ? Type(Float32Type::get(ctx))
                                          : Type();
    if (!element) {
      getOperation().emitError("graph-kv-cache-type: element-type must be "
                               "f16 or f32, got '")
          << elementType << "'";
      return signalPassFailure();
    }
    retypeKVCaches(getOperation(), [&](KVCacheType cache) {
      return KVCacheType::get(ctx, cache.getLayers(), cache.getMaxSeq(),
                              cache.getKvHeads(), cache.getHeadDim(), element,
                              cache.getValuesByPosition(), cache.getKeysByDim(),
                              cache.getValuesBlock());
    });
  }
};
} // namespace
