//===- Unicode.cpp - The Unicode data the tokenizers need -------*- C++ -*-===//
//
// Table lookups are binary searches over the generated ranges; NFC follows
// the algorithm of UAX #15 (full canonical decomposition, canonical ordering,
// canonical composition) with Hangul syllables handled arithmetically.
//
//===----------------------------------------------------------------------===//

#include "Unicode.h"

#include <algorithm>
#include <array>

namespace llmc::rt::unicode {

namespace {

struct CategoryRange {
  uint32_t first, last;
  uint8_t flags;
};
struct CombiningRange {
  uint32_t first, last;
  uint8_t ccc;
};
struct Decomposition {
  uint32_t cp, first, second;
};
struct Composition {
  uint32_t first, second, composite;
};

#include "UnicodeTables.inc"

// Hangul syllable arithmetic (Unicode 3.12).
constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161,
                   kTBase = 0x11A7;
constexpr uint32_t kLCount = 19, kVCount = 21, kTCount = 28;
constexpr uint32_t kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

template <typename Range>
const Range *findRange(const Range *begin, const Range *end, uint32_t cp) {
  const Range *it = std::upper_bound(
      begin, end, cp, [](uint32_t c, const Range &r) { return c < r.first; });
  if (it == begin)
    return nullptr;
  --it;
  return cp <= it->last ? it : nullptr;
}

bool isContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

void decompose(uint32_t cp, std::vector<uint32_t> &out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    uint32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount)
      out.push_back(kTBase + s % kTCount);
    return;
  }
  const Decomposition *end = kDecompositions + std::size(kDecompositions);
  const Decomposition *it = std::lower_bound(
      kDecompositions, end, cp,
      [](const Decomposition &d, uint32_t c) { return d.cp < c; });
  if (it == end || it->cp != cp) {
    out.push_back(cp);
    return;
  }
  decompose(it->first, out);
  if (it->second)
    decompose(it->second, out);
}

/// The primary composite of (a, b), or 0.
uint32_t compose(uint32_t a, uint32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase &&
      b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 &&
      b > kTBase && b < kTBase + kTCount)
    return a + (b - kTBase);
  const Composition *end = kCompositions + std::size(kCompositions);
  const Composition *it = std::lower_bound(
      kCompositions, end, std::make_pair(a, b),
      [](const Composition &c, const std::pair<uint32_t, uint32_t> &key) {
        return c.first != key.first ? c.first < key.first
                                    : c.second < key.second;
      });
  return it != end && it->first == a && it->second == b ? it->composite : 0;
}

} // namespace

const char *version() { return kUnicodeVersion; }

CodePoint decodeUtf8(std::string_view text, size_t pos) {
  const auto *s = reinterpret_cast<const unsigned char *>(text.data());
  size_t n = text.size() - pos;
  unsigned char c = s[pos];
  CodePoint invalid{kInvalidBase + c, 1};
  if (c < 0x80)
    return {c, 1};
  if (c < 0xC2)
    return invalid; // continuation byte or overlong 2-byte lead
  if (c < 0xE0) {
    if (n < 2 || !isContinuation(s[pos + 1]))
      return invalid;
    return {(uint32_t(c & 0x1F) << 6) | (s[pos + 1] & 0x3F), 2};
  }
  if (c < 0xF0) {
    if (n < 3 || !isContinuation(s[pos + 1]) || !isContinuation(s[pos + 2]))
      return invalid;
    uint32_t cp = (uint32_t(c & 0x0F) << 12) |
                  (uint32_t(s[pos + 1] & 0x3F) << 6) | (s[pos + 2] & 0x3F);
    if (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))
      return invalid;
    return {cp, 3};
  }
  if (c < 0xF5) {
    if (n < 4 || !isContinuation(s[pos + 1]) || !isContinuation(s[pos + 2]) ||
        !isContinuation(s[pos + 3]))
      return invalid;
    uint32_t cp = (uint32_t(c & 0x07) << 18) |
                  (uint32_t(s[pos + 1] & 0x3F) << 12) |
                  (uint32_t(s[pos + 2] & 0x3F) << 6) | (s[pos + 3] & 0x3F);
    if (cp < 0x10000 || cp > 0x10FFFF)
      return invalid;
    return {cp, 4};
  }
  return invalid;
}

