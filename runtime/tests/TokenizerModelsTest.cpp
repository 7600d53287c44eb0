//===- TokenizerModelsTest.cpp - SPM, byte-level BPE, Unicode ---*- C++ -*-===//
//
// The pieces of the llmc-file tokenizers on tiny synthetic vocabularies
// (always run): Unicode tables and NFC, the pre-tokenizer scanners, the two
// merge loops, special-token splitting, decoding, and the file loader's
// errors. The expected pre-tokenizer splits were produced by the reference
// regexes themselves (JavaScript's RegExp with the 'u' flag).
//
//===----------------------------------------------------------------------===//

#include "Error.h"
#include "PreTokenizer.h"
#include "TestUtil.h"
#include "Tokenizer.h"
#include "Unicode.h"

#include <gtest/gtest.h>

#include <cstdio>

using namespace llmc::rt;
using llmc::test::TempDir;
using llmc::test::writeFile;

namespace {

using Ids = std::vector<int32_t>;
using Words = std::vector<std::string_view>;

//===----------------------------------------------------------------------===//
// Unicode
//===----------------------------------------------------------------------===//

TEST(UnicodeTest, DecodesUtf8AndKeepsInvalidBytes) {
  using unicode::decodeUtf8;
  using unicode::kInvalidBase;
  EXPECT_EQ(decodeUtf8("A", 0).cp, 0x41u);
  EXPECT_EQ(decodeUtf8("\xC3\xA9", 0).cp, 0xE9u);
  EXPECT_EQ(decodeUtf8("\xE6\x97\xA5", 0).cp, 0x65E5u);
  EXPECT_EQ(decodeUtf8("\xF0\x9F\x99\x82", 0).cp, 0x1F642u);
  EXPECT_EQ(decodeUtf8("\xF0\x9F\x99\x82", 0).size, 4u);
  // A lone continuation byte, a truncated sequence, an overlong form and a
  // surrogate decode byte by byte.
  EXPECT_EQ(decodeUtf8("\x80", 0).cp, kInvalidBase + 0x80);
  EXPECT_EQ(decodeUtf8("\xE6\x97", 0).cp, kInvalidBase + 0xE6);
  EXPECT_EQ(decodeUtf8("\xE6\x97", 0).size, 1u);
  EXPECT_EQ(decodeUtf8("\xC0\xAF", 0).cp, kInvalidBase + 0xC0);
  EXPECT_EQ(decodeUtf8("\xED\xA0\x80", 0).cp, kInvalidBase + 0xED);
  std::string round;
  for (auto c : decodeUtf8(std::string_view("a\xFF\xE6\x97z")))
    unicode::appendUtf8(round, c.cp);
  EXPECT_EQ(round, "a\xFF\xE6\x97z");
  EXPECT_TRUE(unicode::isValidUtf8("h\xC3\xA9llo"));
  EXPECT_FALSE(unicode::isValidUtf8("h\xC3llo"));
}

TEST(UnicodeTest, CategoryFlags) {
  using namespace unicode;
  EXPECT_EQ(charFlags('A'), Letter);
  EXPECT_EQ(charFlags('7'), Number);
  EXPECT_EQ(charFlags(' '), Whitespace);
  EXPECT_EQ(charFlags('\n'), Whitespace);
  EXPECT_EQ(charFlags('!'), Punctuation);
  EXPECT_EQ(charFlags('$'), Symbol);
  EXPECT_EQ(charFlags(0x65E5), Letter);  // 日
  EXPECT_EQ(charFlags(0x0661), Number);  // Arabic-Indic one
  EXPECT_EQ(charFlags(0x2167), Number);  // Roman numeral eight (Nl)
  EXPECT_EQ(charFlags(0x0301), Mark);    // combining acute
  EXPECT_EQ(charFlags(0x1F642), Symbol); // 🙂
  EXPECT_EQ(charFlags(0x3000), Whitespace);
  EXPECT_EQ(charFlags(0x00A0), Whitespace);
  EXPECT_EQ(charFlags(0x0085), Whitespace);
  EXPECT_EQ(charFlags(0x001C), 0); // not White_Space, unlike str.isspace
  EXPECT_EQ(charFlags(0x200D), 0); // ZWJ is Cf
  EXPECT_EQ(charFlags(0x0378), 0); // unassigned
  EXPECT_EQ(charFlags(unicode::kInvalidBase + 0xFF), 0);
}

TEST(UnicodeTest, Nfc) {
  using unicode::nfc;
  EXPECT_EQ(nfc("plain ascii"), "plain ascii");
  EXPECT_EQ(nfc("cafe\xCC\x81"), "caf\xC3\xA9");              // e + U+0301
  EXPECT_EQ(nfc("\xE2\x84\xAB"), "\xC3\x85");                 // U+212B -> Å
  EXPECT_EQ(nfc("\xE1\x84\x80\xE1\x85\xA1"), "\xEA\xB0\x80"); // jamo -> 가
  EXPECT_EQ(nfc("\xEA\xB0\x80\xE1\x86\xA8"), "\xEA\xB0\x81"); // 가 + ᆨ -> 각
  // ḋ + dot below: reordered (220 before 230), then d+dot below composes.
  EXPECT_EQ(nfc("\xE1\xB8\x8B\xCC\xA3"), "\xE1\xB8\x8D\xCC\x87");
  // A mark blocked by another of the same class stays.
  EXPECT_EQ(nfc("a\xCC\x81\xCC\x81"), "\xC3\xA1\xCC\x81");
  // Invalid bytes pass through.
  EXPECT_EQ(nfc("\xFF"
                "e\xCC\x81"),
            "\xFF\xC3\xA9");
}

TEST(UnicodeTest, ByteLevelAlphabet) {
  using namespace unicode;
  EXPECT_EQ(byteToUnicode('A'), 0x41u);
  EXPECT_EQ(byteToUnicode(' '), 0x120u);  // Ġ
  EXPECT_EQ(byteToUnicode('\n'), 0x10Au); // Ċ
  EXPECT_EQ(byteToUnicode(0xAD), 0x143u);
  for (int b = 0; b < 256; ++b)
    EXPECT_EQ(unicodeToByte(byteToUnicode(static_cast<uint8_t>(b))), b);
  EXPECT_EQ(unicodeToByte(0x4E00), -1);
}

//===----------------------------------------------------------------------===//
// Pre-tokenizers
//===----------------------------------------------------------------------===//

TEST(PreTokenizerTest, Gpt2) {
  auto split = [](std::string_view s) {
    return preTokenizeWords(PreTokenizer::Gpt2, s);
  };
  EXPECT_EQ(
      split("Hello world's  test\n\n  x 123"),
      (Words{"Hello", " world", "'s", " ", " test", "\n\n ", " x", " 123"}));
  EXPECT_EQ(split("I'M  (hello) 12345 !!?\n\tend  "),
            (Words{"I", "'", "M", " ", " (", "hello", ")", " 12345", " !!?",
                   "\n", "\t", "end", "  "}));
  EXPECT_EQ(split("don't   stop\r\n\r\n  x"),
            (Words{"don", "'t", "  ", " stop", "\r\n\r\n ", " x"}));
  EXPECT_EQ(split("a  \n\n b"), (Words{"a", "  \n\n", " b"}));
  EXPECT_EQ(split("  "), (Words{"  "}));
  EXPECT_EQ(split("\xE6\x97\xA5\xE6\x9C\xAC"
                  "123abc"),
            (Words{"\xE6\x97\xA5\xE6\x9C\xAC", "123", "abc"}));
  EXPECT_EQ(split(" !!\n\nfoo"), (Words{" !!", "\n", "\n", "foo"}));
  EXPECT_EQ(split("x\t\ty"), (Words{"x", "\t", "\t", "y"}));
  EXPECT_EQ(split(""), Words{});
}

TEST(PreTokenizerTest, Qwen2) {
  auto split = [](std::string_view s) {
    return preTokenizeWords(PreTokenizer::Qwen2, s);
  };
  EXPECT_EQ(split("Hello world's  test\n\n  x 123"),
            (Words{"Hello", " world", "'s", " ", " test", "\n\n", " ", " x",
                   " ", "1", "2", "3"}));
  EXPECT_EQ(split("I'M  (hello) 12345 !!?\n\tend  "),
            (Words{"I", "'M", " ", " (", "hello", ")", " ", "1", "2", "3", "4",
                   "5", " !!?\n", "\tend", "  "}));
  EXPECT_EQ(split("don't   stop\r\n\r\n  x"),
            (Words{"don", "'t", "  ", " stop", "\r\n\r\n", " ", " x"}));
  EXPECT_EQ(split("a  \n\n b"), (Words{"a", "  \n\n", " b"}));
  EXPECT_EQ(split("\xE6\x97\xA5\xE6\x9C\xAC"
                  "123abc"),
            (Words{"\xE6\x97\xA5\xE6\x9C\xAC", "1", "2", "3", "abc"}));
  EXPECT_EQ(split(" !!\n\nfoo"), (Words{" !!\n\n", "foo"}));
  EXPECT_EQ(split("x\t\ty"), (Words{"x", "\t", "\ty"}));
  // A lone invalid byte is a character of no category.
  EXPECT_EQ(split("a\xFFz"), (Words{"a", "\xFFz"}));
}

TEST(PreTokenizerTest, Llama3) {
  auto split = [](std::string_view s) {
    return preTokenizeWords(PreTokenizer::Llama3, s);
  };
  EXPECT_EQ(split("I'M  (hello) 12345 !!?\n\tend  "),
            (Words{"I", "'M", " ", " (", "hello", ")", " ", "123", "45",
                   " !!?\n", "\tend", "  "}));
  EXPECT_EQ(split("Hello world's  test\n\n  x 123"),
            (Words{"Hello", " world", "'s", " ", " test", "\n\n", " ", " x",
                   " ", "123"}));
}

TEST(PreTokenizerTest, DefaultAppliesFourSplitsInTurn) {
  // [\p{P}$+<=>^~|]+ first, then the GPT-2 scanner inside each piece, then
  // runs of numbers, then ASCII digit triples.
  EXPECT_EQ(preTokenizeWords(PreTokenizer::Default, "a+b=1234567 (x)"),
            (Words{"a", "+", "b", "=", "123", "456", "7", " ", "(", "x", ")"}));
}

TEST(PreTokenizerTest, Names) {
  for (const char *n : {"gpt2", "qwen2", "llama3", "default"})
    EXPECT_EQ(preTokenizerName(*parsePreTokenizer(n)), std::string(n));
  EXPECT_FALSE(parsePreTokenizer("qwen35"));
}

//===----------------------------------------------------------------------===//
// Synthetic llmc tokenizer files
//===----------------------------------------------------------------------===//

std::string quote(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

template <typename T, typename F>
std::string list(const std::vector<T> &v, F &&f) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i)
    out += (i ? ", " : "") + f(v[i]);
  return out + "]";
}

