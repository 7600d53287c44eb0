//===- Model.cpp - A loaded artifact and its forward call -------*- C++ -*-===//
//
// Loading order: metadata, then weights, then the library. Cheap checks of
// files run first so that a broken artifact is reported by its first wrong
// file, before any code from it is loaded.
//
//===----------------------------------------------------------------------===//

#include "Model.h"
#include "Collective.h"
#include "CudaDevice.h"
#include "VulkanDevice.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <mutex>
#include <set>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace llmc::rt {

namespace {
/// The libraries whose profile counters a model owns.
std::mutex profileMutex;
std::set<void *> &profiledLibraries() {
  static std::set<void *> libraries;
  return libraries;
}
} // namespace

static bool claimProfile(void *library) {
  std::lock_guard<std::mutex> lock(profileMutex);
  return profiledLibraries().insert(library).second;
}

static void releaseProfile(void *library) {
  std::lock_guard<std::mutex> lock(profileMutex);
  profiledLibraries().erase(library);
}

/// Memory-maps the weights file (`path`: the artifact's, or this rank's)
/// read-only after checking its size.
static void mapWeights(const ArtifactMetadata &md, const std::string &path,
                       void *&map, size_t &bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw Error(path + ": cannot open: " + errnoMessage(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    throw Error(path + ": cannot stat: " + errnoMessage(e));
  }
  if (static_cast<int64_t>(st.st_size) != md.weightsBytes) {
    ::close(fd);
    throw Error(path + ": size is " + std::to_string(st.st_size) +
                " bytes but " + md.metadataPath +
                " says weights.bytes = " + std::to_string(md.weightsBytes));
  }
  bytes = static_cast<size_t>(md.weightsBytes);
  map = nullptr;
  if (bytes > 0) {
    // The weights are shared with the page cache and never written; a
    // private read-only mapping makes an accidental write fault at once.
    void *p = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      throw Error(path + ": cannot map: " + errnoMessage(e));
    }
    map = p;
  }
  ::close(fd);
}

/// LLMC_THREADS when set (a positive integer), else the cores of the
/// machine.
static int32_t defaultThreads(const ArtifactMetadata &md) {
  if (const char *env = std::getenv("LLMC_THREADS")) {
    char *end = nullptr;
    long n = std::strtol(env, &end, 10);
    if (end == env || *end || n < 1 || n > 4096)
      throw Error(md.metadataPath + ": LLMC_THREADS is '" + env +
                  "', expected a positive integer");
    return static_cast<int32_t>(n);
  }
  long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  return cores > 0 ? static_cast<int32_t>(cores) : 1;
}

void Model::setThreads(int32_t n) {
  if (n < 1)
    throw Error("threads must be >= 1, got " + std::to_string(n));
  numThreads = n;
}

//===----------------------------------------------------------------------===//
// A sharded model's mesh
//===----------------------------------------------------------------------===//

struct Model::Mesh {
  std::unique_ptr<Collective> collective;
  /// The collective's handle of each of metadata's dist.groups.
  std::vector<int> groups;
  llmc_collectives table{};
  /// An all-gather along an inner dimension: the members' pieces first.
  std::vector<char> scratch;

  /// Ends the job after an error inside a collective the library called
  /// (it cannot unwind through the compiled code).
  [[noreturn]] void fail(const std::string &why) {
    std::fprintf(stderr, "llmc: error: rank %d: %s (ending every rank)\n",
                 collective->rank(), why.c_str());
    std::fflush(stderr);
    collective->abortJob(5);
  }
  /// Runs `body` for the library's call; an error ends the job.
  template <typename Body> static auto guarded(void *context, Body body) {
    auto *mesh = static_cast<Mesh *>(context);
    try {
      return body(*mesh);
    } catch (const Error &e) {
      mesh->fail(e.what());
    }
  }
  int handle(int32_t group) {
    if (group < 0 || group >= static_cast<int32_t>(groups.size()))
      fail("the library names collective group " + std::to_string(group) +
           ", which metadata's dist.groups does not have");
    return groups[group];
  }

  static void allReduce(void *context, int32_t group, void *data, int64_t count,
                        int32_t dtype, int32_t op) {
    guarded(context, [&](Mesh &mesh) {
      if (dtype != LLMC_COLLECTIVE_F32)
        mesh.fail("all_reduce of element type " + std::to_string(dtype));
      int g = mesh.handle(group);
      if (count == 0)
        return; // nothing to move, nothing to wait for (llmc/abi.h)
      mesh.collective->allReduce(g, static_cast<float *>(data), count,
                                 static_cast<Reduction>(op));
    });
  }

