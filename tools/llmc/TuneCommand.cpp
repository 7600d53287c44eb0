//===- TuneCommand.cpp - llmc tune: measure the schedule's choices --------===//
//
//   llmc tune MODEL [--act-quant M] [--kv-cache K] [--target T] [-p N]
//                   [-n N] [-t THREADS] [-r R] [-o FILE]
//
// Compiles MODEL once per candidate of the schedule's tunable choices
// (Target/Tuning.h), each with the kernel timers (--profile), runs a
// prompt of N tokens and N decode steps R times on each, and keeps per
// kernel key the candidate whose kernels took the least time (the fastest
// of the runs).
// The winners go into the tune cache that `llmc compile` reads for the
// same target.
//
//===----------------------------------------------------------------------===//
#include "CommandOptions.h"
#include "Commands.h"

#include "Artifact/Artifact.h"
#include "Import/Import.h"
#include "Target/Tuning.h"
#include "Transforms/Pipelines.h"

#include "llmc/runtime.hpp"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>

using namespace llmc::cli;

namespace {

/// How much faster than the rule a candidate must be to replace it.
constexpr double kMargin = 0.03;

const char *kTuneUsage =
    "usage: llmc tune MODEL [--act-quant M] [--kv-cache K] [--target T]\n"
    "                 [-p N] [-n N] [-t THREADS] [-r R] [-o FILE]\n"
    "\n"
    "Measures the schedule's tunable choices on this machine: compiles MODEL\n"
    "once per candidate (how much of the L1 and L2 caches a prefill matmul's\n"
    "blocks may take: r<R>c<C>, 1/R and 1/C, 0 for none, the rule r2c2; how\n"
    "far ahead decode prefetches a weight: p<KiB>, absent the target's),\n"
    "each with the kernel timers of --profile, runs an N-token prompt (-p,\n"
    "default 256) and N decode steps (-n, default 32) R times (-r, default\n"
    "3) on THREADS threads (-t, default the cores) and keeps, per kernel\n"
    "key (a matmul's shape, prefill or decode), the candidate\n"
    "whose kernels took the least time, if it beats the rule by more than\n"
    "3 % (else the rule), among the candidates that change that key's\n"
    "phase (prefill: r, c; decode: p, t). The winners go into the tune cache\n"
    "(-o, default $LLMC_TUNE_CACHE, else ~/.cache/llmc/tune.json), replacing\n"
    "earlier ones of the same target and key; `llmc compile` reads them for\n"
    "the same target (--tune FILE|none).\n";

struct TuneOptions {
  std::string model, actQuant = "exact", kvCache = "f32", target = "cpu";
  std::string output = llmc::defaultTuneCachePath();
  int64_t prompt = 256, steps = 32, repeat = 3;
  int32_t threads = 0;
};

TuneOptions parseTuneOptions(int argc, char **argv, bool &help) {
  std::vector<Option> options;
  std::vector<std::string> positional;
  scanArguments(argc, argv,
                {"--act-quant", "--kv-cache", "--target", "-p", "--prompt-len",
                 "-n", "--n-gen", "-t", "--threads", "-r", "--repeat", "-o",
                 "--output"},
                {"-h", "--help"}, options, positional);
  TuneOptions t;
  help = false;
  for (const Option &o : options) {
    if (o.name == "-h" || o.name == "--help")
      help = true;
    else if (o.name == "--act-quant")
      t.actQuant = o.value;
    else if (o.name == "--kv-cache")
      t.kvCache = o.value;
    else if (o.name == "--target")
      t.target = o.value;
    else if (o.name == "-p" || o.name == "--prompt-len")
      t.prompt = parseInteger(o, 2, 1 << 20, "a prompt length >= 2");
    else if (o.name == "-n" || o.name == "--n-gen")
      t.steps = parseInteger(o, 0, 1 << 20, "a number of decode steps");
    else if (o.name == "-t" || o.name == "--threads")
      t.threads = static_cast<int32_t>(
          parseInteger(o, 1, 4096, "a positive thread count"));
    else if (o.name == "-r" || o.name == "--repeat")
      t.repeat = parseInteger(o, 1, 1000, "a positive integer");
    else if (o.name == "-o" || o.name == "--output")
      t.output = o.value;
  }
  if (help)
    return t;
  if (positional.size() != 1)
    throw CommandError("llmc tune", positional.empty()
                                        ? "no model given"
                                        : "more than one model given");
  t.model = positional[0];
  if (t.actQuant != "exact" && t.actQuant != "llama.cpp")
    throw CommandError("--act-quant",
                       "expected exact or llama.cpp, got '" + t.actQuant + "'");
  if (!llmc::isKVCacheType(t.kvCache))
    throw CommandError("--kv-cache",
                       "expected f32 or f16, got '" + t.kvCache + "'");
  return t;
}

/// Each kernel's tuning key in an artifact's metadata ("" for none).
std::vector<std::string> kernelKeys(const std::string &dir) {
  std::string path = dir + "/metadata.json";
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    throw CommandError(path, "cannot read");
  auto json = llvm::json::parse((*buffer)->getBuffer());
  if (!json)
    throw CommandError(path, llvm::toString(json.takeError()));
  std::vector<std::string> keys;
  const llvm::json::Object *root = json->getAsObject();
  const llvm::json::Array *kernels = root ? root->getArray("kernels") : nullptr;
  if (!kernels)
    throw CommandError(path, "has no kernels (an older llmc?)");
  for (const llvm::json::Value &k : *kernels) {
    const llvm::json::Object *o = k.getAsObject();
    auto tune = o ? o->getString("tune") : std::nullopt;
    keys.push_back(tune ? tune->str() : "");
  }
  return keys;
}

/// The seconds each key's kernels took in the fastest of `repeat` prompts.
std::map<std::string, double> measure(const std::string &dir,
                                      const TuneOptions &opts) {
  std::vector<std::string> keys = kernelKeys(dir);
  llmc::Model model = llmc::Model::open(dir);
  if (opts.threads)
    model.setThreads(opts.threads);
  if (opts.prompt + opts.steps > model.maxSeqLen())
    throw CommandError("-p", std::to_string(opts.prompt) + " + " +
                                 std::to_string(opts.steps) +
                                 " tokens exceed the model's max_seq_len " +
                                 std::to_string(model.maxSeqLen()));
  // Deterministic, spread-out token ids.
  std::vector<int32_t> prompt(static_cast<size_t>(opts.prompt));
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (int32_t &id : prompt) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    id = static_cast<int32_t>((x >> 33) %
                              static_cast<uint64_t>(model.vocabSize()));
  }
  std::vector<float> logits(static_cast<size_t>(model.vocabSize()));
  std::map<std::string, double> best;
  for (int64_t r = 0; r <= opts.repeat; ++r) {
    model.reset();
    model.resetProfile();
    model.forwardLast(prompt.data(), opts.prompt, logits.data());
    // Decode steps, each its own token (their kernels have keys of their
    // own: matmul.decode.*).
    for (int64_t s = 0; s < opts.steps; ++s)
      model.forwardLast(&prompt[static_cast<size_t>(s) % prompt.size()], 1,
                        logits.data());
    if (r == 0)
      continue; // warm-up: pages the weights in, starts the threads
    std::vector<llmc_kernel_profile> profile = model.profile();
    if (profile.size() != keys.size())
      throw CommandError(dir, "the profile and the metadata disagree");
    std::map<std::string, double> run;
    for (size_t k = 0; k < keys.size(); ++k)
      if (!keys[k].empty())
        run[keys[k]] += profile[k].seconds;
    for (auto &[key, s] : run) {
      auto it = best.find(key);
      if (it == best.end() || s < it->second)
        best[key] = s;
    }
  }
  return best;
}