struct Token {
  std::string text;
  int type = 1;
  float score = 0;
};

std::string llmcFile(const std::string &kind, const std::vector<Token> &tokens,
                     const std::string &extra) {
  std::string json = "{\"format\": \"llmc-tokenizer\", \"version\": 1, "
                     "\"kind\": \"" +
                     kind + "\", " + extra;
  json += "\"tokens\": " +
          list(tokens, [](const Token &t) { return quote(t.text); }) + ", ";
  json += "\"token_types\": " +
          list(tokens, [](const Token &t) { return std::to_string(t.type); });
  if (kind == "spm")
    json += ", \"scores\": " + list(tokens, [](const Token &t) {
              char buf[32];
              std::snprintf(buf, sizeof buf, "%g", t.score);
              return std::string(buf);
            });
  return json + "}";
}

// SentencePiece vocabulary: ids 0 <unk>, 1 <s>, 2 </s>, 3..258 <0xNN>, then
const int32_t kSpace = 259, kA = 260, kB = 261, kC = 262, kAB = 263, kBC = 264,
              kSpaceA = 265, kABC = 266, kAA = 267, kUser = 268, kSpaceB = 269;
std::vector<Token> spmTokens() {
  std::vector<Token> t = {{"<unk>", 2}, {"<s>", 3}, {"</s>", 3}};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    t.push_back({name, 6});
  }
  const std::string sp = "\xE2\x96\x81";
  std::vector<Token> rest = {{sp, 1, -1},        {"a", 1, -1},    {"b", 1, -1},
                             {"c", 1, -1},       {"ab", 1, 1},    {"bc", 1, 2},
                             {sp + "a", 1, 0.5}, {"abc", 1, 0},   {"aa", 1, 1},
                             {"<x>", 4, 0},      {sp + "b", 5, 3}};
  t.insert(t.end(), rest.begin(), rest.end());
  return t;
}