  static void allGather(void *context, int32_t group, const void *send,
                        void *recv, int64_t outer, int64_t inner,
                        int32_t dtype) {
    guarded(context, [&](Mesh &mesh) {
      if (dtype != LLMC_COLLECTIVE_F32)
        mesh.fail("all_gather of element type " + std::to_string(dtype));
      int g = mesh.handle(group);
      if (outer == 0 || inner == 0)
        return;
      int64_t members = mesh.collective->groupSize(g);
      int64_t piece = outer * inner * 4, row = inner * 4;
      if (outer == 1) {
        mesh.collective->allGather(g, send, recv, piece);
        return;
      }
      // Member-major from the collective, [outer][member][inner] for the
      // library.
      mesh.scratch.resize(members * piece);
      mesh.collective->allGather(g, send, mesh.scratch.data(), piece);
      char *out = static_cast<char *>(recv);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t m = 0; m < members; ++m)
          std::memcpy(out + (o * members + m) * row,
                      mesh.scratch.data() + m * piece + o * row, row);
    });
  }

  static int64_t position(void *context, int32_t group) {
    auto *mesh = static_cast<Mesh *>(context);
    return mesh->collective->groupRank(mesh->handle(group));
  }

  static void send(void *context, int32_t group, int64_t peer, const void *data,
                   int64_t bytes) {
    guarded(context, [&](Mesh &mesh) {
      int g = mesh.handle(group);
      if (bytes > 0)
        mesh.collective->send(g, static_cast<int>(peer), data, bytes);
    });
  }

  static void recv(void *context, int32_t group, int64_t peer, void *data,
                   int64_t bytes) {
    guarded(context, [&](Mesh &mesh) {
      int g = mesh.handle(group);
      if (bytes > 0)
        mesh.collective->recv(g, static_cast<int>(peer), data, bytes);
    });
  }
};

/// FNV-1a: `h` continued over `n` bytes at `data`.
constexpr uint64_t kFnvBasis = 1469598103934665603ull;
static uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
  for (size_t i = 0; i < n; ++i)
    h = (h ^ static_cast<const unsigned char *>(data)[i]) * 1099511628211ull;
  return h;
}

/// FNV-1a of a file's bytes: the artifact's fingerprint that every rank
/// must share.
static uint64_t fingerprint(const std::string &path) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    throw Error(path + ": cannot read: " + errnoMessage(errno));
  uint64_t h = kFnvBasis;
  char buf[1 << 14];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0)
    h = fnv1a(h, buf, n);
  std::fclose(f);
  return h;
}

void Model::joinMesh() {
  // (A copy: a pipeline's stage replaces the metadata below.)
  const ArtifactMetadata::Dist d = *md.dist;
  if (md.hasDevice)
    throw Error(md.metadataPath + ": a sharded artifact for a device; this "
                                  "runtime shards CPU artifacts only");
  // MPI joins a process to one job once: one sharded model a process.
  static std::atomic<bool> joined{false};
  if (joined.exchange(true))
    throw Error(md.metadataPath + ": this process already runs a sharded "
                                  "model; a process joins one job (one "
                                  "sharded model a process)");
  mesh = std::make_unique<Mesh>();
  mesh->collective = Collective::openMPI();
  Collective &c = *mesh->collective;
  // (Every rank sees the same sizes: they fail alike, none waits.)
  if (c.size() != d.ranks)
    throw Error(md.metadataPath + ": the artifact is sharded over " +
                std::to_string(d.ranks) + " ranks (mesh " +
                [&] {
                  std::string s;
                  for (int64_t n : d.shape)
                    s += (s.empty() ? "" : "x") + std::to_string(n);
                  return s;
                }() +
                "), but the job has " + std::to_string(c.size()) +
                " (mpirun -np " + std::to_string(d.ranks) + ")");
  c.agree("the artifact (" + md.metadataPath + ")",
          fingerprint(md.metadataPath));
  // A pipeline: this rank runs its stage's artifact (its position along
  // the pipeline's axes).
  if (!d.stageDirs.empty()) {
    std::vector<int64_t> position(d.shape.size());
    for (int64_t i = d.shape.size() - 1, left = c.rank(); i >= 0; --i) {
      position[i] = left % d.shape[i];
      left /= d.shape[i];
    }
    int64_t stage = 0;
    for (int a : d.ppAxes)
      stage = stage * d.shape[a] + position[a];
    if (stage > 0) {
      std::string dir = md.dir + "/" + d.stageDirs[stage];
      ArtifactMetadata staged;
      try {
        staged = readMetadata(dir);
      } catch (const Error &e) {
        c.markFailed(e.what());
        throw;
      }
      if (!staged.dist || staged.dist->ranks != d.ranks ||
          staged.dist->shape != d.shape || staged.dist->axes != d.axes ||
          staged.dist->stage != stage) {
        std::string why = staged.metadataPath + ": not stage " +
                          std::to_string(stage) + " of the mesh of " +
                          md.metadataPath;
        c.markFailed(why);
        throw Error(why);
      }
      md = std::move(staged);
    }
  }
  const ArtifactMetadata::Dist &g = *md.dist;
  // Every rank makes the same groups, in the same order (each stage's
  // library lists them canonically).
  uint64_t groupsHash = kFnvBasis;
  for (const std::vector<int> &axes : g.groups) {
    int32_t end = -1; // (between groups)
    groupsHash = fnv1a(groupsHash, axes.data(), axes.size() * sizeof(int));
    groupsHash = fnv1a(groupsHash, &end, sizeof(end));
  }
  c.agree("the collective groups of the stages' libraries", groupsHash);
  for (const std::vector<int> &axes : g.groups)
    mesh->groups.push_back(c.group(g.shape, axes));
  mesh->table.context = mesh.get();
  mesh->table.all_reduce = &Mesh::allReduce;
  mesh->table.all_gather = &Mesh::allGather;
  mesh->table.position = &Mesh::position;
  mesh->table.send = &Mesh::send;
  mesh->table.recv = &Mesh::recv;
}

