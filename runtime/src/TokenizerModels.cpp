//===- TokenizerModels.cpp - SentencePiece and byte-level BPE ---*- C++ -*-===//
//
// Both merge loops keep the symbols of one piece of text in a linked list
// and a priority queue of candidate pairs; a popped pair whose symbols
// changed since it was queued is stale and skipped. The orders are the
// references': SentencePiece (and llama.cpp's llm_tokenizer_spm) takes the
// highest score, Hugging Face's BPE (and llama.cpp's llm_tokenizer_bpe) the
// lowest merge rank; both the leftmost pair on ties.
//
//===----------------------------------------------------------------------===//

#include "TokenizerModels.h"

#include "Error.h"
#include "Unicode.h"

#include <cstdio>
#include <queue>

namespace llmc::rt {

namespace {

const char kSpaceMarker[] = "\xE2\x96\x81"; // U+2581, SentencePiece's space

/// "<0xNN>" -> NN, or -1.
int bytePieceValue(std::string_view p) {
  auto hex = [](char c) {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'A' && c <= 'F')
      return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    return -1;
  };
  if (p.size() != 6 || p.substr(0, 3) != "<0x" || p[5] != '>' ||
      hex(p[3]) < 0 || hex(p[4]) < 0)
    return -1;
  return hex(p[3]) * 16 + hex(p[4]);
}

/// The text of a piece whose type is not Normal/Undefined, the same for
/// every model: a byte token its byte, a user-defined token its spelling,
/// control/unknown/unused tokens nothing.
std::string decodeNonNormal(TokenType type, const std::string &piece) {
  switch (type) {
  case TokenType::Byte:
    if (int b = bytePieceValue(piece); b >= 0)
      return std::string(1, static_cast<char>(b));
    return piece;
  case TokenType::UserDefined:
    return piece;
  default:
    return {};
  }
}

std::string replaceAll(std::string_view s, std::string_view from,
                       std::string_view to) {
  std::string out;
  out.reserve(s.size());
  for (size_t pos = 0;;) {
    size_t next = s.find(from, pos);
    if (next == std::string_view::npos) {
      out.append(s.substr(pos));
      return out;
    }
    out.append(s.substr(pos, next - pos));
    out.append(to);
    pos = next + from.size();
  }
}

/// SentencePiece's remove_extra_whitespaces: no leading or trailing
/// spaces, and runs of spaces inside become one.
std::string collapseSpaces(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  bool pendingSpace = false;
  for (char c : s) {
    if (c == ' ') {
      pendingSpace = !out.empty();
      continue;
    }
    if (pendingSpace)
      out += ' ';
    pendingSpace = false;
    out += c;
  }
  return out;
}

} // namespace

//===----------------------------------------------------------------------===//
// SpmTokenizer
//===----------------------------------------------------------------------===//

SpmTokenizer::SpmTokenizer(LlmcTokenizerConfig config, Options options)
    : scores(std::move(options.scores)), addSpacePrefix(options.addSpacePrefix),
      removeExtraWhitespaces(options.removeExtraWhitespaces),
      byteFallback(options.byteFallback), nfc(config.nfc), unk(config.unk) {
  pieces = std::move(config.pieces);
  types = std::move(config.types);
  bos = config.bos;
  eos = config.eos;
  addBos = config.addBos;
  addEos = config.addEos;
  scores.resize(pieces.size(), 0.0f);
  indexPieces();
  indexSpecials();
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    byteTokens[b] = lookup(name);
  }
  decoded.resize(pieces.size());
  for (size_t i = 0; i < pieces.size(); ++i) {
    switch (types[i]) {
    case TokenType::Normal:
    case TokenType::Undefined:
      decoded[i] = replaceAll(pieces[i], kSpaceMarker, " ");
      break;
    default:
      decoded[i] = decodeNonNormal(types[i], pieces[i]);
      break;
    }
  }
}

bool SpmTokenizer::mergeable(int32_t id) const {
  TokenType t = types[id];
  return t == TokenType::Normal || t == TokenType::Undefined ||
         t == TokenType::UserDefined || t == TokenType::Unused;
}

