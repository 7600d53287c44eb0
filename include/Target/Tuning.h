//===- Tuning.h - measured schedule choices, per kernel ---------*- C++ -*-===//
//
// The default schedule decides some things by rule from the target
// description (how much of a cache a blocked operand may take); `llmc
// tune` measures the alternatives on the machine and keeps the fastest
// per kernel. A Tuning is that choice per kernel key (a kernel's kind and
// shape, `matmul.prefill.k3072.n1024.f32`), read from the tune cache at
// the top of the pipeline like the target and handed down to the
// schedule as a pass option; a key it does not name keeps the rule.
//
// The cache file (`llmc tune -o`, default $LLMC_TUNE_CACHE, else
// $XDG_CACHE_HOME/llmc/tune.json, else ~/.cache/llmc/tune.json):
//
//   {"format": "llmc-tune", "version": 1, "entries": [
//     {"target": "cpu:znver5,...", "key": "matmul.prefill.k3072.n1024.f32",
//      "choice": "r2c2", "ms": 12.5, "default_ms": 14.1}]}
//
// `choice` spells a ScheduleChoice: `r<R>c<C>`, the reduction's blocks
// within 1/R of the L1 cache and the weight rows' chunks within 1/C of the
// L2 cache, 0 for no blocking (the rule: r2c2), then optionally `p<P>`: a
// decode nest streaming a weight prefetches P KiB ahead (0: none; absent:
// the target's distance), and `t<T>`: a decode GEMV over a dense weight
// steps T rows at a time (absent: the rule). Prefill keys are `matmul.prefill.k<K>.n<N>.<types>`,
// decode ones `matmul.decode.w<R>x<C>.<element>` (the weight's buffer).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_TARGET_TUNING_H
#define LLMC_TARGET_TUNING_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace llmc {

/// How a prefill matmul is blocked for the caches.
struct ScheduleChoice {
  /// The activations' reduction blocks take at most 1/reductionShare of L1
  /// (0: the reduction is not blocked); over interleaved float rows (the
  /// exact mode's products), a group's weights at most 1/reductionShare of
  /// L2.
  int reductionShare = 2;
  /// The chunks of weight rows take at most 1/chunkShare of L2 (0: rows
  /// are not chunked).
  int chunkShare = 2;
  /// Decode: how far ahead a weight's stream prefetches, in KiB (0: no
  /// prefetch; -1: the target's `prefetch`).
  int prefetchKiB = -1;
  /// Decode: the rows of a dense weight one step of a GEMV reads (1, 2 or
  /// 4; 0: the rule, 1 row of f32 or f16, 4 of bf16).
  int decodeRows = 0;

  /// Whether this choice and `o` build the same prefill (decode) code:
  /// the cache blocking (the prefetch distance and the GEMV's rows) agree.
  bool samePrefill(const ScheduleChoice &o) const {
    return reductionShare == o.reductionShare && chunkShare == o.chunkShare;
  }
  bool sameDecode(const ScheduleChoice &o) const {
    return prefetchKiB == o.prefetchKiB && decodeRows == o.decodeRows;
  }
  bool operator==(const ScheduleChoice &o) const {
    return samePrefill(o) && sameDecode(o);
  }
  /// `r2c2`, `r2c2p16` with a prefetch distance, `r2c2p0t1` with one row a
  /// step.
  std::string str() const;
  static std::optional<ScheduleChoice> parse(llvm::StringRef s);
};

/// The kernel keys' prefixes: a prefill matmul's
/// (`matmul.prefill.k<K>.n<N>.<types>`) and a decode nest streaming a
/// weight (`matmul.decode.w<R>x<C>.<element>`).
inline constexpr llvm::StringLiteral kPrefillKeyPrefix = "matmul.prefill.";
inline constexpr llvm::StringLiteral kDecodeKeyPrefix = "matmul.decode.";

/// The choices `llmc tune` measures, the rule's first.
std::vector<ScheduleChoice> tuneCandidates();

/// Schedule choices per kernel key.
struct Tuning {
  std::map<std::string, ScheduleChoice> choices;
  /// Every key's choice when set (the tuner's candidates).
  std::optional<ScheduleChoice> all;

  bool empty() const { return choices.empty() && !all; }
  ScheduleChoice lookup(llvm::StringRef key) const;
  /// `*=r4c2` or `key=r0c2;key=r2c0` (the pass option's spelling).
  std::string str() const;
  static llvm::Expected<Tuning> parse(llvm::StringRef s);
};

/// One measured winner in the cache file.
struct TuneEntry {
  std::string target, key;
  ScheduleChoice choice;
  double ms = 0, defaultMs = 0;
};

/// The cache file's path: $LLMC_TUNE_CACHE, else the user cache directory's
/// llmc/tune.json.
std::string defaultTuneCachePath();

/// The entries of the cache file at `path` (none when it does not exist).
/// Errors name the file and the entry.
llvm::Expected<std::vector<TuneEntry>> readTuneCache(llvm::StringRef path);

/// The choices of `entries` for `target` (its canonical spelling).
Tuning tuningFor(llvm::ArrayRef<TuneEntry> entries, llvm::StringRef target);

/// Writes `entries` to `path` (through a temporary file, renamed into
/// place; the directory is created).
llvm::Error writeTuneCache(llvm::StringRef path,
                           llvm::ArrayRef<TuneEntry> entries);

} // namespace llmc

#endif // LLMC_TARGET_TUNING_H
