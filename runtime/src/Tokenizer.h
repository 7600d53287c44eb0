//===- Tokenizer.h - The llama2.c BPE tokenizer -----------------*- C++ -*-===//
//
// Reads llama2.c tokenizer files and encodes/decodes exactly as llama2.c's
// run.c does, so that a prompt gives the same token ids as the reference and
// generated text can be compared with it byte for byte.
//
//===----------------------------------------------------------------------===//

#ifndef LLMC_RUNTIME_SRC_TOKENIZER_H
#define LLMC_RUNTIME_SRC_TOKENIZER_H

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace llmc::rt {

/// A llama2.c tokenizer: per token a byte string and a merge score.
class Tokenizer {
public:
  /// The fixed ids of the llama2.c format.
  static constexpr int32_t kBos = 1;
  static constexpr int32_t kEos = 2;
  /// Byte b falls back to token b + kByteOffset ("<0xNN>").
  static constexpr int32_t kByteOffset = 3;

  /// Reads a tokenizer file holding `vocabSize` tokens. Throws Error naming
  /// the file if it is unreadable, truncated, or longer than that.
  static std::unique_ptr<Tokenizer> load(const std::string &path,
                                         int64_t vocabSize);

  int64_t vocabSize() const { return static_cast<int64_t>(pieces.size()); }
  const std::string &piece(int32_t id) const { return pieces[id]; }
  float score(int32_t id) const { return scores[id]; }

  /// llama2.c encode(): optional BOS, the dummy-prefix " " when `text` is
  /// not empty, one token per UTF-8 code point (or its bytes as byte tokens
  /// when the vocabulary lacks it), then repeatedly merges the adjacent pair
  /// whose concatenation is a token with the highest score (leftmost first
  /// on ties). Never adds EOS.
  std::vector<int32_t> encode(std::string_view text, bool addBos) const;

  /// llama2.c decode(): the text of `token` following `prevToken`. Drops the
  /// leading space of a piece that follows BOS and turns "<0xNN>" into the
  /// raw byte. Requires `token` in [0, vocabSize).
  std::string_view decode(int32_t prevToken, int32_t token) const;

private:
  Tokenizer() = default;

  /// Returns the id of the token spelled `s`, or -1.
  int32_t lookup(const std::string &s) const;

  std::vector<std::string> pieces;
  std::vector<float> scores;
  /// Piece -> lowest id with that piece (llama2.c finds an arbitrary one by
  /// binary search; real vocabularies have no duplicates).
  std::unordered_map<std::string, int32_t> ids;
  /// For each id, the raw byte its piece "<0xNN>" stands for, or -1.
  std::vector<int16_t> byteValue;
  /// bytePieces[b] is the one-byte string b, for decode() to point into.
  char bytePieces[256];
};

} // namespace llmc::rt

#endif // LLMC_RUNTIME_SRC_TOKENIZER_H
