//===- MpiPlugin.cpp - the collectives of a sharded model on MPI ----------===//
//
// libllmc_mpi.so: llmc/collective_plugin.h implemented with MPI (OpenMPI
// from Debian; the ranks launched by mpirun, on one host or several). Groups
// are MPI_Comm_split's of the world by the mesh positions outside their
// axes. Set-up waits for every rank with a non-blocking barrier and a
// deadline, so that a rank that never arrives is an error, not a hang.
//
//===----------------------------------------------------------------------===//
#include "llmc/collective_plugin.h"

#include <mpi.h>

#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

struct llmc_collective {
  int rank = 0, size = 1;
  std::vector<MPI_Comm> groups;
  bool initializedHere = false;
};

namespace {

int fail(char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return 1;
}

/// The message of an MPI error code.
std::string mpiMessage(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, len);
}

#define LLMC_MPI(call, what)                                                   \
  do {                                                                         \
    int rc_ = (call);                                                          \
    if (rc_ != MPI_SUCCESS)                                                    \
      return fail(err, errlen, "rank %d: %s: %s", c->rank, what,               \
                  mpiMessage(rc_).c_str());                                    \
  } while (0)

/// Ends this process, with a message, unless `cancel` comes first: a rank
/// that never reaches set-up (stuck, or never started) would otherwise
/// leave the others waiting in MPI_Init or the first barrier forever. The
/// process's exit makes mpirun end the job.
class Watchdog {
public:
  // (The rank's name is read here: MPI_Init may set the environment while
  // the thread waits.)
  explicit Watchdog(double seconds)
      : rank_(std::getenv("OMPI_COMM_WORLD_RANK")
                  ? std::getenv("OMPI_COMM_WORLD_RANK")
                  : "?"),
        thread_([this, seconds] {
          std::unique_lock<std::mutex> lock(mutex_);
          if (cv_.wait_for(lock, std::chrono::duration<double>(seconds),
                           [this] { return done_; }))
            return;
          std::fprintf(stderr,
                       "llmc: error: rank %s: not every rank arrived within "
                       "%.0f s of collective set-up (a rank died, never "
                       "started or is stuck; LLMC_COLLECTIVE_TIMEOUT sets the "
                       "limit)\n",
                       rank_.c_str(), seconds);
          std::fflush(stderr);
          std::_Exit(3);
        }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

private:
  std::string rank_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

int openJob(double timeout, llmc_collective **out, char *err, size_t errlen) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized)
    return fail(err, errlen,
                "MPI was finalized in this process: a job's "
                "collectives are opened once");
  Watchdog watchdog(timeout);
  auto *c = new llmc_collective();
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) !=
        MPI_SUCCESS) {
      delete c;
      return fail(err, errlen,
                  "MPI_Init failed (run the model's ranks "
                  "with mpirun)");
    }
    c->initializedHere = true;
  }
  // Errors come back as codes, with messages, instead of ending the job.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &c->size);
  // Every rank has arrived once this returns.
  if (int rc = MPI_Barrier(MPI_COMM_WORLD); rc != MPI_SUCCESS) {
    int rank = c->rank;
    delete c;
    return fail(err, errlen, "rank %d: collective set-up: %s", rank,
                mpiMessage(rc).c_str());
  }
  *out = c;
  return 0;
}

void closeJob(llmc_collective *c) {
  for (MPI_Comm &g : c->groups)
    if (g != MPI_COMM_WORLD)
      MPI_Comm_free(&g);
  if (c->initializedHere)
    MPI_Finalize();
  delete c;
}

void abortJob(llmc_collective *, int code) { MPI_Abort(MPI_COMM_WORLD, code); }

int rankOf(llmc_collective *c) { return c->rank; }
int sizeOf(llmc_collective *c) { return c->size; }

int makeGroup(llmc_collective *c, const int64_t *shape, int dims,
              const int *axes, int naxes, int *group, char *err,
              size_t errlen) {
  int64_t ranks = 1;
  for (int d = 0; d < dims; ++d) {
    if (shape[d] < 1)
      return fail(err, errlen, "rank %d: mesh axis %d has %lld ranks", c->rank,
                  d, static_cast<long long>(shape[d]));
    ranks *= shape[d];
  }
  if (ranks != c->size)
    return fail(err, errlen,
                "rank %d: the mesh has %lld ranks but the job has %d (run "
                "mpirun -np %lld)",
                c->rank, static_cast<long long>(ranks), c->size,
                static_cast<long long>(ranks));
  std::vector<bool> inGroup(dims, false);
  for (int i = 0; i < naxes; ++i) {
    if (axes[i] < 0 || axes[i] >= dims || inGroup[axes[i]])
      return fail(err, errlen, "rank %d: bad group axis %d of a %d-axis mesh",
                  c->rank, axes[i], dims);
    inGroup[axes[i]] = true;
  }
  // This rank's position along each axis (row-major), then the color (its
  // position outside the group's axes) and key (inside, in `axes` order).
  std::vector<int64_t> pos(dims);
  int64_t rest = c->rank;
  for (int d = dims - 1; d >= 0; --d) {
    pos[d] = rest % shape[d];
    rest /= shape[d];
  }
  int64_t color = 0, key = 0;
  for (int d = 0; d < dims; ++d)
    if (!inGroup[d])
      color = color * shape[d] + pos[d];
  for (int i = 0; i < naxes; ++i)
    key = key * shape[axes[i]] + pos[axes[i]];
  MPI_Comm comm;
  LLMC_MPI(MPI_Comm_split(MPI_COMM_WORLD, static_cast<int>(color),
                          static_cast<int>(key), &comm),
           "MPI_Comm_split");
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  c->groups.push_back(comm);
  *group = static_cast<int>(c->groups.size()) - 1;
  return 0;
}

