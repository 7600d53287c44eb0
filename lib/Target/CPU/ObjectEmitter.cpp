//===- ObjectEmitter.cpp - LLVM dialect to an object file -----------------===//
#include "Target/CPU/CPUBackend.h"
#include "Import/Import.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"

using namespace llmc;

llvm::Error llmc::emitObjectFile(mlir::ModuleOp module, llvm::StringRef path,
                                 const TargetDescription &desc) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      mlir::translateModuleToLLVMIR(module, llvmContext, "llmc_model");
  if (!llvmModule)
    return fileError(path, "translation to LLVM IR failed");

  llvm::Triple triple(desc.triple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return fileError(path, "no LLVM target for " + triple.str() + ": " + error);
  llvm::TargetOptions targetOptions;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, desc.name, desc.llvmFeatures(), targetOptions, llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  llvmModule->setTargetTriple(triple);
  llvmModule->setDataLayout(machine->createDataLayout());

  auto optimize = mlir::makeOptimizingTransformer(3, 0, machine.get());
  if (llvm::Error e = optimize(llvmModule.get()))
    return e;

  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return fileError(path, "cannot write: " + ec.message());
  llvm::legacy::PassManager codegen;
  if (machine->addPassesToEmitFile(codegen, out, nullptr,
                                   llvm::CodeGenFileType::ObjectFile))
    return fileError(path, "the target cannot emit object files");
  codegen.run(*llvmModule);
  out.flush();
  return llvm::Error::success();
}
