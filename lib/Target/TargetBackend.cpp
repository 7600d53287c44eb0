//===- TargetBackend.cpp - back ends by target kind -----------------------===//
#include "Target/TargetBackend.h"
#include "Target/CPU/CPUBackend.h"
#include "Target/CUDA/CUDABackend.h"
#include "Target/Vulkan/VulkanBackend.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"

using namespace llmc;

TargetBackend::~TargetBackend() = default;

ToolRun llmc::runTool(llvm::StringRef program,
                      llvm::ArrayRef<llvm::StringRef> args,
                      llvm::StringRef log) {
  ToolRun run;
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, log, log};
  run.exitCode = llvm::sys::ExecuteAndWait(program, args, std::nullopt,
                                           redirects, /*SecondsToWait=*/0,
                                           /*MemoryLimit=*/0, &run.error);
  if (auto buf = llvm::MemoryBuffer::getFile(log))
    run.output = (*buf)->getBuffer().str();
  llvm::sys::fs::remove(log);
  return run;
}

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
