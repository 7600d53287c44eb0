//===- CUDABackend.cpp - the CUDA (NVVM, PTX) back end --------------------===//
//
// Lowers the GPU-scheduled tl nests to kernels of the gpu dialect and the
// dispatch program the runtime launches them from (shared with Vulkan), then
// the kernels through NVVM to PTX for the target's SM (LLVM's NVPTX back
// end, in-process). The artifact holds the PTX (kernels.ptx, which a newer
// GPU's driver compiles on load) and, where the CUDA toolkit's ptxas is
// found, the SM's machine code (kernels.cubin), which the runtime loads
// first.
//
//===----------------------------------------------------------------------===//
#include "Target/CUDA/CUDABackend.h"
#include "Target/GPU/GPUBackend.h"

#include "Target/CUDA/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/CompilationInterfaces.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace mlir;
using namespace llmc;

std::string llmc::ptxFeatures(llvm::StringRef sm) {
  unsigned n = 0;
  sm.drop_front(3).getAsInteger(10, n);
  // PTX ISA 7.0 brought sm_80, 7.1 sm_86, 7.4 sm_87, 7.8 sm_89 and sm_90
  // (8.0 its architecture-specific sm_90a features), 8.6 sm_100.
  if (n >= 100)
    return "+ptx86";
  if (n >= 89)
    return "+ptx80";
  if (n >= 87)
    return "+ptx74";
  if (n >= 86)
    return "+ptx71";
  return "+ptx70";
}

namespace {

/// The CUDA toolkit's root: CUDA_HOME, CUDA_PATH or CUDA_ROOT, else
/// /usr/local/cuda, else the directory above a ptxas on PATH; empty when
/// there is none.
std::string toolkitRoot() {
  for (const char *var : {"CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"})
    if (const char *v = std::getenv(var); v && *v)
      return v;
  if (llvm::sys::fs::exists("/usr/local/cuda/bin/ptxas"))
    return "/usr/local/cuda";
  if (llvm::ErrorOr<std::string> p = llvm::sys::findProgramByName("ptxas"))
    return llvm::sys::path::parent_path(llvm::sys::path::parent_path(*p)).str();
  return "";
}

class CUDABackend : public GPUBackend {
public:
  using GPUBackend::GPUBackend;
  llvm::StringRef name() const override { return "cuda"; }
  void buildLowering(OpPassManager &pm,
                     const LoweringOptions &options) const override {
    buildCUDALowering(pm, target(), options);
  }
  llvm::Expected<std::string> emit(ModuleOp lowered,
                                   llvm::StringRef dir) const override;

protected:
  void deviceFields(llvm::json::Object &device) const override {
    // The SM the machine code is for; the PTX for any newer one.
    device["arch"] = target().name;
    device["ptx"] = "kernels.ptx";
    // Every kernel waits for the one before (cuda-grid-dependencies): the
    // runtime may link them with programmatic edges.
    device["pdl"] = target().hasDependentLaunch();
  }
};

} // namespace

void llmc::buildCUDALowering(OpPassManager &pm, const TargetDescription &target,
                             const LoweringOptions &options) {
  buildGPUKernels(pm);
  cuda::CUDAKernelABIOptions abi;
  abi.target = target.str();
  pm.addPass(cuda::createCUDAKernelABI(abi));
  pm.addPass(createCanonicalizerPass());
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(memref::createFoldMemRefAliasOpsPass());
  kernels.addPass(createLowerAffinePass());
  cuda::CUDASubgroupShufflesOptions shuffles;
  shuffles.target = target.str();
  kernels.addPass(cuda::createCUDASubgroupShuffles(shuffles));
  kernels.addPass(cuda::createCUDAContractFMA());
  cuda::CUDAGridDependenciesOptions dependencies;
  dependencies.target = target.str();
  kernels.addPass(cuda::createCUDAGridDependencies(dependencies));
  kernels.addPass(cuda::createCUDALowerVectors());
  cuda::CUDAAsyncCopiesOptions copies;
  copies.target = target.str();
  kernels.addPass(cuda::createCUDAAsyncCopies(copies));
  kernels.addPass(createSCFToControlFlowPass());
  // 32-bit indices, as the kernels were scheduled for (and the dispatch
  // program's range bounds every binding to).
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.indexBitwidth = 32;
  kernels.addPass(createConvertGpuOpsToNVVMOps(nvvm));
  kernels.addPass(createReconcileUnrealizedCastsPass());
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  GpuNVVMAttachTargetOptions attach;
  attach.moduleMatcher = "llmc_kernels";
  attach.chip = target.name;
  attach.features = ptxFeatures(target.name);
  attach.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(attach));
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa";
  binary.toolkitPath = toolkitRoot();
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

