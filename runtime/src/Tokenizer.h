//===- Tokenizer.h - The runtime's tokenizers -------------------*- C++ -*-===//
//
// Three tokenizers behind one interface:
//  - "llama2c": llama2.c's tokenizer.bin, encoded and decoded exactly as
//    llama2.c's run.c does (so a prompt gives the reference's ids);
//  - "spm": SentencePiece-style BPE over pieces with scores (Llama, Mistral,
//    the GGUF `llama` kind): byte fallback, U+2581 word marker, dummy prefix;
//  - "bpe": byte-level BPE with merge ranks (GPT-2, Qwen2/3, Llama 3, the
//    GGUF `gpt2` kind), after a hand-written pre-tokenizer (PreTokenizer.h).
// The last two are read from llmc's own tokenizer file (docs/artifact.md),
// which the compiler writes from GGUF metadata, a Hugging Face
// tokenizer.json or a SentencePiece tokenizer.model. Both split special
// tokens out of the text first as llama.cpp does: user-defined tokens
// always, control and unknown ones only when asked to (`parseSpecial`).
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

/// Token types, numbered as GGUF's tokenizer.ggml.token_type and
/// SentencePiece's piece types.
enum class TokenType : uint8_t {
  Undefined = 0, ///< treated as Normal
  Normal = 1,
  Unknown = 2,
  Control = 3,     ///< BOS, EOS, <|im_start|>, ...: special
  UserDefined = 4, ///< always matched literally in text, rendered as is
  Unused = 5,      ///< never produced by encoding, decodes to nothing
  Byte = 6,        ///< <0xNN> byte fallback
};

/// What tokenize() adds and recognizes.
struct EncodeOptions {
  bool addBos = false; ///< prepend bosId() (if the tokenizer has one)
  bool addEos = false; ///< append eosId() (if the tokenizer has one)
  /// Match control and unknown tokens written in the text (e.g.
  /// "<|im_start|>", "<s>") as those tokens; user-defined tokens are
  /// matched regardless.
  bool parseSpecial = false;
};

class Tokenizer {
public:
  /// The fixed ids of the llama2.c format.
  static constexpr int32_t kBos = 1;
  static constexpr int32_t kEos = 2;
  /// Byte b falls back to token b + kByteOffset ("<0xNN>") in llama2.c.
  static constexpr int32_t kByteOffset = 3;

  /// Reads a llama2.c tokenizer file holding `vocabSize` tokens (0: as many
  /// as it holds). Throws Error naming the file if it is unreadable,
  /// truncated, or longer.
  static std::unique_ptr<Tokenizer> load(const std::string &path,
                                         int64_t vocabSize);
  /// Reads an llmc tokenizer file (docs/artifact.md, "llmc-tokenizer").
  static std::unique_ptr<Tokenizer> loadLlmc(const std::string &path);
  /// The same from the file's contents; `path` names it in errors.
  static std::unique_ptr<Tokenizer> parseLlmc(std::string_view json,
                                              const std::string &path);
  /// Either format, told apart by the contents: a file whose first
  /// non-blank byte is '{' is an llmc tokenizer, anything else llama2.c.
  /// `vocabSize`, when positive, is checked against the file's count.
  static std::unique_ptr<Tokenizer> open(const std::string &path,
                                         int64_t vocabSize);

  virtual ~Tokenizer();

  /// "llama2c", "spm" or "bpe".
  virtual const char *kind() const = 0;

  int64_t vocabSize() const { return static_cast<int64_t>(pieces.size()); }
  /// The token's text as stored (SentencePiece pieces keep U+2581,
  /// byte-level pieces their byte-to-unicode spelling).
  const std::string &piece(int32_t id) const { return pieces[id]; }
  TokenType type(int32_t id) const { return types[id]; }
  /// -1 when there is none.
  int32_t bosId() const { return bos; }
  int32_t eosId() const { return eos; }
  /// Whether the tokenizer's metadata asks for BOS/EOS around a prompt.
  bool addBosDefault() const { return addBos; }
  bool addEosDefault() const { return addEos; }

  /// llama2.c-compatible entry point: no special tokens parsed, BOS (if
  /// the tokenizer has one) when `addBos`.
  std::vector<int32_t> encode(std::string_view text, bool addBos) const {
    EncodeOptions options;
    options.addBos = addBos;
    return tokenize(text, options);
  }

  /// Encodes UTF-8 `text` (invalid bytes are kept as bytes).
  virtual std::vector<int32_t> tokenize(std::string_view text,
                                        const EncodeOptions &options) const = 0;

  /// The text of `token` when it follows `prevToken` (-1: the start of the
  /// text), for streaming output: control and unknown tokens give "", and
  /// SentencePiece's dummy-prefix space is dropped at the start and after a
  /// special token. Requires `token` in [0, vocabSize); the view lives as
  /// long as the tokenizer.
  virtual std::string_view decode(int32_t prevToken, int32_t token) const = 0;

  /// Decodes a whole sequence; `renderSpecial` writes control and unknown
  /// tokens as their text instead of dropping them. decode(tokenize(s)) == s
  /// for valid UTF-8 `s` (NFC-normalized when the tokenizer normalizes).
  /// Requires every id in [0, vocabSize).
  virtual std::string detokenize(const std::vector<int32_t> &ids,
                                 bool renderSpecial) const;

protected:
  Tokenizer() = default;

  /// Returns the id of the token spelled `s` (the lowest one when the
  /// vocabulary repeats it), or -1.
  int32_t lookup(std::string_view s) const;
  /// Builds `ids` from `pieces`.
  void indexPieces();

  /// A piece of text to tokenize, or a special token found in it.
  struct Fragment {
    size_t begin = 0, end = 0; ///< byte range in the text
    int32_t token = -1;        ///< >= 0: this special token
  };
  /// Splits `text` around the special tokens (user-defined always, control
  /// and unknown ones when `parseSpecial`) as llama.cpp does: the longest
  /// special texts first, every occurrence of each.
  std::vector<Fragment> splitSpecials(std::string_view text,
                                      bool parseSpecial) const;
  /// Builds `specials` from `types` (once the pieces are known).
  void indexSpecials();

  bool isSpecial(int32_t id) const {
    TokenType t = types[id];
    return t == TokenType::Control || t == TokenType::UserDefined ||
           t == TokenType::Unknown;
  }

  std::vector<std::string> pieces;
  std::vector<TokenType> types;
  std::unordered_map<std::string_view, int32_t> ids; ///< views into pieces
  /// Control, user-defined and unknown tokens, longest text first.
  std::vector<int32_t> specials;
  int32_t bos = -1, eos = -1;
  bool addBos = false, addEos = false;
};

} // namespace llmc::rt

#endif // LLMC_RUNTIME_SRC_TOKENIZER_H
