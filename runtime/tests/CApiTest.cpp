//===- CApiTest.cpp - Tests of the C API's contracts ------------*- C++ -*-===//
//
// Error reporting, null arguments and the argument checks of forward and
// generate. No model is ever run here: the artifact below uses libm as its
// "library" only to get past dlopen/dlsym, and every call made on it is one
// that must be rejected before the entry point is reached.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "llmc/runtime.h"
#include "llmc/runtime.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <dlfcn.h>
#include <vector>

using llmc::test::TempDir;
using llmc::test::writeFile;

namespace {

/// Takes ownership of a C API error string.
std::string take(char *error) {
  std::string s = error ? error : "<null>";
  llmc_string_free(error);
  return s;
}

/// The path of the shared object that defines cos().
std::string libmPath() {
  Dl_info info;
  double (*cosFn)(double) = &::cos;
  if (!::dladdr(reinterpret_cast<void *>(cosFn), &info) || !info.dli_fname)
    return "";
  return info.dli_fname;
}

/// An artifact whose library is libm and whose entry point is `symbol`.
struct LibmArtifact {
  explicit LibmArtifact(const std::string &symbol,
                        const std::string &kvDtype = "f32") {
    std::string md = R"({"format": "llmc-artifact", "version": 4,
      "target": "cpu", "library": "model.so",
      "weights": {"file": "weights.bin", "bytes": 0},
      "model": {"vocab_size": 8, "max_seq_len": 4, "bos_id": -1,
                "eos_ids": [7, 6]},
      "kv_cache": {"dtype": ")" +
                     kvDtype + R"(", "shape": [1, 2, 1, 8],
                   "layout": ")" LLMC_KV_CACHE_LAYOUT R"("},
      "arena": {"alignment": 64, "plans": []},
      "entry": {"forward": ")" +
                     symbol + R"("}, "tokenizer": null})";
    writeFile(dir.file("metadata.json"), md);
    writeFile(dir.file("weights.bin"), "");
    std::string lib = libmPath();
    if (lib.empty() || ::symlink(lib.c_str(), dir.file("model.so").c_str()))
      ADD_FAILURE() << "cannot link libm into the artifact";
  }
  TempDir dir;
};

TEST(CApiTest, KVBytesPerPositionFollowTheDtype) {
  LibmArtifact a("cos", "f16");
  EXPECT_EQ(llmc::Model::open(a.dir.path()).info().kv_bytes_per_position, 8);
}

TEST(CApiTest, StringFreeAcceptsNull) { llmc_string_free(nullptr); }

TEST(CApiTest, NullArgumentsAreErrors) {
  char *error = nullptr;
  llmc_model *model = nullptr;
  EXPECT_NE(llmc_model_open(nullptr, &model, &error), 0);
  EXPECT_EQ(take(error), "llmc_model_open: argument 'dir' must not be null");
  // A null error pointer is allowed.
  EXPECT_NE(llmc_model_open(nullptr, &model, nullptr), 0);
  EXPECT_NE(llmc_tokenizer_open("x", 8, nullptr, &error), 0);
  EXPECT_EQ(take(error),
            "llmc_tokenizer_open: argument 'out' must not be null");
  EXPECT_NE(llmc_npy_write_f32(nullptr, nullptr, 0, 0, &error), 0);
  EXPECT_EQ(take(error),
            "llmc_npy_write_f32: argument 'path' must not be null");
  EXPECT_NE(llmc_model_set_micro_batch(nullptr, 4, &error), 0);
  EXPECT_EQ(take(error),
            "llmc_model_set_micro_batch: argument 'model' must not be null");
  EXPECT_EQ(llmc_model_micro_batch(nullptr), 0);
  // Closing null handles is a no-op.
  llmc_model_close(nullptr);
  llmc_tokenizer_close(nullptr);
  llmc_sampler_destroy(nullptr);
}

