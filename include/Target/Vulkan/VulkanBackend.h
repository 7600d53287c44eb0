//===- VulkanBackend.h - the Vulkan (SPIR-V) back end -----------*- C++ -*-===//
#ifndef LLMC_TARGET_VULKAN_VULKANBACKEND_H
#define LLMC_TARGET_VULKAN_VULKANBACKEND_H

#include "Target/TargetBackend.h"

#include "mlir/Dialect/SPIRV/IR/SPIRVAttributes.h"

namespace llmc {

std::unique_ptr<TargetBackend>
createVulkanBackend(const TargetDescription &target);

/// tl (GPU-scheduled) -> gpu kernels + dispatch program -> SPIR-V.
void buildVulkanLowering(mlir::OpPassManager &pm,
                         const TargetDescription &target,
                         const LoweringOptions &options = {});

/// The SPIR-V environment a Vulkan target description stands for.
mlir::spirv::TargetEnvAttr vulkanTargetEnv(mlir::MLIRContext *ctx,
                                           const TargetDescription &target);

} // namespace llmc

#endif // LLMC_TARGET_VULKAN_VULKANBACKEND_H