std::vector<CodePoint> decodeUtf8(std::string_view text) {
  std::vector<CodePoint> out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    CodePoint c = decodeUtf8(text, pos);
    out.push_back(c);
    pos += c.size;
  }
  return out;
}

void appendUtf8(std::string &out, uint32_t cp) {
  if (cp >= kInvalidBase) {
    out += static_cast<char>(cp - kInvalidBase);
  } else if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool isValidUtf8(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    CodePoint c = decodeUtf8(text, pos);
    if (c.cp >= kInvalidBase)
      return false;
    pos += c.size;
  }
  return true;
}

uint8_t charFlags(uint32_t cp) {
  if (cp >= kInvalidBase)
    return 0;
  uint8_t flags = 0;
  if (const CategoryRange *r = findRange(
          kCategoryRanges, kCategoryRanges + std::size(kCategoryRanges), cp))
    flags = r->flags;
  if (std::binary_search(std::begin(kWhitespace), std::end(kWhitespace), cp))
    flags |= Whitespace;
  return flags;
}

uint8_t combiningClass(uint32_t cp) {
  if (cp < 0x300 || cp >= kInvalidBase)
    return 0;
  const CombiningRange *r = findRange(
      kCombiningClasses, kCombiningClasses + std::size(kCombiningClasses), cp);
  return r ? r->ccc : 0;
}

std::string nfc(std::string_view text) {
  // NFC never changes text below U+0300 (nothing there decomposes or
  // combines), which covers ASCII and most Latin-1.
  bool trivial = true;
  for (unsigned char c : text)
    if (c >= 0xCC) { // a lead byte of U+0300 or above
      trivial = false;
      break;
    }
  if (trivial)
    return std::string(text);

  std::vector<uint32_t> cps;
  cps.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    CodePoint c = decodeUtf8(text, pos);
    pos += c.size;
    decompose(c.cp, cps);
  }
  // Canonical ordering: a stable sort of every run of non-starters.
  for (size_t i = 0; i < cps.size();) {
    if (combiningClass(cps[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < cps.size() && combiningClass(cps[j]) != 0)
      ++j;
    // Insertion sort: stable, and the runs are short.
    for (size_t k = i + 1; k < j; ++k)
      for (size_t m = k;
           m > i && combiningClass(cps[m - 1]) > combiningClass(cps[m]); --m)
        std::swap(cps[m - 1], cps[m]);
    i = j;
  }
  // Canonical composition (UAX #15's reference algorithm): a character
  // combines with the last starter unless something between them blocks it
  // (a starter, or a mark of the same or a higher class). lastClass is the
  // class of the last character kept, 0 when that is the starter itself.
  std::vector<uint32_t> out;
  out.reserve(cps.size());
  size_t starter = 0;
  bool haveStarter = false;
  int lastClass = 0;
  for (uint32_t cp : cps) {
    int cls = combiningClass(cp);
    if (haveStarter && (lastClass < cls || lastClass == 0)) {
      if (uint32_t composite = compose(out[starter], cp)) {
        out[starter] = composite;
        continue;
      }
    }
    if (cls == 0) {
      starter = out.size();
      haveStarter = true;
    }
    lastClass = cls;
    out.push_back(cp);
  }
  std::string result;
  result.reserve(text.size());
  for (uint32_t cp : out)
    appendUtf8(result, cp);
  return result;
}

namespace {
struct ByteTables {
  std::array<uint32_t, 256> toUnicode;
  ByteTables() {
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) ||
                       (b >= 0xAE && b <= 0xFF);
      toUnicode[b] = printable ? b : 256 + n++;
    }
  }
};
const ByteTables &byteTables() {
  static const ByteTables tables;
  return tables;
}
} // namespace

uint32_t byteToUnicode(uint8_t b) { return byteTables().toUnicode[b]; }

int unicodeToByte(uint32_t cp) {
  if ((cp >= 0x21 && cp <= 0x7E) || (cp >= 0xA1 && cp <= 0xAC) ||
      (cp >= 0xAE && cp <= 0xFF))
    return static_cast<int>(cp);
  if (cp < 256 || cp >= 256 + 68)
    return -1;
  // The bytes that are not printable, in order, map to 256, 257, ...
  const auto &t = byteTables().toUnicode;
  for (int b = 0; b < 256; ++b)
    if (t[b] == cp)
      return b;
  return -1;
}

} // namespace llmc::rt::unicode
