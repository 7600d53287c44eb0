//===- Pipelines.h - llmc's compilation pipeline ----------------*- C++ -*-===//
//
// The one pipeline builder that `llmc compile`, `llm-opt --compile-to` and
// the Python module all run. Its options are the top of the pipeline: the
// target description and the numeric mode enter here and flow down to the
// passes as their options.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_TRANSFORMS_PIPELINES_H
#define LLMC_TRANSFORMS_PIPELINES_H

#include "Dialect/Dist/Transforms/Passes.h"
#include "Target/TargetDescription.h"
#include "Target/Tuning.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringRef.h"

#include <functional>
#include <memory>
#include <string>

namespace llmc {

/// The phases of compilation after import, in order. `--compile-to=<phase>`
/// stops after the named one.
enum class Phase { Graph, TL, LLVM };

/// Parses "graph", "tl" or "llvm".
std::optional<Phase> parsePhase(llvm::StringRef name);

/// A schedule written outside the pipeline (Python, C++): called on the
/// module at the schedule slot of the tl phase. Diagnostics it emits are
/// reported; failure stops the compilation.
using ScheduleCallback = std::function<mlir::LogicalResult(mlir::ModuleOp)>;

/// Whether `name` is a KV cache element type the artifact may have
/// (llmc/abi.h's LLMC_KV_CACHE_DTYPES: "f32", "f16").
bool isKVCacheType(llvm::StringRef name);

struct PipelineOptions {
  /// The target, already resolved (resolveTarget).
  TargetDescription target;
  /// "exact" or "llama.cpp" (graph-act-quant, docs/numerics.md).
  std::string actQuant = "exact";
  /// The KV cache's element type: "f32" or "f16" (graph-kv-cache-type;
  /// isKVCacheType).
  std::string kvCache = "f32";
  /// The schedule of the tl phase: given, it runs at the schedule slot in
  /// place of the target's default schedule.
  ScheduleCallback schedule;
  /// Without a given schedule: the target's default (true) or none, leaving
  /// the canonical nests (`schedule=none`; tests and schedule authors).
  bool defaultSchedule = true;
  /// Time every kernel call (cpu-profile-kernels; `llmc bench --profile`).
  bool profile = false;
  /// Measured schedule choices (`llmc tune`), read by the driver like the
  /// target.
  Tuning tuning;
  /// Shard the model over a mesh (`llmc compile --mesh`): dist-plan with
  /// these options, dist-propagate and dist-partition in the graph phase;
  /// unset, one process.
  std::optional<dist::PlanOptions> distribute;
  /// With `distribute`, the pipeline stage to compile where the plan has
  /// stages (dist-stage; one artifact a stage, compileArtifact).
  int64_t stage = 0;
};

/// graph: numerics, tensor rewrites and the weight-blob layout (quantized
/// weights interleaved for the target's vector lanes).
void buildGraphPhase(mlir::OpPassManager &pm, const PipelineOptions &options);
/// tl: graph ops to tl loop nests over buffers, the out-parameter ABI, and
/// the schedule slot.
void buildTLPhase(mlir::OpPassManager &pm, const PipelineOptions &options);
/// The target phase (`llvm` on the CPU): the back end's lowering.
void buildTargetPhase(mlir::OpPassManager &pm, const PipelineOptions &options);
/// Every phase from `first` up to and including `last`.
void buildCompilePipeline(mlir::OpPassManager &pm,
                          const PipelineOptions &options, Phase last,
                          Phase first = Phase::Graph);

/// The schedule slot: runs `callback` on the module (a registered pass,
/// `llmc-schedule-slot`, that does nothing when given no callback).
std::unique_ptr<mlir::Pass> createScheduleSlotPass(ScheduleCallback callback);

/// Registers llmc's dialects and the upstream dialects its IR uses.
void registerLLMCDialects(mlir::DialectRegistry &registry);
/// Registers llmc's passes and named pipelines (llmc-compile{to target
/// act-quant}).
void registerLLMCPasses();

} // namespace llmc

#endif // LLMC_TRANSFORMS_PIPELINES_H
