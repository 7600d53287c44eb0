//===- GPUBackend.h - what the GPU back ends share --------------*- C++ -*-===//
//
// The GPU back ends (Vulkan, CUDA) start their lowering alike (the arena
// planned, one kernel per distinct nest, the kernels in the gpu dialect) and
// describe the artifact alike (the dispatch program as metadata's `device`
// object); each adds its own fields and its own ABI and code.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_TARGET_GPU_GPUBACKEND_H
#define LLMC_TARGET_GPU_GPUBACKEND_H

#include "Target/TargetBackend.h"

namespace llmc {

class GPUBackend : public TargetBackend {
public:
  using TargetBackend::TargetBackend;
  /// Writes `device`: the module's dispatch program (`llmc.dispatch`), the
  /// GPU features the kernels may use, then deviceFields().
  void describe(llvm::json::OStream &json,
                mlir::ModuleOp lowered) const override;

protected:
  /// The back end's own fields of `device`.
  virtual void deviceFields(llvm::json::Object &device) const {}
};

/// The lowering's shared start: intermediates placed in the arena
/// (`tl-plan-arena`, `tl-release-buffers`), one kernel per distinct nest
/// (`tl-outline-kernels`), the kernels and their launches in the gpu
/// dialect (`convert-tl-to-gpu`).
void buildGPUKernels(mlir::OpPassManager &pm);

} // namespace llmc

#endif // LLMC_TARGET_GPU_GPUBACKEND_H
