//===- llmc.cpp - the llmc command-line driver -----------------------------===//
//
//   llmc compile MODEL [--tokenizer FILE] [--target cpu] [--max-seq-len N]
//                [--keep-ir] -o DIR
//   llmc run DIR --prompt TEXT --max-tokens N [sampling options]
//   llmc bench DIR
//
// `compile` is the only subcommand that needs MLIR; `run` and `bench` use the
// runtime alone (tools/llmc/RunCommand.cpp, BenchCommand.cpp).
//
//===----------------------------------------------------------------------===//
#include "Commands.h"

#include "Import/Import.h"
#include "Transforms/Pipelines.h"
#include "Target/Artifact.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

using namespace llvm;

static int fail(const Twine &message) {
  errs() << "llmc: error: " << message << "\n";
  return 1;
}

static void usage(raw_ostream &os) {
  os << "usage:\n"
        "  llmc compile MODEL [--tokenizer FILE] [--target cpu] "
        "[--max-seq-len N] [--keep-ir] -o DIR\n"
        "      MODEL: a llama2.c checkpoint, a Hugging Face directory "
        "(config.json + safetensors) or a graph-dialect .mlir file\n"
        "  llmc run DIR --prompt TEXT --max-tokens N [--temperature T] "
        "[--top-k K] [--top-p P] [--seed S] [--dump-logits FILE.npy]\n"
        "  llmc bench DIR [--prompt-len N] [--gen N] [--repeat R]\n";
}

static int compileMain(int argc, char **argv) {
  std::string model;
  llmc::ArtifactOptions options;
  llmc::ImportOptions importOptions;
  std::string maxSeq;
  for (int i = 1; i < argc; ++i) {
    StringRef arg(argv[i]);
    // Options that take a value, and where the value goes.
    std::string *target = llvm::StringSwitch<std::string *>(arg)
                              .Cases({"-o", "--output"}, &options.outDir)
                              .Case("--tokenizer", &options.tokenizer)
                              .Case("--target", &options.target)
                              .Case("--max-seq-len", &maxSeq)
                              .Default(nullptr);
    if (target) {
      if (i + 1 >= argc)
        return fail("option " + arg + " needs a value");
      *target = argv[++i];
      if (target == &maxSeq &&
          (StringRef(maxSeq).getAsInteger(10, importOptions.maxSeqLen) ||
           importOptions.maxSeqLen <= 0))
        return fail("--max-seq-len: expected a positive integer, got '" +
                    maxSeq + "'");
    } else if (arg == "--keep-ir") {
      options.keepIR = true;
    } else if (arg == "-h" || arg == "--help") {
      usage(outs());
      return 0;
    } else if (arg.starts_with("-")) {
      return fail("unknown option '" + arg + "' for llmc compile");
    } else if (model.empty()) {
      model = arg.str();
    } else {
      return fail("more than one model given ('" + model + "', '" + arg + "')");
    }
  }
  if (model.empty())
    return fail("llmc compile: no model given");
  if (options.outDir.empty())
    return fail("llmc compile: no output directory (-o DIR)");

  mlir::DialectRegistry registry;
  llmc::registerLLMCDialects(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  // Located diagnostics: "file:line:col: error: ..." or the tensor name.
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler diagHandler(sourceMgr, &ctx, errs());

  mlir::OwningOpRef<mlir::ModuleOp> module;
  if (StringRef(model).ends_with(".mlir")) {
    module = mlir::parseSourceFile<mlir::ModuleOp>(model, sourceMgr,
                                                   mlir::ParserConfig(&ctx));
    if (!module)
      return fail(model + ": cannot parse the graph module");
  } else {
    auto imported = llmc::importModel(&ctx, model, importOptions);
    if (!imported)
      return fail(toString(imported.takeError()));
    module = std::move(*imported);
  }
  if (Error e = llmc::compileArtifact(*module, options))
    return fail(toString(std::move(e)));
  return 0;
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  if (argc < 2) {
    usage(errs());
    return 1;
  }
  StringRef cmd(argv[1]);
  if (cmd == "compile")
    return compileMain(argc - 1, argv + 1);
  if (cmd == "run")
    return llmcRunMain(argc - 1, argv + 1);
  if (cmd == "bench")
    return llmcBenchMain(argc - 1, argv + 1);
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    usage(outs());
    return 0;
  }
  usage(errs());
  return fail("unknown command '" + cmd + "'");
}
