//===- TargetBackend.cpp - back ends by target kind -----------------------===//
#include "Target/TargetBackend.h"
#include "Target/CPU/CPUBackend.h"

using namespace llmc;

TargetBackend::~TargetBackend() = default;

llvm::Expected<std::unique_ptr<TargetBackend>>
llmc::createTargetBackend(const TargetDescription &target) {
  switch (target.kind) {
  case TargetKind::CPU:
    return createCPUBackend(target);
  case TargetKind::Vulkan:
  case TargetKind::CUDA:
    break;
  }
  return llvm::createStringError("target '" + target.str() +
                                 "' has no back end yet (supported: cpu)");
}
