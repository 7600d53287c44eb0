//===- GridDependencies.cpp - kernels that wait for the one before -------===//
//
// See the pass description (Passes.td): programmatic dependent launch.
//
//===----------------------------------------------------------------------===//
#include "Target/CUDA/Passes.h"
#include "Target/TargetOption.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace llmc::cuda {
#define GEN_PASS_DEF_CUDAGRIDDEPENDENCIES
#include "Target/CUDA/Passes.h.inc"
} // namespace llmc::cuda

using namespace mlir;

namespace {

struct CUDAGridDependenciesPass
    : llmc::cuda::impl::CUDAGridDependenciesBase<CUDAGridDependenciesPass> {
  using Base::Base;
  void runOnOperation() override {
    auto desc = llmc::parseTargetOption(getOperation(),
                                        "cuda-grid-dependencies", target);
    if (failed(desc))
      return signalPassFailure();
    if (!desc->hasDependentLaunch())
      return;
    for (auto kernel : getOperation().getOps<gpu::GPUFuncOp>()) {
      if (!kernel.isKernel())
        continue;
      OpBuilder b = OpBuilder::atBlockBegin(&kernel.getBody().front());
      Location loc = kernel.getLoc();
      // Before any thread touches memory: the grids before have completed.
      NVVM::GriddepcontrolOp::create(b, loc, NVVM::GridDepActionKind::wait);
      NVVM::GriddepcontrolOp::create(
          b, loc, NVVM::GridDepActionKind::launch_dependents);
    }
  }
};

} // namespace
