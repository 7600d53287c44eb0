/*===- llmc/runtime.h - C API of the llmc artifact runtime ---------*- C -*-===*
 *
 * The stable C interface of the llmc runtime: load a compiled artifact
 * (docs/artifact.md), run its forward entry point, tokenize (llama2.c,
 * SentencePiece-style and byte-level BPE vocabularies), sample, and generate
 * text. It has no MLIR or LLVM dependency.
 *
 * Conventions, shared by every function here:
 *  - Objects are opaque handles, created by `*_open`/`*_create` and released
 *    by the matching `*_close`/`*_destroy` (which accept NULL).
 *  - Fallible functions return 0 on success and nonzero on failure. On failure,
 *    if `error` is not NULL, `*error` receives a malloc'ed, NUL-terminated
 *    message that the caller frees with llmc_string_free(). Messages start with
 *    the file or the argument they are about ("out/metadata.json: ...").
 *  - No C++ exception ever crosses this interface.
 *  - A handle may be used by one thread at a time; distinct handles are
 *    independent.
 *
 *===----------------------------------------------------------------------===*/

#ifndef LLMC_RUNTIME_H
#define LLMC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

/* The artifact `format` string and `version` this runtime accepts, and the
 * rest of the compiler/runtime contract. */
#include "llmc/abi.h"

