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

#define GEN_PASS_DECL
#include "Dialect/Dist/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Dialect/Dist/Transforms/Passes.h.inc"
} // namespace llmc::dist

#endif // LLMC_DIALECT_DIST_TRANSFORMS_PASSES_H
