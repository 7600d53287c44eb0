//===- llmc/runtime.hpp - C++ wrapper of the llmc runtime C API -*- C++ -*-===//
//
// Header-only RAII classes over llmc/runtime.h. Errors become llmc::Error
// exceptions here, on the caller's side of the C boundary; translation units
// that include this header must be compiled with exceptions enabled.
//
//===----------------------------------------------------------------------===//

#ifndef LLMC_RUNTIME_HPP
#define LLMC_RUNTIME_HPP

#include "llmc/runtime.h"

#include <exception>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace llmc {

/// A runtime failure; what() is the runtime's message, which starts with the
/// file or argument concerned.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

namespace detail {
/// Throws Error with the C API's message if `status` is nonzero. `error` is
/// taken by reference so that it is read after the call that sets it, in
/// whatever order the arguments of check() were evaluated.
inline void check(int status, char *&error) {
  if (status == 0)
    return;
  std::string message = error ? error : "unknown error";
  llmc_string_free(error);
  throw Error(message);
}

template <typename T, void (*Free)(T *)> struct Deleter {
  void operator()(T *p) const { Free(p); }
};
} // namespace detail

/// A loaded artifact (see llmc_model_open). Movable, not copyable.
class Model {
public:
  /// Loads the artifact in `dir`; throws Error.
  static Model open(const std::string &dir) {
    llmc_model *m = nullptr;
    char *error = nullptr;
    detail::check(llmc_model_open(dir.c_str(), &m, &error), error);
    return Model(m);
  }

  const llmc_model_info &info() const { return *llmc_model_get_info(get()); }
  int64_t vocabSize() const { return info().vocab_size; }
  /// A sharded model's rank in its job; 0 otherwise (llmc_model_rank).
  int32_t rank() const { return llmc_model_rank(get()); }
  /// See llmc_model_mark_failed.
  void markFailed(const std::string &why) {
    llmc_model_mark_failed(get(), why.c_str());
  }
  int64_t maxSeqLen() const { return info().max_seq_len; }
  /// -1 when the model has no BOS token.
  int32_t bosId() const { return info().bos_id; }
  std::vector<int32_t> eosIds() const {
    return {info().eos_ids, info().eos_ids + info().num_eos_ids};
  }
  bool isEos(int32_t token) const {
    for (size_t i = 0; i < info().num_eos_ids; ++i)
      if (info().eos_ids[i] == token)
        return true;
    return false;
  }
  bool hasTokenizer() const { return info().tokenizer_path != nullptr; }

  /// Runs `n` tokens at positions pos0.. and writes [n, vocab] logits.
  void forward(const int32_t *tokens, int64_t n, int64_t pos0, float *logits) {
    char *error = nullptr;
    detail::check(llmc_model_forward(get(), tokens, n, pos0, logits, &error),
                  error);
  }
  /// As above, returning the [n, vocab] logits.
  std::vector<float> forward(const std::vector<int32_t> &tokens, int64_t pos0) {
    std::vector<float> logits(tokens.size() * static_cast<size_t>(vocabSize()));
    forward(tokens.data(), static_cast<int64_t>(tokens.size()), pos0,
            logits.data());
    return logits;
  }
  /// Runs tokens[0..n) at the current position; writes the last one's
  /// logits ([vocab] floats), the only row it computes.
  void forwardLast(const int32_t *tokens, int64_t n, float *logits) {
    char *error = nullptr;
    detail::check(llmc_model_forward_last(get(), tokens, n, logits, &error),
                  error);
  }
  std::vector<float> forwardLast(const std::vector<int32_t> &tokens) {
    std::vector<float> logits(static_cast<size_t>(vocabSize()));
    forwardLast(tokens.data(), static_cast<int64_t>(tokens.size()),
                logits.data());
    return logits;
  }
  void reset() { llmc_model_reset(get()); }
  int64_t position() const { return llmc_model_position(get()); }
  /// Threads of the forward calls (llmc_model_set_threads).
  void setThreads(int32_t n) {
    char *error = nullptr;
    detail::check(llmc_model_set_threads(get(), n, &error), error);
  }
  int32_t threads() const { return llmc_model_threads(get()); }
  /// Tokens a call of the compiled code runs (llmc_model_set_micro_batch).
  void setMicroBatch(int64_t n) {
    char *error = nullptr;
    detail::check(llmc_model_set_micro_batch(get(), n, &error), error);
  }
  int64_t microBatch() const { return llmc_model_micro_batch(get()); }
  /// Each kernel's profile (empty unless compiled with --profile).
  std::vector<llmc_kernel_profile> profile() const {
    std::vector<llmc_kernel_profile> out(
        static_cast<size_t>(llmc_model_profile_size(get())));
    out.resize(static_cast<size_t>(llmc_model_profile(
        get(), out.data(), static_cast<int64_t>(out.size()))));
    return out;
  }
  void resetProfile() { llmc_model_profile_reset(get()); }
  /// llmc_model_device_bandwidth: 0 for an artifact the host runs.
  double deviceBandwidth(int64_t bytes, int32_t passes) {
    char *error = nullptr;
    double out = 0;
    detail::check(
        llmc_model_device_bandwidth(get(), bytes, passes, &out, &error), error);
    return out;
  }

