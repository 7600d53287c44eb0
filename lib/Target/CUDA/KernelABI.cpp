//===- KernelABI.cpp - the dispatch program and the kernels' CUDA ABI -----===//
//
// The CUDA runtime launches each phase's kernels from the dispatch program
// that the GPU back ends share (Target/GPU/KernelABI.h): a buffer argument
// is the device address of its root buffer (weights, KV cache, arena, ...)
// plus the binding's byte offset, its dynamic sizes follow it as scalars.
// Beyond the shared rewrite, only the kernels' names are CUDA's own: PTX
// identifiers have no '.', which outlined kernels' names have
// ("forward_prefill.matmul"); they become '_' before the program names
// them, so that the runtime finds each kernel by the name the program gives.
// Workgroup attributions are shared memory and stack buffers local memory
// as NVVM lowers them.
//
//===----------------------------------------------------------------------===//
#include "Target/GPU/KernelABI.h"
#include "Target/CUDA/Passes.h"
#include "Target/TargetOption.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringSet.h"

namespace llmc::cuda {
#define GEN_PASS_DEF_CUDAKERNELABI
#include "Target/CUDA/Passes.h.inc"
} // namespace llmc::cuda

using namespace mlir;
using namespace llmc;

namespace {

/// `name` as a PTX identifier: letters, digits, '_' and '$', not starting
/// with a digit.
std::string ptxIdentifier(StringRef name) {
  std::string out;
  for (char c : name)
    out += llvm::isAlnum(c) || c == '_' || c == '$' ? c : '_';
  if (out.empty() || llvm::isDigit(out[0]))
    out = "_" + out;
  return out;
}

/// Renames the kernels of `kernels` that are no PTX identifiers (their
/// launches follow), keeping the names unique.
LogicalResult renameKernels(ModuleOp module, gpu::GPUModuleOp kernels) {
  llvm::StringSet<> taken;
  for (auto k : kernels.getOps<gpu::GPUFuncOp>())
    taken.insert(k.getName());
  for (auto k : llvm::make_early_inc_range(kernels.getOps<gpu::GPUFuncOp>())) {
    std::string name = ptxIdentifier(k.getName());
    if (name == k.getName())
      continue;
    std::string unique = name;
    for (int i = 1; taken.contains(unique); ++i)
      unique = name + "_" + std::to_string(i);
    taken.insert(unique);
    auto attr = StringAttr::get(module.getContext(), unique);
    if (failed(SymbolTable::replaceAllSymbolUses(k, attr, module)))
      return k.emitOpError("cannot be renamed to the PTX identifier ")
             << unique;
    SymbolTable::setSymbolName(k, attr);
  }
  return success();
}

struct CUDAKernelABIPass
    : llmc::cuda::impl::CUDAKernelABIBase<CUDAKernelABIPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto desc = parseTargetOption(module, "cuda-kernel-abi", target);
    if (failed(desc))
      return signalPassFailure();
    if (auto kernels = module.lookupSymbol<gpu::GPUModuleOp>("llmc_kernels"))
      if (failed(renameKernels(module, kernels)))
        return signalPassFailure();
    auto retype = [&](gpu::GPUFuncOp k) {
      return gpu_abi::checkKernelTypes(k, *desc);
    };
    if (failed(gpu_abi::writeDispatchProgram(module, *desc, "cuda-kernel-abi",
                                             retype)))
      signalPassFailure();
  }
};

} // namespace