void SpmTokenizer::encodeEscaped(std::string_view text,
                                 std::vector<int32_t> &out) const {
  // A node is a piece of text and, when a merge made it, the two nodes it
  // was made of (to split unused pieces back, as sentencepiece does).
  struct Node {
    size_t begin, size;
    int left = -1, right = -1;
  };
  struct Symbol {
    int node, prev, next;
  };
  std::vector<Node> nodes;
  std::vector<Symbol> symbols;
  for (size_t pos = 0; pos < text.size();) {
    size_t n = unicode::decodeUtf8(text, pos).size;
    int index = static_cast<int>(symbols.size());
    nodes.push_back({pos, n});
    pos += n;
    symbols.push_back({index, index - 1, pos < text.size() ? index + 1 : -1});
  }
  if (symbols.empty())
    return;

  struct Bigram {
    float score;
    int left, right;
    size_t size;
  };
  auto worse = [](const Bigram &a, const Bigram &b) {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  };
  std::priority_queue<Bigram, std::vector<Bigram>, decltype(worse)> queue(
      worse);
  auto size = [&](int s) { return nodes[symbols[s].node].size; };
  auto tryAdd = [&](int left, int right) {
    if (left < 0 || right < 0)
      return;
    size_t begin = nodes[symbols[left].node].begin;
    size_t n = size(left) + size(right);
    int32_t id = lookup(text.substr(begin, n));
    if (id < 0 || !mergeable(id))
      return;
    queue.push({scores[id], left, right, n});
  };
  for (int i = 1; i < static_cast<int>(symbols.size()); ++i)
    tryAdd(i - 1, i);
  while (!queue.empty()) {
    Bigram b = queue.top();
    queue.pop();
    Symbol &l = symbols[b.left];
    Symbol &r = symbols[b.right];
    if (l.node < 0 || r.node < 0 || size(b.left) + size(b.right) != b.size)
      continue; // stale
    nodes.push_back({nodes[l.node].begin, b.size, l.node, r.node});
    l.node = static_cast<int>(nodes.size()) - 1;
    r.node = -1;
    l.next = r.next;
    if (r.next >= 0)
      symbols[r.next].prev = b.left;
    tryAdd(l.prev, b.left);
    tryAdd(b.left, l.next);
  }

  bool lastUnknown = false;
  auto emit = [&](auto &&self, int node) -> void {
    const Node &n = nodes[node];
    std::string_view piece = text.substr(n.begin, n.size);
    int32_t id = lookup(piece);
    if (id >= 0 && types[id] == TokenType::Unused && n.left >= 0) {
      self(self, n.left);
      self(self, n.right);
      return;
    }
    if (id >= 0) {
      out.push_back(id);
      lastUnknown = false;
      return;
    }
    if (byteFallback) {
      for (unsigned char c : piece) {
        if (byteTokens[c] >= 0)
          out.push_back(byteTokens[c]);
        else if (unk >= 0)
          out.push_back(unk);
      }
      lastUnknown = false;
    } else if (unk >= 0 && !lastUnknown) {
      out.push_back(unk); // consecutive unknown pieces become one <unk>
      lastUnknown = true;
    }
  };
  for (int s = 0; s >= 0; s = symbols[s].next)
    emit(emit, symbols[s].node);
}

std::vector<int32_t>
SpmTokenizer::tokenize(std::string_view text,
                       const EncodeOptions &options) const {
  std::vector<int32_t> out;
  out.reserve(text.size() + 3);
  if (options.addBos && bos >= 0)
    out.push_back(bos);
  // The dummy prefix goes in front of the text and of every text fragment
  // that follows a special token (llama.cpp's llm_tokenizer_spm).
  bool afterSpecial = true;
  for (const Fragment &f : splitSpecials(text, options.parseSpecial)) {
    if (f.token >= 0) {
      out.push_back(f.token);
      afterSpecial = true;
      continue;
    }
    std::string fragment(text.substr(f.begin, f.end - f.begin));
    if (nfc)
      fragment = unicode::nfc(fragment);
    if (removeExtraWhitespaces)
      fragment = collapseSpaces(fragment);
    if (fragment.empty())
      continue;
    std::string escaped = addSpacePrefix && afterSpecial ? kSpaceMarker : "";
    escaped += replaceAll(fragment, " ", kSpaceMarker);
    encodeEscaped(escaped, out);
    afterSpecial = false;
  }
  if (options.addEos && eos >= 0)
    out.push_back(eos);
  return out;
}

std::string_view SpmTokenizer::decode(int32_t prevToken, int32_t token) const {
  std::string_view s = decoded[token];
  if (addSpacePrefix && !s.empty() && s.front() == ' ' &&
      types[token] != TokenType::Byte &&
      (prevToken < 0 || isSpecial(prevToken)))
    s.remove_prefix(1);
  return s;
}

std::string SpmTokenizer::detokenize(const std::vector<int32_t> &ids,
                                     bool renderSpecial) const {
  return Tokenizer::detokenize(ids, renderSpecial);
}

//===----------------------------------------------------------------------===//
// BpeTokenizer
//===----------------------------------------------------------------------===//