int Model::rank() const { return mesh ? mesh->collective->rank() : 0; }

void Model::markFailed(const std::string &why) {
  if (mesh)
    mesh->collective->markFailed(why);
}

/// A job every rank failed alike: closing it is a fence with the other
/// ranks, and the first rank to exit makes mpirun end the rest, so each
/// keeps it open until the process exits, after its caller has printed the
/// error.
static void keepUntilExit(std::unique_ptr<Collective> collective) {
  static std::vector<std::unique_ptr<Collective>> kept;
  if (collective)
    kept.push_back(std::move(collective));
}

std::unique_ptr<Model> Model::open(const std::string &dir) {
  std::unique_ptr<Model> m(new Model());
  m->md = readMetadata(dir);
  if (m->md.dist) {
    try {
      m->joinMesh();
    } catch (const Error &) {
      // Every rank fails here alike (the job's size, the artifact, the
      // groups).
      if (m->mesh)
        keepUntilExit(std::move(m->mesh->collective));
      throw;
    }
  }
  try {
    m->load();
  } catch (const Error &e) {
    // This rank alone failed (its weights, its library): the others may
    // already wait in a collective, and closing would wait for them.
    if (m->mesh)
      m->mesh->collective->markFailed(e.what());
    throw;
  }
  return m;
}

