//===- Passes.h - graph dialect passes --------------------------*- C++ -*-===//
#ifndef LLMC_DIALECT_GRAPH_TRANSFORMS_PASSES_H
#define LLMC_DIALECT_GRAPH_TRANSFORMS_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace llmc::graph {
class KVCacheType;

/// Gives every !graph.kv_cache argument of the module's functions the type
/// `retype` returns for it (the attention ops see it through the value).
void retypeKVCaches(mlir::ModuleOp module,
                    llvm::function_ref<KVCacheType(KVCacheType)> retype);

#define GEN_PASS_DECL
#include "Dialect/Graph/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Dialect/Graph/Transforms/Passes.h.inc"
} // namespace llmc::graph

#endif // LLMC_DIALECT_GRAPH_TRANSFORMS_PASSES_H