#ifdef __cplusplus
extern "C" {
#endif


/** Frees a message returned through an `error` out-parameter. NULL is fine. */
void llmc_string_free(char *s);

/*===--------------------------- Model ------------------------------------===*/

/** A loaded artifact: its library, its mapped weights, a KV cache and the
 *  current position (the number of cache positions filled so far). */
typedef struct llmc_model llmc_model;

/** What metadata.json says about a loaded model. Owned by the model and valid
 *  until llmc_model_close(). New fields are only ever appended. */
typedef struct llmc_model_info {
  const char *dir;            /**< the artifact directory as given */
  const char *target;         /**< metadata `target`, e.g. "cpu" */
  const char *arch;           /**< `model.arch`, "" when absent */
  int64_t vocab_size;         /**< `model.vocab_size` */
  int64_t max_seq_len;        /**< `model.max_seq_len` */
  int32_t bos_id;             /**< `model.bos_id`, -1 when there is none */
  const int32_t *eos_ids;     /**< `model.eos_ids` */
  size_t num_eos_ids;         /**< number of entries in eos_ids */
  const char *tokenizer_path; /**< DIR/<tokenizer.file>, NULL when none */
  int64_t weights_bytes;      /**< `weights.bytes` */
  const char *target_description; /**< `target_description`, the resolved
                                       target (cpu:NAME,...), "" if absent */
  int64_t decode_read_bytes;  /**< `weights.decode_read_bytes`: what one
                                   decode step reads of weights.bin (the
                                   embedding table: one row); -1 if absent */
  int64_t kv_bytes_per_position; /**< KV cache bytes of one position, all
                                      layers, keys and values */
  int64_t token_flops; /**< `compute.token_flops`: the arithmetic (a
                            multiply-add is 2) every token of a call does in
                            its matmuls; -1 if absent */
  int64_t row_flops;   /**< `compute.row_flops`: per row of logits asked
                            for (the output matmul); -1 if absent */
  int64_t pair_flops;  /**< `compute.pair_flops`: per query and position it
                            attends (q.k and p.V); -1 if absent */
  const char *weights_path; /**< the weights file this process mapped
                                 (a sharded model: its rank's) */
  int64_t mesh_ranks;       /**< a sharded model's ranks (`dist.ranks`), 1
                                 otherwise */
} llmc_model_info;

/** Loads the artifact in directory `dir`: validates metadata.json, maps
 *  weights.bin read-only, loads the library and resolves `entry.forward`,
 *  allocates a zeroed KV cache. The position starts at 0. */
int llmc_model_open(const char *dir, llmc_model **out, char **error);

/** Lists the Vulkan devices the loader sees, one line each ("0: NAME (KIND,
 *  Vulkan X.Y)"), then the CUDA devices the driver sees ("cuda 0: NAME
 *  (sm_NN, M GiB, N SMs)"), into *out (free with llmc_string_free). Fails
 *  with a message when no Vulkan loader is installed and there is no CUDA
 *  device. Both are opened at run time: a runtime without them needs
 *  neither library. */
int llmc_list_devices(char **out, char **error);

/** Describes CUDA device `index` as an llmc target ("cuda:sm_90") into *out
 *  (free with llmc_string_free): the compiler driver resolves `--target
 *  cuda` with it. Fails without a driver or with no such device. */
int llmc_describe_cuda_device(int32_t index, char **out, char **error);

/** Describes Vulkan device `index` as an llmc target ("vulkan:1.3,+fp64,
 *  subgroup=8,...") into *out (free with llmc_string_free): the compiler
 *  driver resolves `--target vulkan` with it. Fails without a loader or
 *  with no such device. */
int llmc_describe_device(int32_t index, char **out, char **error);

/** Unloads a model and frees everything it owns. */
void llmc_model_close(llmc_model *model);

/** Returns the model's metadata; never NULL for a valid handle. */
const llmc_model_info *llmc_model_get_info(const llmc_model *model);

/** Runs the entry point on tokens[0..n) at positions pos0..pos0+n-1 and writes
 *  their logits to `logits` ([n, vocab_size] floats, row-major). Requires
 *  n >= 1, 0 <= pos0 <= position (the cache below pos0 must have been filled
 *  by earlier calls), pos0 + n <= max_seq_len and every id in [0, vocab).
 *  On success the position becomes pos0 + n. */
int llmc_model_forward(llmc_model *model, const int32_t *tokens, int64_t n,
                       int64_t pos0, float *logits, char **error);

/** Forward at the current position, writing only the logits of the last
 *  token to `logits` ([vocab_size] floats): the compiled code computes that
 *  row alone (what generation needs; a prompt's head matmul runs once). */
int llmc_model_forward_last(llmc_model *model, const int32_t *tokens, int64_t n,
                            float *logits, char **error);

/** Forgets the cached context: the position becomes 0. The cache memory is
 *  not cleared; the next forward call overwrites what it reads. */
void llmc_model_reset(llmc_model *model);

/** Returns the current position (tokens processed since the last reset). */
int64_t llmc_model_position(const llmc_model *model);

/** Sets how many threads the model's forward calls run on (>= 1). The
 *  default is the LLMC_THREADS environment variable when set, else every
 *  core of the machine. Code compiled without parallel loops runs on one
 *  thread whatever is set. Returns nonzero (and a message) for n < 1. */
int llmc_model_set_threads(llmc_model *model, int32_t n, char **error);

/** The thread count forward calls use. */
int32_t llmc_model_threads(const llmc_model *model);

/** Sets the most tokens one call of the compiled code runs (0: all of a
 *  forward call's). A longer call runs in pieces of n tokens, each filling
 *  the cache and only the last ones computing the logits asked for: the
 *  same logits as one call (up to the rounding of attention's sums), a
 *  smaller arena, and in a pipeline (a sharded model's stages) every stage
 *  at work on its piece at once. The default is metadata's
 *  dist.micro_batch, else 0. Every rank of a sharded model must set the same
 *  (a forward call of more than one token checks: an error on every rank
 *  otherwise). A call that fails in a later piece leaves the position after
 *  the pieces that ran. Returns nonzero (and a message) for n < 0. */
int llmc_model_set_micro_batch(llmc_model *model, int64_t n, char **error);

/** The micro-batch forward calls use (0: whole calls). */
int64_t llmc_model_micro_batch(const llmc_model *model);

/** A sharded model's rank in its job (metadata `dist`; the job launched by
 *  mpirun); 0 for a model that is not sharded. Every rank computes the same
 *  logits; a program prints from rank 0. */
int32_t llmc_model_rank(const llmc_model *model);

/** A sharded model: records that this rank failed on its own (`why`), so
 *  that closing the model ends every rank of the job (the others may wait
 *  in a collective) rather than wait for them. No effect otherwise. A
 *  program calls it when an error on one rank ends its use of the model. */
void llmc_model_mark_failed(llmc_model *model, const char *why);

/** One kernel's profile, for an artifact compiled with `llmc compile
 *  --profile`: what was measured since the last llmc_model_profile_reset,
 *  and the work the compiler's cost model gives for the same forward calls
 *  (docs/performance.md, "The cost model"). */
typedef struct llmc_kernel_profile {
  const char *name;    /**< the kernel's symbol, e.g. "forward_decode.matmul" */
  const char *phase;   /**< its caller's phase: "prefill", "decode" */
  int64_t calls;       /**< calls, every layer's counted */
  double seconds;      /**< wall time inside them (threads included) */
  double flops;        /**< floating-point operations (an FMA is 2) */
  double int_ops;      /**< integer operations on data */
  double instructions; /**< the multiply-add issue slots of that arithmetic */
  double bytes;        /**< distinct bytes read and written per call, summed */
  double parallel;     /**< iterations its threads split, at the last forward
                            call that ran it */
  int exact;           /**< nonzero when the model expressed every bound */
} llmc_kernel_profile;

/** The kernels a profile reports: 0 unless the artifact is profiled (and
 *  this is the process's first open model of it: the counters are the
 *  loaded library's). Reading a profile while another thread runs a forward
 *  call of the model is a data race. */
int64_t llmc_model_profile_size(const llmc_model *model);

/** Copies the first `count` kernels' profiles into `out`; returns how many
 *  it copied. The names live as long as the model. */
int64_t llmc_model_profile(const llmc_model *model, llmc_kernel_profile *out,
                           int64_t count);

/** Clears the profile's counters. */
void llmc_model_profile_reset(llmc_model *model);

/** The memory read bandwidth of the device a GPU artifact runs on: bytes
 *  per second a compute kernel reads `bytes` bytes at (16-byte loads over
 *  every thread of a grid-stride loop; decode's roofline reads its weights
 *  so), the best of `passes` runs (timed with timestamp queries where the
 *  device keeps them). Sets *out to 0 for an artifact the host runs. */
int llmc_model_device_bandwidth(llmc_model *model, int64_t bytes,
                                int32_t passes, double *out, char **error);

/*===------------------------- Tokenizer ----------------------------------===*/

/** A tokenizer: llama2.c's ("llama2c": BOS = 1, EOS = 2, byte tokens <0xNN>
 *  at 3..258, encoded exactly as llama2.c's run.c), or an llmc tokenizer file
 *  (docs/artifact.md) holding a SentencePiece-style ("spm") or byte-level BPE
 *  ("bpe") vocabulary, encoded as llama.cpp / SentencePiece / Hugging Face
 *  tokenizers do. */
typedef struct llmc_tokenizer llmc_tokenizer;

/** Loads a tokenizer file: an llmc tokenizer file (JSON; `vocab_size`, when
 *  positive, must equal its number of tokens) or a llama2.c tokenizer file
 *  holding `vocab_size` tokens (0: as many as the file holds). */
int llmc_tokenizer_open(const char *path, int64_t vocab_size,
                        llmc_tokenizer **out, char **error);

/** Loads the tokenizer of an artifact; fails if the artifact has none. */
int llmc_tokenizer_open_for_model(const llmc_model *model, llmc_tokenizer **out,
                                  char **error);

/** Frees a tokenizer. */
void llmc_tokenizer_close(llmc_tokenizer *tokenizer);

/** Returns the number of tokens in the vocabulary. */
int64_t llmc_tokenizer_vocab_size(const llmc_tokenizer *tokenizer);

/** What a tokenizer is. Owned by the tokenizer; new fields are only ever
 *  appended. */
typedef struct llmc_tokenizer_info {
  const char *kind;   /**< "llama2c", "spm" or "bpe" */
  int64_t vocab_size; /**< number of tokens */
  int32_t bos_id;     /**< -1 when there is none */
  int32_t eos_id;     /**< -1 when there is none */
  int add_bos;        /**< nonzero: prompts start with BOS (the metadata's
                           add_bos_token) */
  int add_eos;        /**< nonzero: prompts end with EOS */
} llmc_tokenizer_info;

/** Returns the tokenizer's description; never NULL for a valid handle. */
const llmc_tokenizer_info *
llmc_tokenizer_get_info(const llmc_tokenizer *tokenizer);

/** Flags of llmc_tokenizer_tokenize(). */
#define LLMC_TOKENIZE_ADD_BOS 1u /**< prepend BOS (if there is one) */
#define LLMC_TOKENIZE_ADD_EOS 2u /**< append EOS (if there is one) */
/** Add BOS and/or EOS as the tokenizer's metadata says (add_bos/add_eos). */
#define LLMC_TOKENIZE_ADD_SPECIAL 4u
/** Recognize control tokens written in the text ("<|im_start|>", "<s>") as
 *  those tokens; otherwise they are tokenized as plain text. User-defined
 *  tokens are always recognized. */
#define LLMC_TOKENIZE_PARSE_SPECIAL 8u

/** Encodes `text` (`length` bytes, UTF-8) with `flags` (LLMC_TOKENIZE_*).
 *  `*num_ids` always receives the number of ids; if that exceeds `capacity`
 *  nothing is written and the call fails (call again with a larger buffer).
 *  `length + 3` ids suffice unless special tokens are parsed. */
int llmc_tokenizer_tokenize(const llmc_tokenizer *tokenizer, const char *text,
                            size_t length, unsigned flags, int32_t *ids,
                            size_t capacity, size_t *num_ids, char **error);

/** Encodes `text` with no special tokens parsed, prepending BOS if `add_bos`
 *  is nonzero (for llama2.c tokenizers, exactly llama2.c's encode()).
 *  Same buffer contract as llmc_tokenizer_tokenize(). */
int llmc_tokenizer_encode(const llmc_tokenizer *tokenizer, const char *text,
                          size_t length, int add_bos, int32_t *ids,
                          size_t capacity, size_t *num_ids, char **error);

/** Returns in `*piece`/`*length` the text of `token` following `prev_token`
 *  (-1 at the start), for printing tokens as they are generated: control and
 *  unknown tokens give "", byte tokens their raw byte (possibly part of a
 *  UTF-8 character), and the space SentencePiece puts in front of the text is
 *  dropped after BOS (llama2.c: after id 1). The piece is owned by the
 *  tokenizer, is not NUL-terminated in general, and stays valid until it is
 *  closed. */
int llmc_tokenizer_decode(const llmc_tokenizer *tokenizer, int32_t prev_token,
                          int32_t token, const char **piece, size_t *length,
                          char **error);

/** Flags of llmc_tokenizer_detokenize(). */
#define LLMC_DETOKENIZE_RENDER_SPECIAL 1u /**< write control tokens' text */

/** Decodes `ids[0..num_ids)` into `text` (not NUL-terminated): the inverse
 *  of llmc_tokenizer_tokenize() without ADD_* flags (the text comes back
 *  NFC-normalized when the tokenizer normalizes). `*length` always receives
 *  the number of bytes; if that exceeds `capacity` nothing is written and the
 *  call fails. Every id must be in [0, vocab_size). */
int llmc_tokenizer_detokenize(const llmc_tokenizer *tokenizer,
                              const int32_t *ids, size_t num_ids,
                              unsigned flags, char *text, size_t capacity,
                              size_t *length, char **error);

/*===-------------------------- Sampler -----------------------------------===*/

/** Chooses the next token from a row of logits. */
typedef struct llmc_sampler llmc_sampler;

/** Sampling parameters. temperature 0 means greedy (argmax, lowest id on
 *  ties); otherwise softmax(logits / temperature) restricted to the top_k most
 *  likely tokens (0 = no limit), then to the smallest most-likely set whose
 *  probability reaches top_p (1 = no limit), sampled with a xorshift64* RNG
 *  seeded from `seed` (same seed, same logits -> same tokens). */
typedef struct llmc_sampler_config {
  float temperature; /**< >= 0 */
  int32_t top_k;     /**< >= 0 */
  float top_p;       /**< in (0, 1] */
  uint64_t seed;
} llmc_sampler_config;

/** Creates a sampler for rows of `vocab_size` logits. */
int llmc_sampler_create(const llmc_sampler_config *config, int64_t vocab_size,
                        llmc_sampler **out, char **error);

/** Frees a sampler. */
void llmc_sampler_destroy(llmc_sampler *sampler);

/** Returns the chosen token id; `logits` ([vocab_size]) is not modified. */
int32_t llmc_sampler_sample(llmc_sampler *sampler, const float *logits);

/*===------------------------- Generation ---------------------------------===*/

/** Why llmc_generate() stopped. */
typedef enum llmc_stop_reason {
  LLMC_STOP_MAX_TOKENS = 0,  /**< generated max_tokens tokens */
  LLMC_STOP_EOS = 1,         /**< generated one of `model.eos_ids` */
  LLMC_STOP_MAX_SEQ_LEN = 2, /**< the context is full */
  LLMC_STOP_CALLBACK = 3     /**< a callback asked to stop */
} llmc_stop_reason;

/** Callbacks of llmc_generate(); any may be NULL. A nonzero return stops the
 *  generation (reason LLMC_STOP_CALLBACK). */
typedef struct llmc_generate_callbacks {
  /** After the prefill call: the logits of every prompt position,
   *  [num_prompt, vocab_size]. */
  int (*on_prompt_logits)(void *user, const float *logits, int64_t num_prompt,
                          int64_t vocab_size);
  /** For each generated token (an EOS token included, and it is the last),
   *  with the logits row it was chosen from. */
  int (*on_token)(void *user, int32_t token, const float *logits,
                  int64_t vocab_size);
  void *user;
} llmc_generate_callbacks;

/** Counters and timings of one llmc_generate() call. */
typedef struct llmc_generate_stats {
  int64_t prompt_tokens;    /**< tokens in the prefill call */
  int64_t generated_tokens; /**< tokens passed to on_token */
  int64_t decode_calls;     /**< forward calls with n = 1 */
  double prefill_seconds;   /**< wall time of the prefill call */
  double decode_seconds;    /**< wall time of all decode calls together */
  llmc_stop_reason stop_reason;
} llmc_generate_stats;

/** Resets the model, runs the whole prompt in one forward call at position 0
 *  (in pieces of the micro-batch, llmc_model_set_micro_batch), then samples a
 * token and feeds it back with one forward call per token, until max_tokens
 * tokens were generated, an EOS id was generated, or the context (max_seq_len)
 * is full. `stats` may be NULL. */
int llmc_generate(llmc_model *model, llmc_sampler *sampler,
                  const int32_t *prompt, int64_t num_prompt, int64_t max_tokens,
                  const llmc_generate_callbacks *callbacks,
                  llmc_generate_stats *stats, char **error);

/*===---------------------------- .npy ------------------------------------===*/

/** Writes a float32 array of shape [rows, cols] to a NumPy .npy file (format
 *  version 1.0, header padded to a multiple of 64 bytes). */
int llmc_npy_write_f32(const char *path, const float *data, int64_t rows,
                       int64_t cols, char **error);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LLMC_RUNTIME_H */
