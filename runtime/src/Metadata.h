//===- Metadata.h - Reading and validating metadata.json --------*- C++ -*-===//
//
// Turns an artifact's metadata.json into a checked struct. Every field the
// runtime relies on is checked here, once, so that the loader and the forward
// call can trust it; each error names the file and the field.
//
//===----------------------------------------------------------------------===//

#ifndef LLMC_RUNTIME_SRC_METADATA_H
#define LLMC_RUNTIME_SRC_METADATA_H

#include "Json.h"

#include "llmc/abi.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace llmc::rt {

/// The fields of metadata.json the runtime uses (docs/artifact.md).
struct ArtifactMetadata {
  std::string dir;          ///< the artifact directory as given
  std::string metadataPath; ///< dir + "/metadata.json"
  int64_t version = 0;
  std::string target;
  std::string targetDescription; // "" when absent
  std::string libraryPath; ///< dir + "/" + library
  std::string weightsPath; ///< dir + "/" + weights.file ({rank}: see dist)
  /// `dist`: a model sharded over a mesh of ranks (its weights.file names
  /// each rank's blob with "{rank}"; the library exports
  /// LLMC_SET_COLLECTIVES_SYMBOL).
  struct Dist {
    int64_t ranks = 1;
    std::vector<int64_t> shape;
    std::vector<std::string> axes;
    /// Each group of llmc_collectives' calls: the indices of its axes.
    std::vector<std::vector<int>> groups;
    double predictedSecondsPerToken = -1;
    /// A pipeline: the indices of its axes, this artifact's stage, and (in
    /// the first stage's metadata) each stage's directory.
    std::vector<int> ppAxes;
    int64_t stage = 0;
    std::vector<std::string> stageDirs;
    /// The tokens a forward call runs at once (0: all): the pieces a
    /// pipeline's stages work on at the same time.
    int64_t microBatch = 0;
  };
  std::optional<Dist> dist;
  /// weights.file of rank `rank` (the path itself when not sharded).
  std::string weightsPathOfRank(int64_t rank) const;
  int64_t weightsBytes = 0;
  int64_t decodeReadBytes = -1; ///< `weights.decode_read_bytes`, -1: absent
  /// `compute`: FLOPs per token, per output row, per (query, attended
  /// position); -1: absent (older artifacts).
  int64_t tokenFlops = -1, rowFlops = -1, pairFlops = -1;
  std::string arch; ///< model.arch, empty when absent
  int64_t vocabSize = 0;
  int64_t maxSeqLen = 0;
  int32_t bosId = -1;
  std::vector<int32_t> eosIds;
  std::vector<int64_t> kvCacheShape; ///< LLMC_KV_CACHE_RANK positive extents
  int64_t kvCacheElementBytes = 4;   ///< kv_cache.dtype: f32 4, f16 2
  std::string forwardSymbol;         ///< entry.forward
  /// `arena`: each plan a sum of `bytes` times a product of the call's
  /// sizes (indices into LLMC_ARENA_SIZE_NAMES: tokens, pos0, n_out).
  struct ArenaTerm {
    int64_t bytes = 0;
    std::vector<int> sizes;
  };
  std::vector<std::vector<ArenaTerm>> arenaPlans;
  int64_t arenaAlignment = LLMC_ARENA_ALIGNMENT;
  /// The arena bytes a call of n tokens at pos0 with n_out rows needs: the
  /// largest plan. Throws Error past what any machine holds.
  int64_t arenaBytes(int64_t n, int64_t pos0, int64_t nOut) const;
  /// `kernels`: each kernel's work per forward call, as the compiler's cost
  /// model estimates it (sums of `c` times a product of the call's sizes);
  /// empty in artifacts without it.
  struct WorkTerm {
    double c = 0;
    /// Indices into LLMC_ARENA_SIZE_NAMES, each size's floor over its
    /// divisor ("tokens/4"; 1 for the size itself).
    std::vector<int> sizes;
    std::vector<int64_t> divisors;
  };
  using Work = std::vector<WorkTerm>;
  struct Kernel {
    std::string name, phase;
    int64_t calls = 0;
    bool exact = true;
    /// flops, int_ops, instructions, bytes, parallel; a call whose
    /// `trips` is below one runs none of its loops.
    Work flops, intOps, instructions, bytes, parallel, trips;
  };
  std::vector<Kernel> kernels;
  /// `profiled`: the library exports LLMC_PROFILE_*_SYMBOL, one slot per
  /// kernel.
  bool profiled = false;
  /// The value of `work` for a call of n tokens at pos0 with n_out rows.
  static double evaluate(const Work &work, int64_t n, int64_t pos0,
                         int64_t nOut);
  /// dir + "/" + tokenizer.file; empty when `tokenizer` is null.
  std::string tokenizerPath;
  /// tokenizer.kind: "llmc" (an llmc tokenizer file) or "llama2c".
  std::string tokenizerKind;