MPI_Comm commOf(llmc_collective *c, int group) {
  return group >= 0 && group < static_cast<int>(c->groups.size())
             ? c->groups[group]
             : MPI_COMM_NULL;
}

int groupSize(llmc_collective *c, int group) {
  int n = 0;
  MPI_Comm comm = commOf(c, group);
  if (comm == MPI_COMM_NULL)
    return -1;
  MPI_Comm_size(comm, &n);
  return n;
}

int groupRank(llmc_collective *c, int group) {
  int r = 0;
  MPI_Comm comm = commOf(c, group);
  if (comm == MPI_COMM_NULL)
    return -1;
  MPI_Comm_rank(comm, &r);
  return r;
}

#define LLMC_GROUP(comm, group)                                                \
  MPI_Comm comm = commOf(c, group);                                            \
  if (comm == MPI_COMM_NULL)                                                   \
    return fail(err, errlen, "rank %d: no group %d", c->rank, group);

/// MPI counts are ints: a larger message goes in pieces of at most 1 GiB.
constexpr int64_t kChunk = int64_t(1) << 30;

int allReduce(llmc_collective *c, int group, float *data, int64_t count,
              int reduction, char *err, size_t errlen) {
  LLMC_GROUP(comm, group);
  if (reduction != LLMC_REDUCE_SUM && reduction != LLMC_REDUCE_MAX &&
      reduction != LLMC_REDUCE_MIN)
    return fail(err, errlen, "rank %d: unknown reduction %d", c->rank,
                reduction);
  MPI_Op op = reduction == LLMC_REDUCE_MAX   ? MPI_MAX
              : reduction == LLMC_REDUCE_MIN ? MPI_MIN
                                             : MPI_SUM;
  for (int64_t at = 0; at < count; at += kChunk / 4) {
    int n = static_cast<int>(std::min<int64_t>(kChunk / 4, count - at));
    LLMC_MPI(MPI_Allreduce(MPI_IN_PLACE, data + at, n, MPI_FLOAT, op, comm),
             "all-reduce");
  }
  return 0;
}

int allGather(llmc_collective *c, int group, const void *in, void *out,
              int64_t bytes, char *err, size_t errlen) {
  LLMC_GROUP(comm, group);
  if (bytes > kChunk)
    return fail(err, errlen,
                "rank %d: an all-gather of %lld bytes a rank "
                "(more than 1 GiB)",
                c->rank, static_cast<long long>(bytes));
  LLMC_MPI(MPI_Allgather(in, static_cast<int>(bytes), MPI_BYTE, out,
                         static_cast<int>(bytes), MPI_BYTE, comm),
           "all-gather");
  return 0;
}

int sendTo(llmc_collective *c, int group, int peer, const void *data,
           int64_t bytes, char *err, size_t errlen) {
  LLMC_GROUP(comm, group);
  const char *p = static_cast<const char *>(data);
  for (int64_t at = 0; at < bytes || at == 0; at += kChunk) {
    int n = static_cast<int>(std::min<int64_t>(kChunk, bytes - at));
    LLMC_MPI(MPI_Send(p + at, n, MPI_BYTE, peer, 0, comm), "send");
    if (bytes == 0)
      break;
  }
  return 0;
}

int recvFrom(llmc_collective *c, int group, int peer, void *data, int64_t bytes,
             char *err, size_t errlen) {
  LLMC_GROUP(comm, group);
  char *p = static_cast<char *>(data);
  for (int64_t at = 0; at < bytes || at == 0; at += kChunk) {
    int n = static_cast<int>(std::min<int64_t>(kChunk, bytes - at));
    MPI_Status status;
    LLMC_MPI(MPI_Recv(p + at, n, MPI_BYTE, peer, 0, comm, &status), "receive");
    int got = 0;
    MPI_Get_count(&status, MPI_BYTE, &got);
    if (got != n)
      return fail(err, errlen,
                  "rank %d: received %d bytes from group member %d, "
                  "expected %d",
                  c->rank, got, peer, n);
    if (bytes == 0)
      break;
  }
  return 0;
}

int agree(llmc_collective *c, const char *what, uint64_t value, char *err,
          size_t errlen) {
  unsigned long long v = value, lo = 0, hi = 0;
  LLMC_MPI(MPI_Allreduce(&v, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN,
                         MPI_COMM_WORLD),
           "agreement");
  LLMC_MPI(MPI_Allreduce(&v, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX,
                         MPI_COMM_WORLD),
           "agreement");
  if (lo != hi)
    return fail(err, errlen,
                "rank %d: the ranks do not agree on %s (this rank's is "
                "%016llx; they range from %016llx to %016llx)",
                c->rank, what, v, lo, hi);
  return 0;
}

const llmc_collective_api kApi = {
    LLMC_COLLECTIVE_ABI_VERSION,
    openJob,
    closeJob,
    abortJob,
    rankOf,
    sizeOf,
    makeGroup,
    groupSize,
    groupRank,
    allReduce,
    allGather,
    sendTo,
    recvFrom,
    agree,
};

} // namespace

extern "C" __attribute__((visibility("default"))) const llmc_collective_api *
llmc_collective_plugin(void) {
  return &kApi;
}
