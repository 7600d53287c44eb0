//===- PreTokenizer.cpp - Byte-level BPE pre-tokenizers ---------*- C++ -*-===//
//
// Each scanner walks the code points of one piece and, at every position,
// tries the alternatives of its regex in order, exactly as a backtracking
// regex engine would: the first alternative that matches wins, however long
// a later one would be. The comments give the alternative being matched.
//
//===----------------------------------------------------------------------===//

#include "PreTokenizer.h"

#include "Unicode.h"

#include <string>

namespace llmc::rt {

using namespace unicode;

std::optional<PreTokenizer> parsePreTokenizer(std::string_view name) {
  if (name == "gpt2")
    return PreTokenizer::Gpt2;
  if (name == "qwen2")
    return PreTokenizer::Qwen2;
  if (name == "llama3")
    return PreTokenizer::Llama3;
  if (name == "default")
    return PreTokenizer::Default;
  return std::nullopt;
}

const char *preTokenizerName(PreTokenizer p) {
  switch (p) {
  case PreTokenizer::Gpt2:
    return "gpt2";
  case PreTokenizer::Qwen2:
    return "qwen2";
  case PreTokenizer::Llama3:
    return "llama3";
  case PreTokenizer::Default:
    return "default";
  }
  return "?";
}

namespace {

/// Half-open ranges of code point indices.
using Pieces = std::vector<std::pair<size_t, size_t>>;

/// The code points of the text and their flags.
struct Text {
  std::vector<uint32_t> cps;
  std::vector<uint8_t> flags;
  std::vector<size_t> offsets; ///< byte offset of each code point, + end
};

Text decode(std::string_view s) {
  Text t;
  t.cps.reserve(s.size());
  t.flags.reserve(s.size());
  t.offsets.reserve(s.size() + 1);
  for (size_t pos = 0; pos < s.size();) {
    CodePoint c = decodeUtf8(s, pos);
    t.cps.push_back(c.cp);
    t.flags.push_back(charFlags(c.cp));
    t.offsets.push_back(pos);
    pos += c.size;
  }
  t.offsets.push_back(s.size());
  return t;
}

/// One piece [begin, end) being scanned.
class Scanner {
public:
  Scanner(const Text &t, size_t begin, size_t end, Pieces &out)
      : t(t), begin(begin), end(end), out(out) {}

  static constexpr uint32_t kNone = 0xFFFFFFFF;
  uint32_t cp(size_t i) const { return i < end ? t.cps[i] : kNone; }
  /// Flags, and whether there is a character at all (bit 7).
  uint8_t flags(size_t i) const { return i < end ? (t.flags[i] | 0x80) : 0; }
  static bool exists(uint8_t f) { return f & 0x80; }
  static bool isLetter(uint8_t f) { return f & Letter; }
  static bool isNumber(uint8_t f) { return f & Number; }
  static bool isSpace(uint8_t f) { return f & Whitespace; }
  /// [^\s\p{L}\p{N}]: any existing character that is none of those.
  static bool isOther(uint8_t f) {
    return exists(f) && !(f & (Letter | Number | Whitespace));
  }
  static uint32_t lower(uint32_t c) {
    return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
  }

  /// 's|'t|'re|'ve|'m|'ll|'d at `pos`: the end of the match, or 0.
  size_t contraction(size_t pos, bool ignoreCase) const {
    if (cp(pos) != '\'')
      return 0;
    auto at = [&](size_t i) { return ignoreCase ? lower(cp(i)) : cp(i); };
    uint32_t a = at(pos + 1);
    if (a == 's' || a == 't' || a == 'm' || a == 'd')
      return pos + 2;
    uint32_t b = at(pos + 2);
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') ||
        (a == 'l' && b == 'l'))
      return pos + 3;
    return 0;
  }

  /// The length of the whitespace run at `pos`.
  size_t spaceRun(size_t pos) const {
    size_t n = 0;
    while (isSpace(flags(pos + n)))
      ++n;
    return n;
  }

  /// \s+(?!\S)|\s+ at a whitespace run of length n >= 1: the run gives its
  /// last character to a following non-space (which it then prefixes).
  size_t spaces(size_t pos, size_t n) const {
    if (n > 1 && exists(flags(pos + n)))
      return pos + n - 1;
    return pos + n;
  }

  void emit(size_t from, size_t to) {
    if (to > from)
      out.emplace_back(from, to);
  }

  /// gpt2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+
  ///       |\s+(?!\S)|\s+
  void gpt2() {
    for (size_t pos = begin; pos < end;) {
      size_t next = contraction(pos, /*ignoreCase=*/false);
      if (!next) {
        bool space = cp(pos) == ' ';
        uint8_t f = flags(pos + space);
        if (isLetter(f)) { //  ?\p{L}+
          next = pos + space;
          while (isLetter(flags(next)))
            ++next;
        } else if (isNumber(f)) { //  ?\p{N}+
          next = pos + space;
          while (isNumber(flags(next)))
            ++next;
        } else if (isOther(f)) { //  ?[^\s\p{L}\p{N}]+
          next = pos + space;
          while (isOther(flags(next)))
            ++next;
        } else if (size_t n = spaceRun(pos)) { // \s+(?!\S)|\s+
          next = spaces(pos, n);
        } else {
          next = pos + 1; // unreachable: every character matches above
        }
      }
      emit(pos, next);
      pos = next;
    }
  }

