//===- BenchCommand.cpp - llmc bench: time an artifact, beside a peer -----===//
//
// llama-bench's two tests, with its conventions: `ppN` processes an N-token
// prompt in one call from an empty cache, `tgN` generates N tokens one call
// each from an empty cache; tokens per second, the median of --repeat runs
// (with the minimum and maximum). Given a llama.cpp `llama-bench` (--vs PATH
// or $LLAMA_BENCH) and the model file, the peer runs the same tests on the
// same file, alternating with llmc run by run in one process tree, so that
// both see the same machine state; the ratio is llmc / peer.
//
//===----------------------------------------------------------------------===//

#include "CommandOptions.h"
#include "Commands.h"

#include "llmc/runtime.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace llmc::cli;

namespace {

const char *kBenchUsage =
    "usage: llmc bench DIR|MODEL [-p N] [-n N] [-t T[,T...]] [-r R]\n"
    "                  [--vs PATH|npm|none]... [--peer-args ARGS] "
    "[--roofline]\n"
    "                  [--profile] [--device N] [-ub N]\n"
    "                  [--act-quant M] [--target T]   (MODEL only)\n"
    "\n"
    "Times llama-bench's tests: ppN, an N-token prompt in one call (-p,\n"
    "default 512), and tgN, N tokens generated one call each (-n, default\n"
    "128), both from an empty cache, at each thread count of -t (default: the\n"
    "cores), the median of R runs (-r, default 3) with min-max. 0 skips a "
    "test;\n"
    "the defaults shrink to the model's max_seq_len.\n"
    "A MODEL file is compiled first (cached, as `llmc run MODEL` does).\n"
    "\n"
    "With a model file, a peer runs the same tests on it, alternating with\n"
    "llmc run by run: the llama-bench given by --vs PATH or $LLAMA_BENCH\n"
    "(--peer-args are passed on; with \"-fa 0,1\" the best of the settings\n"
    "counts), else llama.cpp from npm\n"
    "(node-llama-cpp's prebuilt build in the source tree's test/oracles, as\n"
    "the tests use it), which it says; --vs none skips it. The ratio column\n"
    "is llmc / peer. --vs may be given more than once (llama.cpp and\n"
    "ik_llama.cpp): each peer runs in turn after llmc, in its own column,\n"
    "with its own ratio.\n"
    "\n"
    "Then reports memory: the bytes of weights.bin (memory-mapped, never\n"
    "copied), how many of them are resident, and the peak resident set.\n"
    "\n"
    "--roofline also measures the memory's read bandwidth at each thread\n"
    "count (a sum over 512 MiB, the best of 5 passes, as STREAM reports) and\n"
    "puts decode against it: the bytes one token reads (weights.bin but the\n"
    "embedding table, of which one row, and the KV cache of the positions\n"
    "attended) times the tgN median, as a fraction of that bandwidth;\n"
    "and the f32 FMA peak at each thread count (16 chains of FMAs on the\n"
    "widest vectors, the best of 5 passes), with ppN's arithmetic (the\n"
    "artifact's matmul and attention FLOPs) times its median against it.\n"
    "--profile (an artifact compiled with `llmc compile --profile`, or a\n"
    "MODEL, which it compiles so) runs ppN and tgN once more at each thread\n"
    "count and prints each kernel's measured time beside the time the\n"
    "compiler's cost model predicts for it: its distinct bytes at the read\n"
    "bandwidth or its vector instructions at the FMA instruction rate,\n"
    "whichever is longer, on the threads its parallel loop can use (both\n"
    "rates measured as --roofline does, in the same run).\n"
    "A vulkan or cuda artifact: --roofline puts decode against the device\n"
    "memory's bandwidth over 256 MiB, the best of 5 (Vulkan: a kernel reading\n"
    "it; CUDA: a device-to-device copy, bytes read and written), and\n"
    "--profile times each kernel with timestamp queries or events (measured\n"
    "times only: GPU kernels have no cost model yet).\n"
    "--device N: the GPU of a vulkan or cuda artifact (as llmc run).\n"
    "-ub N (--micro-batch N): a prompt runs in calls of at most N tokens\n"
    "(0: one call; default: the artifact's, 0 unless a pipeline's); a\n"
    "pipeline's stages work on successive pieces at once.\n"
    "--prompt-len and --gen are -p and -n; --repeat is -r.\n";

struct BenchOptions {
  std::string dir;
  std::string modelFile; // set by the driver when given a model
  int64_t prompt = 512, gen = 128, repeat = 3;
  bool promptGiven = false, genGiven = false;
  std::vector<int32_t> threads;
  std::optional<int64_t> microBatch; // unset: the artifact's
  std::vector<std::string> vs; // empty = default
  std::string peerArgs; // extra llama-bench arguments
  bool roofline = false;
  bool profile = false;
  bool help = false;
};

std::vector<int32_t> parseThreadList(const Option &o) {
  std::vector<int32_t> list;
  std::stringstream ss(o.value);
  std::string item;
  while (std::getline(ss, item, ',')) {
    Option one{o.name, item};
    list.push_back(static_cast<int32_t>(
        parseInteger(one, 1, 4096, "a list of positive thread counts")));
  }
  if (list.empty())
    throw CommandError(o.name, "expected a list of positive thread counts");
  return list;
}

BenchOptions parseBenchOptions(int argc, char **argv) {
  std::vector<Option> options;
  std::vector<std::string> positional;
  scanArguments(argc, argv,
                {"-p", "--prompt-len", "-n", "--gen", "-t", "--threads", "-r",
                 "--repeat", "--vs", "--peer-args", "--model-file", "--device",
                 "-ub", "--micro-batch"},
                {"--help", "-h", "--roofline", "--profile"}, options,
                positional);
  BenchOptions b;
  for (const Option &o : options) {
    if (o.name == "--help" || o.name == "-h") {
      b.help = true;
      return b;
    }
    if (o.name == "--roofline") {
      b.roofline = true;
      continue;
    }
    if (o.name == "--profile") {
      b.profile = true;
      continue;
    }
    if (o.name == "-p" || o.name == "--prompt-len") {
      b.prompt = parseInteger(o, 0, INT32_MAX, "a non-negative integer");
      b.promptGiven = true;
    } else if (o.name == "-n" || o.name == "--gen") {
      b.gen = parseInteger(o, 0, INT32_MAX, "a non-negative integer");
      b.genGiven = true;
    } else if (o.name == "-r" || o.name == "--repeat")
      b.repeat = parseInteger(o, 1, 1000000, "a positive integer");
    else if (o.name == "-t" || o.name == "--threads")
      b.threads = parseThreadList(o);
    else if (o.name == "--vs")
      b.vs.push_back(o.value);
    else if (o.name == "--peer-args")
      b.peerArgs = o.value;
    else if (o.name == "--model-file")
      b.modelFile = o.value;
    else if (o.name == "--device")
      selectDevice(o);
    else if (o.name == "-ub" || o.name == "--micro-batch")
      b.microBatch = parseInteger(o, 0, INT32_MAX, "a non-negative integer");
  }
  b.dir = artifactDir(positional, "bench");
  return b;
}

double now();

/// The sum of `n` words from `p`, in the host's widest vector loads (the
/// probe must not be limited by narrow ones).
__attribute__((target_clones("avx512f", "avx2", "default"))) uint64_t
sumWords(const uint64_t *p, size_t n) {
  uint64_t s = 0;
  for (size_t i = 0; i < n; ++i)
    s += p[i];
  return s;
}

/// The shortest time, in seconds, of 5 passes (after one that warms up) of
/// `work(t)` on threads t = 0 .. threads-1 at once.
double bestPass(int32_t threads, const std::function<void(int32_t)> &work) {
  double best = 0;
  for (int pass = 0; pass < 6; ++pass) {
    std::vector<std::thread> pool;
    double t0 = now();
    for (int32_t t = 0; t < threads; ++t)
      pool.emplace_back([&, t] { work(t); });
    for (std::thread &th : pool)
      th.join();
    double seconds = now() - t0;
    if (pass > 0 && (best == 0 || seconds < best))
      best = seconds;
  }
  return best;
}

/// The memory's read bandwidth with `threads` threads, bytes/s: each thread
/// sums its slice of `buffer` (all ones, far larger than any cache; the sum
/// is checked so the loop stays), the best of 5 passes after one that warms
/// up.
double readBandwidth(const std::vector<uint64_t> &buffer, int32_t threads) {
  const double bytes = static_cast<double>(buffer.size() * sizeof(uint64_t));
  size_t n = buffer.size(), per = (n + threads - 1) / threads;
  std::vector<uint64_t> sums(static_cast<size_t>(threads) * 8);
  double seconds = bestPass(threads, [&](int32_t t) {
    size_t begin = std::min(n, t * per), end = std::min(n, begin + per);
    // A cache line apart.
    sums[static_cast<size_t>(t) * 8] = sumWords(buffer.data() + begin, end - begin);
  });
  uint64_t total = 0;
  for (uint64_t s : sums)
    total += s;
  if (total != n) // every element is 1
    throw CommandError("--roofline", "the bandwidth probe summed wrongly");
  return bytes / seconds;
}

/// `iters` rounds of 16 independent chains of multiply-adds on vectors `V`
/// (enough chains to fill every FMA unit through its latency; one
/// expression each, which the compiler contracts into an FMA); returns a
/// value of the chains so that they stay. Inlined into callers that name
/// the instruction set.
template <typename V>
__attribute__((always_inline)) inline float fmaChains(int64_t iters) {
  V acc[16];
  for (int j = 0; j < 16; ++j)
    acc[j] = V{} + 0.001f * static_cast<float>(j);
  const V m = V{} + 0.999f, a = V{} + 0.001f;
  for (int64_t i = 0; i < iters; ++i)
    for (int j = 0; j < 16; ++j)
      acc[j] = acc[j] * m + a;
  V s = acc[0];
  for (int j = 1; j < 16; ++j)
    s += acc[j];
  float total = 0;
  for (size_t l = 0; l < sizeof(V) / sizeof(float); ++l)
    total += s[l];
  return total;
}

typedef float Floats16 __attribute__((vector_size(64)));
typedef float Floats8 __attribute__((vector_size(32)));

__attribute__((target("avx512f"))) float fmaChains512(int64_t iters) {
  return fmaChains<Floats16>(iters);
}

__attribute__((target("avx2,fma"))) float fmaChains256(int64_t iters) {
  return fmaChains<Floats8>(iters);
}

/// The f32 lanes of the vectors fmaPeak uses (0: no FMA).
int fmaLanes() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f"))
    return 16;
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 8
                                                                         : 0;
}

