//===- CUDABackend.h - the CUDA (NVVM, PTX) back end ------------*- C++ -*-===//
#ifndef LLMC_TARGET_CUDA_CUDABACKEND_H
#define LLMC_TARGET_CUDA_CUDABACKEND_H

#include "Target/TargetBackend.h"

namespace llmc {

std::unique_ptr<TargetBackend>
createCUDABackend(const TargetDescription &target);

/// tl (GPU-scheduled) -> gpu kernels + dispatch program -> NVVM -> PTX
/// (a `gpu.binary` of the kernels' PTX for the target's SM).
void buildCUDALowering(mlir::OpPassManager &pm, const TargetDescription &target,
                       const LoweringOptions &options = {});

/// The PTX ISA version llmc's kernels are written in for `sm` ("sm_90"):
/// the oldest that knows the SM, at least 7.0.
std::string ptxFeatures(llvm::StringRef sm);

} // namespace llmc

#endif // LLMC_TARGET_CUDA_CUDABACKEND_H