std::unique_ptr<Tokenizer> spm(const std::string &options = "") {
  return Tokenizer::parseLlmc(
      llmcFile("spm", spmTokens(),
               "\"bos_id\": 1, \"eos_id\": 2, \"unk_id\": 0, \"add_bos\": "
               "true, " +
                   options),
      "spm.json");
}

int32_t byteId(unsigned char b) { return 3 + b; }

TEST(SpmTokenizerTest, Vocabulary) {
  auto t = spm();
  EXPECT_STREQ(t->kind(), "spm");
  EXPECT_EQ(t->piece(kAB), "ab");
  EXPECT_EQ(t->piece(kABC), "abc");
  EXPECT_EQ(t->type(kSpaceB), TokenType::Unused);
  EXPECT_EQ(t->type(byteId(0x41)), TokenType::Byte);
  EXPECT_EQ(t->bosId(), 1);
  EXPECT_EQ(t->eosId(), 2);
  EXPECT_TRUE(t->addBosDefault());
  EXPECT_FALSE(t->addEosDefault());
}

TEST(SpmTokenizerTest, MergesHighestScoreFirstLeftmostOnTies) {
  auto t = spm();
  EncodeOptions none;
  // "▁abc": bc (2) first, then ▁a (0.5) beats a+bc = abc (0).
  EXPECT_EQ(t->tokenize("abc", none), (Ids{kSpaceA, kBC}));
  // "▁aaa": the two "aa" pairs tie: the left one merges.
  EXPECT_EQ(t->tokenize("aaa", none), (Ids{kSpace, kAA, kA}));
  EXPECT_EQ(t->tokenize("", none), Ids{});
  EncodeOptions bos;
  bos.addBos = bos.addEos = true;
  EXPECT_EQ(t->tokenize("abc", bos), (Ids{1, kSpaceA, kBC, 2}));
  EXPECT_EQ(t->tokenize("", bos), (Ids{1, 2}));
}

