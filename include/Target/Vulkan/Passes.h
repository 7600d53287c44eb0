//===- Passes.h - passes of the Vulkan back end -----------------*- C++ -*-===//
#ifndef LLMC_TARGET_VULKAN_PASSES_H
#define LLMC_TARGET_VULKAN_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Pass/Pass.h"

namespace llmc::vulkan {
#define GEN_PASS_DECL
#include "Target/Vulkan/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Target/Vulkan/Passes.h.inc"
} // namespace llmc::vulkan

#endif // LLMC_TARGET_VULKAN_PASSES_H
