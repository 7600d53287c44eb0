//===- llm-opt.cpp - llmc's mlir-opt
//---------------------------------------===//
//
// mlir-opt with llmc's dialects, passes and pipelines, plus
// `--compile-to=<phase>`, which runs every phase up to and including one of
// the pipeline `llmc compile` runs:
//   llm-opt model.mlir --compile-to=tl [--llmc-target=T] [--llmc-act-quant=M]
//                      [--llmc-kv-cache=f32|f16] [--llmc-schedule=default|none]
//                      [--llmc-profile] [--llmc-tuning=KEY=r<R>c<C>;...]
// is `llm-opt model.mlir --pass-pipeline='builtin.module(llmc-compile{to=tl
// target=T act-quant=M kv-cache=K schedule=S})'` with T resolved here, once
// (`cpu`, the default, describes this host).
//
//===----------------------------------------------------------------------===//
#include "Target/TargetDescription.h"
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

  // Rewrite --compile-to=<phase> (with --llmc-target, --llmc-act-quant) into
  // the equivalent --pass-pipeline.
  std::vector<std::string> storage;
  std::vector<char *> args;
  std::optional<std::string> phase, target, actQuant, kvCache, schedule, tuning;
  bool profile = false;
  for (int i = 0; i < argc; ++i) {
    llvm::StringRef arg(argv[i]);
    if (arg == "--llmc-profile" || arg == "-llmc-profile") {
      profile = true;
      continue;
    }
    std::optional<std::string> *slot = nullptr;
    for (auto [flag, dest] :
         {std::pair{"compile-to", &phase}, std::pair{"llmc-target", &target},
          std::pair{"llmc-act-quant", &actQuant},
          std::pair{"llmc-kv-cache", &kvCache},
          std::pair{"llmc-schedule", &schedule},
          std::pair{"llmc-tuning", &tuning}}) {
      llvm::StringRef a = arg;
      if (!a.consume_front("--") && !a.consume_front("-"))
        continue;
      if (a.consume_front(flag)) {
        if (a.consume_front("=")) {
          *dest = a.str();
          slot = dest;
        } else if (a.empty() && i + 1 < argc) {
          *dest = argv[++i];
          slot = dest;
        }
      }
    }
    if (!slot)
      args.push_back(argv[i]);
  }
  auto error = [](const llvm::Twine &msg) {
    llvm::errs() << "llm-opt: error: " << msg << "\n";
    return 1;
  };
  if (phase) {
    if (!llmc::parsePhase(*phase))
      return error("unknown phase '" + *phase +
                   "' for --compile-to (expected graph, tl or llvm)");
    auto desc = llmc::resolveTarget(target.value_or("cpu"));
    if (!desc)
      return error("--llmc-target: " + llvm::toString(desc.takeError()));
    std::string mode = actQuant.value_or("exact");
    if (mode != "exact" && mode != "llama.cpp")
      return error("--llmc-act-quant: expected exact or llama.cpp, got '" +
                   mode + "'");
    std::string kv = kvCache.value_or("f32");
    if (!llmc::isKVCacheType(kv))
      return error("--llmc-kv-cache: expected f32 or f16, got '" + kv + "'");
    std::string sched = schedule.value_or("default");
    if (sched != "default" && sched != "none")
      return error("--llmc-schedule: expected default or none, got '" + sched +
                   "'");
    storage.push_back("--pass-pipeline=builtin.module(llmc-compile{to=" +
                      *phase + " target=\"" + desc->str() +
                      "\" act-quant=" + mode + " kv-cache=" + kv +
                      " schedule=" + sched + (profile ? " profile=true" : "") +
                      (tuning ? " tuning=\"" + *tuning + "\"" : "") + "})");
  } else if (target || actQuant || kvCache || schedule || profile || tuning) {
    return error("--llmc-target, --llmc-act-quant, --llmc-kv-cache, "
                 "--llmc-schedule, --llmc-profile and --llmc-tuning go with "
                 "--compile-to");
  }
  for (std::string &s : storage)
    args.push_back(s.data());
  int newArgc = static_cast<int>(args.size());
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      newArgc, args.data(), "llmc optimizer driver\n", registry));
}