TEST(SpmTokenizerTest, ByteFallbackAndUnusedPieces) {
  auto t = spm();
  EncodeOptions none;
  EXPECT_EQ(t->tokenize("\xC3\xA9", none),
            (Ids{kSpace, byteId(0xC3), byteId(0xA9)}));
  // "▁b" (unused, score 3) merges before "bc" (2), then splits back into
  // its parts, as sentencepiece resegments unused pieces.
  EXPECT_EQ(t->tokenize("bc", none), (Ids{kSpace, kB, kC}));
  EXPECT_EQ(t->tokenize("b", none), (Ids{kSpace, kB}));
  EXPECT_EQ(t->tokenize("cb", none), (Ids{kSpace, kC, kB}));
}

TEST(SpmTokenizerTest, UnknownWithoutByteFallback) {
  auto t = spm("\"byte_fallback\": false, ");
  // Consecutive unknown pieces become one <unk>, as sentencepiece does.
  EXPECT_EQ(t->tokenize("\xC3\xA9\xC3\xA9"
                        "a",
                        EncodeOptions()),
            (Ids{kSpace, 0, kA}));
}

TEST(SpmTokenizerTest, SpecialTokensAndDummyPrefix) {
  auto t = spm();
  EncodeOptions plain, special;
  special.parseSpecial = true;
  // Control tokens only when asked; each text fragment after a special
  // token gets the dummy prefix again.
  EXPECT_EQ(t->tokenize("<s>a", special), (Ids{1, kSpaceA}));
  EXPECT_EQ(t->tokenize("<s>a", plain),
            (Ids{kSpace, byteId('<'), byteId('s'), byteId('>'), kA}));
  // User-defined tokens always.
  EXPECT_EQ(t->tokenize("a<x>b", plain), (Ids{kSpaceA, kUser, kSpace, kB}));
  EXPECT_EQ(t->detokenize({kSpaceA, kUser, kSpace, kB}, false), "a<x>b");
  EXPECT_EQ(t->detokenize({1, kSpaceA, 2}, false), "a");
  EXPECT_EQ(t->detokenize({1, kSpaceA, 2}, true), "<s>a</s>");
}