std::unique_ptr<TargetBackend>
llmc::createCUDABackend(const TargetDescription &target) {
  return std::make_unique<CUDABackend>(target);
}

/// The PTX of the kernels' `gpu.binary`, or an error.
static llvm::Expected<std::string> kernelsPTX(ModuleOp lowered) {
  auto binary = lowered.lookupSymbol<gpu::BinaryOp>("llmc_kernels");
  if (!binary || binary.getObjects().size() != 1)
    return llvm::createStringError(
        "the lowered module holds no gpu.binary @llmc_kernels with one "
        "object (expected the kernels' PTX)");
  auto object = cast<gpu::ObjectAttr>(binary.getObjects()[0]);
  if (object.getFormat() != gpu::CompilationTarget::Assembly)
    return llvm::createStringError("the kernels' gpu.binary is not PTX");
  return object.getObject().getValue().str();
}

static llvm::Error writeFile(llvm::StringRef path, llvm::StringRef data) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return llvm::createStringError(path.str() +
                                   ": cannot write: " + ec.message());
  os << data;
  os.close();
  if (os.has_error())
    return llvm::createStringError(path.str() +
                                   ": cannot write: " + os.error().message());
  return llvm::Error::success();
}

llvm::Expected<std::string> CUDABackend::emit(ModuleOp lowered,
                                              llvm::StringRef dir) const {
  llvm::Expected<std::string> ptx = kernelsPTX(lowered);
  if (!ptx)
    return ptx.takeError();
  llvm::SmallString<256> ptxPath(dir), cubinPath(dir), logPath(dir);
  llvm::sys::path::append(ptxPath, "kernels.ptx");
  llvm::sys::path::append(cubinPath, "kernels.cubin");
  llvm::sys::path::append(logPath, "ptxas.log");
  if (llvm::Error e = writeFile(ptxPath, *ptx))
    return std::move(e);
  // The SM's machine code from the toolkit's ptxas; without a toolkit the
  // artifact holds the PTX alone, which the driver compiles on load.
  std::string root = toolkitRoot();
  llvm::SmallString<256> ptxas(root);
  llvm::sys::path::append(ptxas, "bin", "ptxas");
  if (root.empty() || !llvm::sys::fs::can_execute(ptxas)) {
    llvm::errs() << "llmc: warning: no CUDA toolkit (ptxas) found (set "
                    "CUDA_HOME); the artifact holds PTX only, which the "
                    "driver compiles when it loads it\n";
    return std::string("kernels.ptx");
  }
  std::string arch = "-arch=" + target().name;
  llvm::SmallVector<llvm::StringRef> args = {ptxas,   arch, "-O3",
                                             ptxPath, "-o", cubinPath};
  ToolRun run = runTool(ptxas, args, logPath);
  if (run.exitCode != 0) {
    llvm::sys::fs::remove(cubinPath);
    return llvm::createStringError(
        ptxas.str().str() + " " + arch + " rejects the kernels' PTX (" +
        (run.error.empty() ? "exit " + std::to_string(run.exitCode)
                           : run.error) +
        "): " + run.output);
  }
  return std::string("kernels.cubin");
}
