//===- SamplerTest.cpp - Tests of token sampling ----------------*- C++ -*-===//

#include "Sampler.h"
#include "Error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

using namespace llmc::rt;

namespace {

/// Deterministic pseudo-random logits in [-4, 4).
std::vector<float> randomLogits(int n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float &x : v)
    x = static_cast<float>(rng.uniform() * 8.0 - 4.0);
  return v;
}

/// Logits whose softmax at temperature 1 is `probs`.
std::vector<float> logitsOf(const std::vector<double> &probs) {
  std::vector<float> v;
  for (double p : probs)
    v.push_back(static_cast<float>(std::log(p)));
  return v;
}

/// Frequencies of each id over `draws` samples.
std::vector<double> frequencies(Sampler &s, const std::vector<float> &logits,
                                int draws) {
  std::vector<double> f(logits.size());
  for (int i = 0; i < draws; ++i)
    f[s.sample(logits.data())] += 1.0 / draws;
  return f;
}

SamplerConfig config(float t, int k, float p, uint64_t seed = 42) {
  SamplerConfig c;
  c.temperature = t;
  c.topK = k;
  c.topP = p;
  c.seed = seed;
  return c;
}

TEST(SamplerTest, GreedyIsArgmax) {
  Sampler s(config(0, 0, 1), 6);
  std::vector<float> logits = {0.5f, -1.0f, 3.0f, 2.9f, -INFINITY, 1.0f};
  EXPECT_EQ(s.sample(logits.data()), 2);
  // Ties go to the lowest id; NaN never wins.
  std::vector<float> ties = {NAN, 1.0f, 7.0f, 7.0f, 7.0f, 0.0f};
  EXPECT_EQ(s.sample(ties.data()), 2);
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::vector<float> l = randomLogits(100, seed);
    Sampler g(config(0, 0, 1, seed), 100);
    int32_t expected = 0;
    for (int i = 1; i < 100; ++i)
      if (l[i] > l[expected])
        expected = i;
    EXPECT_EQ(g.sample(l.data()), expected);
  }
}

TEST(SamplerTest, DoesNotModifyLogits) {
  Sampler s(config(0.7f, 5, 0.9f), 50);
  std::vector<float> l = randomLogits(50, 3), copy = l;
  s.sample(l.data());
  EXPECT_EQ(l, copy);
}

TEST(SamplerTest, SameSeedSameSequence) {
  for (SamplerConfig c : {config(1, 0, 1, 7), config(0.8f, 10, 1, 7),
                          config(1.2f, 0, 0.9f, 7), config(1, 20, 0.5f, 7)}) {
    Sampler a(c, 64), b(c, 64);
    c.seed = 8;
    Sampler other(c, 64);
    std::vector<int32_t> sa, sb, so;
    for (int step = 0; step < 200; ++step) {
      std::vector<float> l = randomLogits(64, step);
      sa.push_back(a.sample(l.data()));
      sb.push_back(b.sample(l.data()));
      so.push_back(other.sample(l.data()));
    }
    EXPECT_EQ(sa, sb);
    EXPECT_NE(sa, so); // 200 draws from a different seed differ somewhere
  }
}

TEST(SamplerTest, SeedZeroWorks) {
  Rng rng(0);
  uint64_t first = rng.next();
  EXPECT_NE(first, 0u);
  EXPECT_NE(rng.next(), first);
}

TEST(SamplerTest, TopK1IsGreedy) {
  for (uint64_t seed = 0; seed < 50; ++seed) {
    std::vector<float> l = randomLogits(200, seed + 100);
    Sampler greedy(config(0, 0, 1), 200), k1(config(1.5f, 1, 1, seed), 200);
    EXPECT_EQ(k1.sample(l.data()), greedy.sample(l.data()));
  }
  // Ties: top-k 1 keeps the lowest id, as greedy does.
  std::vector<float> ties = {0.0f, 5.0f, 5.0f, 1.0f};
  Sampler k1(config(1, 1, 1), 4);
  for (int i = 0; i < 20; ++i)
    EXPECT_EQ(k1.sample(ties.data()), 1);
}

TEST(SamplerTest, TinyTopPIsGreedy) {
  for (uint64_t seed = 0; seed < 50; ++seed) {
    std::vector<float> l = randomLogits(200, seed + 200);
    Sampler greedy(config(0, 0, 1), 200), p(config(1, 0, 1e-6f, seed), 200);
    EXPECT_EQ(p.sample(l.data()), greedy.sample(l.data()));
  }
  // A flat distribution and a tiny p: the largest (first) id wins.
  std::vector<float> flat(10, 0.0f);
  Sampler p(config(1, 0, 1e-6f), 10);
  EXPECT_EQ(p.sample(flat.data()), 0);
}

