//===- Sampler.h - Choosing the next token from logits ----------*- C++ -*-===//
//
// Greedy and temperature / top-k / top-p sampling with a seeded RNG, so that a
// run is reproducible from its seed.
//
//===----------------------------------------------------------------------===//

#ifndef LLMC_RUNTIME_SRC_SAMPLER_H
#define LLMC_RUNTIME_SRC_SAMPLER_H

#include <cstdint>
#include <vector>

namespace llmc::rt {

/// xorshift64* (Vigna): tiny, fast, good enough for sampling, and identical
/// on every platform, unlike the std:: distributions.
class Rng {
public:
  /// Any seed works, 0 included: it is scrambled by splitmix64 first.
  explicit Rng(uint64_t seed);
  uint64_t next();
  /// Uniform in [0, 1) with 53 random bits.
  double uniform();

private:
  uint64_t state;
};

/// Sampling parameters; see llmc_sampler_config.
struct SamplerConfig {
  float temperature = 0.0f;
  int32_t topK = 0;
  float topP = 1.0f;
  uint64_t seed = 42;
};

/// Picks token ids from rows of logits. Not thread-safe (it owns the RNG).
class Sampler {
public:
  /// Throws Error if the configuration is invalid.
  Sampler(const SamplerConfig &config, int64_t vocabSize);

  /// Returns the chosen id; `logits` has vocabSize entries. Does not
  /// allocate.
  int32_t sample(const float *logits);

  int64_t vocabSize() const { return vocab; }

  /// The index of the largest logit, the lowest one on ties; NaN never wins.
  static int32_t argmax(const float *logits, int64_t n);

private:
  SamplerConfig config;
  int64_t vocab;
  Rng rng;
  std::vector<float> probs;
  std::vector<int32_t> order;
  std::vector<int32_t> nucleus; ///< the candidates kept, most likely first
};

} // namespace llmc::rt

#endif // LLMC_RUNTIME_SRC_SAMPLER_H