/// The f32 FMA peak with `threads` threads, FLOP/s (a multiply-add is 2):
/// each thread runs the chains, the best of 5 passes after one that warms
/// up. 0 on a host without FMA.
double fmaPeak(int32_t threads) {
  bool wide = fmaLanes() == 16;
  if (fmaLanes() == 0)
    return 0;
  const int64_t iters = 20'000'000;
  const double flops = 2.0 * 16 * (wide ? 16 : 8) * iters * threads;
  std::vector<float> sink(static_cast<size_t>(threads) * 16);
  double seconds = bestPass(threads, [&](int32_t t) {
    sink[static_cast<size_t>(t) * 16] =
        wide ? fmaChains512(iters) : fmaChains256(iters);
  });
  float total = 0;
  for (float v : sink)
    total += v;
  if (!(total > 0)) // the chains converge to 0.001 / 0.001 = 1 each
    throw CommandError("--roofline", "the FMA probe computed wrongly");
  return flops / seconds;
}

/// The machine's rates at one thread count, measured in this run.
struct Rates {
  double bandwidth;    ///< read bytes/s
  double instructions; ///< vector FMA instructions/s
};

/// The cost model's time for a kernel's work: its bytes at the read
/// bandwidth or its vector instructions at the FMA instruction rate,
/// whichever is longer, on the threads its parallel loop keeps busy (P
/// iterations on T threads: P / ceil(P / T) of them). Sets `memoryBound`.
double predictSeconds(const llmc_kernel_profile &k, int32_t threads,
                      const Rates &rates, bool &memoryBound) {
  double p = std::max(1.0, std::round(k.parallel));
  double busy = p / std::ceil(p / threads);
  double share = std::min(1.0, busy / threads);
  double memory = k.bytes / (rates.bandwidth * share);
  double compute = rates.instructions > 0
                       ? k.instructions / (rates.instructions * share)
                       : 0;
  memoryBound = memory >= compute;
  return std::max(memory, compute);
}

