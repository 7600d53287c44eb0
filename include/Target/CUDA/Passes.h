//===- Passes.h - passes of the CUDA back end -------------------*- C++ -*-===//
#ifndef LLMC_TARGET_CUDA_PASSES_H
#define LLMC_TARGET_CUDA_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace llmc::cuda {
#define GEN_PASS_DECL
#include "Target/CUDA/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Target/CUDA/Passes.h.inc"

/// Lets any conversion to LLVM (convert-gpu-to-nvvm) lower the NVGPU
/// dialect's operations (cuda-async-copies' cp.async) with its own type
/// converter.
void registerConvertNVGPUToLLVMInterface(mlir::DialectRegistry &registry);
} // namespace llmc::cuda

#endif // LLMC_TARGET_CUDA_PASSES_H
