/*===- llmc/abi.h - the contract between compiler and runtime -----*- C -*-===*
 *
 * Everything compiled code and the runtime must agree on, spelled once: the
 * artifact format version, the entry points a compiled model exports and
 * their argument layout, the KV cache's layout and element type, and the
 * alignment of weights.bin. The compiler (lib/) and the runtime (runtime/)
 * both include this header; it has no MLIR or LLVM dependency.
 * docs/artifact.md describes the same contract in prose.
 *
 *===----------------------------------------------------------------------===*/
#ifndef LLMC_ABI_H
#define LLMC_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** metadata.json's `format` and `version`. */
#define LLMC_ARTIFACT_FORMAT "llmc-artifact"
#define LLMC_ARTIFACT_VERSION 4

/** Every parameter starts at a multiple of this in weights.bin, and the
 *  runtime maps the file at a page boundary. */
#define LLMC_WEIGHTS_ALIGNMENT 64

/*===--- Entry points ------------------------------------------------------===*/

/** The model's function in the compiler's IR, and the symbol the artifact's
 *  library exports for it (MLIR's C interface: `_mlir_ciface_` + name). */
#define LLMC_FORWARD_FUNCTION "forward"
#define LLMC_FORWARD_SYMBOL "_mlir_ciface_forward"

/** Optional export: sets how many threads the following forward calls use
 *  (the generated code's parallel loops). Absent when the code has none. */
#define LLMC_SET_NUM_THREADS_SYMBOL "llmc_set_num_threads"

/** MLIR's strided memref descriptor of rank N: pointers as allocated and as
 *  aligned, an element offset, then N sizes and N strides. */
#define LLMC_MEMREF(T, N)                                                      \
  struct {                                                                     \
    T *allocated;                                                              \
    T *aligned;                                                                \
    int64_t offset;                                                            \
    int64_t sizes[N];                                                          \
    int64_t strides[N];                                                        \
  }

typedef LLMC_MEMREF(int32_t, 1) llmc_tokens_desc;
typedef LLMC_MEMREF(int8_t, 1) llmc_weights_desc;
/* The KV cache's elements are f32 or f16 (metadata kv_cache.dtype). */
typedef LLMC_MEMREF(void, 4) llmc_kv_cache_desc;
typedef LLMC_MEMREF(float, 2) llmc_logits_desc;
typedef LLMC_MEMREF(int8_t, 1) llmc_arena_desc;

/** forward(tokens[n], pos0, weights, kv_cache, n_out, logits[n_out, vocab],
 *  arena): runs the n tokens at positions pos0 .. pos0 + n - 1, reading the
 *  cache below pos0 and writing positions pos0 .., and writes the logits of
 *  the last n_out tokens (0 <= n_out <= n, and 1 when n is 1: the entry's
 *  version for one token writes its row; the caller checks): n_out = 1 to
 *  generate, n to score every token, 0 to fill the cache alone (a prompt's
 *  pieces before its last). Rows that nothing reads are not
 *  computed (graph-output-rows). Every intermediate lives in `arena`, the
 *  caller's scratch bytes (aligned to LLMC_ARENA_ALIGNMENT, contents
 *  undefined between calls), at least as large as metadata.json's `arena`
 *  says for this call's sizes; the call allocates nothing. The cache must
 *  hold finite values (zeros at first) at every position: attention's p.V
 *  reads the values up to pos0 + n rounded up to its kv_pad (64), with
 *  probabilities 0 past each row's end (0 * NaN would be NaN). */
typedef void (*llmc_forward_fn)(llmc_tokens_desc *tokens, int64_t pos0,
                                llmc_weights_desc *weights,
                                llmc_kv_cache_desc *kv_cache, int64_t n_out,
                                llmc_logits_desc *logits,
                                llmc_arena_desc *arena);
typedef void (*llmc_set_num_threads_fn)(int32_t threads);

/*===--- Collectives (a sharded model) ------------------------------------===*/

/** A model compiled for a mesh (metadata.json's `dist`) exports this
 *  setter; the runtime calls it with its collectives before any forward
 *  call, and the compiled code calls through the table at each collective
 *  of the partitioned program (docs/artifact.md). A group is an index into
 *  metadata's `dist.groups` (the mesh axes it spans). The functions do not
 *  return on failure: a collective that fails ends the job (every rank
 *  exits with an error), since the compiled code has no way to unwind. A
 *  collective of no elements returns at once on every member, moving and
 *  waiting for nothing: its members agree on its size (the same call's
 *  n and n_out), so none waits for a message the others never send (a
 *  call with n_out = 0 exchanges no logits). */
#define LLMC_SET_COLLECTIVES_SYMBOL "llmc_set_collectives"

