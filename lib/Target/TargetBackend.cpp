//===- TargetBackend.cpp - back ends by target kind -----------------------===//
#include "Target/TargetBackend.h"
#include "Target/CPU/CPUBackend.h"
#include "Target/CUDA/CUDABackend.h"
#include "Target/Vulkan/VulkanBackend.h"

using namespace llmc;

TargetBackend::~TargetBackend() = default;

llvm::Expected<std::unique_ptr<TargetBackend>>
llmc::createTargetBackend(const TargetDescription &target) {
  switch (target.kind) {
  case TargetKind::CPU:
    return createCPUBackend(target);
  case TargetKind::Vulkan:
    return createVulkanBackend(target);
  case TargetKind::CUDA:
    return createCUDABackend(target);
  }
  llvm_unreachable("a target kind without a back end");
}
