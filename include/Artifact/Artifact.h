//===- Artifact.h - compiled-model artifacts --------------------*- C++ -*-===//
//
// Writes the artifact directory described in docs/artifact.md from a graph
// module: weights.bin (laid out by graph-layout-weights), the back end's
// code (model.so on the CPU), metadata.json and an optional tokenizer. The
// code comes from the one pipeline builder (Transforms/Pipelines.h) and the
// target's back end; this file only runs them and writes files.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_ARTIFACT_ARTIFACT_H
#define LLMC_ARTIFACT_ARTIFACT_H

#include "Transforms/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <string>

#include <functional>

namespace llmc {

struct ArtifactOptions {
  std::string outDir;
  /// The tokenizer to bundle, or empty: a llama2.c tokenizer.bin (kept as
  /// is), or anything Import/Tokenizer.h reads (GGUF, tokenizer.json,
  /// tokenizer.model, a Hugging Face directory), converted into an llmc
  /// tokenizer file.
  std::string tokenizer;
  /// Target, numeric mode and schedule slot: what the pipeline runs.
  PipelineOptions pipeline;
  /// Dump the IR after each phase into the artifact (debugging).
  bool keepIR = false;
  /// Called after each phase (graph, weights, tl, lowering, codegen, write)
  /// with its wall time in seconds and a detail (sizes), when set.
  std::function<void(llvm::StringRef phase, double seconds,
                     llvm::StringRef detail)>
      onPhase;
  /// Called once the code is lowered, with what the model needs in memory
  /// at run time (the KV cache, the activation arena of a decode step and
  /// of prompts), when set.
  std::function<void(llvm::StringRef)> onMemory;
  /// A sharded model's plan (`--mesh`), after the graph phase: the roles,
  /// the predicted time a token and the weight bytes a rank.
  std::function<void(llvm::StringRef)> onPlan;
  /// Called while weights.bin is written, with the bytes written so far and
  /// the total, when set.
  std::function<void(uint64_t written, uint64_t total)> onWeightsProgress;
};

/// Compiles an imported graph module into an artifact directory. Nothing is
/// left at `outDir` unless every step succeeds (the directory is built under
/// a temporary name and renamed). Diagnostics are reported through the
/// module's context.
llvm::Error compileArtifact(mlir::ModuleOp graphModule,
                            const ArtifactOptions &options);

} // namespace llmc

#endif // LLMC_ARTIFACT_ARTIFACT_H