  /// qwen2 / llama3 (maxDigits 1 / 3):
  ///   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,maxDigits}
  ///   | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  void qwen2(size_t maxDigits) {
    auto newline = [](uint32_t c) { return c == '\r' || c == '\n'; };
    for (size_t pos = begin; pos < end;) {
      uint32_t c = cp(pos);
      uint8_t f = flags(pos);
      size_t next = contraction(pos, /*ignoreCase=*/true);
      if (next) {
        // matched
      } else if (isLetter(f) ||
                 (!newline(c) && !isNumber(f) && isLetter(flags(pos + 1)))) {
        // [^\r\n\p{L}\p{N}]?\p{L}+ (the optional character is neither a
        // letter nor a number nor a line break, so here it is the current
        // one exactly when that is not a letter)
        next = pos + 1;
        while (isLetter(flags(next)))
          ++next;
      } else if (isNumber(f)) { // \p{N}{1,maxDigits}
        next = pos + 1;
        while (next - pos < maxDigits && isNumber(flags(next)))
          ++next;
      } else if (bool space = c == ' '; isOther(flags(pos + space))) {
        //  ?[^\s\p{L}\p{N}]+[\r\n]*
        next = pos + space;
        while (isOther(flags(next)))
          ++next;
        while (newline(cp(next)))
          ++next;
      } else if (size_t n = spaceRun(pos)) {
        // \s*[\r\n]+ : up to the last line break of the run, if any
        size_t lastBreak = 0;
        for (size_t i = 0; i < n; ++i)
          if (newline(cp(pos + i)))
            lastBreak = pos + i + 1;
        next = lastBreak ? lastBreak : spaces(pos, n); // \s+(?!\S)|\s+
      } else {
        next = pos + 1; // unreachable: every character matches above
      }
      emit(pos, next);
      pos = next;
    }
  }

private:
  const Text &t;
  size_t begin, end;
  Pieces &out;
};

/// Splits every piece at the matches of `match` (which returns the end of
/// a match starting at `pos`, or `pos` for none): matches and the text
/// between them become pieces, as llama.cpp's std::regex splitting does.
template <typename Match> Pieces splitEach(const Pieces &in, Match match) {
  Pieces out;
  for (auto [b, e] : in) {
    size_t gap = b;
    for (size_t pos = b; pos < e;) {
      size_t m = match(pos, e);
      if (m > pos) {
        if (pos > gap)
          out.emplace_back(gap, pos);
        out.emplace_back(pos, m);
        pos = gap = m;
      } else {
        ++pos;
      }
    }
    if (e > gap)
      out.emplace_back(gap, e);
  }
  return out;
}

} // namespace

std::vector<std::pair<size_t, size_t>> preTokenize(PreTokenizer p,
                                                   std::string_view text) {
  Text t = decode(text);
  size_t n = t.cps.size();
  Pieces pieces;
  if (n == 0)
    return {};
  auto scan = [&](const Pieces &in, auto &&fn) {
    Pieces out;
    for (auto [b, e] : in) {
      Scanner s(t, b, e, out);
      fn(s);
    }
    return out;
  };
  Pieces whole = {{0, n}};
  switch (p) {
  case PreTokenizer::Gpt2:
    pieces = scan(whole, [](Scanner &s) { s.gpt2(); });
    break;
  case PreTokenizer::Qwen2:
    pieces = scan(whole, [](Scanner &s) { s.qwen2(1); });
    break;
  case PreTokenizer::Llama3:
    pieces = scan(whole, [](Scanner &s) { s.qwen2(3); });
    break;
  case PreTokenizer::Default: {
    // [\p{P}\$\+<=>\^~\|]+
    auto punct = [&](size_t i) {
      uint32_t c = t.cps[i];
      return (t.flags[i] & Punctuation) || c == '$' || c == '+' || c == '<' ||
             c == '=' || c == '>' || c == '^' || c == '~' || c == '|';
    };
    pieces = splitEach(whole, [&](size_t pos, size_t e) {
      while (pos < e && punct(pos))
        ++pos;
      return pos;
    });
    pieces = scan(pieces, [](Scanner &s) { s.gpt2(); });
    // \p{N}+
    pieces = splitEach(pieces, [&](size_t pos, size_t e) {
      while (pos < e && (t.flags[pos] & Number))
        ++pos;
      return pos;
    });
    // [0-9][0-9][0-9]
    auto digit = [&](size_t i) { return t.cps[i] >= '0' && t.cps[i] <= '9'; };
    pieces = splitEach(pieces, [&](size_t pos, size_t e) {
      return pos + 3 <= e && digit(pos) && digit(pos + 1) && digit(pos + 2)
                 ? pos + 3
                 : pos;
    });
    break;
  }
  }
  std::vector<std::pair<size_t, size_t>> bytes;
  bytes.reserve(pieces.size());
  for (auto [b, e] : pieces)
    bytes.emplace_back(t.offsets[b], t.offsets[e]);
  return bytes;
}

std::vector<std::string_view> preTokenizeWords(PreTokenizer p,
                                               std::string_view text) {
  std::vector<std::string_view> words;
  for (auto [b, e] : preTokenize(p, text))
    words.push_back(text.substr(b, e - b));
  return words;
}

} // namespace llmc::rt