TEST(SamplerTest, MultinomialDistribution) {
  std::vector<double> probs = {0.1, 0.2, 0.3, 0.4};
  Sampler s(config(1, 0, 1), 4);
  std::vector<double> f = frequencies(s, logitsOf(probs), 100000);
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(f[i], probs[i], 0.01) << "id " << i;
}

TEST(SamplerTest, TemperatureSharpens) {
  // At T = 0.5 the probabilities become proportional to p^2.
  std::vector<double> probs = {0.1, 0.2, 0.3, 0.4};
  Sampler s(config(0.5f, 0, 1), 4);
  std::vector<double> f = frequencies(s, logitsOf(probs), 100000);
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(f[i], probs[i] * probs[i] / 0.3, 0.01) << "id " << i;
}

TEST(SamplerTest, TopKRenormalizes) {
  std::vector<double> probs = {0.1, 0.2, 0.3, 0.4};
  Sampler s(config(1, 2, 1), 4);
  std::vector<double> f = frequencies(s, logitsOf(probs), 100000);
  EXPECT_EQ(f[0], 0.0);
  EXPECT_EQ(f[1], 0.0);
  EXPECT_NEAR(f[2], 3.0 / 7.0, 0.01);
  EXPECT_NEAR(f[3], 4.0 / 7.0, 0.01);
}

TEST(SamplerTest, TopPKeepsSmallestSetReachingP) {
  // Sorted: 0.4, 0.3 (cumulative 0.7 >= 0.5), then 0.2, 0.1 are cut.
  std::vector<double> probs = {0.1, 0.2, 0.3, 0.4};
  Sampler s(config(1, 0, 0.5f), 4);
  std::vector<double> f = frequencies(s, logitsOf(probs), 100000);
  EXPECT_EQ(f[0], 0.0);
  EXPECT_EQ(f[1], 0.0);
  EXPECT_NEAR(f[2], 3.0 / 7.0, 0.01);
  EXPECT_NEAR(f[3], 4.0 / 7.0, 0.01);
  // p = 0.75 needs the third token too.
  Sampler s3(config(1, 0, 0.75f), 4);
  f = frequencies(s3, logitsOf(probs), 100000);
  EXPECT_EQ(f[0], 0.0);
  EXPECT_NEAR(f[1], 2.0 / 9.0, 0.01);
}

TEST(SamplerTest, TopPOnLargeVocabulary) {
  // Exercises the cutoff prefilter: only ids that can be in the nucleus may
  // come out, however many draws.
  const int n = 32000;
  std::vector<float> l = randomLogits(n, 5);
  for (float &x : l)
    x *= 3; // peaked, as real logits are: logits in [-12, 12)
  Sampler s(config(1, 0, 0.9f), n);
  std::vector<std::pair<float, int>> sorted;
  for (int i = 0; i < n; ++i)
    sorted.push_back({-l[i], i});
  std::sort(sorted.begin(), sorted.end());
  double total = 0;
  for (float x : l)
    total += std::exp(x - 12.0);
  std::vector<bool> inNucleus(n);
  double acc = 0;
  for (auto [negLogit, id] : sorted) {
    inNucleus[id] = true;
    acc += std::exp(-negLogit - 12.0);
    if (acc >= 0.9 * total)
      break;
  }
  for (int i = 0; i < 200; ++i)
    EXPECT_TRUE(inNucleus[s.sample(l.data())]);
}

TEST(SamplerTest, TopKAndTopPCombined) {
  std::vector<double> probs = {0.05, 0.05, 0.1, 0.3, 0.5};
  // top-k 3 keeps {0.5, 0.3, 0.1}; top-p 0.8 of that mass (0.72) keeps
  // {0.5, 0.3}.
  Sampler s(config(1, 3, 0.8f), 5);
  std::vector<double> f = frequencies(s, logitsOf(probs), 50000);
  EXPECT_EQ(f[0] + f[1] + f[2], 0.0);
  EXPECT_NEAR(f[4], 0.5 / 0.8, 0.015);
}

TEST(SamplerTest, InvalidConfig) {
  EXPECT_THROW(Sampler(config(-0.5f, 0, 1), 4), Error);
  EXPECT_THROW(Sampler(config(INFINITY, 0, 1), 4), Error);
  EXPECT_THROW(Sampler(config(1, -2, 1), 4), Error);
  EXPECT_THROW(Sampler(config(1, 0, 0), 4), Error);
  EXPECT_THROW(Sampler(config(1, 0, NAN), 4), Error);
  EXPECT_THROW(Sampler(config(1, 0, 1), 0), Error);
}

} // namespace
