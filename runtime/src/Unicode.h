//===- Unicode.h - The Unicode data the tokenizers need ---------*- C++ -*-===//
//
// UTF-8 decoding that never fails, general-category flags for the
// pre-tokenizer scanners, the White_Space property, NFC normalization and
// GPT-2's byte-to-unicode mapping. The tables are generated from Python's
// unicodedata by scripts/gen_unicode_tables.py into UnicodeTables.inc; the
// runtime has no ICU and no regex library.
//
//===----------------------------------------------------------------------===//

#ifndef LLMC_RUNTIME_SRC_UNICODE_H
#define LLMC_RUNTIME_SRC_UNICODE_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace llmc::rt::unicode {

/// The Unicode version the tables were generated from ("14.0.0").
const char *version();

/// Bits of charFlags(); the general categories L, N, M, P, S and the
/// White_Space property.
enum CharFlags : uint8_t {
  Letter = 1,      ///< \p{L}
  Number = 2,      ///< \p{N}
  Mark = 4,        ///< \p{M}
  Punctuation = 8, ///< \p{P}
  Symbol = 16,     ///< \p{S}
  Whitespace = 32, ///< \s (White_Space)
};

/// A byte that is not part of valid UTF-8 decodes to kInvalidBase + byte:
/// outside the code point range, so it has no category and is no
/// whitespace, and it encodes back to the raw byte.
constexpr uint32_t kInvalidBase = 0x110000;

/// One decoded character and where it is in the text.
struct CodePoint {
  uint32_t cp;   ///< the code point, or kInvalidBase + byte
  uint32_t size; ///< bytes it takes in the UTF-8 text (1..4)
};

/// Decodes the character at text[pos] (pos < text.size()). Overlong forms,
/// surrogates, code points past U+10FFFF and truncated sequences are invalid:
/// their first byte decodes alone as kInvalidBase + byte.
CodePoint decodeUtf8(std::string_view text, size_t pos);

/// Decodes a whole text.
std::vector<CodePoint> decodeUtf8(std::string_view text);

/// Appends the UTF-8 encoding of `cp` (or the raw byte of an invalid one).
void appendUtf8(std::string &out, uint32_t cp);

/// True when `text` is valid UTF-8.
bool isValidUtf8(std::string_view text);

/// CharFlags of a code point (0 for invalid bytes and unassigned ones).
uint8_t charFlags(uint32_t cp);

/// The canonical combining class of a code point (0 for most).
uint8_t combiningClass(uint32_t cp);

/// Unicode Normalization Form C of `text`. Invalid bytes are kept as they
/// are and act as starters that compose with nothing.
std::string nfc(std::string_view text);

/// GPT-2's bytes_to_unicode(): the printable code point that byte-level BPE
/// vocabularies use for byte `b` (e.g. 0x20 -> U+0120 'Ġ').
uint32_t byteToUnicode(uint8_t b);

/// The inverse of byteToUnicode(), or -1 when `cp` stands for no byte.
int unicodeToByte(uint32_t cp);

} // namespace llmc::rt::unicode

#endif // LLMC_RUNTIME_SRC_UNICODE_H
