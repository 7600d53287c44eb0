//===- TokenizerTest.cpp - Tests of the llama2.c tokenizer ------*- C++ -*-===//
//
// The synthetic tests build tiny tokenizer files and always run. The tests on
// the real vocabularies (tok512.bin, tokenizer.bin from the shared models
// folder) skip with a message when those files are absent.
//
//===----------------------------------------------------------------------===//

#include "Tokenizer.h"
#include "Error.h"
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

using namespace llmc::rt;
using llmc::test::fileExists;
using llmc::test::readWholeFile;
using llmc::test::TempDir;
using llmc::test::writeFile;

namespace {

/// Serializes a llama2.c tokenizer file.
std::string tokenizerFile(const std::vector<std::pair<std::string, float>> &v,
                          int32_t maxTokenLength = 16) {
  std::string data;
  auto put = [&](const void *p, size_t n) {
    data.append(static_cast<const char *>(p), n);
  };
  put(&maxTokenLength, 4);
  for (const auto &[piece, score] : v) {
    int32_t len = static_cast<int32_t>(piece.size());
    put(&score, 4);
    put(&len, 4);
    put(piece.data(), piece.size());
  }
  return data;
}

/// The 3 specials and 256 byte tokens of every llama2.c vocabulary, then
/// `extra` (ids 259...).
std::vector<std::pair<std::string, float>>
baseVocab(const std::vector<std::pair<std::string, float>> &extra) {
  std::vector<std::pair<std::string, float>> v = {
      {"<unk>", 0}, {"\n<s>\n", 0}, {"\n</s>\n", 0}};
  for (int b = 0; b < 256; ++b) {
    char piece[8];
    std::snprintf(piece, sizeof piece, "<0x%02X>", b);
    v.push_back({piece, 0});
  }
  v.insert(v.end(), extra.begin(), extra.end());
  return v;
}

/// Writes and loads a synthetic tokenizer.
std::unique_ptr<Tokenizer>
makeTokenizer(const TempDir &dir,
              const std::vector<std::pair<std::string, float>> &extra) {
  auto vocab = baseVocab(extra);
  writeFile(dir.file("tok.bin"), tokenizerFile(vocab));
  return Tokenizer::load(dir.file("tok.bin"),
                         static_cast<int64_t>(vocab.size()));
}

std::string loadError(const std::string &path, int64_t vocabSize) {
  try {
    Tokenizer::load(path, vocabSize);
  } catch (const Error &e) {
    return e.what();
  }
  ADD_FAILURE() << "loaded";
  return "";
}

/// Concatenates decode(prev, id) over ids[1..] (ids[0] being the BOS).
std::string decodeAll(const Tokenizer &t, const std::vector<int32_t> &ids) {
  std::string s;
  for (size_t i = 1; i < ids.size(); ++i)
    s += t.decode(ids[i - 1], ids[i]);
  return s;
}

using Ids = std::vector<int32_t>;

TEST(TokenizerTest, MergesHighestScoreFirst) {
  TempDir dir;
  // ids: 259 " ", 260 "a", 261 "b", 262 "c", 263 "ab", 264 "bc", 265 "abc",
  //      266 " a"
  auto t = makeTokenizer(dir, {{" ", -1},
                               {"a", -1},
                               {"b", -1},
                               {"c", -1},
                               {"ab", 1},
                               {"bc", 2},
                               {"abc", 0},
                               {" a", 0.5}});
  // " abc": of the pairs " a" (0.5), "ab" (1), "bc" (2), "bc" merges first;
  // then " a" (0.5) beats "abc" (0); " abc" is no token.
  EXPECT_EQ(t->encode("abc", false), (Ids{266, 264}));
  EXPECT_EQ(t->encode("abc", true), (Ids{1, 266, 264}));
  EXPECT_EQ(t->encode("", true), (Ids{1}));
  EXPECT_EQ(t->encode("", false), (Ids{}));
  // Unknown code points fall back to their bytes (byte + 3).
  EXPECT_EQ(t->encode("\xC3\xA9", false), (Ids{259, 0xC3 + 3, 0xA9 + 3}));
}

TEST(TokenizerTest, TiesMergeLeftmostPair) {
  TempDir dir;
  // 259 " ", 260 "a", 261 "aa": "aaa" merges the left pair first.
  auto t = makeTokenizer(dir, {{" ", 0}, {"a", 0}, {"aa", 1}});
  EXPECT_EQ(t->encode("aaa", false), (Ids{259, 261, 260}));
}

TEST(TokenizerTest, DecodeStripsSpaceAfterBosAndMapsBytes) {
  TempDir dir;
  auto t = makeTokenizer(dir, {{" hi", 0}, {"x", 0}});
  EXPECT_EQ(t->decode(Tokenizer::kBos, 259), "hi");
  EXPECT_EQ(t->decode(260, 259), " hi");
  EXPECT_EQ(t->decode(Tokenizer::kBos, 0x41 + 3), "A");
  EXPECT_EQ(t->decode(5, 0x0A + 3), "\n");
  EXPECT_EQ(t->decode(5, 0x00 + 3), std::string(1, '\0'));
  EXPECT_EQ(t->decode(5, 0xFF + 3), "\xFF");
}

TEST(TokenizerTest, TruncatedFileNamesFile) {
  TempDir dir;
  std::string full = tokenizerFile(baseVocab({{"abc", 1}}));
  std::string path = dir.file("tok.bin");
  writeFile(path, full.substr(0, full.size() - 2));
  EXPECT_EQ(loadError(path, 260),
            path + ": truncated file: token 259 ends past the end (" +
                std::to_string(full.size() - 2) + " bytes)");
  writeFile(path, full.substr(0, 2));
  EXPECT_EQ(loadError(path, 260),
            path + ": truncated file: the header ends past the end (2 bytes)");
  writeFile(path, "");
  EXPECT_EQ(loadError(path, 260),
            path + ": truncated file: the header ends past the end (0 bytes)");
}

TEST(TokenizerTest, VocabularySizeMismatch) {
  TempDir dir;
  std::string path = dir.file("tok.bin");
  writeFile(path, tokenizerFile(baseVocab({{"abc", 1}})));
  // One token fewer than the file holds: "abc" is left over (11 bytes).
  EXPECT_EQ(loadError(path, 259),
            path + ": 11 unexpected bytes after 259 tokens (does the "
                   "vocabulary size match?)");
  EXPECT_NE(loadError(path, 261).find(path + ": truncated file"),
            std::string::npos);
}

TEST(TokenizerTest, VocabularySizeZeroReadsEveryToken) {
  TempDir dir;
  std::string path = dir.file("tok.bin");
  writeFile(path, tokenizerFile(baseVocab({{"abc", 1}})));
  auto t = Tokenizer::load(path, 0);
  EXPECT_EQ(t->vocabSize(), 260);
  EXPECT_EQ(t->piece(259), "abc");
  // A cut record is still an error, and so is a file without tokens.
  std::string data = tokenizerFile(baseVocab({{"abc", 1}}));
  writeFile(path, data.substr(0, data.size() - 1));
  EXPECT_NE(loadError(path, 0).find(path + ": truncated file: token 259"),
            std::string::npos);
  writeFile(path, tokenizerFile({}));
  EXPECT_EQ(loadError(path, 0), path + ": the tokenizer file holds no tokens");
  EXPECT_EQ(loadError(path, -1), path + ": invalid vocabulary size -1");
}

TEST(TokenizerTest, BadTokenLength) {
  TempDir dir;
  std::string path = dir.file("tok.bin");
  writeFile(path, tokenizerFile(baseVocab({{"abcdefgh", 1}}), 7));
  EXPECT_EQ(loadError(path, 260),
            path + ": token 259 has length 8, outside [0, max_token_length "
                   "= 7]");
}

TEST(TokenizerTest, MissingFile) {
  TempDir dir;
  std::string path = dir.file("nope.bin");
  EXPECT_EQ(loadError(path, 512).find(path + ": cannot open"), 0u);
}

/// Loads a tokenizer from the shared models folder, or returns null.
std::unique_ptr<Tokenizer> sharedTokenizer(const char *name, int64_t vocab) {
  std::string path = llmc::test::modelsDir() + "/" + name;
  if (llmc::test::modelsDir().empty() || !fileExists(path))
    return nullptr;
  return Tokenizer::load(path, vocab);
}

#define REQUIRE_SHARED_TOKENIZER(var, name, vocab)                             \
  auto var = sharedTokenizer(name, vocab);                                     \
  if (!var)                                                                    \
    GTEST_SKIP() << name << " not found in '" << llmc::test::modelsDir()       \
                 << "' (set LLMC_MODELS_DIR to the shared models folder)";

// The expected ids below were computed once with an independent Python
// re-implementation of llama2.c's build_tokenizer() and encode() (bos=1,
// eos=0), run with /usr/bin/python3 on the shared tok512.bin / tokenizer.bin.
// The Llama-2 results for "Hello, world!" also match SentencePiece's
// published encoding ([15043, 29892, 3186, 29991]).

TEST(TokenizerTest, Tok512KnownEncodings) {
  REQUIRE_SHARED_TOKENIZER(t, "tok512.bin", 512);
  EXPECT_EQ(t->encode("Once upon a time", true), (Ids{1, 403, 407, 261, 378}));
  EXPECT_EQ(t->encode("Hello, world!", true),
            (Ids{1, 346, 306, 414, 432, 263, 304, 341, 443}));
  EXPECT_EQ(t->encode("", true), (Ids{1}));
  EXPECT_EQ(t->encode("a", true), (Ids{1, 261}));
  EXPECT_EQ(t->encode("The cat sat on the mat.\nIt was happy.", true),
            (Ids{1, 291, 280, 294, 262, 294, 353, 265, 284, 294, 426, 13, 442,
                 413, 286, 393, 426}));
  EXPECT_EQ(t->encode("h\xC3\xA9llo \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E "
                      "\xF0\x9F\x99\x82",
                      true),
            (Ids{1,   270, 485, 306, 414, 410, 233, 154, 168, 233,
                 159, 175, 235, 173, 161, 410, 243, 162, 156, 133}));
  EXPECT_EQ(t->encode("  two  spaces", true),
            (Ids{1, 410, 410, 259, 424, 414, 410, 262, 427, 412, 331, 419}));
}

TEST(TokenizerTest, Llama2KnownEncodings) {
  REQUIRE_SHARED_TOKENIZER(t, "tokenizer.bin", 32000);
  EXPECT_EQ(t->encode("Once upon a time", true),
            (Ids{1, 9038, 2501, 263, 931}));
  EXPECT_EQ(t->encode("Hello, world!", true),
            (Ids{1, 15043, 29892, 3186, 29991}));
  EXPECT_EQ(t->encode("The cat sat on the mat.\nIt was happy.", true),
            (Ids{1, 450, 6635, 3290, 373, 278, 1775, 29889, 13, 3112, 471, 9796,
                 29889}));
  EXPECT_EQ(t->encode("h\xC3\xA9llo \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E "
                      "\xF0\x9F\x99\x82",
                      true),
            (Ids{1, 298, 3610, 417, 29871, 30325, 30346, 30968, 29871, 243, 162,
                 156, 133}));
  EXPECT_EQ(t->encode("  two  spaces", true), (Ids{1, 259, 1023, 29871, 8162}));
}

const char
    *
        kRoundTripTexts
            [] =
                {
                    "Once upon a time, there was a little girl named Lily.",
                    "Hello, world!\nTabs\tand  double  spaces, punctuation: "
                    ";'\"[]{}!?~`",
                    "  leading and trailing spaces  ",
                    "0123456789 +-*/=<>",
                    "caf\xC3\xA9 na\xC3\xAFve \xC3\xBC\xC3\x9F", // café naïve
                                                                 // üß
                    "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE6\x96"
                    "\x87", // 日本語の文
                    "emoji \xF0\x9F\x99\x82\xF0\x9F\x9A\x80 done", // 🙂🚀
};

void expectRoundTrips(const Tokenizer &t) {
  for (const char *text : kRoundTripTexts) {
    std::vector<int32_t> ids = t.encode(text, true);
    EXPECT_EQ(decodeAll(t, ids), text);
  }
}

TEST(TokenizerTest, Tok512RoundTrip) {
  REQUIRE_SHARED_TOKENIZER(t, "tok512.bin", 512);
  expectRoundTrips(*t);
}

TEST(TokenizerTest, Llama2RoundTrip) {
  REQUIRE_SHARED_TOKENIZER(t, "tokenizer.bin", 32000);
  expectRoundTrips(*t);
}

TEST(TokenizerTest, SharedFileWithWrongVocabSize) {
  std::string path = llmc::test::modelsDir() + "/tok512.bin";
  if (!fileExists(path))
    GTEST_SKIP() << "tok512.bin not found in '" << llmc::test::modelsDir()
                 << "' (set LLMC_MODELS_DIR to the shared models folder)";
  EXPECT_NE(loadError(path, 32000).find(path + ": truncated file"),
            std::string::npos);
  EXPECT_NE(loadError(path, 500).find("does the vocabulary size match?"),
            std::string::npos);
}

} // namespace
