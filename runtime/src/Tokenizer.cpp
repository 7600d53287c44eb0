//===- Tokenizer.cpp - The tokenizer interface and llama2.c's ---*- C++ -*-===//
//
// The shared parts of the tokenizers (vocabulary index, special-token
// splitting) and the llama2.c tokenizer, whose encode loop deliberately
// mirrors llama2.c's control flow (including its handling of malformed UTF-8
// and its "more than 3 continuation bytes" cut-off) rather than a cleaner BPE
// formulation: the point is to produce the same ids as the reference.
//
//===----------------------------------------------------------------------===//

#include "Tokenizer.h"

#include "Error.h"
#include "Metadata.h"
#include "TokenizerModels.h"

#include <algorithm>
#include <cstring>

namespace llmc::rt {

//===----------------------------------------------------------------------===//
// Tokenizer
//===----------------------------------------------------------------------===//

Tokenizer::~Tokenizer() = default;

std::unique_ptr<Tokenizer> Tokenizer::load(const std::string &path,
                                           int64_t vocabSize) {
  return Llama2cTokenizer::parse(readFile(path), path, vocabSize);
}

std::unique_ptr<Tokenizer> Tokenizer::loadLlmc(const std::string &path) {
  return parseLlmc(readFile(path), path);
}

std::unique_ptr<Tokenizer> Tokenizer::open(const std::string &path,
                                           int64_t vocabSize) {
  std::string data = readFile(path);
  size_t first = data.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || data[first] != '{')
    return Llama2cTokenizer::parse(data, path, vocabSize);
  std::unique_ptr<Tokenizer> t = parseLlmc(data, path);
  if (vocabSize > 0 && t->vocabSize() != vocabSize)
    throw Error(path + ": the tokenizer has " + std::to_string(t->vocabSize()) +
                " tokens but the model's vocabulary has " +
                std::to_string(vocabSize));
  return t;
}

int32_t Tokenizer::lookup(std::string_view s) const {
  auto it = ids.find(s);
  return it == ids.end() ? -1 : it->second;
}

void Tokenizer::indexPieces() {
  ids.clear();
  ids.reserve(pieces.size());
  for (size_t i = 0; i < pieces.size(); ++i)
    ids.emplace(pieces[i], static_cast<int32_t>(i)); // keeps the first id
}

void Tokenizer::indexSpecials() {
  specials.clear();
  for (size_t i = 0; i < pieces.size(); ++i)
    if (isSpecial(static_cast<int32_t>(i)) && !pieces[i].empty())
      specials.push_back(static_cast<int32_t>(i));
  std::sort(specials.begin(), specials.end(), [&](int32_t a, int32_t b) {
    return pieces[a].size() != pieces[b].size()
               ? pieces[a].size() > pieces[b].size()
               : a < b;
  });
}

std::vector<Tokenizer::Fragment>
Tokenizer::splitSpecials(std::string_view text, bool parseSpecial) const {
  std::vector<Fragment> fragments;
  if (text.empty())
    return fragments;
  fragments.push_back({0, text.size(), -1});
  std::vector<Fragment> next;
  for (int32_t id : specials) {
    if (!parseSpecial && types[id] != TokenType::UserDefined)
      continue;
    std::string_view special = pieces[id];
    bool found = false;
    next.clear();
    for (const Fragment &f : fragments) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      size_t pos = f.begin;
      while (pos < f.end) {
        size_t match = text.substr(0, f.end).find(special, pos);
        if (match == std::string_view::npos)
          break;
        found = true;
        if (match > pos)
          next.push_back({pos, match, -1});
        next.push_back({match, match + special.size(), id});
        pos = match + special.size();
      }
      if (pos < f.end)
        next.push_back({pos, f.end, -1});
    }
    if (found)
      fragments.swap(next);
  }
  return fragments;
}

std::string Tokenizer::detokenize(const std::vector<int32_t> &tokens,
                                  bool renderSpecial) const {
  std::string text;
  int32_t prev = -1;
  for (int32_t id : tokens) {
    if (renderSpecial &&
        (types[id] == TokenType::Control || types[id] == TokenType::Unknown))
      text += pieces[id];
    else
      text += decode(prev, id);
    prev = id;
  }
  return text;
}

//===----------------------------------------------------------------------===//
// Llama2cTokenizer
//===----------------------------------------------------------------------===//

static int hexDigit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

