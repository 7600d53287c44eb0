//===- ObjectEmitter.cpp - LLVM dialect to object files -------------------===//
//
// The LLVM dialect module is translated to LLVM IR and optimised at -O3 as
// one module (inlining and every other interprocedural choice as before);
// its machine code, the bulk of a compile's time, is then generated in
// parallel: the optimised module split into one part per job
// (llvm::SplitModule, functions dealt round robin, local symbols made
// hidden globals so that the parts link), each part carried to a thread of
// its own as bitcode (an LLVMContext is not shared between threads) and
// compiled there into an object file. Code generation works function by
// function, so the machine code is the same as one module's.
//
//===----------------------------------------------------------------------===//
#include "Target/CPU/CPUBackend.h"
#include "Import/Import.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/Utils/SplitModule.h"

#include <thread>

using namespace llmc;

/// The target machine for `desc`, or an error about `path`.
static llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
targetMachine(const TargetDescription &desc, llvm::StringRef path) {
  llvm::Triple triple(desc.triple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return fileError(path, "no LLVM target for " + triple.str() + ": " + error);
  llvm::TargetOptions targetOptions;
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, desc.name, desc.llvmFeatures(), targetOptions, llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
}

/// Machine code of `module` into the object file `path`.
static llvm::Error codegen(llvm::Module &module, llvm::TargetMachine &machine,
                           llvm::StringRef path) {
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return fileError(path, "cannot write: " + ec.message());
  llvm::legacy::PassManager pm;
  if (machine.addPassesToEmitFile(pm, out, nullptr,
                                  llvm::CodeGenFileType::ObjectFile))
    return fileError(path, "the target cannot emit object files");
  pm.run(module);
  out.flush();
  if (out.has_error())
    return fileError(path, "cannot write: " + out.error().message());
  return llvm::Error::success();
}

llvm::Expected<std::vector<std::string>>
llmc::emitObjectFiles(mlir::ModuleOp module, llvm::StringRef stem,
                      const TargetDescription &desc, unsigned jobs) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  std::string first = (stem + ".o").str();
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      mlir::translateModuleToLLVMIR(module, llvmContext, "llmc_model");
  if (!llvmModule)
    return fileError(first, "translation to LLVM IR failed");
  auto machine = targetMachine(desc, first);
  if (!machine)
    return machine.takeError();
  llvmModule->setTargetTriple((*machine)->getTargetTriple());
  llvmModule->setDataLayout((*machine)->createDataLayout());
  auto optimize = mlir::makeOptimizingTransformer(3, 0, machine->get());
  if (llvm::Error e = optimize(llvmModule.get()))
    return std::move(e);

  unsigned functions = 0;
  for (llvm::Function &f : *llvmModule)
    functions += !f.isDeclaration();
  jobs = std::max(1u, std::min(jobs, functions));
  if (jobs == 1) {
    if (llvm::Error e = codegen(*llvmModule, **machine, first))
      return std::move(e);
    return std::vector<std::string>{first};
  }
  std::vector<llvm::SmallString<0>> parts;
  llvm::SplitModule(
      *llvmModule, jobs,
      [&](std::unique_ptr<llvm::Module> part) {
        llvm::SmallString<0> &bitcode = parts.emplace_back();
        llvm::raw_svector_ostream os(bitcode);
        llvm::WriteBitcodeToFile(*part, os);
      },
      /*PreserveLocals=*/false, /*RoundRobin=*/true);
  std::vector<std::string> paths(parts.size());
  std::vector<std::string> errors(parts.size());
  std::vector<std::thread> workers;
  for (size_t i = 0; i < parts.size(); ++i) {
    paths[i] = (stem + "." + llvm::Twine(i) + ".o").str();
    workers.emplace_back([&, i] {
      llvm::LLVMContext context;
      auto part = llvm::parseBitcodeFile(
          llvm::MemoryBufferRef(parts[i].str(), paths[i]), context);
      llvm::Error e = llvm::Error::success();
      if (!part) {
        e = part.takeError();
      } else if (auto m = targetMachine(desc, paths[i]); !m) {
        e = m.takeError();
      } else {
        e = codegen(**part, **m, paths[i]);
      }
      if (e)
        errors[i] = llvm::toString(std::move(e));
    });
  }
  for (std::thread &t : workers)
    t.join();
  for (size_t i = 0; i < errors.size(); ++i)
    if (!errors[i].empty())
      return llvm::createStringError(errors[i]);
  return paths;
}

llvm::Error llmc::emitObjectFile(mlir::ModuleOp module, llvm::StringRef path,
                                 const TargetDescription &desc) {
  llvm::SmallString<256> stem(path);
  llvm::sys::path::replace_extension(stem, "");
  auto objects = emitObjectFiles(module, stem, desc, 1);
  if (!objects)
    return objects.takeError();
  if ((*objects)[0] != path)
    if (std::error_code ec = llvm::sys::fs::rename((*objects)[0], path))
      return fileError(path, "cannot write: " + ec.message());
  return llvm::Error::success();
}
