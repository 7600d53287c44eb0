//===- CPUBackend.cpp - the x86 CPU back end ------------------------------===//
//
// Lowers scheduled tl loop nests through scf, memref and arith to the LLVM
// dialect, emits an object file for the described CPU and links it into
// model.so with the system C driver.
//
//===----------------------------------------------------------------------===//
#include "Target/CPU/CPUBackend.h"

#include "Conversion/Passes.h"
#include "Dialect/TL/Transforms/Passes.h"
#include "Import/Import.h"
#include "Target/CPU/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/Vector/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <thread>

using namespace mlir;
using namespace llmc;

void llmc::buildCPULowering(OpPassManager &pm, const TargetDescription &target,
                            const LoweringOptions &options) {
  // Buffers are placed (and any left released) only now, after any
  // schedule has moved computation between loop nests (compute_at can move
  // a use past a buffer's old last use). The arena is the caller's: the
  // entry's last argument (llmc/abi.h).
  pm.addPass(tl::createTLPlanArena());
  pm.addNestedPass<func::FuncOp>(tl::createTLReleaseBuffers());
  // Each distinct loop nest one function, called by every layer that runs
  // it: code is generated once per kernel, not once per layer.
  pm.addPass(tl::createTLOutlineKernels());
  // What each kernel does per call (metadata's `kernels`, the profile's
  // prediction).
  tl::TLEstimateCostOptions cost;
  cost.target = target.str();
  pm.addPass(tl::createTLEstimateCost(cost));
  if (options.profile)
    pm.addPass(cpu::createCPUProfileKernels());
  pm.addPass(createConvertTLToSCF());
  // int8 dot-product groups as the target's VNNI instructions.
  cpu::CPUInt8DotOptions int8Dot;
  int8Dot.target = target.str();
  pm.addPass(cpu::createCPUInt8Dot(int8Dot));
  // Other group reductions of vector lanes to per-row reductions.
  pm.addNestedPass<func::FuncOp>(vector::createLowerVectorMultiReductionPass(
      vector::VectorMultiReductionLowering::InnerReduction));
  // llmc's exp on the CPU is ggml's (numerics.md).
  pm.addPass(cpu::createCPUExpandExp());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createLoopInvariantCodeMotionPass());
  // Threads: each parallel loop's body becomes a function (its stack
  // buffers in its entry block), the loop an OpenMP region calling it.
  pm.addPass(cpu::createCPUOutlineParallelBodies());
  pm.addPass(createConvertSCFToOpenMPPass());
  pm.addPass(cpu::createCPUAddThreadControl());
  // A sharded model's collectives: calls through the runtime's table.
  pm.addPass(cpu::createCPULowerCollectives());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

namespace {
class CPUBackend : public TargetBackend {
public:
  using TargetBackend::TargetBackend;
  llvm::StringRef name() const override { return "cpu"; }
  void buildLowering(OpPassManager &pm,
                     const LoweringOptions &options) const override {
    buildCPULowering(pm, target(), options);
  }
  llvm::Expected<std::string> emit(ModuleOp lowered,
                                   llvm::StringRef dir) const override;
};
} // namespace

std::unique_ptr<TargetBackend>
llmc::createCPUBackend(const TargetDescription &target) {
  return std::make_unique<CPUBackend>(target);
}

/// The C compiler driver used to link shared objects (it brings libc and
/// libm; a bare ld.lld -shared does not).
static llvm::Expected<std::string> findLinker() {
  if (const char *cc = std::getenv("LLMC_CC"))
    return std::string(cc);
  for (const char *name : {"clang-22", "clang", "cc", "gcc"})
    if (auto path = llvm::sys::findProgramByName(name))
      return *path;
  return llvm::createStringError(
      "no C compiler driver (clang-22, clang, cc) to link model.so; set LLMC_CC");
}

/// Threads that generate machine code: LLMC_COMPILE_JOBS, else this
/// machine's (the compiler's own parallelism, not a fact of the target).
static unsigned compileJobs() {
  if (const char *s = std::getenv("LLMC_COMPILE_JOBS")) {
    unsigned n = 0;
    if (!llvm::StringRef(s).getAsInteger(10, n) && n > 0)
      return std::min(n, 64u);
  }
  return std::max(1u, std::min(std::thread::hardware_concurrency(), 16u));
}

llvm::Expected<std::string> CPUBackend::emit(ModuleOp lowered,
                                             llvm::StringRef dir) const {
  llvm::SmallString<256> stem(dir), so(dir);
  llvm::sys::path::append(stem, "model");
  llvm::sys::path::append(so, "model.so");
  auto objects = emitObjectFiles(lowered, stem, target(), compileJobs());
  if (!objects)
    return objects.takeError();
  auto cc = findLinker();
  if (!cc)
    return cc.takeError();
  llvm::SmallString<256> log(dir);
  llvm::sys::path::append(log, "link.log");
  std::string soStr = so.str().str();
  llvm::SmallVector<llvm::StringRef> args = {*cc, "-shared", "-o", soStr};
  for (const std::string &o : *objects)
    args.push_back(o);
  args.push_back("-lm");
  // Parallel loops run on LLVM's OpenMP runtime (libomp), found where the
  // toolchain installs it and recorded in model.so's run path.
  bool openmp = false;
  lowered.walk([&](LLVM::LLVMFuncOp f) {
    openmp |= f.getName() == "__kmpc_fork_call";
  });
  lowered.walk([&](Operation *op) {
    openmp |= op->getDialect() &&
              op->getDialect()->getNamespace() == "omp";
  });
  std::string libDir = "-L" LLMC_OPENMP_LIB_DIR,
              rpath = "-Wl,-rpath," LLMC_OPENMP_LIB_DIR;
  if (openmp) {
    args.push_back(libDir);
    args.push_back(rpath);
    args.push_back("-lomp");
  }
  ToolRun run = runTool(*cc, args, log);
  if (run.exitCode != 0)
    return fileError(so,
                     "linking failed (" + *cc + "): " + run.error + run.output);
  for (const std::string &o : *objects)
    llvm::sys::fs::remove(o);
  return std::string("model.so");
}