  llmc_model *get() const { return handle.get(); }

private:
  explicit Model(llmc_model *m) : handle(m) {}
  std::unique_ptr<llmc_model, detail::Deleter<llmc_model, llmc_model_close>>
      handle;
};

/// A tokenizer: llama2.c's, or an llmc tokenizer file's SentencePiece-style
/// or byte-level BPE vocabulary (see llmc_tokenizer_open).
class Tokenizer {
public:
  /// An llmc tokenizer file, or a llama2.c file of `vocabSize` tokens.
  static Tokenizer open(const std::string &path, int64_t vocabSize = 0) {
    llmc_tokenizer *t = nullptr;
    char *error = nullptr;
    detail::check(llmc_tokenizer_open(path.c_str(), vocabSize, &t, &error),
                  error);
    return Tokenizer(t);
  }
  /// The artifact's tokenizer; throws Error if it has none.
  static Tokenizer forModel(const Model &model) {
    llmc_tokenizer *t = nullptr;
    char *error = nullptr;
    detail::check(llmc_tokenizer_open_for_model(model.get(), &t, &error),
                  error);
    return Tokenizer(t);
  }

  const llmc_tokenizer_info &info() const {
    return *llmc_tokenizer_get_info(get());
  }
  int64_t vocabSize() const { return llmc_tokenizer_vocab_size(get()); }
  /// "llama2c", "spm" or "bpe".
  std::string kind() const { return info().kind; }
  /// -1 when there is none.
  int32_t bosId() const { return info().bos_id; }
  int32_t eosId() const { return info().eos_id; }

  /// Encodes with LLMC_TOKENIZE_* flags, e.g. LLMC_TOKENIZE_ADD_SPECIAL to
  /// begin a prompt as the model expects.
  std::vector<int32_t> tokenize(std::string_view text, unsigned flags) const {
    return encodeWith([&](int32_t *ids, size_t capacity, size_t *n,
                          char **error) {
      return llmc_tokenizer_tokenize(get(), text.data(), text.size(), flags,
                                     ids, capacity, n, error);
    }, text.size());
  }

  /// Encodes with no special tokens parsed and BOS (if any) when `addBos`:
  /// llama2.c's encode() for llama2.c tokenizers.
  std::vector<int32_t> encode(std::string_view text, bool addBos) const {
    return encodeWith([&](int32_t *ids, size_t capacity, size_t *n,
                          char **error) {
      return llmc_tokenizer_encode(get(), text.data(), text.size(), addBos,
                                   ids, capacity, n, error);
    }, text.size());
  }

  /// The text of `token` after `prevToken` (see llmc_tokenizer_decode); the
  /// view lives as long as the tokenizer.
  std::string_view decode(int32_t prevToken, int32_t token) const {
    const char *piece = nullptr;
    size_t length = 0;
    char *error = nullptr;
    detail::check(
        llmc_tokenizer_decode(get(), prevToken, token, &piece, &length, &error),
        error);
    return {piece, length};
  }

  /// Decodes a whole sequence (LLMC_DETOKENIZE_* flags).
  std::string detokenize(const std::vector<int32_t> &ids,
                         unsigned flags = 0) const {
    std::string text(ids.size() * 8 + 16, '\0');
    for (int attempt = 0; attempt < 2; ++attempt) {
      size_t n = 0;
      char *error = nullptr;
      int status = llmc_tokenizer_detokenize(get(), ids.data(), ids.size(),
                                             flags, text.data(), text.size(),
                                             &n, &error);
      if (status != 0 && n > text.size() && attempt == 0) {
        llmc_string_free(error);
        text.resize(n);
        continue;
      }
      detail::check(status, error);
      text.resize(n);
      break;
    }
    return text;
  }