/** Element types a collective moves. */
#define LLMC_COLLECTIVE_F32 0
/** Reductions (dist.all_reduce's `reduction`). */
#define LLMC_COLLECTIVE_SUM 0
#define LLMC_COLLECTIVE_MAX 1
#define LLMC_COLLECTIVE_MIN 2

typedef struct llmc_collectives {
  void *context;
  /** The `count` elements of `dtype` at `data`, replaced on each rank of
   *  the group by their reduction `op` over the group. */
  void (*all_reduce)(void *context, int32_t group, void *data, int64_t count,
                     int32_t dtype, int32_t op);
  /** `recv`, [outer][group size][inner] elements, from each rank's `send`,
   *  [outer][inner], in the group's order (a gather along a dimension:
   *  `outer` is the product of the dimensions before it). */
  void (*all_gather)(void *context, int32_t group, const void *send, void *recv,
                     int64_t outer, int64_t inner, int32_t dtype);
  /** This rank's position in the group. */
  int64_t (*position)(void *context, int32_t group);
  /** `bytes` at `data` to the member of the group at position `peer` (a
   *  pipeline stage's rows to the next, the logits to every stage). */
  void (*send)(void *context, int32_t group, int64_t peer, const void *data,
               int64_t bytes);
  /** `bytes` into `data` from the member at position `peer`. */
  void (*recv)(void *context, int32_t group, int64_t peer, void *data,
               int64_t bytes);
} llmc_collectives;

typedef void (*llmc_set_collectives_fn)(const llmc_collectives *table);

/*===--- Profile ----------------------------------------------------------===*/

/** An artifact compiled with `llmc compile --profile` exports two arrays of
 * int64_t, one slot per entry of metadata's `kernels` (in that order: a
 * kernel and one function that calls it): the nanoseconds spent in those
 * calls and how many there were. The arrays belong to the loaded library,
 * which one process loads once however many models open the artifact. */
#define LLMC_PROFILE_NS_SYMBOL "llmc_profile_ns"
#define LLMC_PROFILE_CALLS_SYMBOL "llmc_profile_calls"
/** A constant int64_t: how many slots the two arrays have. */
#define LLMC_PROFILE_COUNT_SYMBOL "llmc_profile_count"

/*===--- Arena ------------------------------------------------------------===*/

/** The arena's bytes are a sum of terms, each `bytes` times a product of the
 *  call's sizes named in `of`: "tokens" (n), "pos0", "n_out". metadata.json
 *  lists one such sum per plan (prefill, decode); the arena holds the
 *  largest for the sizes of the call. */
#define LLMC_ARENA_ALIGNMENT 64
#define LLMC_ARENA_SIZE_NAMES "tokens", "pos0", "n_out"

/*===--- KV cache ----------------------------------------------------------===*/

/** f32 or f16 (IEEE half; `llmc compile --kv-cache f16`), as metadata's
 *  kv_cache.dtype says, dense row-major,
 *  [layers][2][kv_heads][max_seq_len * head_dim]:
 *  per layer and KV head, the keys as [position][head_dim] (index 0 of the
 *  second axis) and the values (index 1) in one of two layouts, as
 *  kv_cache.layout says: transposed, [head_dim][position], so that p.V
 *  reads rows of positions (llama.cpp without flash attention keeps V
 *  transposed for the same reason), or as the keys, [position][head_dim]
 *  (a step's values one contiguous row), or with the keys transposed,
 *  [head_dim][position], beside values by position (a CPU's flash
 *  attention: q.k's positions and p.V's head dim in lanes), or the values
 *  transposed in blocks of B = kv_cache.values_block positions,
 *  [position / B][head_dim][B] (a CPU's two-pass attention: p.V's lanes
 *  of positions read the context front to back). The
 *  runtime allocates it (aligned to 64 bytes, zeroed) and owns it across
 *  calls; only the compiled code reads its elements. */
#define LLMC_KV_CACHE_DTYPES "f32", "f16"
#define LLMC_KV_CACHE_RANK 4
#define LLMC_KV_CACHE_LAYOUT \
  "layer, k|v, kv_head, k: position x head_dim | v: head_dim x position"
#define LLMC_KV_CACHE_LAYOUT_BY_POSITION                                       \
  "layer, k|v, kv_head, position x head_dim"
#define LLMC_KV_CACHE_LAYOUT_FLASH                                             \
  "layer, k|v, kv_head, k: head_dim x position | v: position x head_dim"
#define LLMC_KV_CACHE_LAYOUT_BLOCKED                                           \
  "layer, k|v, kv_head, k: position x head_dim | v: position / values_block "  \
  "x head_dim x values_block"

#ifdef __cplusplus
}
#endif

#endif /* LLMC_ABI_H */
