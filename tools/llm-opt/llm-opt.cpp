//===- llm-opt.cpp - llmc's mlir-opt ---------------------------------------===//
//
// mlir-opt with llmc's dialects, passes and pipelines, plus
// `--compile-to=<phase>`, which runs every phase up to and including one:
//   llm-opt model.mlir --compile-to=tl
// is `llm-opt model.mlir --pass-pipeline='builtin.module(llmc-compile{to=tl})'`.
//
//===----------------------------------------------------------------------===//
#include "Transforms/Pipelines.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  llmc::registerLLMCPasses();
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  llmc::registerLLMCDialects(registry);

  // Rewrite --compile-to=<phase> into the equivalent --pass-pipeline.
  std::vector<std::string> storage;
  std::vector<char *> args;
  for (int i = 0; i < argc; ++i) {
    llvm::StringRef arg(argv[i]);
    std::string phase;
    if (arg.consume_front("--compile-to=") || arg.consume_front("-compile-to="))
      phase = arg.str();
    else if ((arg == "--compile-to" || arg == "-compile-to") && i + 1 < argc)
      phase = argv[++i];
    else {
      args.push_back(argv[i]);
      continue;
    }
    if (!llmc::parsePhase(phase)) {
      llvm::errs() << "llm-opt: error: unknown phase '" << phase
                   << "' for --compile-to (expected graph, tl or llvm)\n";
      return 1;
    }
    storage.push_back("--pass-pipeline=builtin.module(llmc-compile{to=" +
                      phase + "})");
  }
  for (std::string &s : storage)
    args.push_back(s.data());
  int newArgc = static_cast<int>(args.size());
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      newArgc, args.data(), "llmc optimizer driver\n", registry));
}
