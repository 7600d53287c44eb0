//===- CApi.cpp - The C API over the runtime internals ----------*- C++ -*-===//
//
// The only place where C++ exceptions are turned into error strings: every
// entry point runs its body inside guard(), so that nothing thrown (including
// std::bad_alloc) escapes into C callers.
//
//===----------------------------------------------------------------------===//

#include "llmc/runtime.h"

#include "CudaDevice.h"
#include "Generate.h"
#include "Model.h"
#include "Npy.h"
#include "Sampler.h"
#include "Tokenizer.h"
#include "VulkanDevice.h"

#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>

using namespace llmc::rt;

struct llmc_model {
  std::unique_ptr<Model> impl;
  llmc_model_info info = {};
  std::string weightsPath;
};

struct llmc_tokenizer {
  explicit llmc_tokenizer(std::unique_ptr<Tokenizer> t) : impl(std::move(t)) {
    info.kind = impl->kind();
    info.vocab_size = impl->vocabSize();
    info.bos_id = impl->bosId();
    info.eos_id = impl->eosId();
    info.add_bos = impl->addBosDefault() ? 1 : 0;
    info.add_eos = impl->addEosDefault() ? 1 : 0;
  }
  std::unique_ptr<Tokenizer> impl;
  llmc_tokenizer_info info = {};
};

struct llmc_sampler {
  explicit llmc_sampler(const SamplerConfig &c, int64_t v) : impl(c, v) {}
  Sampler impl;
};

namespace {

/// A malloc'ed copy of `text` (free with llmc_string_free), or nullptr.
char *copyString(const std::string &text) {
  char *copy = static_cast<char *>(std::malloc(text.size() + 1));
  if (copy)
    std::memcpy(copy, text.c_str(), text.size() + 1);
  return copy;
}

void setError(char **error, const char *message) {
  if (!error)
    return;
  *error = copyString(message);
}

/// Runs `body`, returning 0, or 1 with the exception's message in *error.
template <typename Body> int guard(char **error, Body &&body) {
  if (error)
    *error = nullptr;
  try {
    body();
    return 0;
  } catch (const std::bad_alloc &) {
    setError(error, "out of memory");
  } catch (const std::exception &e) {
    setError(error, e.what());
  } catch (...) {
    setError(error, "unknown error");
  }
  return 1;
}

void requireArg(const void *p, const char *function, const char *name) {
  if (!p)
    throw Error(std::string(function) + ": argument '" + name +
                "' must not be null");
}

} // namespace