TEST(CApiTest, InvalidSamplerConfig) {
  struct Case {
    llmc_sampler_config config;
    const char *message;
  } cases[] = {
      {{-1.0f, 0, 1.0f, 1},
       "sampler: temperature must be a finite number >= 0, got -1.000000"},
      {{NAN, 0, 1.0f, 1}, "sampler: temperature must be a finite number"},
      {{1.0f, -1, 1.0f, 1}, "sampler: top_k must be >= 0, got -1"},
      {{1.0f, 0, 0.0f, 1}, "sampler: top_p must be in (0, 1], got 0.000000"},
      {{1.0f, 0, 1.5f, 1}, "sampler: top_p must be in (0, 1], got 1.500000"},
  };
  for (const Case &c : cases) {
    llmc_sampler *s = nullptr;
    char *error = nullptr;
    EXPECT_NE(llmc_sampler_create(&c.config, 8, &s, &error), 0);
    EXPECT_EQ(s, nullptr);
    EXPECT_EQ(take(error).find(c.message), 0u) << c.message;
  }
  llmc_sampler_config ok = {0.0f, 0, 1.0f, 1};
  llmc_sampler *s = nullptr;
  char *error = nullptr;
  EXPECT_NE(llmc_sampler_create(&ok, 0, &s, &error), 0);
  EXPECT_EQ(take(error), "sampler: invalid vocabulary size 0");
}

TEST(CApiTest, MissingEntryPoint) {
  LibmArtifact a("_mlir_ciface_forward");
  try {
    llmc::Model::open(a.dir.path());
    FAIL() << "opened";
  } catch (const llmc::Error &e) {
    EXPECT_EQ(std::string(e.what()),
              a.dir.file("model.so") +
                  ": no symbol '_mlir_ciface_forward' (entry.forward in " +
                  a.dir.file("metadata.json") + ")");
  }
}

