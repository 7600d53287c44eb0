//===- Artifact.h - compiled-model artifacts --------------------*- C++ -*-===//
//
// Writes the artifact directory described in docs/artifact.md from a graph
// module: weights.bin (laid out by graph-layout-weights), model.so (the
// lowered forward function), metadata.json and an optional tokenizer.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_TARGET_ARTIFACT_H
#define LLMC_TARGET_ARTIFACT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <memory>
#include <string>

namespace llmc {

/// What differs between back ends, behind one interface (cf. Triton's
/// TargetInfoBase): how the tl module is lowered, and how the lowered
/// module becomes loadable code in the artifact.
class TargetBackend {
public:
  virtual ~TargetBackend();
  /// The name written to metadata ("cpu").
  virtual llvm::StringRef name() const = 0;
  /// Passes from the tl phase's output (scheduled loop nests over buffers)
  /// down to the target dialect.
  virtual void buildLowering(mlir::OpPassManager &pm) const = 0;
  /// Writes the loadable code for `lowered` into `dir` and returns its file
  /// name (relative to `dir`).
  virtual llvm::Expected<std::string> emit(mlir::ModuleOp lowered,
                                           llvm::StringRef dir) const = 0;
};

/// The back end named `target`, or an error naming the supported ones.
llvm::Expected<std::unique_ptr<TargetBackend>>
createTargetBackend(llvm::StringRef target);

/// Translates an LLVM-dialect module to an object file for the host CPU,
/// optimised at -O3.
llvm::Error emitObjectFile(mlir::ModuleOp module, llvm::StringRef path);

struct ArtifactOptions {
  std::string outDir;
  /// The tokenizer to bundle, or empty: a llama2.c tokenizer.bin (kept as
  /// is), or anything Import/Tokenizer.h reads (GGUF, tokenizer.json,
  /// tokenizer.model, a Hugging Face directory), converted into an llmc
  /// tokenizer file.
  std::string tokenizer;
  std::string target = "cpu";
  /// "exact" (f32 activations) or "llama.cpp" (graph-act-quant: activations
  /// rounded to each weight's kind as llama.cpp's CPU backend does).
  std::string actQuant = "exact";
  /// Dump the IR after each phase into the artifact (debugging).
  bool keepIR = false;
  /// Called on the module after the tl phase, before target lowering: where
  /// a schedule (e.g. from Python) rewrites the loop nests. Diagnostics it
  /// emits are reported; failure aborts the compilation.
  std::function<mlir::LogicalResult(mlir::ModuleOp)> scheduleTL;
};

/// Compiles an imported graph module into an artifact directory. Nothing is
/// left at `outDir` unless every step succeeds (the directory is built under
/// a temporary name and renamed). Diagnostics are reported through the
/// module's context.
llvm::Error compileArtifact(mlir::ModuleOp graphModule,
                            const ArtifactOptions &options);

} // namespace llmc

#endif // LLMC_TARGET_ARTIFACT_H
