//===- TokenizerModels.h - The concrete tokenizers --------------*- C++ -*-===//
//
// Internal to the runtime: the three Tokenizer implementations, constructed
// by the loaders in Tokenizer.cpp (llama2.c files) and TokenizerFile.cpp
// (llmc tokenizer files).
//
//===----------------------------------------------------------------------===//

#ifndef LLMC_RUNTIME_SRC_TOKENIZERMODELS_H
#define LLMC_RUNTIME_SRC_TOKENIZERMODELS_H

#include "PreTokenizer.h"
#include "Tokenizer.h"

#include <array>

namespace llmc::rt {

/// llama2.c's tokenizer: the encode loop deliberately mirrors run.c's
/// control flow (including its handling of malformed UTF-8) rather than a
/// cleaner BPE formulation, to produce the reference's ids on every input.
class Llama2cTokenizer final : public Tokenizer {
public:
  /// Parses the bytes `data` of the file `path` (named in errors), which
  /// holds `vocabSize` tokens, or with `vocabSize` 0 as many as it holds.
  static std::unique_ptr<Llama2cTokenizer>
  parse(const std::string &data, const std::string &path, int64_t vocabSize);
  const char *kind() const override { return "llama2c"; }
  float score(int32_t id) const { return scores[id]; }
  std::vector<int32_t> tokenize(std::string_view text,
                                const EncodeOptions &options) const override;
  std::string_view decode(int32_t prevToken, int32_t token) const override;
  std::string detokenize(const std::vector<int32_t> &ids,
                         bool renderSpecial) const override;

private:
  std::vector<float> scores;
  /// For each id, the raw byte its piece "<0xNN>" stands for, or -1.
  std::vector<int16_t> byteValue;
  /// bytePieces[b] is the one-byte string b, for decode() to point into.
  char bytePieces[256];
};

/// Settings shared by the llmc-file tokenizers.
struct LlmcTokenizerConfig {
  std::vector<std::string> pieces;
  std::vector<TokenType> types;
  int32_t bos = -1, eos = -1, unk = -1;
  bool addBos = false, addEos = false;
  bool nfc = false; ///< NFC-normalize text fragments before tokenizing
};

/// SentencePiece BPE: symbols are the characters of the text (spaces
/// escaped to U+2581, a dummy space in front), merged pair by pair, the pair
/// whose concatenation is the highest-scoring piece first (leftmost on
/// ties), as sentencepiece's bpe_model.cc and llama.cpp's llm_tokenizer_spm.
class SpmTokenizer final : public Tokenizer {
public:
  struct Options {
    std::vector<float> scores;
    bool addSpacePrefix = true;
    bool removeExtraWhitespaces = false;
    bool byteFallback = true;
  };
  SpmTokenizer(LlmcTokenizerConfig config, Options options);
  const char *kind() const override { return "spm"; }
  std::vector<int32_t> tokenize(std::string_view text,
                                const EncodeOptions &options) const override;
  std::string_view decode(int32_t prevToken, int32_t token) const override;
  std::string detokenize(const std::vector<int32_t> &ids,
                         bool renderSpecial) const override;

  /// Encodes one fragment whose spaces are already escaped to U+2581.
  void encodeEscaped(std::string_view text, std::vector<int32_t> &out) const;

private:
  /// Whether merges may produce token `id` (sentencepiece merges into
  /// normal, user-defined and unused pieces only).
  bool mergeable(int32_t id) const;

  std::vector<float> scores;
  bool addSpacePrefix, removeExtraWhitespaces, byteFallback, nfc;
  int32_t unk;
  std::array<int32_t, 256> byteTokens; ///< "<0xNN>" ids, or -1
  std::vector<std::string> decoded;    ///< per token, for decode()
};

/// Byte-level BPE: the text is split by a pre-tokenizer, each piece's bytes
/// become the base tokens of GPT-2's byte-to-unicode alphabet, and adjacent
/// pairs merge by rank (lowest first, leftmost on ties), as Hugging Face's
/// BPE model and llama.cpp's llm_tokenizer_bpe.
class BpeTokenizer final : public Tokenizer {
public:
  struct Options {
    /// Merges as (left id, right id) in rank order.
    std::vector<std::pair<int32_t, int32_t>> merges;
    PreTokenizer preTokenizer = PreTokenizer::Gpt2;
    /// A whole pre-tokenized word that is a token is taken as is (Llama 3).
    bool ignoreMerges = false;
  };
  BpeTokenizer(LlmcTokenizerConfig config, Options options);
  const char *kind() const override { return "bpe"; }
  std::vector<int32_t> tokenize(std::string_view text,
                                const EncodeOptions &options) const override;
  std::string_view decode(int32_t prevToken, int32_t token) const override;
  std::string detokenize(const std::vector<int32_t> &ids,
                         bool renderSpecial) const override;

  /// Encodes one pre-tokenized word (raw bytes).
  void encodeWord(std::string_view word, std::vector<int32_t> &out) const;

private:
  struct Merge {
    int32_t rank, result;
  };
  std::unordered_map<uint64_t, Merge> merges; ///< (left << 32 | right)
  PreTokenizer preTokenizer;
  bool ignoreMerges, nfc;
  std::array<int32_t, 256> byteTokens; ///< the base token of each byte
  std::vector<std::string> decoded;    ///< per token, for decode()
};

} // namespace llmc::rt

#endif // LLMC_RUNTIME_SRC_TOKENIZERMODELS_H