  /// `device` (GPU artifacts): the kernels and the dispatch program.
  struct Expr {
    /// A constant, a size ("tokens", "pos0", "n_out", "weights_bytes",
    /// "arena_bytes"), a token id (["token", i]) or [op, a, b].
    enum class Kind { Const, Size, Token, Op } kind = Kind::Const;
    int64_t value = 0; ///< Const; Size: index into sizeNames()
    std::string op;    ///< Op: + - * floordiv ceildiv mod min max
    std::vector<Expr> operands;
    static const std::vector<std::string> &sizeNames();
  };
  /// The values an expression may read.
  struct CallSizes {
    int64_t tokens = 0, pos0 = 0, nOut = 0, weightsBytes = 0, arenaBytes = 0;
    const int32_t *tokenIds = nullptr;
  };
  /// Throws Error for division by zero or a token index out of range.
  static int64_t evaluate(const Expr &e, const CallSizes &sizes);
  struct DeviceArg {
    bool scalar = false;
    std::string buffer; ///< tokens, weights, kv, logits or arena
    Expr offset, bytes; ///< a buffer's binding
    bool writes = true; ///< whether the kernel may write the binding
    Expr value;         ///< a scalar
  };
  /// A product of the GEMM library (target cuda: cuBLAS): out[m, n] =
  /// alpha * sum_k a[m, k] * b[n, k] + beta * out[m, n], row-major matrices
  /// (a and b f16, out f32) whose rows are lda, ldb, ldc elements apart.
  struct Gemm {
    DeviceArg a, b, out; ///< buffer, offset and bytes
    Expr m, n, k, lda, ldb, ldc;
    double alpha = 1, beta = 0;
  };
  /// A kernel launch, or (copy) a copy of `bytes` between two bindings, or
  /// (gemm) a product of the GEMM library.
  struct Launch {
    int64_t kernel = 0;
    Expr grid[3];
    std::vector<DeviceArg> args;
    bool copy = false;
    DeviceArg src, dst; ///< buffer and offset
    Expr bytes;
    bool gemm = false;
    Gemm product;
  };
  struct DeviceKernel {
    std::string name;
    int64_t workgroup[3] = {1, 1, 1};
    /// The subgroup size its subgroup operations assume (0: none).
    int64_t subgroup = 0;
  };
  bool hasDevice = false;
  std::vector<DeviceKernel> deviceKernels;
  std::vector<Launch> prefill, decode;
  /// device.features: what the kernels use (fp16, int8, fp64, int64).
  std::vector<std::string> deviceFeatures;
  /// target "cuda": device.arch, the SM of the machine code in `library`
  /// ("sm_90"), and dir + "/" + device.ptx, the kernels' PTX.
  std::string cudaArch, ptxPath;
  /// Every kernel waits for the grid before it (griddepcontrol.wait): the
  /// runtime may link consecutive kernels with programmatic edges.
  bool cudaDependentLaunch = false;
};

/// Checks a parsed metadata document. `metadataPath` is used in messages and
/// `dir` to resolve the file names it contains. Throws Error.
ArtifactMetadata validateMetadata(const JsonValue &root, const std::string &dir,
                                  const std::string &metadataPath);

/// Reads, parses and validates DIR/metadata.json. Throws Error.
ArtifactMetadata readMetadata(const std::string &dir);

/// Reads a whole file into a string. Throws Error naming the file.
std::string readFile(const std::string &path);

/// Joins an artifact directory and a file name from its metadata.
std::string joinPath(const std::string &dir, const std::string &file);

} // namespace llmc::rt

#endif // LLMC_RUNTIME_SRC_METADATA_H
