//===- Model.h - A loaded artifact and its forward call ---------*- C++ -*-===//
//
// Owns what running a compiled model needs: the dlopen'ed library, the
// read-only mapping of weights.bin, the KV cache, and the position up to which
// that cache is filled. forward() checks its arguments and then calls the
// entry point through MLIR memref descriptors, as docs/artifact.md specifies.
//
//===----------------------------------------------------------------------===//

#ifndef LLMC_RUNTIME_SRC_MODEL_H
#define LLMC_RUNTIME_SRC_MODEL_H

#include "Metadata.h"

#include "llmc/abi.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace llmc::rt {

/// Fills a dense row-major descriptor (llmc/abi.h's LLMC_MEMREF) of `data`
/// with the given sizes.
template <typename Desc, typename T, int Rank>
Desc denseDescriptor(T *data, const int64_t (&sizes)[Rank]) {
  Desc d;
  d.allocated = data;
  d.aligned = data;
  d.offset = 0;
  int64_t stride = 1;
  for (int i = Rank - 1; i >= 0; --i) {
    d.sizes[i] = sizes[i];
    d.strides[i] = stride;
    stride *= sizes[i];
  }
  return d;
}

/// A loaded artifact. Not thread-safe.
class Model {
public:
  /// Loads the artifact in `dir`. Throws Error.
  static std::unique_ptr<Model> open(const std::string &dir);
  ~Model();
  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;

  const ArtifactMetadata &metadata() const { return md; }
  int64_t vocabSize() const { return md.vocabSize; }
  int64_t maxSeqLen() const { return md.maxSeqLen; }
  bool isEos(int32_t token) const;

  /// Runs tokens[0..n) at positions pos0.. and writes [n, vocab] logits.
  /// Throws Error on invalid arguments (see llmc_model_forward).
  /// `logits` receives the rows of the last `rows` tokens (default: all n;
  /// 0 <= rows <= n), [rows, vocab]; rows = 0 fills the cache alone
  /// (`logits` may then be null). A call of more tokens than microBatch()
  /// runs in pieces of that many.
  void forward(const int32_t *tokens, int64_t n, int64_t pos0, float *logits,
               int64_t rows = -1);
  /// The most tokens one call of the compiled code runs (0: a forward
  /// call's all). A pipeline's stages then work on successive pieces at
  /// once (metadata dist.micro_batch sets the default). Throws Error for
  /// n < 0.
  void setMicroBatch(int64_t n);
  int64_t microBatch() const { return microBatchTokens; }

  /// Positions [0, position()) of the KV cache hold valid entries.
  int64_t position() const { return pos; }
  void reset() { pos = 0; }

  /// Threads of the forward calls: LLMC_THREADS, else every core. Throws
  /// Error for n < 1.
  void setThreads(int32_t n);
  int32_t threads() const { return numThreads; }

  /// One kernel's profile since the last resetProfile().
  struct KernelProfile {
    /// The kernel's symbol and its phase ("prefill", "decode"); owned by
    /// the model.
    const char *name = "", *phase = "";
    /// Whether the cost model expressed every bound of its work.
    bool exact = false;
    int64_t calls = 0;
    int64_t nanoseconds = 0;
    /// The cost model's work summed over the forward calls that ran the
    /// kernel (metadata `kernels`, at each call's sizes).
    double flops = 0, intOps = 0, instructions = 0, bytes = 0;
    /// The iterations its threads split, at the last such call.
    double parallel = 1;
  };
  /// Whether the library (or the device, with timestamps) times its
  /// kernels (`llmc compile --profile`).
  bool profiled() const;
  /// Per kernel of metadata().kernels (a device artifact: of its device
  /// kernels, then its buffer copies); empty unless profiled().
  std::vector<KernelProfile> profile() const;
  void resetProfile();
  /// The device's read bandwidth (Device::readBandwidth); 0 on the host.
  double deviceBandwidth(int64_t bytes, int passes);

  /// A sharded model's rank in its job (0 otherwise).
  int rank() const;
  /// Records an error on this rank alone (a sharded model): closing the
  /// model then ends every rank of the job rather than wait for them in
  /// their next collective.
  void markFailed(const std::string &why);

private:
  Model() = default;
  /// Joins the job of a sharded artifact (metadata `dist`): the collective
  /// set-up, the checks that every rank runs this artifact on a job of its
  /// mesh's size, and the groups of the library's collectives.
  void joinMesh();
  /// The rest of open(): weights, cache, library (or device).
  void load();
  /// One call of the compiled code (forward's arguments, checked).
  void run(const int32_t *tokens, int64_t n, int64_t pos0, float *logits,
           int64_t rows);
  /// The table the library calls (llmc/abi.h), and what it reaches.
  struct Mesh;
  std::unique_ptr<Mesh> mesh;

  ArtifactMetadata md;
  void *library = nullptr;
  llmc_forward_fn forwardFn = nullptr;
  /// The library's thread-count setter, or nullptr (no parallel loops).
  llmc_set_num_threads_fn setNumThreadsFn = nullptr;
  int32_t numThreads = 1;
  void *weightsMap = nullptr; ///< the mmap'ed weights.bin (or nullptr)
  size_t weightsMapBytes = 0;
  void *kvCache = nullptr; ///< f32 or f16 elements (kv_cache.dtype)
  /// The forward calls' scratch (metadata `arena`), grown to the largest
  /// call so far.
  void *arena = nullptr;
  int64_t arenaCapacity = 0;
  int64_t pos = 0;
  int64_t microBatchTokens = 0;
  std::vector<int32_t> tokenScratch;
  /// A device's row of logits that a call without logits drops.
  std::vector<float> droppedRow;
  /// The library's counters (LLMC_PROFILE_*_SYMBOL), or nullptr.
  int64_t *profileNs = nullptr, *profileCalls = nullptr;
  /// The calls counted before the current forward call, and the work so
  /// far, per kernel.
  std::vector<int64_t> callsBefore;
  std::vector<KernelProfile> work;
  /// The device that runs a GPU artifact (nullptr on the CPU).
  std::unique_ptr<class Device> gpu;
};

} // namespace llmc::rt

#endif // LLMC_RUNTIME_SRC_MODEL_H