TEST(SpmTokenizerTest, DecodeDropsTheDummyPrefixAtTheStartOnly) {
  auto t = spm();
  EXPECT_EQ(t->decode(-1, kSpaceA), "a");
  EXPECT_EQ(t->decode(1, kSpaceA), "a");
  EXPECT_EQ(t->decode(kB, kSpaceA), " a");
  EXPECT_EQ(t->decode(kB, byteId('\n')), "\n");
  EXPECT_EQ(t->decode(kB, 1), "");
  EXPECT_EQ(t->detokenize(t->tokenize("  a b\tc", EncodeOptions()), false),
            "  a b\tc");
}

TEST(SpmTokenizerTest, RemoveExtraWhitespaces) {
  auto t = spm("\"remove_extra_whitespaces\": true, ");
  EXPECT_EQ(t->tokenize("  a   b  ", EncodeOptions()),
            (Ids{kSpaceA, kSpace, kB}));
}

// Byte-level BPE vocabulary: ids 0..255 are the bytes (GPT-2 alphabet), then
const int32_t kBpeAB = 256, kBpeBC = 257, kBpeABC = 258, kBpeSpaceA = 259,
              kBpeAA = 260, kBpeControl = 261, kBpeUser = 262, kBpeCA = 263;

std::unique_ptr<Tokenizer> bpe(const std::string &options = "") {
  std::vector<Token> t;
  for (int b = 0; b < 256; ++b) {
    std::string s;
    unicode::appendUtf8(s, unicode::byteToUnicode(static_cast<uint8_t>(b)));
    t.push_back({s});
  }
  std::vector<Token> rest = {{"ab"},
                             {"bc"},
                             {"abc"},
                             {"\xC4\xA0"
                              "a"},
                             {"aa"},
                             {"<|x|>", 3},
                             {"<u>", 4},
                             {"ca"}};
  t.insert(t.end(), rest.begin(), rest.end());
  return Tokenizer::parseLlmc(
      llmcFile("bpe", t,
               "\"eos_id\": 261, " + options +
                   "\"merges\": [\"b c\", \"a b\", \"a bc\", "
                   "\"\xC4\xA0 a\", \"a a\"], "),
      "bpe.json");
}

TEST(BpeTokenizerTest, MergesByRankLeftmostOnTies) {
  auto t = bpe("\"pre_tokenizer\": \"gpt2\", ");
  EXPECT_EQ(t->piece(kBpeAB), "ab");
  EXPECT_EQ(t->piece(kBpeBC), "bc");
  EXPECT_EQ(t->bosId(), -1);
  EncodeOptions none;
  EXPECT_EQ(t->tokenize("abc", none), (Ids{kBpeABC}));
  EXPECT_EQ(t->tokenize("aaa", none), (Ids{kBpeAA, 'a'}));
  // " abc": Ġ stays alone (no merge "Ġ abc"); " a" is one token.
  EXPECT_EQ(t->tokenize("x abc a", none), (Ids{'x', ' ', kBpeABC, kBpeSpaceA}));
  EXPECT_EQ(t->tokenize("ca", none), (Ids{'c', 'a'}));
  EXPECT_EQ(t->detokenize(t->tokenize("x abc a\n\t!", none), false),
            "x abc a\n\t!");
}

TEST(BpeTokenizerTest, IgnoreMergesTakesWholeWords) {
  auto t = bpe("\"pre_tokenizer\": \"llama3\", \"ignore_merges\": true, ");
  EXPECT_EQ(t->tokenize("ca", EncodeOptions()), (Ids{kBpeCA}));
}