extern "C" {

void llmc_string_free(char *s) { std::free(s); }

int llmc_list_devices(char **out, char **error) {
  return guard(error, [&] {
    requireArg(out, "llmc_list_devices", "out");
    *out = nullptr;
    // The Vulkan devices, then the CUDA ones (none where there is no
    // driver); no Vulkan loader is an error only without CUDA devices.
    std::string text;
    std::vector<std::string> cuda = CudaDevice::list();
    try {
      for (const std::string &line : VulkanDevice::list())
        text += line + "\n";
    } catch (const Error &) {
      if (cuda.empty())
        throw;
    }
    for (const std::string &line : cuda)
      text += line + "\n";
    if (!(*out = copyString(text)))
      throw std::bad_alloc();
  });
}

int llmc_describe_device(int32_t index, char **out, char **error) {
  return guard(error, [&] {
    requireArg(out, "llmc_describe_device", "out");
    *out = nullptr;
    std::string text = VulkanDevice::describe(index);
    if (!(*out = copyString(text)))
      throw std::bad_alloc();
  });
}

int llmc_describe_cuda_device(int32_t index, char **out, char **error) {
  return guard(error, [&] {
    requireArg(out, "llmc_describe_cuda_device", "out");
    *out = nullptr;
    std::string text = CudaDevice::describe(index);
    if (!(*out = copyString(text)))
      throw std::bad_alloc();
  });
}

int llmc_model_open(const char *dir, llmc_model **out, char **error) {
  return guard(error, [&] {
    requireArg(dir, "llmc_model_open", "dir");
    requireArg(out, "llmc_model_open", "out");
    *out = nullptr;
    auto m = std::make_unique<llmc_model>();
    m->impl = Model::open(dir);
    const ArtifactMetadata &md = m->impl->metadata();
    llmc_model_info &info = m->info;
    info.dir = md.dir.c_str();
    info.target = md.target.c_str();
    info.target_description = md.targetDescription.c_str();
    info.arch = md.arch.c_str();
    info.vocab_size = md.vocabSize;
    info.max_seq_len = md.maxSeqLen;
    info.bos_id = md.bosId;
    info.eos_ids = md.eosIds.data();
    info.num_eos_ids = md.eosIds.size();
    info.tokenizer_path =
        md.tokenizerPath.empty() ? nullptr : md.tokenizerPath.c_str();
    info.weights_bytes = md.weightsBytes;
    info.decode_read_bytes = md.decodeReadBytes;
    info.token_flops = md.tokenFlops;
    info.row_flops = md.rowFlops;
    info.pair_flops = md.pairFlops;
    m->weightsPath = md.weightsPathOfRank(m->impl->rank());
    info.weights_path = m->weightsPath.c_str();
    info.mesh_ranks = md.dist ? md.dist->ranks : 1;
    // [layers, 2, kv_heads, max_seq * head_dim] of the cache's dtype.
    info.kv_bytes_per_position = md.kvCacheShape[0] * md.kvCacheShape[1] *
                                 md.kvCacheShape[2] * md.kvCacheShape[3] /
                                 md.maxSeqLen * md.kvCacheElementBytes;
    *out = m.release();
  });
}

void llmc_model_close(llmc_model *model) { delete model; }

int32_t llmc_model_rank(const llmc_model *model) {
  return model ? model->impl->rank() : 0;
}

void llmc_model_mark_failed(llmc_model *model, const char *why) {
  if (model)
    model->impl->markFailed(why ? why : "failed");
}

const llmc_model_info *llmc_model_get_info(const llmc_model *model) {
  return model ? &model->info : nullptr;
}

int llmc_model_forward(llmc_model *model, const int32_t *tokens, int64_t n,
                       int64_t pos0, float *logits, char **error) {
  return guard(error, [&] {
    requireArg(model, "llmc_model_forward", "model");
    model->impl->forward(tokens, n, pos0, logits);
  });
}

int llmc_model_forward_last(llmc_model *model, const int32_t *tokens, int64_t n,
                            float *logits, char **error) {
  return guard(error, [&] {
    requireArg(model, "llmc_model_forward_last", "model");
    requireArg(logits, "llmc_model_forward_last", "logits");
    Model &m = *model->impl;
    m.forward(tokens, n, m.position(), logits, /*rows=*/1);
  });
}

void llmc_model_reset(llmc_model *model) {
  if (model)
    model->impl->reset();
}

int64_t llmc_model_position(const llmc_model *model) {
  return model ? model->impl->position() : 0;
}

int llmc_model_set_threads(llmc_model *model, int32_t n, char **error) {
  return guard(error, [&] {
    requireArg(model, "llmc_model_set_threads", "model");
    model->impl->setThreads(n);
  });
}

int32_t llmc_model_threads(const llmc_model *model) {
  return model ? model->impl->threads() : 0;
}

int llmc_model_set_micro_batch(llmc_model *model, int64_t n, char **error) {
  return guard(error, [&] {
    requireArg(model, "llmc_model_set_micro_batch", "model");
    model->impl->setMicroBatch(n);
  });
}

int64_t llmc_model_micro_batch(const llmc_model *model) {
  return model ? model->impl->microBatch() : 0;
}

int64_t llmc_model_profile_size(const llmc_model *model) {
  return model && model->impl->profiled()
             ? static_cast<int64_t>(model->impl->profile().size())
             : 0;
}

int64_t llmc_model_profile(const llmc_model *model, llmc_kernel_profile *out,
                           int64_t count) {
  if (!model || !out || count <= 0)
    return 0;
  std::vector<Model::KernelProfile> p = model->impl->profile();
  int64_t n = std::min<int64_t>(count, static_cast<int64_t>(p.size()));
  for (int64_t k = 0; k < n; ++k) {
    const Model::KernelProfile &m = p[k];
    out[k] = {m.name,     m.phase,        m.calls,        m.nanoseconds * 1e-9,
              m.flops,    m.intOps,       m.instructions, m.bytes,
              m.parallel, m.exact ? 1 : 0};
  }
  return n;
}

int llmc_model_device_bandwidth(llmc_model *model, int64_t bytes,
                                int32_t passes, double *out, char **error) {
  return guard(error, [&] {
    requireArg(model, "llmc_model_device_bandwidth", "model");
    requireArg(out, "llmc_model_device_bandwidth", "out");
    if (bytes < 4 || passes < 1)
      throw Error("llmc_model_device_bandwidth: bytes must be >= 4 and "
                  "passes >= 1");
    *out = model->impl->deviceBandwidth(bytes, passes);
  });
}

void llmc_model_profile_reset(llmc_model *model) {
  if (model)
    model->impl->resetProfile();
}

int llmc_tokenizer_open(const char *path, int64_t vocab_size,
                        llmc_tokenizer **out, char **error) {
  return guard(error, [&] {
    requireArg(path, "llmc_tokenizer_open", "path");
    requireArg(out, "llmc_tokenizer_open", "out");
    *out = nullptr;
    *out = new llmc_tokenizer(Tokenizer::open(path, vocab_size));
  });
}

int llmc_tokenizer_open_for_model(const llmc_model *model, llmc_tokenizer **out,
                                  char **error) {
  return guard(error, [&] {
    requireArg(model, "llmc_tokenizer_open_for_model", "model");
    requireArg(out, "llmc_tokenizer_open_for_model", "out");
    *out = nullptr;
    const ArtifactMetadata &md = model->impl->metadata();
    if (md.tokenizerPath.empty())
      throw Error(md.metadataPath + ": the artifact has no tokenizer");
    std::unique_ptr<Tokenizer> t;
    if (md.tokenizerKind == "llmc") {
      t = Tokenizer::loadLlmc(md.tokenizerPath);
      // Every id the model can produce must decode.
      if (t->vocabSize() != md.vocabSize)
        throw Error(md.tokenizerPath + ": the tokenizer has " +
                    std::to_string(t->vocabSize()) +
                    " tokens but model.vocab_size is " +
                    std::to_string(md.vocabSize));
    } else {
      t = Tokenizer::load(md.tokenizerPath, md.vocabSize);
    }
    *out = new llmc_tokenizer(std::move(t));
  });
}

void llmc_tokenizer_close(llmc_tokenizer *tokenizer) { delete tokenizer; }

int64_t llmc_tokenizer_vocab_size(const llmc_tokenizer *tokenizer) {
  return tokenizer ? tokenizer->impl->vocabSize() : 0;
}

const llmc_tokenizer_info *
llmc_tokenizer_get_info(const llmc_tokenizer *tokenizer) {
  return tokenizer ? &tokenizer->info : nullptr;
}

namespace {

int tokenizeImpl(const char *function, const llmc_tokenizer *tokenizer,
                 const char *text, size_t length, const EncodeOptions &options,
                 int32_t *ids, size_t capacity, size_t *num_ids,
                 char **error) {
  return guard(error, [&] {
    requireArg(tokenizer, function, "tokenizer");
    requireArg(num_ids, function, "num_ids");
    if (length > 0)
      requireArg(text, function, "text");
    std::vector<int32_t> result = tokenizer->impl->tokenize(
        std::string_view(length ? text : "", length), options);
    *num_ids = result.size();
    if (result.size() > capacity)
      throw Error(std::string(function) + ": " + std::to_string(result.size()) +
                  " ids do not fit in a buffer of " + std::to_string(capacity));
    if (!result.empty()) {
      requireArg(ids, function, "ids");
      std::memcpy(ids, result.data(), result.size() * sizeof(int32_t));
    }
  });
}

void requireToken(const char *function, const Tokenizer &t, int32_t token) {
  if (token < 0 || token >= t.vocabSize())
    throw Error(std::string(function) + ": token id " + std::to_string(token) +
                " is outside [0, " + std::to_string(t.vocabSize()) + ")");
}

} // namespace

int llmc_tokenizer_tokenize(const llmc_tokenizer *tokenizer, const char *text,
                            size_t length, unsigned flags, int32_t *ids,
                            size_t capacity, size_t *num_ids, char **error) {
  EncodeOptions options;
  if (tokenizer && (flags & LLMC_TOKENIZE_ADD_SPECIAL)) {
    options.addBos = tokenizer->impl->addBosDefault();
    options.addEos = tokenizer->impl->addEosDefault();
  }
  options.addBos |= (flags & LLMC_TOKENIZE_ADD_BOS) != 0;
  options.addEos |= (flags & LLMC_TOKENIZE_ADD_EOS) != 0;
  options.parseSpecial = (flags & LLMC_TOKENIZE_PARSE_SPECIAL) != 0;
  return tokenizeImpl("llmc_tokenizer_tokenize", tokenizer, text, length,
                      options, ids, capacity, num_ids, error);
}

int llmc_tokenizer_encode(const llmc_tokenizer *tokenizer, const char *text,
                          size_t length, int add_bos, int32_t *ids,
                          size_t capacity, size_t *num_ids, char **error) {
  EncodeOptions options;
  options.addBos = add_bos != 0;
  return tokenizeImpl("llmc_tokenizer_encode", tokenizer, text, length,
                      options, ids, capacity, num_ids, error);
}

int llmc_tokenizer_decode(const llmc_tokenizer *tokenizer, int32_t prev_token,
                          int32_t token, const char **piece, size_t *length,
                          char **error) {
  return guard(error, [&] {
    requireArg(tokenizer, "llmc_tokenizer_decode", "tokenizer");
    requireArg(piece, "llmc_tokenizer_decode", "piece");
    requireArg(length, "llmc_tokenizer_decode", "length");
    requireToken("llmc_tokenizer_decode", *tokenizer->impl, token);
    if (prev_token < 0 || prev_token >= tokenizer->impl->vocabSize())
      prev_token = -1; // no (known) predecessor: the start of the text
    std::string_view s = tokenizer->impl->decode(prev_token, token);
    *piece = s.data();
    *length = s.size();
  });
}

int llmc_tokenizer_detokenize(const llmc_tokenizer *tokenizer,
                              const int32_t *ids, size_t num_ids,
                              unsigned flags, char *text, size_t capacity,
                              size_t *length, char **error) {
  return guard(error, [&] {
    requireArg(tokenizer, "llmc_tokenizer_detokenize", "tokenizer");
    requireArg(length, "llmc_tokenizer_detokenize", "length");
    if (num_ids > 0)
      requireArg(ids, "llmc_tokenizer_detokenize", "ids");
    std::vector<int32_t> v(ids, ids + num_ids);
    for (int32_t id : v)
      requireToken("llmc_tokenizer_detokenize", *tokenizer->impl, id);
    std::string s = tokenizer->impl->detokenize(
        v, (flags & LLMC_DETOKENIZE_RENDER_SPECIAL) != 0);
    *length = s.size();
    if (s.size() > capacity)
      throw Error("llmc_tokenizer_detokenize: " + std::to_string(s.size()) +
                  " bytes do not fit in a buffer of " +
                  std::to_string(capacity));
    if (!s.empty()) {
      requireArg(text, "llmc_tokenizer_detokenize", "text");
      std::memcpy(text, s.data(), s.size());
    }
  });
}

int llmc_sampler_create(const llmc_sampler_config *config, int64_t vocab_size,
                        llmc_sampler **out, char **error) {
  return guard(error, [&] {
    requireArg(config, "llmc_sampler_create", "config");
    requireArg(out, "llmc_sampler_create", "out");
    *out = nullptr;
    SamplerConfig c;
    c.temperature = config->temperature;
    c.topK = config->top_k;
    c.topP = config->top_p;
    c.seed = config->seed;
    *out = new llmc_sampler(c, vocab_size);
  });
}

void llmc_sampler_destroy(llmc_sampler *sampler) { delete sampler; }

int32_t llmc_sampler_sample(llmc_sampler *sampler, const float *logits) {
  // The sampler allocates its buffers up front, so sample() does not
  // throw; the guard only keeps that a local property of Sampler.
  try {
    return sampler->impl.sample(logits);
  } catch (...) {
    return Sampler::argmax(logits, sampler->impl.vocabSize());
  }
}

int llmc_generate(llmc_model *model, llmc_sampler *sampler,
                  const int32_t *prompt, int64_t num_prompt, int64_t max_tokens,
                  const llmc_generate_callbacks *callbacks,
                  llmc_generate_stats *stats, char **error) {
  return guard(error, [&] {
    requireArg(model, "llmc_generate", "model");
    requireArg(sampler, "llmc_generate", "sampler");
    llmc_generate_stats s = generate(*model->impl, sampler->impl, prompt,
                                     num_prompt, max_tokens, callbacks);
    if (stats)
      *stats = s;
  });
}

int llmc_npy_write_f32(const char *path, const float *data, int64_t rows,
                       int64_t cols, char **error) {
  return guard(error, [&] {
    requireArg(path, "llmc_npy_write_f32", "path");
    writeNpyF32(path, data, rows, cols);
  });
}

} // extern "C"