BpeTokenizer::BpeTokenizer(LlmcTokenizerConfig config, Options options)
    : preTokenizer(options.preTokenizer), ignoreMerges(options.ignoreMerges),
      nfc(config.nfc) {
  pieces = std::move(config.pieces);
  types = std::move(config.types);
  bos = config.bos;
  eos = config.eos;
  addBos = config.addBos;
  addEos = config.addEos;
  indexPieces();
  indexSpecials();
  for (int b = 0; b < 256; ++b) {
    std::string s;
    unicode::appendUtf8(s, unicode::byteToUnicode(static_cast<uint8_t>(b)));
    byteTokens[b] = lookup(s);
  }
  merges.reserve(options.merges.size());
  for (size_t rank = 0; rank < options.merges.size(); ++rank) {
    auto [a, b] = options.merges[rank];
    int32_t result = lookup(pieces[a] + pieces[b]);
    if (result < 0)
      continue; // the loader checks this; a merge into nothing never applies
    uint64_t key = (uint64_t(uint32_t(a)) << 32) | uint32_t(b);
    merges.emplace(key, Merge{static_cast<int32_t>(rank), result});
  }
  decoded.resize(pieces.size());
  for (size_t i = 0; i < pieces.size(); ++i) {
    switch (types[i]) {
    case TokenType::Normal:
    case TokenType::Undefined: {
      // Byte-level pieces spell bytes with GPT-2's alphabet; a character
      // outside it (none in real vocabularies) stands for itself.
      const std::string &p = pieces[i];
      std::string &d = decoded[i];
      for (size_t pos = 0; pos < p.size();) {
        unicode::CodePoint c = unicode::decodeUtf8(p, pos);
        int b = unicode::unicodeToByte(c.cp);
        if (b >= 0)
          d += static_cast<char>(b);
        else
          d.append(p, pos, c.size);
        pos += c.size;
      }
      break;
    }
    default:
      decoded[i] = decodeNonNormal(types[i], pieces[i]);
      break;
    }
  }
}

void BpeTokenizer::encodeWord(std::string_view word,
                              std::vector<int32_t> &out) const {
  if (word.empty())
    return;
  if (ignoreMerges) {
    std::string spelled;
    for (unsigned char c : word)
      unicode::appendUtf8(spelled, unicode::byteToUnicode(c));
    if (int32_t id = lookup(spelled); id >= 0) {
      out.push_back(id);
      return;
    }
  }
  struct Symbol {
    int32_t id; ///< -1: a byte with no base token, -2: merged away
    int prev, next;
  };
  int n = static_cast<int>(word.size());
  std::vector<Symbol> symbols(n);
  for (int i = 0; i < n; ++i)
    symbols[i] = {byteTokens[static_cast<unsigned char>(word[i])], i - 1,
                  i + 1 < n ? i + 1 : -1};

  struct Bigram {
    int32_t rank;
    int left, right;
    int32_t leftId, rightId, result;
  };
  auto worse = [](const Bigram &a, const Bigram &b) {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  };
  std::priority_queue<Bigram, std::vector<Bigram>, decltype(worse)> queue(
      worse);
  auto tryAdd = [&](int left, int right) {
    if (left < 0 || right < 0)
      return;
    int32_t a = symbols[left].id, b = symbols[right].id;
    if (a < 0 || b < 0)
      return;
    auto it = merges.find((uint64_t(uint32_t(a)) << 32) | uint32_t(b));
    if (it == merges.end())
      return;
    queue.push({it->second.rank, left, right, a, b, it->second.result});
  };
  for (int i = 1; i < n; ++i)
    tryAdd(i - 1, i);
  while (!queue.empty()) {
    Bigram g = queue.top();
    queue.pop();
    Symbol &l = symbols[g.left];
    Symbol &r = symbols[g.right];
    if (l.id != g.leftId || r.id != g.rightId || l.next != g.right)
      continue; // stale
    l.id = g.result;
    r.id = -2;
    l.next = r.next;
    if (r.next >= 0)
      symbols[r.next].prev = g.left;
    tryAdd(l.prev, g.left);
    tryAdd(g.left, l.next);
  }
  for (int s = 0; s >= 0; s = symbols[s].next)
    if (symbols[s].id >= 0)
      out.push_back(symbols[s].id);
}

std::vector<int32_t>
BpeTokenizer::tokenize(std::string_view text,
                       const EncodeOptions &options) const {
  std::vector<int32_t> out;
  out.reserve(text.size() + 2);
  if (options.addBos && bos >= 0)
    out.push_back(bos);
  for (const Fragment &f : splitSpecials(text, options.parseSpecial)) {
    if (f.token >= 0) {
      out.push_back(f.token);
      continue;
    }
    std::string_view fragment = text.substr(f.begin, f.end - f.begin);
    std::string normalized;
    if (nfc) {
      normalized = unicode::nfc(fragment);
      fragment = normalized;
    }
    for (auto [b, e] : preTokenize(preTokenizer, fragment))
      encodeWord(fragment.substr(b, e - b), out);
  }
  if (options.addEos && eos >= 0)
    out.push_back(eos);
  return out;
}

std::string_view BpeTokenizer::decode(int32_t, int32_t token) const {
  return decoded[token];
}

std::string BpeTokenizer::detokenize(const std::vector<int32_t> &ids,
                                     bool renderSpecial) const {
  return Tokenizer::detokenize(ids, renderSpecial);
}

} // namespace llmc::rt