TEST(BpeTokenizerTest, SpecialTokens) {
  auto t = bpe("\"pre_tokenizer\": \"qwen2\", ");
  EncodeOptions plain, special;
  special.parseSpecial = true;
  special.addEos = true;
  EXPECT_EQ(t->tokenize("a<|x|>b", special),
            (Ids{'a', kBpeControl, 'b', kBpeControl}));
  EXPECT_EQ(t->tokenize("a<|x|>b", plain),
            (Ids{'a', '<', '|', 'x', '|', '>', 'b'}));
  EXPECT_EQ(t->tokenize("a<u>b", plain), (Ids{'a', kBpeUser, 'b'}));
  EXPECT_EQ(t->detokenize({'a', kBpeControl, kBpeUser}, false), "a<u>");
  EXPECT_EQ(t->detokenize({'a', kBpeControl, kBpeUser}, true), "a<|x|><u>");
  EXPECT_EQ(t->decode(-1, kBpeSpaceA), " a");
}

TEST(BpeTokenizerTest, NfcNormalizer) {
  auto t = bpe("\"pre_tokenizer\": \"qwen2\", \"normalizer\": \"nfc\", ");
  EXPECT_EQ(t->tokenize("e\xCC\x81", EncodeOptions()), (Ids{0xC3, 0xA9}));
  auto raw = bpe("\"pre_tokenizer\": \"qwen2\", ");
  EXPECT_EQ(raw->tokenize("e\xCC\x81", EncodeOptions()),
            (Ids{'e', 0xCC, 0x81}));
}

TEST(BpeTokenizerTest, InvalidUtf8RoundTrips) {
  auto t = bpe("\"pre_tokenizer\": \"qwen2\", ");
  std::string text = "a\xFF\xC3 b\x80";
  EXPECT_EQ(t->detokenize(t->tokenize(text, EncodeOptions()), false), text);
}

/// Deterministic random byte strings biased towards the interesting ones:
/// ASCII letters, digits, spaces/tabs/newlines, apostrophes, special-token
/// text, multi-byte characters and stray invalid bytes.
std::vector<std::string> randomTexts(uint64_t seed, int count) {
  static const char *const kPieces[] = {"a",
                                        "b",
                                        "c",
                                        "x",
                                        "Z",
                                        "'",
                                        "'s",
                                        "'LL",
                                        " ",
                                        "  ",
                                        "\t",
                                        "\n",
                                        "\r\n",
                                        "1",
                                        "234",
                                        "!",
                                        "?!",
                                        "(",
                                        "<",
                                        "|",
                                        ">",
                                        "<|x|>",
                                        "<u>",
                                        "<x>",
                                        "<s>",
                                        "\xC3\xA9",
                                        "e\xCC\x81",
                                        "\xE6\x97\xA5",
                                        "\xF0\x9F\x98\x80",
                                        "\xE2\x80\x8D",
                                        "\xE3\x80\x80",
                                        "\xC2\xA0",
                                        "\x80",
                                        "\xFF",
                                        "\xC3",
                                        "\xE6\x97",
                                        "\x00",
                                        "\x7F"};
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  auto next = [&] {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545F4914F6CDD1Dull;
  };
  std::vector<std::string> texts;
  for (int i = 0; i < count; ++i) {
    std::string s;
    int n = static_cast<int>(next() % 24);
    for (int k = 0; k < n; ++k) {
      if (next() % 8 == 0)
        s += static_cast<char>(next() % 256); // any byte at all
      else
        s += kPieces[next() % std::size(kPieces)];
    }
    texts.push_back(std::move(s));
  }
  return texts;
}

TEST(TokenizerPropertyTest, AnyBytesRoundTrip) {
  auto bpeTok = bpe("\"pre_tokenizer\": \"qwen2\", ");
  auto spmTok = spm();
  for (bool special : {false, true}) {
    EncodeOptions o;
    o.parseSpecial = special;
    for (const std::string &text : randomTexts(special ? 2 : 1, 3000)) {
      Ids b = bpeTok->tokenize(text, o);
      EXPECT_EQ(bpeTok->detokenize(b, special), text);
      for (int32_t id : b)
        ASSERT_TRUE(id >= 0 && id < bpeTok->vocabSize());
      // SentencePiece turns a U+2581 of the text into a space; these texts
      // hold none, so everything comes back (bytes through byte fallback).
      Ids p = spmTok->tokenize(text, o);
      EXPECT_EQ(spmTok->detokenize(p, special), text);
    }
  }
  for (PreTokenizer pre : {PreTokenizer::Gpt2, PreTokenizer::Qwen2,
                           PreTokenizer::Llama3, PreTokenizer::Default})
    for (const std::string &text : randomTexts(3, 2000)) {
      std::string joined;
      for (std::string_view w : preTokenizeWords(pre, text)) {
        EXPECT_FALSE(w.empty());
        joined += w;
      }
      EXPECT_EQ(joined, text);
    }
}