void Model::load() {
  mapWeights(md, md.weightsPathOfRank(rank()), weightsMap, weightsMapBytes);

  if (!md.tokenizerPath.empty() && ::access(md.tokenizerPath.c_str(), R_OK))
    throw Error(md.tokenizerPath + ": cannot read tokenizer (named by " +
                md.metadataPath + "): " + errnoMessage(errno));

  if (md.hasDevice) {
    // The device holds the weights' copy, the KV cache and the arena.
    static int8_t emptyWeights[64];
    const void *weights = weightsMap ? weightsMap : emptyWeights;
    if (md.target == "vulkan")
      gpu = VulkanDevice::open(md, weights, md.weightsBytes);
    else if (md.target == "cuda")
      gpu = CudaDevice::open(md, weights, md.weightsBytes);
    else
      throw Error(md.metadataPath + ": target \"" + md.target +
                  "\" needs a device this runtime does not drive");
    // A profiled device artifact: every step timed with timestamp queries.
    if (md.profiled)
      gpu->enableProfile();
    return;
  }

  size_t elements = 1;
  for (int64_t e : md.kvCacheShape)
    elements *= static_cast<size_t>(e);
  size_t bytes = elements * static_cast<size_t>(md.kvCacheElementBytes);
  // 64-byte alignment so that the compiled code may use aligned vector
  // accesses; aligned_alloc wants a multiple of the alignment. A cache of
  // at least a huge page is aligned to one and asks the kernel for huge
  // pages (transparent, where it grants them): a decode step touches
  // every KV head's rows, with the keys transposed a row per element of
  // the head dim, each in a 4 KiB page of its own (a page walk per row).
  constexpr size_t kHugePage = size_t(2) << 20;
  size_t align = bytes >= kHugePage ? kHugePage : 64;
  size_t rounded = (bytes + align - 1) / align * align;
  kvCache = std::aligned_alloc(align, rounded);
  if (!kvCache)
    throw Error(md.metadataPath + ": cannot allocate the KV cache (" +
                std::to_string(bytes) + " bytes)");
#ifdef MADV_HUGEPAGE
  if (align == kHugePage)
    (void)::madvise(kvCache, rounded, MADV_HUGEPAGE); // advice only
#endif
  std::memset(kvCache, 0, rounded);

  // RTLD_NOW: an unresolved symbol fails here, not in the middle of a call.
  // RTLD_LOCAL: two artifacts export the same entry point name.
  library = ::dlopen(md.libraryPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *why = ::dlerror();
    throw Error(md.libraryPath +
                ": cannot load: " + (why ? why : "unknown dlopen error"));
  }
  ::dlerror();
  void *sym = ::dlsym(library, md.forwardSymbol.c_str());
  if (!sym)
    throw Error(md.libraryPath + ": no symbol '" + md.forwardSymbol +
                "' (entry.forward in " + md.metadataPath + ")");
  forwardFn = reinterpret_cast<llmc_forward_fn>(sym);
  setNumThreadsFn = reinterpret_cast<llmc_set_num_threads_fn>(
      ::dlsym(library, LLMC_SET_NUM_THREADS_SYMBOL));
  auto setCollectives = reinterpret_cast<llmc_set_collectives_fn>(
      ::dlsym(library, LLMC_SET_COLLECTIVES_SYMBOL));
  // (A mesh of one rank has no collectives, and no setter.)
  if (md.dist && !md.dist->groups.empty()) {
    if (!setCollectives)
      throw Error(md.libraryPath +
                  ": the metadata says the model is sharded, "
                  "but it does not export " +
                  std::string(LLMC_SET_COLLECTIVES_SYMBOL));
    setCollectives(&mesh->table);
  }
  if (md.profiled) {
    auto *ns = static_cast<int64_t *>(::dlsym(library, LLMC_PROFILE_NS_SYMBOL));
    auto *calls =
        static_cast<int64_t *>(::dlsym(library, LLMC_PROFILE_CALLS_SYMBOL));
    auto *count =
        static_cast<int64_t *>(::dlsym(library, LLMC_PROFILE_COUNT_SYMBOL));
    if (!ns || !calls || !count)
      throw Error(md.libraryPath + ": the metadata says it is profiled, but "
                                   "it does not export " LLMC_PROFILE_NS_SYMBOL
                                   ", " LLMC_PROFILE_CALLS_SYMBOL
                                   " and " LLMC_PROFILE_COUNT_SYMBOL);
    if (*count != static_cast<int64_t>(md.kernels.size()))
      throw Error(md.libraryPath + ": it times " + std::to_string(*count) +
                  " kernels but " + md.metadataPath + " lists " +
                  std::to_string(md.kernels.size()));
    // One process loads the library once: the counters are its. The first
    // model that opens it owns them; another one runs unprofiled.
    if (claimProfile(library)) {
      profileNs = ns;
      profileCalls = calls;
      resetProfile();
    }
  }
  int32_t threads = defaultThreads(md);
  // The ranks of a sharded model on one host share its cores (mpirun's
  // count of this host's ranks), unless LLMC_THREADS says otherwise.
  if (mesh && !std::getenv("LLMC_THREADS"))
    for (const char *var : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})
      if (const char *v = std::getenv(var)) {
        long local = std::strtol(v, nullptr, 10);
        if (local > 1)
          threads = std::max<int32_t>(1, threads / local);
        break;
      }
  setThreads(threads);
  if (md.dist)
    microBatchTokens = md.dist->microBatch;
}

Model::~Model() {
  // A forward call's agreement failed on every rank (the micro-batch).
  if (mesh && mesh->collective && mesh->collective->failedAlike())
    keepUntilExit(std::move(mesh->collective));
  if (profileNs)
    releaseProfile(library);
  if (library)
    ::dlclose(library);
  if (weightsMap)
    ::munmap(weightsMap, weightsMapBytes);
  std::free(kvCache);
  std::free(arena);
}

