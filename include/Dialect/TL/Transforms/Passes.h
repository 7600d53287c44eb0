//===- Passes.h - tensor-loop dialect passes --------------------*- C++ -*-===//
#ifndef LLMC_DIALECT_TL_TRANSFORMS_PASSES_H
#define LLMC_DIALECT_TL_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Pass/Pass.h"

namespace llmc::tl {
#define GEN_PASS_DECL
#include "Dialect/TL/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Dialect/TL/Transforms/Passes.h.inc"
} // namespace llmc::tl

#endif // LLMC_DIALECT_TL_TRANSFORMS_PASSES_H
