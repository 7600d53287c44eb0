//===- llm-translate.cpp - into and out of MLIR ----------------------------===//
//
//   llm-translate --import MODEL [--max-seq-len N]   model file -> graph IR
//   llm-translate --mlir-to-llvmir IN.mlir           LLVM dialect -> LLVM IR
//   llm-translate --mlir-to-obj IN.mlir -o OUT.o [--target T]
//                                                    LLVM dialect -> object
//
//===----------------------------------------------------------------------===//
#include "Import/Import.h"
#include "Transforms/Pipelines.h"
#include "Target/CPU/CPUBackend.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace llvm;

static cl::opt<std::string> input(cl::Positional, cl::desc("<input>"),
                                  cl::Required);
static cl::opt<std::string> output("o", cl::desc("output file"),
                                   cl::value_desc("file"), cl::init("-"));
enum class Action { Import, ToLLVMIR, ToObj };
static cl::opt<Action> action(
    cl::desc("translation:"), cl::Required,
    cl::values(clEnumValN(Action::Import, "import",
                          "import a model file into the graph dialect"),
               clEnumValN(Action::ToLLVMIR, "mlir-to-llvmir",
                          "translate an LLVM-dialect module to LLVM IR"),
               clEnumValN(Action::ToObj, "mlir-to-obj",
                          "compile an LLVM-dialect module to an object")));
static cl::opt<std::string>
    target("target",
           cl::desc("the CPU of --mlir-to-obj (cpu = this host, cpu:znver4, "
                    "...)"),
           cl::init("cpu"));
static cl::opt<int64_t> maxSeqLen("max-seq-len",
                                  cl::desc("KV cache length for --import"),
                                  cl::init(0));

static int fail(const Twine &message) {
  errs() << "llm-translate: error: " << message << "\n";
  return 1;
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "llmc translation driver\n");
  mlir::DialectRegistry registry;
  llmc::registerLLMCDialects(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler diagHandler(sourceMgr, &ctx, errs());

  if (action == Action::Import) {
    llmc::ImportOptions options;
    options.maxSeqLen = maxSeqLen;
    auto module = llmc::importModel(&ctx, input, options);
    if (!module)
      return fail(toString(module.takeError()));
    std::error_code ec;
    ToolOutputFile out(output, ec, sys::fs::OF_Text);
    if (ec)
      return fail(output + ": " + ec.message());
    (*module)->print(out.os());
    out.keep();
    return 0;
  }
  auto module = mlir::parseSourceFile<mlir::ModuleOp>(input, sourceMgr,
                                                      mlir::ParserConfig(&ctx));
  if (!module)
    return 1;
  if (action == Action::ToObj) {
    if (output == "-")
      return fail("--mlir-to-obj needs -o FILE");
    auto desc = llmc::resolveTarget(target);
    if (!desc)
      return fail("--target: " + toString(desc.takeError()));
    if (desc->kind != llmc::TargetKind::CPU)
      return fail("--target: --mlir-to-obj emits CPU objects, not '" +
                  desc->str() + "'");
    if (Error e = llmc::emitObjectFile(*module, output, *desc))
      return fail(toString(std::move(e)));
    return 0;
  }
  LLVMContext llvmContext;
  auto llvmModule = mlir::translateModuleToLLVMIR(*module, llvmContext);
  if (!llvmModule)
    return fail("translation to LLVM IR failed");
  std::error_code ec;
  ToolOutputFile out(output, ec, sys::fs::OF_Text);
  if (ec)
    return fail(output + ": " + ec.message());
  llvmModule->print(out.os(), nullptr);
  out.keep();
  return 0;
}
