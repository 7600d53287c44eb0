//===- Passes.h - dist dialect passes ---------------------------*- C++ -*-===//
#ifndef LLMC_DIALECT_DIST_TRANSFORMS_PASSES_H
#define LLMC_DIALECT_DIST_TRANSFORMS_PASSES_H

#include "Dialect/Dist/IR/Dist.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace llmc::dist {
/// The name of the attribute that records a value's sharding (on the op
/// that defines it, or on a function argument).
inline constexpr llvm::StringLiteral kShardingAttrName = "dist.sharding";

/// What `dist-plan` plans for (its options; Passes.td).
struct PlanOptions {
  /// Ranks per mesh axis: "2", "4", "2x2".
  std::string mesh = "2";
  /// Each axis's link (one value: every axis); empty: one host's memory.
  llvm::SmallVector<double> bandwidth, latency;
  /// Bytes a second a rank reads its weights at.
  double memoryBandwidth = 2.0e10;
  /// Bytes a rank may hold (0: no limit).
  double memory = 0;
  /// FLOP a second a rank computes at (a prompt's products).
  double flops = 5.0e10;
  /// The tokens a pipeline's stages take at once from a prompt (0: all);
  /// -1: the cost model's choice.
  int64_t microBatch = -1;
  /// Each axis's role, "tp" or "pp" (a plan given rather than chosen:
  /// `--shard-plan`); empty: the cost model chooses.
  llvm::SmallVector<std::string> roles;
};

/// Chooses the plan of `module`'s decoder for a mesh and applies it (the
/// mesh, annotations for dist-propagate, the module's `dist.plan`), with a
/// report of every candidate on `report` where given: `dist-plan` and
/// `llmc plan`. Errors are emitted as diagnostics.
mlir::LogicalResult planModule(mlir::ModuleOp module,
                               const PlanOptions &options,
                               llvm::raw_ostream *report);

#define GEN_PASS_DECL
#include "Dialect/Dist/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Dialect/Dist/Transforms/Passes.h.inc"
} // namespace llmc::dist

#endif // LLMC_DIALECT_DIST_TRANSFORMS_PASSES_H