int tune(const TuneOptions &opts) {
  auto resolved = llmc::resolveTarget(opts.target);
  if (!resolved)
    throw CommandError("--target", llvm::toString(resolved.takeError()));
  std::string target = resolved->str();
  // The cache must be readable before an hour of measuring.
  auto cached = llmc::readTuneCache(opts.output);
  if (!cached)
    throw CommandError("-o", llvm::toString(cached.takeError()));

  mlir::DialectRegistry registry;
  llmc::registerLLMCDialects(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  auto imported = llmc::importModel(&ctx, opts.model, llmc::ImportOptions());
  if (!imported)
    throw CommandError(opts.model, llvm::toString(imported.takeError()));

  llvm::SmallString<128> scratch;
  if (auto ec = llvm::sys::fs::createUniqueDirectory("llmc-tune", scratch))
    throw CommandError("llmc tune",
                       "cannot create a scratch directory: " + ec.message());
  std::vector<llmc::ScheduleChoice> candidates = llmc::tuneCandidates();
  // [candidate] -> key -> seconds
  std::vector<std::map<std::string, double>> times;
  for (const llmc::ScheduleChoice &c : candidates) {
    std::string dir = (scratch + "/" + c.str()).str();
    llmc::ArtifactOptions options;
    options.outDir = dir;
    options.pipeline.target = *resolved;
    options.pipeline.actQuant = opts.actQuant;
    options.pipeline.kvCache = opts.kvCache;
    options.pipeline.profile = true;
    options.pipeline.tuning.all = c;
    std::fprintf(stderr, "llmc: tune: compiling %s with %s\n",
                 opts.model.c_str(), c.str().c_str());
    mlir::OwningOpRef<mlir::ModuleOp> module((*imported)->clone());
    if (llvm::Error e = llmc::compileArtifact(*module, options)) {
      llvm::sys::fs::remove_directories(scratch);
      throw CommandError(opts.model, llvm::toString(std::move(e)));
    }
    try {
      times.push_back(measure(dir, opts));
    } catch (...) {
      llvm::sys::fs::remove_directories(scratch);
      throw;
    }
    // Each candidate's weights are a copy of the model's: one at a time.
    llvm::sys::fs::remove_directories(dir);
  }
  llvm::sys::fs::remove_directories(scratch);

  // The winners, each against the rule (the first candidate).
  std::printf("llmc tune: %s on %s, pp%lld + tg%lld, fastest of %lld runs "
              "(kernel ms per candidate)\n\n| key |",
              opts.model.c_str(), target.c_str(),
              static_cast<long long>(opts.prompt),
              static_cast<long long>(opts.steps),
              static_cast<long long>(opts.repeat));
  for (const llmc::ScheduleChoice &c : candidates)
    std::printf(" %s |", c.str().c_str());
  std::printf(" choice | rule / choice |\n|---|");
  for (size_t i = 0; i < candidates.size(); ++i)
    std::printf("---:|");
  std::printf("---|---:|\n");
  std::vector<llmc::TuneEntry> entries(cached->begin(), cached->end());
  for (auto &[key, ruleSeconds] : times[0]) {
    // Another candidate wins only by more than the runs' noise: the rule
    // stays unless beaten by kMargin.
    size_t winner = 0;
    double bestSeconds = ruleSeconds / (1 + kMargin);
    std::printf("| %s |", key.c_str());
    for (size_t i = 0; i < candidates.size(); ++i) {
      auto it = times[i].find(key);
      if (it == times[i].end()) {
        std::printf(" |");
        continue;
      }
      std::printf(" %.2f |", it->second * 1e3);
      // A candidate competes for the keys of the phase its choices change
      // (the others build the same code: their differences are noise).
      const llmc::ScheduleChoice &c = candidates[i], &rule = candidates[0];
      bool changes = llvm::StringRef(key).starts_with(llmc::kDecodeKeyPrefix)
                         ? !c.sameDecode(rule)
                         : !c.samePrefill(rule);
      if (i > 0 && changes && it->second < bestSeconds) {
        bestSeconds = it->second;
        winner = i;
      }
    }
    if (winner == 0)
      bestSeconds = ruleSeconds;
    std::printf(" %s | %.2f |\n", candidates[winner].str().c_str(),
                ruleSeconds / bestSeconds);
    llvm::erase_if(entries, [&, &k = key](const llmc::TuneEntry &e) {
      return e.target == target && e.key == k;
    });
    entries.push_back({target, key, candidates[winner], bestSeconds * 1e3,
                       ruleSeconds * 1e3});
  }
  if (llvm::Error e = llmc::writeTuneCache(opts.output, entries))
    throw CommandError("-o", llvm::toString(std::move(e)));
  std::printf("\nwrote %zu choices for %s to %s\n", times[0].size(),
              target.c_str(), opts.output.c_str());
  return 0;
}

} // namespace

int llmcTuneMain(int argc, char **argv) {
  try {
    bool help = false;
    TuneOptions opts = parseTuneOptions(argc, argv, help);
    if (help) {
      std::fputs(kTuneUsage, stdout);
      return 0;
    }
    return tune(opts);
  } catch (const std::exception &e) {
    return reportError(e.what());
  }
}
