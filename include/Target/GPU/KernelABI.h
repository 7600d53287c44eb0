//===- KernelABI.h - what the GPU back ends' kernel ABIs share --*- C++ -*-===//
//
// A GPU artifact has no host code: the runtime launches each phase's
// kernels from a dispatch program (docs/artifact.md, "device"). Writing that
// program from the host functions' `gpu.launch_func`s, and giving each
// kernel the arguments it describes (a buffer is a base address and a byte
// offset, its shape scalars beside it), is the same for every GPU back end;
// each back end then retypes the kernels for its own ABI (Vulkan: storage
// classes and an entry point; CUDA: nothing more).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_TARGET_GPU_KERNELABI_H
#define LLMC_TARGET_GPU_KERNELABI_H

#include "Target/TargetDescription.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace llmc::gpu_abi {

/// What a back end does to each kernel after the shared rewrite.
using RetypeKernel =
    llvm::function_ref<mlir::LogicalResult(mlir::gpu::GPUFuncOp)>;

/// Writes the module attribute `llmc.dispatch` (JSON: the kernels of
/// `gpu.module @llmc_kernels` and per phase function, `llmc.phase`, its
/// launches and copies with grids, bindings and scalars as expressions of
/// the call's sizes), drops the launches from the host functions and
/// rewrites every kernel's signature: a memref argument becomes a
/// one-dimensional `memref<?xT>` (bound at its byte offset; past the
/// target's range, one per window) followed by an index argument per
/// dynamic size, its accesses linearized; the workgroup attributions stay
/// after the inputs. `retype` then runs on each kernel. `pass` names the
/// caller in errors.
mlir::LogicalResult writeDispatchProgram(mlir::ModuleOp module,
                                         const TargetDescription &target,
                                         llvm::StringRef pass,
                                         RetypeKernel retype);

/// The kernel's arithmetic and buffers use only the element types the target
/// has (f16, i8, f64, i64 are features of a GPU target): the first op that
/// uses another is an error naming the feature.
mlir::LogicalResult checkKernelTypes(mlir::gpu::GPUFuncOp kernel,
                                     const TargetDescription &target);

} // namespace llmc::gpu_abi

#endif // LLMC_TARGET_GPU_KERNELABI_H
