//===- Sampler.cpp - Choosing the next token from logits --------*- C++ -*-===//
//
// Candidates are ordered by (probability descending, id ascending) so that
// top-k 1 and a tiny top-p pick exactly what greedy picks, ties included.
//
//===----------------------------------------------------------------------===//

#include "Sampler.h"

#include "Error.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace llmc::rt {

Rng::Rng(uint64_t seed) {
  // splitmix64 spreads similar seeds apart. xorshift must not start from
  // the all-zero state (it would stay there); one seed maps to it.
  uint64_t z = seed + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  state = z ? z : 0x2545F4914F6CDD1Dull;
}

uint64_t Rng::next() {
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  return state * 0x2545F4914F6CDD1Dull;
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

Sampler::Sampler(const SamplerConfig &config, int64_t vocabSize)
    : config(config), vocab(vocabSize), rng(config.seed) {
  if (vocabSize < 1 || vocabSize > INT32_MAX)
    throw Error("sampler: invalid vocabulary size " +
                std::to_string(vocabSize));
  if (!(config.temperature >= 0.0f) || std::isinf(config.temperature))
    throw Error("sampler: temperature must be a finite number >= 0, got " +
                std::to_string(config.temperature));
  if (config.topK < 0)
    throw Error("sampler: top_k must be >= 0, got " +
                std::to_string(config.topK));
  if (!(config.topP > 0.0f && config.topP <= 1.0f))
    throw Error("sampler: top_p must be in (0, 1], got " +
                std::to_string(config.topP));
  probs.resize(static_cast<size_t>(vocabSize));
  order.resize(static_cast<size_t>(vocabSize));
  nucleus.reserve(static_cast<size_t>(vocabSize));
}

int32_t Sampler::argmax(const float *logits, int64_t n) {
  int32_t best = 0;
  float bestValue = -INFINITY;
  bool found = false;
  for (int64_t i = 0; i < n; ++i) {
    float v = logits[i];
    if (std::isnan(v))
      continue;
    if (!found || v > bestValue) {
      best = static_cast<int32_t>(i);
      bestValue = v;
      found = true;
    }
  }
  return best;
}

int32_t Sampler::sample(const float *logits) {
  if (config.temperature == 0.0f || vocab == 1)
    return argmax(logits, vocab);

  // Unnormalized softmax(logits / T): subtracting the max keeps exp() in
  // range; NaN logits get probability 0.
  float maxLogit = logits[argmax(logits, vocab)];
  if (!std::isfinite(maxLogit))
    return argmax(logits, vocab);
  for (int64_t i = 0; i < vocab; ++i) {
    float v = logits[i];
    probs[i] =
        std::isnan(v) ? 0.0f : std::exp((v - maxLogit) / config.temperature);
  }

  bool limitK = config.topK > 0 && config.topK < vocab;
  bool limitP = config.topP < 1.0f;
  if (!limitK && !limitP) {
    // Plain multinomial over the whole vocabulary.
    double total = 0;
    for (float p : probs)
      total += p;
    double r = rng.uniform() * total, acc = 0;
    int32_t last = 0;
    for (int64_t i = 0; i < vocab; ++i) {
      if (probs[i] <= 0)
        continue;
      acc += probs[i];
      last = static_cast<int32_t>(i);
      if (r < acc)
        return last;
    }
    return last; // rounding left r just above the sum
  }

  auto before = [&](int32_t a, int32_t b) {
    return probs[a] > probs[b] || (probs[a] == probs[b] && a < b);
  };
  std::iota(order.begin(), order.end(), 0);
  nucleus.clear();
  double mass = 0; // of the tokens in `nucleus`
  if (limitK) {
    // Top-k, then top-p over the renormalized top-k.
    size_t k = static_cast<size_t>(config.topK);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
    double kept = 0;
    for (size_t i = 0; i < k; ++i)
      kept += probs[order[i]];
    double target = static_cast<double>(config.topP) * kept;
    for (size_t i = 0; i < k; ++i) {
      nucleus.push_back(order[i]);
      mass += probs[order[i]];
      if (limitP && mass >= target)
        break;
    }
  } else {
    // Top-p alone: the smallest most-likely set whose mass reaches p.
    double total = 0;
    for (float p : probs)
      total += p;
    // A token below (1 - p) / (n - 1) of the total can never be in the
    // nucleus: the tokens above it already reach p (llama2.c's observation).
    // The bound holds only if some token is above it, which a tiny p with a
    // flat distribution can break.
    double cutoff =
        (1.0 - config.topP) / static_cast<double>(vocab - 1) * total;
    auto end = std::partition(order.begin(), order.end(),
                              [&](int32_t i) { return probs[i] >= cutoff; });
    if (end == order.begin())
      end = order.end();
    // Pop candidates most likely first from a heap: O(n + m log n) for a
    // nucleus of m tokens, instead of sorting all of them.
    auto after = [&](int32_t a, int32_t b) { return before(b, a); };
    std::make_heap(order.begin(), end, after);
    double target = static_cast<double>(config.topP) * total;
    while (end != order.begin()) {
      std::pop_heap(order.begin(), end, after);
      --end;
      nucleus.push_back(*end);
      mass += probs[*end];
      if (mass >= target)
        break;
    }
  }

  double r = rng.uniform() * mass, acc = 0;
  for (int32_t id : nucleus) {
    acc += probs[id];
    if (r < acc)
      return id;
  }
  return nucleus.back(); // rounding left r just above the sum
}

} // namespace llmc::rt
