//===- Pipelines.h - llmc's named compilation phases ------------*- C++ -*-===//
#ifndef LLMC_TRANSFORMS_PIPELINES_H
#define LLMC_TRANSFORMS_PIPELINES_H

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringRef.h"

namespace llmc {

/// The phases of compilation after import, in order. `--compile-to=<phase>`
/// stops after the named one.
enum class Phase { Graph, TL, LLVM };

/// Parses "graph", "tl" or "llvm".
std::optional<Phase> parsePhase(llvm::StringRef name);

/// graph: target-independent tensor rewrites and the weight-blob layout.
void buildGraphPhase(mlir::OpPassManager &pm);
/// tl: graph ops to tl loop nests over buffers and the out-parameter ABI;
/// the phase after which schedules apply.
void buildTLPhase(mlir::OpPassManager &pm);
/// llvm: buffer release, tl to scf, then the upstream CPU lowering to the
/// LLVM dialect.
void buildLLVMPhase(mlir::OpPassManager &pm);
/// Every phase from graph up to and including `last`.
void buildCompilePipeline(mlir::OpPassManager &pm, Phase last);

/// Registers llmc's dialects and the upstream dialects its IR uses.
void registerLLMCDialects(mlir::DialectRegistry &registry);
/// Registers llmc's passes and named pipelines (llmc-graph, llmc-tl,
/// llmc-llvm, llmc-compile).
void registerLLMCPasses();

} // namespace llmc

#endif // LLMC_TRANSFORMS_PIPELINES_H