bool Model::isEos(int32_t token) const {
  return std::find(md.eosIds.begin(), md.eosIds.end(), token) !=
         md.eosIds.end();
}

void Model::forward(const int32_t *tokens, int64_t n, int64_t pos0,
                    float *logits, int64_t rows) {
  if (n < 1)
    throw Error("forward: n must be >= 1, got " + std::to_string(n));
  if (rows < 0)
    rows = n;
  if (rows > n)
    throw Error("forward: the rows of logits must be in [0, n = " +
                std::to_string(n) + "], got " + std::to_string(rows));
  if (!tokens || (!logits && rows > 0))
    throw Error("forward: tokens and logits must not be null");
  if (pos0 < 0 || pos0 > pos)
    throw Error("forward: pos0 = " + std::to_string(pos0) + " is outside [0, " +
                std::to_string(pos) + "] (the KV cache holds positions below " +
                std::to_string(pos) + " only)");
  if (pos0 + n > md.maxSeqLen)
    throw Error("forward: pos0 + n = " + std::to_string(pos0 + n) +
                " exceeds max_seq_len = " + std::to_string(md.maxSeqLen));
  for (int64_t i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= md.vocabSize)
      throw Error("forward: token id " + std::to_string(tokens[i]) +
                  " at index " + std::to_string(i) + " is outside [0, " +
                  std::to_string(md.vocabSize) + ")");

  // The ranks of a sharded model must run the same pieces (the same
  // collectives, of the same sizes): a call that may be cut checks that
  // they cut alike (two small all-reduces: nothing beside a prompt).
  if (mesh && n > 1)
    mesh->collective->agree("the micro-batch (llmc_model_set_micro_batch, "
                            "--micro-batch)",
                            static_cast<uint64_t>(microBatchTokens));
  // Pieces of microBatch() tokens: the last `rows` rows of the call are
  // the last rows of the pieces they fall in.
  const int64_t piece = microBatchTokens > 0 ? microBatchTokens : n;
  for (int64_t at = 0; at < n; at += piece) {
    int64_t m = std::min(piece, n - at);
    int64_t first = std::max(at, n - rows); // the piece's first row wanted
    int64_t pieceRows = std::max<int64_t>(0, at + m - first);
    run(tokens + at, m, pos0 + at,
        pieceRows ? logits + (first - (n - rows)) * md.vocabSize : nullptr,
        pieceRows);
  }
}

void Model::setMicroBatch(int64_t n) {
  if (n < 0)
    throw Error("the micro-batch must be >= 0 tokens (0: whole calls), got " +
                std::to_string(n));
  microBatchTokens = n;
}