std::unique_ptr<Llama2cTokenizer>
Llama2cTokenizer::parse(const std::string &data, const std::string &path,
                        int64_t vocabSize) {
  bool all = vocabSize == 0;
  if (vocabSize < 0 || vocabSize > INT32_MAX)
    throw Error(path + ": invalid vocabulary size " +
                std::to_string(vocabSize));
  size_t off = 0;
  auto readRaw = [&](void *dst, size_t n, const std::string &what) {
    if (data.size() - off < n)
      throw Error(path + ": truncated file: " + what + " ends past the end (" +
                  std::to_string(data.size()) + " bytes)");
    std::memcpy(dst, data.data() + off, n);
    off += n;
  };

  std::unique_ptr<Llama2cTokenizer> t(new Llama2cTokenizer());
  int32_t maxTokenLength;
  readRaw(&maxTokenLength, 4, "the header");
  if (maxTokenLength < 1)
    throw Error(path + ": invalid max_token_length " +
                std::to_string(maxTokenLength));
  for (int32_t i = 0; all ? off < data.size() && i < INT32_MAX : i < vocabSize;
       ++i) {
    std::string what = "token " + std::to_string(i);
    int32_t length;
    t->scores.emplace_back();
    t->pieces.emplace_back();
    t->byteValue.push_back(-1);
    readRaw(&t->scores[i], 4, what);
    readRaw(&length, 4, what);
    if (length < 0 || length > maxTokenLength)
      throw Error(path + ": token " + std::to_string(i) + " has length " +
                  std::to_string(length) + ", outside [0, max_token_length = " +
                  std::to_string(maxTokenLength) + "]");
    t->pieces[i].resize(length);
    readRaw(t->pieces[i].data(), length, what);
    const std::string &p = t->pieces[i];
    if (p.size() == 6 && p.compare(0, 3, "<0x") == 0 && p[5] == '>' &&
        hexDigit(p[3]) >= 0 && hexDigit(p[4]) >= 0)
      t->byteValue[i] =
          static_cast<int16_t>(hexDigit(p[3]) * 16 + hexDigit(p[4]));
  }
  if (t->pieces.empty())
    throw Error(path + ": the tokenizer file holds no tokens");
  vocabSize = static_cast<int64_t>(t->pieces.size());
  t->types.assign(t->pieces.size(), TokenType::Normal);
  // A longer file means the vocabulary size from the metadata is wrong, and
  // every id past it would be unreachable: better to say so now.
  if (off != data.size())
    throw Error(path + ": " + std::to_string(data.size() - off) +
                " unexpected bytes after " + std::to_string(vocabSize) +
                " tokens (does the vocabulary size match?)");
  t->indexPieces();
  for (int b = 0; b < 256; ++b)
    t->bytePieces[b] = static_cast<char>(b);
  t->bos = vocabSize > kBos ? kBos : -1;
  t->eos = vocabSize > kEos ? kEos : -1;
  t->addBos = t->bos >= 0;
  return t;
}

std::vector<int32_t>
Llama2cTokenizer::tokenize(std::string_view text,
                           const EncodeOptions &options) const {
  std::vector<int32_t> tokens;
  tokens.reserve(text.size() + 3);
  if (options.addBos && bos >= 0)
    tokens.push_back(bos);
  if (!text.empty()) {
    // SentencePiece's add_dummy_prefix. Were " " missing, llama2.c would
    // emit -1; its byte token is the sane equivalent.
    int32_t space = lookup(" ");
    tokens.push_back(space >= 0 ? space : ' ' + kByteOffset);
  }

  // One token per UTF-8 code point: a lead byte starts a new buffer, up to 3
  // continuation bytes are appended to it.
  std::string buffer;
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c & 0xC0) != 0x80)
      buffer.clear();
    buffer += static_cast<char>(c);
    unsigned char next =
        i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
    if ((next & 0xC0) == 0x80 && buffer.size() < 4)
      continue;
    int32_t id = lookup(buffer);
    if (id >= 0) {
      tokens.push_back(id);
    } else {
      for (unsigned char b : buffer)
        tokens.push_back(static_cast<int32_t>(b) + kByteOffset);
    }
    buffer.clear();
  }

  // Greedy BPE: merge the best-scoring adjacent pair (leftmost on ties)
  // until none merges. mergeId[i] caches the token spelled by tokens[i] and
  // tokens[i + 1] (or -1); a merge changes only its neighbours' entries, so
  // each round costs a scan instead of rebuilding every pair string.
  auto pairToken = [&](int32_t a, int32_t b) {
    return lookup(pieces[a] + pieces[b]);
  };
  std::vector<int32_t> mergeId;
  for (size_t i = 0; i + 1 < tokens.size(); ++i)
    mergeId.push_back(pairToken(tokens[i], tokens[i + 1]));
  while (true) {
    float bestScore = -1e10f;
    int32_t bestId = -1;
    size_t best = 0;
    for (size_t i = 0; i < mergeId.size(); ++i) {
      int32_t id = mergeId[i];
      if (id >= 0 && scores[id] > bestScore) {
        bestScore = scores[id];
        bestId = id;
        best = i;
      }
    }
    if (bestId < 0)
      break;
    tokens[best] = bestId;
    tokens.erase(tokens.begin() + static_cast<std::ptrdiff_t>(best) + 1);
    mergeId.erase(mergeId.begin() + static_cast<std::ptrdiff_t>(best));
    if (best > 0)
      mergeId[best - 1] = pairToken(tokens[best - 1], tokens[best]);
    if (best < mergeId.size())
      mergeId[best] = pairToken(tokens[best], tokens[best + 1]);
  }
  if (options.addEos && eos >= 0)
    tokens.push_back(eos);
  return tokens;
}

std::string_view Llama2cTokenizer::decode(int32_t prevToken,
                                          int32_t token) const {
  std::string_view piece = pieces[token];
  if (prevToken == kBos && !piece.empty() && piece.front() == ' ')
    piece.remove_prefix(1);
  if (int b = byteValue[token]; b >= 0)
    return std::string_view(&bytePieces[b], 1);
  return piece;
}

std::string Llama2cTokenizer::detokenize(const std::vector<int32_t> &tokens,
                                         bool renderSpecial) const {
  // llama2.c's decode(), dropping encode()'s dummy-prefix space at the start
  // and after a BOS even when it stayed a token of its own (a byte token or
  // " "), which run.c's decode() does not; BOS and EOS themselves are pieces
  // only when asked for.
  std::string text;
  int32_t prev = kBos;
  bool atStart = true;
  for (int32_t id : tokens) {
    if (id == bos || id == eos) {
      if (renderSpecial)
        text += pieces[id];
      atStart = id == bos;
      prev = id;
      continue;
    }
    // At the start, the piece as it is (prev -1), less one leading space.
    std::string_view piece = decode(atStart ? -1 : prev, id);
    if (atStart && !piece.empty() && piece.front() == ' ')
      piece.remove_prefix(1);
    text += piece;
    atStart = false;
    prev = id;
  }
  return text;
}

} // namespace llmc::rt