/// The per-kernel table of one profiled run of `test` with measured times
/// only (a device artifact's timestamps: its kernels have no cost model).
void printMeasuredProfile(const std::string &test, double wall,
                          const std::vector<llmc_kernel_profile> &kernels) {
  double measured = 0;
  for (const llmc_kernel_profile &k : kernels)
    measured += k.seconds;
  std::printf("\nprofile: %s: %.2f ms in %zu kernels (%.0f %% of the run's "
              "%.2f ms)\n\n"
              "| kernel | calls | ms | %% | us per call |\n"
              "|---|---:|---:|---:|---:|\n",
              test.c_str(), measured * 1e3, kernels.size(),
              wall > 0 ? 100 * measured / wall : 0, wall * 1e3);
  for (const llmc_kernel_profile &k : kernels)
    std::printf("| %s | %lld | %.3f | %.1f | %.1f |\n", k.name,
                static_cast<long long>(k.calls), k.seconds * 1e3,
                measured > 0 ? 100 * k.seconds / measured : 0,
                k.calls ? k.seconds / k.calls * 1e6 : 0);
  std::printf("| total | | %.3f | 100 | |\n", measured * 1e3);
}

/// The per-kernel table of one profiled run of `test`.
void printProfile(const std::string &test, int32_t threads, double wall,
                  std::vector<llmc_kernel_profile> kernels,
                  const Rates &rates) {
  kernels.erase(std::remove_if(kernels.begin(), kernels.end(),
                               [](auto &k) { return k.calls == 0; }),
                kernels.end());
  std::sort(kernels.begin(), kernels.end(),
            [](auto &a, auto &b) { return a.seconds > b.seconds; });
  if (std::all_of(kernels.begin(), kernels.end(), [](auto &k) {
        return k.bytes == 0 && k.instructions == 0;
      })) {
    printMeasuredProfile(test, wall, kernels);
    return;
  }
  double measured = 0, predicted = 0;
  for (const llmc_kernel_profile &k : kernels) {
    bool memory;
    measured += k.seconds;
    predicted += predictSeconds(k, threads, rates, memory);
  }
  std::printf("\nprofile: %s at %d thread%s: %.1f ms in %zu kernels (%.0f %% "
              "of the run's %.1f ms); the cost model predicts %.1f ms "
              "(read %.1f GB/s, %.2f G vector FMA/s)\n\n"
              "| kernel | calls | ms | %% | predicted ms | measured / "
              "predicted | bound | GOP/s | GB/s |\n"
              "|---|---:|---:|---:|---:|---:|---|---:|---:|\n",
              test.c_str(), threads, threads == 1 ? "" : "s", measured * 1e3,
              kernels.size(), wall > 0 ? 100 * measured / wall : 0, wall * 1e3,
              predicted * 1e3, rates.bandwidth / 1e9, rates.instructions / 1e9);
  const size_t shown = 12;
  double restMeasured = 0, restPredicted = 0;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const llmc_kernel_profile &k = kernels[i];
    bool memory;
    double p = predictSeconds(k, threads, rates, memory);
    if (i >= shown) {
      restMeasured += k.seconds;
      restPredicted += p;
      continue;
    }
    std::printf("| %s%s | %lld | %.2f | %.1f | %.2f | %.2f | %s | %.1f | %.1f "
                "|\n",
                k.name, k.exact ? "" : " (inexact)",
                static_cast<long long>(k.calls), k.seconds * 1e3,
                100 * k.seconds / measured, p * 1e3, p > 0 ? k.seconds / p : 0,
                memory ? "memory" : "compute",
                k.seconds > 0 ? (k.flops + k.int_ops) / k.seconds / 1e9 : 0,
                k.seconds > 0 ? k.bytes / k.seconds / 1e9 : 0);
  }
  if (kernels.size() > shown)
    std::printf("| (%zu others) | | %.2f | %.1f | %.2f | %.2f | | | |\n",
                kernels.size() - shown, restMeasured * 1e3,
                100 * restMeasured / measured, restPredicted * 1e3,
                restPredicted > 0 ? restMeasured / restPredicted : 0);
  std::printf("| total | | %.2f | 100 | %.2f | %.2f | | | |\n", measured * 1e3,
              predicted * 1e3, predicted > 0 ? measured / predicted : 0);
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

} // namespace

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