/// Expects `call` to throw llmc::Error with exactly `message`.
template <typename F> void expectError(F &&call, const std::string &message) {
  try {
    call();
    ADD_FAILURE() << "no error, expected: " << message;
  } catch (const llmc::Error &e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

TEST(CApiTest, ForwardArgumentChecks) {
  LibmArtifact a("cos");
  llmc::Model m = llmc::Model::open(a.dir.path());
  const llmc_model_info &info = m.info();
  EXPECT_EQ(std::string(info.dir), a.dir.path());
  EXPECT_EQ(std::string(info.target), "cpu");
  EXPECT_EQ(std::string(info.arch), "");
  EXPECT_EQ(info.vocab_size, 8);
  EXPECT_EQ(info.max_seq_len, 4);
  EXPECT_EQ(info.bos_id, -1);
  EXPECT_EQ(m.eosIds(), (std::vector<int32_t>{7, 6}));
  EXPECT_TRUE(m.isEos(6));
  EXPECT_FALSE(m.isEos(2));
  EXPECT_EQ(info.tokenizer_path, nullptr);
  // 2 x 1 x 8 elements of f32 for 4 positions.
  EXPECT_EQ(info.kv_bytes_per_position, 16);
  EXPECT_EQ(m.position(), 0);

  std::vector<float> logits(8 * 8);
  int32_t tokens[5] = {0, 1, 2, 3, 4};
  expectError([&] { m.forward(tokens, 0, 0, logits.data()); },
              "forward: n must be >= 1, got 0");
  expectError([&] { m.forward(tokens, 1, 1, logits.data()); },
              "forward: pos0 = 1 is outside [0, 0] (the KV cache holds "
              "positions below 0 only)");
  expectError([&] { m.forward(tokens, 1, -1, logits.data()); },
              "forward: pos0 = -1 is outside [0, 0] (the KV cache holds "
              "positions below 0 only)");
  expectError([&] { m.forward(tokens, 5, 0, logits.data()); },
              "forward: pos0 + n = 5 exceeds max_seq_len = 4");
  int32_t bad[2] = {1, 8};
  expectError([&] { m.forward(bad, 2, 0, logits.data()); },
              "forward: token id 8 at index 1 is outside [0, 8)");
  bad[1] = -1;
  expectError([&] { m.forward(bad, 2, 0, logits.data()); },
              "forward: token id -1 at index 1 is outside [0, 8)");
  expectError([&] { m.forward(nullptr, 1, 0, logits.data()); },
              "forward: tokens and logits must not be null");
  expectError([&] { m.forwardLast({}); }, "forward: n must be >= 1, got 0");
  expectError(
      [&] {
        m.forwardLast({0, 1, 2, 3, 4});
      },
      "forward: pos0 + n = 5 exceeds max_seq_len = 4");
  EXPECT_EQ(m.position(), 0);

  expectError([&] { llmc::Tokenizer::forModel(m); },
              a.dir.file("metadata.json") + ": the artifact has no tokenizer");

  llmc::Sampler s({}, 8);
  expectError([&] { llmc::generate(m, s, {}, 4); },
              "generate: the prompt is empty (it needs at least one token)");
  expectError(
      [&] {
        llmc::generate(m, s, {0, 1, 2, 3, 4}, 4);
      },
      "generate: the prompt has 5 tokens but max_seq_len is 4");
  expectError([&] { llmc::generate(m, s, {0}, -1); },
              "generate: max_tokens must be >= 0, got -1");

  // Prompts run whole by default (no dist.micro_batch); a negative
  // micro-batch is refused and changes nothing.
  EXPECT_EQ(m.microBatch(), 0);
  m.setMicroBatch(3);
  EXPECT_EQ(m.microBatch(), 3);
  expectError([&] { m.setMicroBatch(-1); },
              "the micro-batch must be >= 0 tokens (0: whole calls), got -1");
  EXPECT_EQ(m.microBatch(), 3);
  // The pieces' checks are the call's: nothing runs.
  expectError([&] { m.forward(tokens, 5, 0, logits.data()); },
              "forward: pos0 + n = 5 exceeds max_seq_len = 4");
  EXPECT_EQ(m.position(), 0);

  // A host artifact has no device bandwidth; bad sizes are errors.
  EXPECT_EQ(m.deviceBandwidth(1 << 20, 1), 0.0);
  expectError([&] { m.deviceBandwidth(2, 1); },
              "llmc_model_device_bandwidth: bytes must be >= 4 and passes "
              ">= 1");
  expectError([&] { m.deviceBandwidth(1 << 20, 0); },
              "llmc_model_device_bandwidth: bytes must be >= 4 and passes "
              ">= 1");
}

TEST(CApiTest, EncodeCapacity) {
  // A vocabulary of the 3 specials and the 256 byte tokens only.
  TempDir dir;
  std::string data;
  auto put = [&](const void *p, size_t n) {
    data.append(static_cast<const char *>(p), n);
  };
  int32_t maxLen = 7;
  put(&maxLen, 4);
  for (int i = 0; i < 259; ++i) {
    char piece[8];
    int len = i < 3 ? std::snprintf(piece, sizeof piece, "<s%d>", i)
                    : std::snprintf(piece, sizeof piece, "<0x%02X>", i - 3);
    float score = 0;
    put(&score, 4);
    put(&len, 4);
    put(piece, len);
  }
  writeFile(dir.file("t.bin"), data);
  llmc_tokenizer *t = nullptr;
  char *error = nullptr;
  ASSERT_EQ(llmc_tokenizer_open(dir.file("t.bin").c_str(), 259, &t, &error), 0)
      << take(error);
  int32_t ids[8];
  size_t n = 0;
  // "ab" -> BOS, ' ', 'a', 'b' as byte tokens: 4 ids.
  EXPECT_NE(llmc_tokenizer_encode(t, "ab", 2, 1, ids, 3, &n, &error), 0);
  EXPECT_EQ(n, 4u);
  EXPECT_EQ(take(error),
            "llmc_tokenizer_encode: 4 ids do not fit in a buffer of 3");
  ASSERT_EQ(llmc_tokenizer_encode(t, "ab", 2, 1, ids, 8, &n, &error), 0);
  EXPECT_EQ(std::vector<int32_t>(ids, ids + n),
            (std::vector<int32_t>{1, ' ' + 3, 'a' + 3, 'b' + 3}));
  const char *piece = nullptr;
  size_t len = 0;
  EXPECT_NE(llmc_tokenizer_decode(t, 1, 259, &piece, &len, &error), 0);
  EXPECT_EQ(take(error),
            "llmc_tokenizer_decode: token id 259 is outside [0, 259)");

  const llmc_tokenizer_info *info = llmc_tokenizer_get_info(t);
  ASSERT_NE(info, nullptr);
  EXPECT_STREQ(info->kind, "llama2c");
  EXPECT_EQ(info->vocab_size, 259);
  EXPECT_EQ(info->bos_id, 1);
  EXPECT_EQ(info->eos_id, 2);
  EXPECT_EQ(info->add_bos, 1);
  EXPECT_EQ(info->add_eos, 0);
  // BOS and EOS as the metadata says, plus an explicit EOS.
  ASSERT_EQ(llmc_tokenizer_tokenize(t, "a", 1,
                                    LLMC_TOKENIZE_ADD_SPECIAL |
                                        LLMC_TOKENIZE_ADD_EOS,
                                    ids, 8, &n, &error),
            0)
      << take(error);
  EXPECT_EQ(std::vector<int32_t>(ids, ids + n),
            (std::vector<int32_t>{1, ' ' + 3, 'a' + 3, 2}));
  char text[8];
  EXPECT_NE(llmc_tokenizer_detokenize(t, ids, n, 0, text, 0, &len, &error), 0);
  EXPECT_EQ(len, 1u);
  EXPECT_EQ(take(error),
            "llmc_tokenizer_detokenize: 1 bytes do not fit in a buffer of 0");
  ASSERT_EQ(llmc_tokenizer_detokenize(t, ids, n, 0, text, 8, &len, &error), 0);
  EXPECT_EQ(std::string(text, len), "a");
  int32_t bad = 300;
  EXPECT_NE(llmc_tokenizer_detokenize(t, &bad, 1, 0, text, 8, &len, &error), 0);
  EXPECT_EQ(take(error),
            "llmc_tokenizer_detokenize: token id 300 is outside [0, 259)");
  llmc_tokenizer_close(t);
}

TEST(CApiTest, LlmcTokenizerFile) {
  TempDir dir;
  // A byte-level BPE over "a", "b", "ab" with one merge and a control token.
  writeFile(dir.file("t.json"),
            R"({"format": "llmc-tokenizer", "version": 1, "kind": "bpe",
                "pre_tokenizer": "qwen2", "bos_id": 3, "eos_id": 3,
                "add_bos": true, "tokens": ["a", "b", "ab", "<|e|>"],
                "token_types": [1, 1, 1, 3], "merges": ["a b"]})");
  llmc_tokenizer *t = nullptr;
  char *error = nullptr;
  // A positive vocab_size must match.
  EXPECT_NE(llmc_tokenizer_open(dir.file("t.json").c_str(), 5, &t, &error), 0);
  EXPECT_EQ(take(error), dir.file("t.json") +
                             ": the tokenizer has 4 tokens but the model's "
                             "vocabulary has 5");
  ASSERT_EQ(llmc_tokenizer_open(dir.file("t.json").c_str(), 0, &t, &error), 0)
      << take(error);
  EXPECT_STREQ(llmc_tokenizer_get_info(t)->kind, "bpe");
  int32_t ids[8];
  size_t n = 0;
  ASSERT_EQ(llmc_tokenizer_tokenize(t, "ab<|e|>", 7,
                                    LLMC_TOKENIZE_ADD_SPECIAL |
                                        LLMC_TOKENIZE_PARSE_SPECIAL,
                                    ids, 8, &n, &error),
            0)
      << take(error);
  EXPECT_EQ(std::vector<int32_t>(ids, ids + n),
            (std::vector<int32_t>{3, 2, 3}));
  char text[16];
  size_t len = 0;
  ASSERT_EQ(llmc_tokenizer_detokenize(t, ids, n, LLMC_DETOKENIZE_RENDER_SPECIAL,
                                      text, sizeof text, &len, &error),
            0);
  EXPECT_EQ(std::string(text, len), "<|e|>ab<|e|>");
  ASSERT_EQ(llmc_tokenizer_detokenize(t, ids, n, 0, text, sizeof text, &len,
                                      &error),
            0);
  EXPECT_EQ(std::string(text, len), "ab");
  llmc_tokenizer_close(t);
}

} // namespace