  llmc_tokenizer *get() const { return handle.get(); }

private:
  explicit Tokenizer(llmc_tokenizer *t) : handle(t) {}

  /// Calls `encode` with a buffer of `length + 3` ids and, if that was too
  /// small (special tokens), once more with the size it asked for.
  template <typename Encode>
  static std::vector<int32_t> encodeWith(Encode &&encode, size_t length) {
    std::vector<int32_t> ids(length + 3);
    for (int attempt = 0; attempt < 2; ++attempt) {
      size_t n = 0;
      char *error = nullptr;
      int status = encode(ids.data(), ids.size(), &n, &error);
      if (status != 0 && n > ids.size() && attempt == 0) {
        llmc_string_free(error);
        ids.resize(n);
        continue;
      }
      detail::check(status, error);
      ids.resize(n);
      break;
    }
    return ids;
  }

  std::unique_ptr<llmc_tokenizer,
                  detail::Deleter<llmc_tokenizer, llmc_tokenizer_close>>
      handle;
};

/// Sampling parameters with the `llmc run` defaults (greedy, seed 42).
struct SamplerConfig {
  float temperature = 0.0f;
  int32_t topK = 0;
  float topP = 1.0f;
  uint64_t seed = 42;
};

/// A token sampler (see llmc_sampler_create).
class Sampler {
public:
  Sampler(const SamplerConfig &config, int64_t vocabSize) {
    llmc_sampler_config c = {config.temperature, config.topK, config.topP,
                             config.seed};
    llmc_sampler *s = nullptr;
    char *error = nullptr;
    detail::check(llmc_sampler_create(&c, vocabSize, &s, &error), error);
    handle.reset(s);
  }
  int32_t sample(const float *logits) {
    return llmc_sampler_sample(get(), logits);
  }
  llmc_sampler *get() const { return handle.get(); }

private:
  std::unique_ptr<llmc_sampler,
                  detail::Deleter<llmc_sampler, llmc_sampler_destroy>>
      handle;
};

/// Callbacks of generate(); empty ones are skipped. Returning true stops.
struct GenerateCallbacks {
  /// [numPrompt, vocab] logits of the prefill call.
  std::function<bool(const float *logits, int64_t numPrompt)> onPromptLogits;
  /// Each generated token (EOS included) and the logits it was chosen from.
  std::function<bool(int32_t token, const float *logits)> onToken;
};

/// See llmc_generate(). An exception thrown by a callback stops the
/// generation and is rethrown here.
inline llmc_generate_stats generate(Model &model, Sampler &sampler,
                                    const std::vector<int32_t> &prompt,
                                    int64_t maxTokens,
                                    const GenerateCallbacks &callbacks = {}) {
  struct Context {
    const GenerateCallbacks *cb;
    std::exception_ptr failure;
  } context{&callbacks, nullptr};
  // The trampolines keep C++ exceptions on this side of the C boundary.
  llmc_generate_callbacks c = {};
  c.user = &context;
  if (callbacks.onPromptLogits)
    c.on_prompt_logits = [](void *user, const float *logits, int64_t n,
                            int64_t) -> int {
      auto *ctx = static_cast<Context *>(user);
      try {
        return ctx->cb->onPromptLogits(logits, n) ? 1 : 0;
      } catch (...) {
        ctx->failure = std::current_exception();
        return 1;
      }
    };
  if (callbacks.onToken)
    c.on_token = [](void *user, int32_t token, const float *logits,
                    int64_t) -> int {
      auto *ctx = static_cast<Context *>(user);
      try {
        return ctx->cb->onToken(token, logits) ? 1 : 0;
      } catch (...) {
        ctx->failure = std::current_exception();
        return 1;
      }
    };
  llmc_generate_stats stats = {};
  char *error = nullptr;
  int status = llmc_generate(model.get(), sampler.get(), prompt.data(),
                             static_cast<int64_t>(prompt.size()), maxTokens, &c,
                             &stats, &error);
  if (context.failure) {
    llmc_string_free(error);
    std::rethrow_exception(context.failure);
  }
  detail::check(status, error);
  return stats;
}

/// Writes a float32 [rows, cols] array as a .npy file; throws Error.
inline void writeNpy(const std::string &path, const float *data, int64_t rows,
                     int64_t cols) {
  char *error = nullptr;
  detail::check(llmc_npy_write_f32(path.c_str(), data, rows, cols, &error),
                error);
}

} // namespace llmc

#endif // LLMC_RUNTIME_HPP
