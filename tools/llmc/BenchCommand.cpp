//===- BenchCommand.cpp - llmc bench: time an artifact ---------*- C++ -*-===//
//-*-===//
//
// Prefill and decode are timed separately because they stress different
// things (one large batched call versus many single-token calls). Each is run
// --repeat times and the best run is reported: the minimum is the least noisy
// estimate of what the code can do on a shared machine.
//
//===----------------------------------------------------------------------===//

#include "CommandOptions.h"
#include "Commands.h"

#include "llmc/runtime.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace llmc::cli;

namespace {

const char *kBenchUsage =
    "usage: llmc bench DIR [--prompt-len N] [--gen N] [--repeat R]\n"
    "\n"
    "Times a prefill of N synthetic tokens (default: 32 or max_seq_len/4,\n"
    "whichever is smaller) and the decoding of --gen tokens after it (default\n"
    "64), best of R runs (default 3). Then reports memory: the bytes of\n"
    "weights.bin (memory-mapped, never copied) and how many of them are\n"
    "resident, and the process's peak resident set (Linux /proc).\n";

struct BenchOptions {
  std::string dir;
  int64_t promptLen = -1; // -1: the default
  int64_t gen = -1;       // -1: the default
  int64_t repeat = 3;
  bool help = false;
};

BenchOptions parseBenchOptions(int argc, char **argv) {
  std::vector<Option> options;
  std::vector<std::string> positional;
  scanArguments(argc, argv, {"--prompt-len", "--gen", "--repeat"},
                {"--help", "-h"}, options, positional);
  BenchOptions b;
  for (const Option &o : options) {
    if (o.name == "--help" || o.name == "-h") {
      b.help = true;
      return b;
    }
    if (o.name == "--prompt-len")
      b.promptLen = parseInteger(o, 1, INT32_MAX, "a positive integer");
    else if (o.name == "--gen")
      b.gen = parseInteger(o, 1, INT32_MAX, "a positive integer");
    else if (o.name == "--repeat")
      b.repeat = parseInteger(o, 1, 1000000, "a positive integer");
  }
  b.dir = artifactDir(positional, "bench");
  return b;
}

/// Deterministic, spread-out token ids (a fixed LCG), the same every run.
std::vector<int32_t> syntheticTokens(int64_t n, int64_t vocab, uint64_t salt) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  uint64_t x = 0x9E3779B97F4A7C15ull ^ salt;
  for (int32_t &id : ids) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    id = static_cast<int32_t>((x >> 33) % static_cast<uint64_t>(vocab));
  }
  return ids;
}

/// Kilobytes of the /proc/self/smaps "Rss:" lines of mappings of `file`
/// (canonical path), or -1 when /proc is unavailable.
long long residentKiB(const std::string &file) {
  std::ifstream smaps("/proc/self/smaps");
  if (!smaps)
    return -1;
  char real[PATH_MAX];
  if (!::realpath(file.c_str(), real))
    return -1;
  long long total = 0;
  bool inFile = false;
  std::string line;
  while (std::getline(smaps, line)) {
    // A mapping header starts with "start-end " (hex); fields "Name: value".
    size_t colon = line.find(':');
    size_t space = line.find(' ');
    if (space != std::string::npos && (colon == std::string::npos || colon > space)) {
      size_t slash = line.find('/');
      inFile = slash != std::string::npos && line.compare(slash, std::string::npos, real) == 0;
    } else if (inFile && line.rfind("Rss:", 0) == 0) {
      total += std::atoll(line.c_str() + 4);
    }
  }
  return total;
}

/// The process's peak resident set in KiB (VmHWM), or -1.
long long peakResidentKiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0)
      return std::atoll(line.c_str() + 6);
  return -1;
}

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int bench(const BenchOptions &opts) {
  llmc::Model model = llmc::Model::open(opts.dir);
  const int64_t maxSeq = model.maxSeqLen();
  const int64_t vocab = model.vocabSize();

  int64_t promptLen = opts.promptLen;
  if (promptLen < 0)
    promptLen = std::max<int64_t>(1, std::min<int64_t>(32, maxSeq / 4));
  if (promptLen > maxSeq)
    throw CommandError("--prompt-len", std::to_string(promptLen) +
                                           " exceeds the model's max_seq_len " +
                                           std::to_string(maxSeq));
  int64_t gen = opts.gen;
  if (gen < 0) {
    gen = std::min<int64_t>(64, maxSeq - promptLen);
    if (gen < 1)
      throw CommandError(opts.dir, "max_seq_len " + std::to_string(maxSeq) +
                                       " leaves no room to decode after a " +
                                       std::to_string(promptLen) +
                                       "-token prompt");
  } else if (promptLen + gen > maxSeq) {
    throw CommandError("--gen", "prompt length " + std::to_string(promptLen) +
                                    " + " + std::to_string(gen) +
                                    " generated tokens exceeds the model's "
                                    "max_seq_len " +
                                    std::to_string(maxSeq));
  }

  std::vector<int32_t> prompt = syntheticTokens(promptLen, vocab, 1);
  std::vector<int32_t> decodeIds = syntheticTokens(gen, vocab, 2);
  std::vector<float> logits(static_cast<size_t>(promptLen * vocab));

  double bestPrefill = 1e300, bestDecode = 1e300;
  for (int64_t r = 0; r < opts.repeat; ++r) {
    model.reset();
    double t0 = now();
    model.forward(prompt.data(), promptLen, 0, logits.data());
    bestPrefill = std::min(bestPrefill, now() - t0);
  }
  for (int64_t r = 0; r < opts.repeat; ++r) {
    // The prefill fills the cache so that decode attends over a realistic
    // context; only the single-token calls are timed.
    model.reset();
    model.forward(prompt.data(), promptLen, 0, logits.data());
    double t0 = now();
    for (int64_t i = 0; i < gen; ++i)
      model.forward(&decodeIds[static_cast<size_t>(i)], 1, promptLen + i,
                    logits.data());
    bestDecode = std::min(bestDecode, now() - t0);
  }

  auto rate = [](int64_t n, double s) { return s > 0 ? n / s : 0.0; };
  std::printf("prefill: %.1f tok/s (%lld tokens, best of %lld)\n",
              rate(promptLen, bestPrefill), static_cast<long long>(promptLen),
              static_cast<long long>(opts.repeat));
  std::printf("decode: %.1f tok/s (%lld tokens, best of %lld)\n",
              rate(gen, bestDecode), static_cast<long long>(gen),
              static_cast<long long>(opts.repeat));
  std::string weights = opts.dir + "/weights.bin";
  std::ifstream wf(weights, std::ios::binary | std::ios::ate);
  long long weightBytes = wf ? static_cast<long long>(wf.tellg()) : -1;
  std::printf("memory: weights.bin %lld bytes mapped, %lld KiB resident; "
              "peak RSS %lld KiB\n",
              weightBytes, residentKiB(weights), peakResidentKiB());
  std::fflush(stdout);
  return 0;
}

} // namespace

int llmcBenchMain(int argc, char **argv) {
  try {
    BenchOptions opts = parseBenchOptions(argc, argv);
    if (opts.help) {
      std::fputs(kBenchUsage, stdout);
      return 0;
    }
    return bench(opts);
  } catch (const std::exception &e) {
    return reportError(e.what());
  }
}