//===----------------------------------------------------------------------===//
// The file loader
//===----------------------------------------------------------------------===//

std::string loadError(const std::string &json) {
  try {
    Tokenizer::parseLlmc(json, "t.json");
  } catch (const Error &e) {
    return e.what();
  }
  ADD_FAILURE() << "loaded: " << json;
  return "";
}

TEST(TokenizerFileTest, Errors) {
  const std::string head =
      R"({"format": "llmc-tokenizer", "version": 1, "kind": "bpe", )";
  EXPECT_EQ(loadError("[1]"),
            "t.json: not an llmc tokenizer file (expected a JSON object)");
  EXPECT_EQ(loadError(R"({"format": "x", "version": 1})"),
            "t.json: field 'format' is \"x\", expected \"llmc-tokenizer\"");
  EXPECT_EQ(loadError(R"({"format": "llmc-tokenizer", "version": 2})"),
            "t.json: field 'version' must be 1 (the only version this runtime "
            "reads)");
  EXPECT_EQ(
      loadError(
          R"({"format": "llmc-tokenizer", "version": 1, "kind": "wordpiece"})"),
      "t.json: field 'kind' is \"wordpiece\", expected \"spm\" or "
      "\"bpe\"");
  EXPECT_EQ(loadError(head + R"("tokens": ["a", 2]})"),
            "t.json: field 'tokens[1]' must be a string");
  EXPECT_EQ(loadError(head + R"("tokens": ["a"], "token_types": [1, 1]})"),
            "t.json: field 'token_types' has 2 entries but there are 1 tokens");
  EXPECT_EQ(loadError(head + R"("tokens": ["a"], "bos_id": 1})"),
            "t.json: field 'bos_id' must be a token id in [0, 1) or -1");
  EXPECT_EQ(loadError(head + R"("tokens": ["a"], "add_bos": true})"),
            "t.json: field 'add_bos' is true but there is no bos_id");
  EXPECT_EQ(loadError(head + R"("tokens": ["a"], "pre_tokenizer": "bert"})"),
            "t.json: field 'pre_tokenizer' is \"bert\", expected \"gpt2\", "
            "\"qwen2\", \"llama3\" or \"default\"");
  EXPECT_EQ(
      loadError(
          head +
          R"("tokens": ["a", "b"], "pre_tokenizer": "gpt2", "merges": ["a b"]})"),
      "t.json: field 'merges[0]' (\"a b\") names a token that is not in "
      "the vocabulary");
  EXPECT_EQ(
      loadError(
          head +
          R"("tokens": ["a"], "pre_tokenizer": "gpt2", "merges": ["ab"]})"),
      "t.json: field 'merges[0]' (\"ab\") must be two tokens separated "
      "by a space");
  EXPECT_NE(loadError(head + R"("tokens": ["a"],})").find("t.json: line 1"),
            std::string::npos);
}

TEST(TokenizerFileTest, OpenTellsFormatsApart) {
  TempDir dir;
  writeFile(dir.file("t.json"),
            "\n  " + llmcFile("bpe", {{"a"}, {"b"}, {"ab"}},
                              "\"pre_tokenizer\": \"gpt2\", \"merges\": "
                              "[\"a b\"], "));
  auto t = Tokenizer::open(dir.file("t.json"), 0);
  EXPECT_STREQ(t->kind(), "bpe");
  EXPECT_EQ(t->tokenize("ab", EncodeOptions()), (Ids{2}));
  try {
    Tokenizer::open(dir.file("t.json"), 5);
    ADD_FAILURE() << "opened";
  } catch (const Error &e) {
    EXPECT_EQ(std::string(e.what()), dir.file("t.json") +
                                         ": the tokenizer has 3 tokens but the "
                                         "model's vocabulary has 5");
  }
}

} // namespace
