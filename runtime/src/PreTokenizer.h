//===- PreTokenizer.h - Byte-level BPE pre-tokenizers -----------*- C++ -*-===//
//
// The regular expressions that byte-level BPE tokenizers split text with
// before merging, hand-written as scanners over code points (the runtime has
// no regex engine). Each scanner reproduces the leftmost-first semantics of
// its regex exactly, alternative by alternative, with \p{L}, \p{N} and \s
// from the generated Unicode tables:
//
//   gpt2    's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+
//           |\s+(?!\S)|\s+
//   qwen2   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}
//           | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   llama3  the same with \p{N}{1,3}
//   default llama.cpp's fallback for BPE vocabularies: four regexes applied
//           one after the other, each splitting the pieces of the previous:
//           [\p{P}\$\+<=>\^~\|]+, then gpt2, then \p{N}+, then [0-9][0-9][0-9]
//
//===----------------------------------------------------------------------===//

#ifndef LLMC_RUNTIME_SRC_PRETOKENIZER_H
#define LLMC_RUNTIME_SRC_PRETOKENIZER_H

#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace llmc::rt {

enum class PreTokenizer { Gpt2, Qwen2, Llama3, Default };

/// "gpt2", "qwen2", "llama3", "default" -> the scanner; nullopt otherwise.
std::optional<PreTokenizer> parsePreTokenizer(std::string_view name);
const char *preTokenizerName(PreTokenizer p);

/// Splits `text` into consecutive pieces: [begin, end) byte offsets that
/// cover the text in order, none empty. Bytes that are not valid UTF-8 count
/// as characters of no category (like a symbol).
std::vector<std::pair<size_t, size_t>> preTokenize(PreTokenizer p,
                                                   std::string_view text);

/// Convenience for tests: the pieces as strings.
std::vector<std::string_view> preTokenizeWords(PreTokenizer p,
                                               std::string_view text);

} // namespace llmc::rt

#endif // LLMC_RUNTIME_SRC_PRETOKENIZER_H