void Model::run(const int32_t *tokens, int64_t n, int64_t pos0, float *logits,
                int64_t rows) {
  // A device, and the compiled code's one-token entry, compute at least
  // one row (llmc/abi.h): a call without logits drops it.
  if (rows == 0 && (gpu || n == 1)) {
    droppedRow.resize(static_cast<size_t>(md.vocabSize));
    logits = droppedRow.data();
    rows = 1;
  }
  if (gpu) {
    gpu->forward(tokens, n, pos0, logits, rows);
    pos = pos0 + n;
    return;
  }

  // The descriptor wants a mutable pointer; a private copy keeps the
  // caller's const buffer untouched whatever the compiled code does.
  tokenScratch.assign(tokens, tokens + n);
  auto tokenDesc =
      denseDescriptor<llmc_tokens_desc>(tokenScratch.data(), {n});
  // A zero-byte weights file maps nothing; any non-null pointer will do.
  static int8_t emptyWeights[64];
  int8_t *weights =
      weightsMap ? static_cast<int8_t *>(weightsMap) : emptyWeights;
  auto weightDesc =
      denseDescriptor<llmc_weights_desc>(weights, {md.weightsBytes});
  const std::vector<int64_t> &s = md.kvCacheShape;
  auto kvDesc = denseDescriptor<llmc_kv_cache_desc>(kvCache,
                                                    {s[0], s[1], s[2], s[3]});
  // No rows: an empty (never read or written) buffer still gets a pointer.
  static float noLogits[1];
  auto logitsDesc = denseDescriptor<llmc_logits_desc>(
      logits ? logits : noLogits, {rows, md.vocabSize});
  int64_t arenaBytes = md.arenaBytes(n, pos0, rows);
  if (arenaBytes > arenaCapacity) {
    // Grown by half at least: the arena of a decode step grows with its
    // position.
    int64_t align = md.arenaAlignment;
    int64_t wanted = std::max(arenaBytes, arenaCapacity + arenaCapacity / 2);
    int64_t rounded = (wanted + align - 1) / align * align;
    std::free(arena);
    arena = std::aligned_alloc(static_cast<size_t>(align),
                               static_cast<size_t>(rounded));
    arenaCapacity = arena ? rounded : 0;
    if (!arena)
      throw Error("forward: cannot allocate the arena of " +
                  std::to_string(arenaBytes) + " bytes for " +
                  std::to_string(n) + " tokens");
  }
  // An empty plan still gets a valid (unused) pointer.
  alignas(LLMC_ARENA_ALIGNMENT) static int8_t emptyArena[LLMC_ARENA_ALIGNMENT];
  auto arenaDesc = denseDescriptor<llmc_arena_desc>(
      arena ? static_cast<int8_t *>(arena) : emptyArena,
      {arenaCapacity});
  // The setter applies to the calling thread's parallel regions: set it
  // before every call, whichever thread makes it.
  if (setNumThreadsFn)
    setNumThreadsFn(numThreads);
  forwardFn(&tokenDesc, pos0, &weightDesc, &kvDesc, rows, &logitsDesc,
            &arenaDesc);
  pos = pos0 + n;
  // The kernels this call ran (their call counts moved) did the work the
  // cost model gives for its sizes.
  if (profileCalls)
    for (size_t k = 0; k < md.kernels.size(); ++k) {
      if (profileCalls[k] == callsBefore[k])
        continue;
      callsBefore[k] = profileCalls[k];
      const ArtifactMetadata::Kernel &kernel = md.kernels[k];
      KernelProfile &w = work[k];
      // An estimate that rounding or a guessed bound made negative is none.
      auto at = [&](const ArtifactMetadata::Work &terms) {
        return std::max(0.0, ArtifactMetadata::evaluate(terms, n, pos0, rows));
      };
      if (at(kernel.trips) < 1)
        continue; // a remainder the sizes leave empty
      w.flops += at(kernel.flops);
      w.intOps += at(kernel.intOps);
      w.instructions += at(kernel.instructions);
      w.bytes += at(kernel.bytes);
      w.parallel = at(kernel.parallel);
    }
}

double Model::deviceBandwidth(int64_t bytes, int passes) {
  return gpu ? gpu->readBandwidth(bytes, passes) : 0;
}

bool Model::profiled() const {
  return profileNs != nullptr || (gpu && md.profiled);
}

std::vector<Model::KernelProfile> Model::profile() const {
  std::vector<KernelProfile> result;
  if (gpu && md.profiled) {
    // The device's timestamps: no cost model's work beside them.
    const std::vector<Device::StepTime> &times = gpu->profile();
    // The kernels, then the copies, then (CUDA) the products of cuBLAS.
    result.resize(times.size());
    size_t kernels = md.deviceKernels.size();
    for (const auto *phase : {&md.prefill, &md.decode})
      for (const ArtifactMetadata::Launch &l : *phase) {
        size_t i = l.copy ? kernels : l.gemm ? kernels + 1 : l.kernel;
        if (i >= result.size())
          continue;
        KernelProfile &k = result[i];
        k.phase = phase == &md.prefill ? "prefill" : "decode";
        if (!l.copy && !l.gemm)
          k.name = md.deviceKernels[l.kernel].name.c_str();
      }
    if (result.size() > kernels)
      result[kernels].name = "(buffer copies)";
    if (result.size() > kernels + 1)
      result[kernels + 1].name = "(cuBLAS products)";
    for (size_t k = 0; k < result.size(); ++k) {
      result[k].calls = times[k].calls;
      result[k].nanoseconds = times[k].nanoseconds;
    }
    return result;
  }
  if (!profileNs)
    return result;
  result = work;
  for (size_t k = 0; k < result.size(); ++k) {
    result[k].name = md.kernels[k].name.c_str();
    result[k].phase = md.kernels[k].phase.c_str();
    result[k].exact = md.kernels[k].exact;
    result[k].calls = profileCalls[k];
    result[k].nanoseconds = profileNs[k];
  }
  return result;
}

void Model::resetProfile() {
  if (gpu && md.profiled)
    gpu->resetProfile();
  if (!profileNs)
    return;
  size_t n = md.kernels.size();
  std::fill(profileNs, profileNs + n, 0);
  std::fill(profileCalls, profileCalls + n, 0);
  callsBefore.assign(n, 0);
  work.assign(n, KernelProfile());
}

} // namespace llmc::rt
