//===- Collective.h - the ranks of a sharded model --------------*- C++ -*-===//
//
// The one collective interface of the runtime: a sharded model's ranks
// reduce, gather, send and receive through it. The implementation is a
// plugin opened at run time (llmc/collective_plugin.h): MPI (libllmc_mpi.so,
// mpirun), and NCCL later; the runtime links neither.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_SRC_COLLECTIVE_H
#define LLMC_RUNTIME_SRC_COLLECTIVE_H

#include "llmc/collective_plugin.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace llmc::rt {

enum class Reduction {
  sum = LLMC_REDUCE_SUM,
  max = LLMC_REDUCE_MAX,
  min = LLMC_REDUCE_MIN
};

class Collective {
public:
  /// Opens the plugin at `path` (a shared library exporting
  /// llmc_collective_plugin) and joins the job: every rank must arrive
  /// within `setupTimeout` seconds. Throws Error naming what failed
  /// (`whereLooked` follows a plugin that cannot be loaded).
  static std::unique_ptr<Collective> open(const std::string &path,
                                          double setupTimeout,
                                          const std::string &whereLooked = "");
  /// The MPI plugin: LLMC_MPI_PLUGIN, else libllmc_mpi.so beside the
  /// program or shared object the runtime is linked into, beside the
  /// executable, in the build tree, else on the loader's search path; the
  /// set-up timeout LLMC_COLLECTIVE_TIMEOUT seconds (default 60).
  static std::unique_ptr<Collective> openMPI();
  ~Collective();

  int rank() const { return rank_; }
  int size() const { return size_; }
  /// The group of the ranks that differ from this one only along `axes` of
  /// a mesh of `shape` (see the plugin ABI). Every rank must call it alike.
  int group(const std::vector<int64_t> &shape, const std::vector<int> &axes);
  int groupSize(int group) const;
  int groupRank(int group) const;
  void allReduce(int group, float *data, int64_t count,
                 Reduction reduction = Reduction::sum);
  void allGather(int group, const void *in, void *out, int64_t bytes);
  void send(int group, int peer, const void *data, int64_t bytes);
  void recv(int group, int peer, void *data, int64_t bytes);
  /// Throws on every rank unless all passed the same `value` for `what`.
  void agree(const std::string &what, uint64_t value);
  /// Ends every rank of the job (after an error on this one).
  [[noreturn]] void abortJob(int code);
  /// Records an error on this rank alone (outside a collective call): the
  /// destructor then ends the job rather than wait for the other ranks.
  /// After a failed agree() every rank knows: nothing to end.
  void markFailed(const std::string &why) {
    if (failedAlike_)
      return;
    failed_ = true;
    lastError_ = why;
  }
  /// Whether an agree() failed: every rank failed alike, and each closes
  /// the job (a fence they all reach) once it has reported.
  bool failedAlike() const { return failedAlike_; }

private:
  Collective() = default;
  void check(int rc, const char *err);
  void *library_ = nullptr;
  const llmc_collective_api *api_ = nullptr;
  llmc_collective *job_ = nullptr;
  int rank_ = 0, size_ = 1;
  /// A call failed on this rank (the job is ended, not finalized).
  bool failed_ = false, failedAlike_ = false;
  std::string lastError_;
};

} // namespace llmc::rt

#endif // LLMC_RUNTIME_SRC_COLLECTIVE_H
