//===- tokenizer_fuzzer.cpp - libFuzzer target for the tokenizers ---------===//
//
// The first byte picks what the rest is fed to:
//   0: the compiler's SentencePiece tokenizer.model reader (protobuf wire
//      format): parse or llvm::Error, never a crash or an unchecked read;
//   1: the runtime's tokenizers as text: a byte-level BPE and a
//      SentencePiece vocabulary encode it, with and without special tokens,
//      and must decode it back byte for byte;
//   2: the runtime's llmc tokenizer file loader: load or Error.
//
//===----------------------------------------------------------------------===//
#include "Import/Tokenizer.h"

#include "Error.h"
#include "Tokenizer.h"
#include "Unicode.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

using namespace llmc::rt;

namespace {

std::string quote(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

/// Every byte, a few merges and special tokens.
std::unique_ptr<Tokenizer> makeBpe() {
  std::string tokens, types;
  for (int b = 0; b < 256; ++b) {
    std::string s;
    unicode::appendUtf8(s, unicode::byteToUnicode(static_cast<uint8_t>(b)));
    tokens += (b ? ", " : "") + quote(s);
    types += b ? ", 1" : "1";
  }
  tokens += ", \"ab\", \"abc\", \"\xC4\xA0"
            "a\", \"<|x|>\", \"<u>\"";
  types += ", 1, 1, 1, 3, 4";
  std::string json =
      "{\"format\": \"llmc-tokenizer\", \"version\": 1, \"kind\": \"bpe\", "
      "\"pre_tokenizer\": \"qwen2\", \"normalizer\": \"none\", \"tokens\": [" +
      tokens + "], \"token_types\": [" + types +
      "], \"merges\": [\"a b\", \"ab c\", \"\xC4\xA0 a\"]}";
  return Tokenizer::parseLlmc(json, "bpe.json");
}

/// Byte pieces, a few scored pieces, specials.
std::unique_ptr<Tokenizer> makeSpm() {
  std::string tokens = "\"<unk>\", \"<s>\", \"</s>\"", types = "2, 3, 3",
              scores = "0, 0, 0";
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    tokens += std::string(", \"") + name + "\"";
    types += ", 6";
    scores += ", 0";
  }
  tokens += ", \"\xE2\x96\x81\", \"a\", \"b\", \"\xE2\x96\x81"
            "a\", \"ab\", "
            "\"<x>\"";
  types += ", 1, 1, 1, 1, 5, 4";
  scores += ", -1, -1, -1, 1, 2, 0";
  std::string json =
      "{\"format\": \"llmc-tokenizer\", \"version\": 1, \"kind\": \"spm\", "
      "\"bos_id\": 1, \"eos_id\": 2, \"unk_id\": 0, \"tokens\": [" +
      tokens + "], \"token_types\": [" + types + "], \"scores\": [" + scores +
      "]}";
  return Tokenizer::parseLlmc(json, "spm.json");
}

void roundTrip(const Tokenizer &t, std::string_view text) {
  for (bool special : {false, true}) {
    EncodeOptions o;
    o.parseSpecial = special;
    std::vector<int32_t> ids = t.tokenize(text, o);
    for (int32_t id : ids)
      if (id < 0 || id >= t.vocabSize())
        std::abort();
    for (size_t i = 0; i < ids.size(); ++i)
      (void)t.decode(i ? ids[i - 1] : -1, ids[i]);
    // SentencePiece reads U+2581 in the text as a space.
    if (t.detokenize(ids, special) != text &&
        text.find("\xE2\x96\x81") == std::string_view::npos)
      std::abort();
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  std::string_view rest(reinterpret_cast<const char *>(data) + 1, size - 1);
  switch (data[0] % 3) {
  case 0: {
    auto spec = llmc::parseSentencePiece("fuzz.model", llvm::StringRef(rest));
    if (!spec)
      llvm::consumeError(spec.takeError());
    else
      (void)llmc::tokenizerToJson(*spec);
    break;
  }
  case 1: {
    static const std::unique_ptr<Tokenizer> bpe = makeBpe();
    static const std::unique_ptr<Tokenizer> spm = makeSpm();
    roundTrip(*bpe, rest);
    roundTrip(*spm, rest);
    break;
  }
  case 2:
    try {
      auto t = Tokenizer::parseLlmc(rest, "fuzz.json");
      (void)t->tokenize("ab c", EncodeOptions());
    } catch (const Error &) {
    }
    break;
  }
  return 0;
}
