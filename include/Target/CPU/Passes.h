//===- Passes.h - passes of the CPU back end --------------------*- C++ -*-===//
#ifndef LLMC_TARGET_CPU_PASSES_H
#define LLMC_TARGET_CPU_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace llmc::cpu {
#define GEN_PASS_DECL
#include "Target/CPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Target/CPU/Passes.h.inc"
} // namespace llmc::cpu

#endif // LLMC_TARGET_CPU_PASSES_H
