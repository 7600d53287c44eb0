//===- Tokenizer.h - model tokenizers to llmc's tokenizer file --*- C++ -*-===//
//
// The compiler converts every tokenizer a model may ship into one runtime
// format, the llmc tokenizer file (docs/artifact.md): JSON holding the
// vocabulary, token types, scores (SentencePiece) or merges (byte-level
// BPE), the pre-tokenizer's name and the BOS/EOS conventions. Sources:
//  - GGUF metadata (tokenizer.ggml.*, models `llama` and `gpt2`),
//  - a Hugging Face tokenizer.json (byte-level BPE) and its
//    tokenizer_config.json,
//  - a SentencePiece tokenizer.model (BPE model type), parsed from the
//    protobuf wire format directly,
//  - an llmc tokenizer file (passed through).
// llama2.c tokenizer.bin files are not converted: artifacts keep them as
// they are (kind "llama2c").
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_IMPORT_TOKENIZER_H
#define LLMC_IMPORT_TOKENIZER_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace llmc {

/// Token types, numbered as GGUF's tokenizer.ggml.token_type.
enum class TokenType : int32_t {
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
};

/// A tokenizer in the terms of the llmc tokenizer file.
struct TokenizerSpec {
  std::string kind; ///< "spm" or "bpe"
  std::vector<std::string> tokens;
  std::vector<int32_t> types;      ///< TokenType values, one per token
  std::vector<float> scores;       ///< spm: one per token
  std::vector<std::string> merges; ///< bpe: "left right", by rank
  std::string preTokenizer;        ///< bpe: gpt2, qwen2, llama3, default
  bool ignoreMerges = false;       ///< bpe: whole words that are tokens
  std::string normalizer = "none"; ///< "none" or "nfc"
  int64_t bos = -1, eos = -1, unk = -1;
  bool addBos = false, addEos = false;
  bool addSpacePrefix = true;          ///< spm: dummy prefix
  bool removeExtraWhitespaces = false; ///< spm
  bool byteFallback = true;            ///< spm: <0xNN> for unknown bytes
  std::string source;                  ///< what it was converted from
};

/// True when `path` names a llama2.c tokenizer file (a `.bin` file that is
/// not GGUF), which artifacts keep in its own format.
bool isLlama2CTokenizer(llvm::StringRef path);

/// Reads the tokenizer in `path`: a GGUF model, a Hugging Face
/// tokenizer.json, a SentencePiece tokenizer.model, an llmc tokenizer file,
/// or a Hugging Face model directory holding tokenizer.model or
/// tokenizer.json. Errors name the file and what is wrong or unsupported.
llvm::Expected<TokenizerSpec> readTokenizer(llvm::StringRef path);

/// The converters behind readTokenizer(), for one kind of source each.
llvm::Expected<TokenizerSpec> readGGUFTokenizer(llvm::StringRef path);
llvm::Expected<TokenizerSpec> readHFTokenizer(llvm::StringRef path);
llvm::Expected<TokenizerSpec> readSentencePiece(llvm::StringRef path);
/// The same from the file's bytes (`path` names it in errors).
llvm::Expected<TokenizerSpec> parseSentencePiece(llvm::StringRef path,
                                                 llvm::StringRef data);

/// The tokenizer that comes with a model: the GGUF file itself when it has
/// tokenizer metadata, a Hugging Face directory's tokenizer.model or
/// tokenizer.json, or "" when there is none.
std::string findModelTokenizer(llvm::StringRef modelPath);

/// Checks a spec for consistency (ids in range, array lengths, merges made
/// of tokens); `what` names it in errors.
llvm::Error verifyTokenizer(const TokenizerSpec &spec, llvm::StringRef what);

/// Adds unused tokens "[PAD<id>]" up to `vocab` tokens (a model's embedding
/// often has more rows than its tokenizer has tokens). Fails, naming
/// `what`, if the tokenizer has more tokens than that.
llvm::Error padTokenizer(TokenizerSpec &spec, int64_t vocab,
                         llvm::StringRef what);

/// The llmc tokenizer file of a spec.
std::string tokenizerToJson(const TokenizerSpec &spec);

/// Writes the llmc tokenizer file.
llvm::Error writeTokenizer(const TokenizerSpec &spec, llvm::StringRef path);

} // namespace llmc

#endif // LLMC_IMPORT_TOKENIZER_H