namespace {

/// Restarts the peak resident set count (VmHWM), so that a model compiled
/// in this process just before does not count in bench's figure.
void resetPeakResident() {
#ifdef __GLIBC__
  ::malloc_trim(0); // hand back the heap a compilation left
#endif
  std::ofstream("/proc/self/clear_refs") << "5";
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

/// Runs `argv` with its stdout captured; stderr passes through. Returns the
/// exit status (-1 when it could not run).
int capture(const std::vector<std::string> &argv, std::string &out) {
  int pipefd[2];
  if (::pipe(pipefd) != 0)
    return -1;
  pid_t pid = ::fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    ::dup2(pipefd[1], 1);
    ::close(pipefd[0]);
    ::close(pipefd[1]);
    std::vector<char *> args;
    for (const std::string &a : argv)
      args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::perror(argv[0].c_str());
    ::_exit(127);
  }
  ::close(pipefd[1]);
  std::array<char, 4096> buf;
  ssize_t n;
  while ((n = ::read(pipefd[0], buf.data(), buf.size())) > 0)
    out.append(buf.data(), static_cast<size_t>(n));
  ::close(pipefd[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// The numbers after `"key":` in `json`, in order (llama-bench's and the
/// npm script's JSON: flat objects with numeric fields).
std::vector<double> numbersOf(const std::string &json, const std::string &key) {
  std::vector<double> values;
  std::string pat = "\"" + key + "\"";
  for (size_t at = json.find(pat); at != std::string::npos;
       at = json.find(pat, at + pat.size())) {
    size_t colon = json.find(':', at + pat.size());
    if (colon == std::string::npos)
      break;
    values.push_back(std::strtod(json.c_str() + colon + 1, nullptr));
  }
  return values;
}

std::vector<std::string> splitWords(const std::string &s) {
  std::vector<std::string> words;
  std::stringstream ss(s);
  std::string w;
  while (ss >> w)
    words.push_back(w);
  return words;
}

bool fileExists(const std::string &path) {
  return ::access(path.c_str(), R_OK) == 0;
}

/// A peer: something that times ppN and tgN on the model file for a thread
/// count, one measurement each.
struct Peer {
  enum Kind { None, LlamaBench, Npm } kind = None;
  std::string program; // llama-bench, or the npm script
  std::string label;
  std::vector<std::string> extra;

  /// (pp tok/s, tg tok/s) of one run; a test not asked for is 0.
  std::pair<double, double> run(const std::string &model, int64_t p,
                                int64_t n, int32_t threads) const {
    std::vector<std::string> argv;
    if (kind == LlamaBench) {
      argv = {program, "-m", model, "-p", std::to_string(p), "-n",
              std::to_string(n), "-t", std::to_string(threads), "-r", "1",
              "-o", "json"};
    } else {
      argv = {"node", program, "bench", "--model", model, "--prompt",
              std::to_string(p), "--gen", std::to_string(n), "--threads",
              std::to_string(threads)};
    }
    argv.insert(argv.end(), extra.begin(), extra.end());
    std::string out;
    int status = capture(argv, out);
    if (status != 0)
      throw CommandError(label, "failed (exit status " +
                                    std::to_string(status) + "): " + program);
    if (kind == Npm) {
      std::vector<double> pp = numbersOf(out, "pp_ts"),
                          tg = numbersOf(out, "tg_ts");
      if (pp.size() != 1 || tg.size() != 1)
        throw CommandError(label, "unexpected output: " + out);
      return {pp[0], tg[0]};
    }
    // llama-bench: one object per test, n_prompt/n_gen/avg_ts. Several
    // objects per test (e.g. --peer-args "-fa 0,1") keep the best: the peer
    // at its best setting.
    std::vector<double> np = numbersOf(out, "n_prompt"),
                        ng = numbersOf(out, "n_gen"),
                        ts = numbersOf(out, "avg_ts");
    if (np.size() != ts.size() || ng.size() != ts.size() || ts.empty())
      throw CommandError(label, "unexpected output: " + out);
    double pp = 0, tg = 0;
    for (size_t i = 0; i < ts.size(); ++i) {
      if (np[i] > 0 && ng[i] == 0)
        pp = std::max(pp, ts[i]);
      else if (ng[i] > 0 && np[i] == 0)
        tg = std::max(tg, ts[i]);
    }
    return {pp, tg};
  }
};

/// The peer `vs` names ("": the default one).
Peer choosePeer(const BenchOptions &opts, const std::string &vs) {
  Peer peer;
  if (vs == "none" || opts.modelFile.empty()) {
    if (!vs.empty() && vs != "none" && opts.modelFile.empty())
      throw CommandError("--vs", "needs the model file (`llmc bench MODEL`), "
                                 "not an artifact directory");
    return peer;
  }
  std::string path = vs;
  if (path.empty())
    if (const char *env = std::getenv("LLAMA_BENCH"))
      path = env;
  if (!path.empty() && path != "npm") {
    if (path.find('/') != std::string::npos && ::access(path.c_str(), X_OK) != 0)
      throw CommandError(vs.empty() ? "LLAMA_BENCH" : "--vs",
                         "not an executable llama-bench: " + path);
    peer.kind = Peer::LlamaBench;
    peer.program = path;
    peer.label = "llama-bench (" + path + ")";
    peer.extra = splitWords(opts.peerArgs);
    return peer;
  }
  // npm's llama.cpp, from the source tree this llmc was built in.
  std::string script;
  if (const char *env = std::getenv("LLMC_NPM_LLAMA_CPP"))
    script = env;
  else
    script = LLMC_NPM_LLAMA_CPP_SCRIPT;
  std::string scriptDir = script.substr(0, script.rfind('/') + 1);
  if (!fileExists(script) ||
      !fileExists(scriptDir + "node_modules/node-llama-cpp/package.json")) {
    if (path == "npm")
      throw CommandError("--vs npm",
                         "llama.cpp from npm not found (" + script +
                             "; set LLMC_NPM_LLAMA_CPP to its llama_cpp.mjs)");
    std::printf("note: no llama-bench given (--vs PATH or LLAMA_BENCH) and no "
                "npm llama.cpp found: llmc alone\n");
    return peer;
  }
  peer.kind = Peer::Npm;
  peer.program = script;
  peer.label = "llama.cpp (npm)";
  peer.extra = splitWords(opts.peerArgs);
  if (path.empty())
    std::printf("note: no llama-bench given (--vs PATH or LLAMA_BENCH): the "
                "peer is node-llama-cpp's prebuilt llama.cpp from npm (%s), "
                "not a native build for this CPU\n",
                script.c_str());
  return peer;
}

/// The peers of --vs, in order (none: the default one, which may be none).
std::vector<Peer> choosePeers(const BenchOptions &opts) {
  std::vector<Peer> peers;
  std::vector<std::string> given = opts.vs;
  if (given.empty())
    given.push_back("");
  if (given.size() > 1 &&
      std::find(given.begin(), given.end(), "none") != given.end())
    throw CommandError("--vs", "none cannot be given with other peers");
  for (const std::string &vs : given) {
    Peer peer = choosePeer(opts, vs);
    if (peer.kind != Peer::None)
      peers.push_back(peer);
  }
  return peers;
}

struct Stats {
  std::vector<double> samples;
  double median() const {
    std::vector<double> s = samples;
    std::sort(s.begin(), s.end());
    size_t n = s.size();
    return n == 0 ? 0 : n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  }
  double min() const {
    return samples.empty() ? 0 : *std::min_element(samples.begin(), samples.end());
  }
  double max() const {
    return samples.empty() ? 0 : *std::max_element(samples.begin(), samples.end());
  }
};

std::string cell(const Stats &s) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.1f (%.1f-%.1f)", s.median(), s.min(),
                s.max());
  return buf;
}

int benchWith(llmc::Model &model, const BenchOptions &given);

int bench(const BenchOptions &given) {
  resetPeakResident();
  llmc::Model model = llmc::Model::open(given.dir);
  // A sharded model: every rank times the same calls, rank 0 reports.
  return onEveryRank(model, [&] { return benchWith(model, given); });
}

int benchWith(llmc::Model &model, const BenchOptions &given) {
  const int64_t maxSeq = model.maxSeqLen();
  const int64_t vocab = model.vocabSize();
  BenchOptions opts = given;
  // The defaults shrink to a small model's context; given lengths do not.
  if (!opts.promptGiven)
    opts.prompt = std::min(opts.prompt, maxSeq);
  if (!opts.genGiven)
    opts.gen = std::min(opts.gen, maxSeq);
  for (auto [name, len] : {std::pair<const char *, int64_t>{"-p", opts.prompt},
                           {"-n", opts.gen}})
    if (len > maxSeq)
      throw CommandError(name, std::to_string(len) +
                                   " tokens exceed the model's max_seq_len " +
                                   std::to_string(maxSeq));
  if (opts.prompt == 0 && opts.gen == 0)
    throw CommandError("-p/-n", "both tests are skipped (0): nothing to time");
  std::vector<int32_t> threads = opts.threads;
  if (threads.empty())
    threads = {model.threads()};
  if (opts.microBatch)
    model.setMicroBatch(*opts.microBatch);
  // A sharded model is timed alone: every rank would run a peer at once,
  // on the cores rank 0 measures.
  bool sharded = model.info().mesh_ranks > 1;
  if (sharded && !opts.vs.empty() &&
      !(opts.vs.size() == 1 && opts.vs[0] == "none"))
    throw CommandError("--vs", "a sharded model is timed alone; time the "
                               "peer in a run of its own");
  std::vector<Peer> peers;
  if (!sharded)
    peers = choosePeers(opts);
  if (opts.profile && model.profile().empty())
    throw CommandError("--profile",
                       opts.dir + " was compiled without --profile (compile "
                                  "it with `llmc compile --profile`, or give "
                                  "the model file)");

  std::vector<int32_t> prompt = syntheticTokens(opts.prompt, vocab, 1);
  std::vector<int32_t> genIds = syntheticTokens(opts.gen, vocab, 2);
  // As llama-bench: a prompt computes the logits of its last token only.
  std::vector<float> logits(static_cast<size_t>(vocab));
  auto ppOnce = [&] {
    model.reset();
    double t0 = now();
    model.forwardLast(prompt.data(), opts.prompt, logits.data());
    return opts.prompt / (now() - t0);
  };
  auto tgOnce = [&] {
    model.reset();
    double t0 = now();
    for (int64_t i = 0; i < opts.gen; ++i)
      model.forward(&genIds[static_cast<size_t>(i)], 1, i, logits.data());
    return opts.gen / (now() - t0);
  };

  // [thread index] -> llmc pp, llmc tg, then each peer's pp and tg
  std::vector<std::vector<Stats>> stats(
      threads.size(), std::vector<Stats>(2 + 2 * peers.size()));
  for (size_t ti = 0; ti < threads.size(); ++ti) {
    model.setThreads(threads[ti]);
    if (opts.prompt)
      ppOnce(); // warm-up: page in the weights, start the threads
    for (int64_t r = 0; r < opts.repeat; ++r) {
      if (opts.prompt)
        stats[ti][0].samples.push_back(ppOnce());
      if (opts.gen)
        stats[ti][1].samples.push_back(tgOnce());
      for (size_t pi = 0; pi < peers.size(); ++pi) {
        auto [pp, tg] =
            peers[pi].run(opts.modelFile, opts.prompt, opts.gen, threads[ti]);
        if (opts.prompt)
          stats[ti][2 + 2 * pi].samples.push_back(pp);
        if (opts.gen)
          stats[ti][3 + 2 * pi].samples.push_back(tg);
      }
    }
  }

  std::string against;
  for (size_t pi = 0; pi < peers.size(); ++pi)
    against += (pi ? "  and  " : "  vs  ") + peers[pi].label;
  std::printf("\nllmc: %s (%s)%s\n", opts.dir.c_str(),
              *model.info().target_description ? model.info().target_description
                                              : model.info().target,
              against.c_str());
  std::printf("tok/s, median of %lld (min-max)%s\n\n",
              static_cast<long long>(opts.repeat),
              model.microBatch() > 0
                  ? (", prompts in calls of " +
                     std::to_string(model.microBatch()) + " tokens")
                        .c_str()
                  : "");
  // One peer: "peer" and "llmc / peer"; several: numbered.
  std::string head = "| threads | test | llmc |", rule = "|---:|---|---:|";
  for (size_t pi = 0; pi < peers.size(); ++pi) {
    std::string name =
        peers.size() == 1 ? "peer" : "peer " + std::to_string(pi + 1);
    head += " " + name + " | llmc / " + name + " |";
    rule += "---:|---:|";
  }
  std::printf("%s\n%s\n", head.c_str(), rule.c_str());
  for (size_t ti = 0; ti < threads.size(); ++ti) {
    for (int test = 0; test < 2; ++test) {
      int64_t len = test == 0 ? opts.prompt : opts.gen;
      if (len == 0)
        continue;
      std::string name = (test == 0 ? "pp" : "tg") + std::to_string(len);
      const Stats &mine = stats[ti][test];
      std::printf("| %d | %s | %s |", threads[ti], name.c_str(),
                  cell(mine).c_str());
      for (size_t pi = 0; pi < peers.size(); ++pi) {
        const Stats &theirs = stats[ti][2 + 2 * pi + test];
        double ratio =
            theirs.median() > 0 ? mine.median() / theirs.median() : 0;
        std::printf(" %s | %.2f |", cell(theirs).c_str(), ratio);
      }
      std::printf("\n");
    }
  }
  // A device artifact (Vulkan): its bandwidth is the device's, measured
  // once.
  const bool onDevice = model.info().target != std::string("cpu");
  double deviceBytesPerSecond = -1;
  auto deviceBandwidth = [&] {
    if (deviceBytesPerSecond < 0)
      deviceBytesPerSecond = model.deviceBandwidth(int64_t(256) << 20, 5);
    return deviceBytesPerSecond;
  };
  // The bandwidth probe's 512 MiB of ones, written once for every use.
  std::vector<uint64_t> probeWords;
  auto probe = [&]() -> const std::vector<uint64_t> & {
    if (probeWords.empty())
      probeWords.assign((size_t(512) << 20) / sizeof(uint64_t), 1);
    return probeWords;
  };
  if (opts.roofline && opts.prompt) {
    const llmc_model_info &info = model.info();
    if (info.token_flops < 0) {
      std::printf("\nroofline: this artifact does not record its arithmetic "
                  "(compile it again)\n");
    } else {
      // A prompt of N tokens: every token's matmuls, the logits row, and
      // each token attending the positions up to its own.
      double n = static_cast<double>(opts.prompt);
      double matmul = n * info.token_flops + info.row_flops;
      double attention = n * (n + 1) / 2 * info.pair_flops;
      std::printf("\nroofline (prefill): %.1f GFLOP per pp%lld (matmuls %.1f, "
                  "attention %.2f)\n\n"
                  "| threads | f32 FMA peak GFLOP/s | pp%lld GFLOP/s | of peak |\n"
                  "|---:|---:|---:|---:|\n",
                  (matmul + attention) / 1e9,
                  static_cast<long long>(opts.prompt), matmul / 1e9,
                  attention / 1e9, static_cast<long long>(opts.prompt));
      for (size_t ti = 0; ti < threads.size(); ++ti) {
        // A device artifact: the host's FMA peak says nothing of it.
        double peak = onDevice ? 0 : fmaPeak(threads[ti]);
        double got = (matmul + attention) * stats[ti][0].median() / n;
        if (peak > 0)
          std::printf("| %d | %.1f | %.1f | %.0f %% |\n", threads[ti],
                      peak / 1e9, got / 1e9, 100.0 * got / peak);
        else
          std::printf("| %d | (%s) | %.1f | |\n", threads[ti],
                      onDevice ? "device: not measured" : "no FMA", got / 1e9);
      }
    }
  }
  if (opts.roofline && opts.gen) {
    const llmc_model_info &info = model.info();
    if (info.decode_read_bytes < 0) {
      std::printf("\nroofline: this artifact does not record what decode reads "
                  "(compile it again)\n");
    } else {
      // Token i attends positions 0..i: on average (gen + 1) / 2 of them.
      double kv = info.kv_bytes_per_position * (opts.gen + 1) / 2.0;
      double perToken = static_cast<double>(info.decode_read_bytes) + kv;
      std::printf(
          "\nroofline (decode): %.1f MB per token (weights %.1f MB, "
          "KV cache %.2f MB on average)\n\n"
          "| threads | read bandwidth GB/s | tg%lld GB/s | of bandwidth |\n"
          "|---:|---:|---:|---:|\n",
          perToken / 1e6, info.decode_read_bytes / 1e6, kv / 1e6,
          static_cast<long long>(opts.gen));
      if (onDevice)
        std::printf(
            "(a device artifact: its memory's bandwidth over 256 MiB, the "
            "best of 5: %s)\n",
            std::string(model.info().target) == "cuda"
                ? "a device-to-device copy, the bytes it reads and writes"
                : "a kernel reading it in 16-byte loads");
      for (size_t ti = 0; ti < threads.size(); ++ti) {
        double bw =
            onDevice ? deviceBandwidth() : readBandwidth(probe(), threads[ti]);
        double got = perToken * stats[ti][1].median();
        std::printf("| %d | %.1f | %.1f | %.0f %% |\n", threads[ti], bw / 1e9,
                    got / 1e9, 100.0 * got / bw);
      }
    }
  }
  if (opts.profile) {
    for (int32_t t : threads) {
      model.setThreads(t);
      // Instructions at the host's widest vectors (the artifact's target
      // may use narrower ones: its count of instructions is its own). A
      // device artifact's kernels have no cost model: measured times only.
      double fma = onDevice ? 0 : fmaPeak(t);
      Rates rates{onDevice ? deviceBandwidth() : readBandwidth(probe(), t),
                  fma > 0 ? fma / (2.0 * fmaLanes()) : 0};
      for (int test = 0; test < 2; ++test) {
        int64_t len = test == 0 ? opts.prompt : opts.gen;
        if (len == 0)
          continue;
        model.resetProfile();
        double t0 = now();
        test == 0 ? ppOnce() : tgOnce();
        double wall = now() - t0;
        printProfile((test == 0 ? "pp" : "tg") + std::to_string(len), t, wall,
                     model.profile(), rates);
      }
    }
  }
  std::string weights = model.info().weights_path;
  std::ifstream wf(weights, std::ios::binary | std::ios::ate);
  long long weightBytes = wf ? static_cast<long long>(wf.tellg()) : -1;
  std::string file = weights.substr(weights.rfind('/') + 1);
  std::printf("\nmemory: %s %lld bytes mapped, %lld KiB resident; "
              "peak RSS %lld KiB\n",
              file.c_str(), weightBytes, residentKiB(weights),
              peakResidentKiB());
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
