//===- Tokenizer.cpp - The llama2.c BPE tokenizer ---------------*- C++ -*-===//
//
// The encode loop deliberately mirrors llama2.c's control flow (including
// its handling of malformed UTF-8 and its "more than 3 continuation bytes"
// cut-off) rather than a cleaner BPE formulation: the point is to produce
// the same ids as the reference on every input.
//
//===----------------------------------------------------------------------===//

#include "Tokenizer.h"

#include "Error.h"
#include "Metadata.h"

#include <cstring>

namespace llmc::rt {

static int hexDigit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

std::unique_ptr<Tokenizer> Tokenizer::load(const std::string &path,
                                           int64_t vocabSize) {
  if (vocabSize < 1 || vocabSize > INT32_MAX)
    throw Error(path + ": invalid vocabulary size " +
                std::to_string(vocabSize));
  std::string data = readFile(path);
  size_t off = 0;
  auto readRaw = [&](void *dst, size_t n, const std::string &what) {
    if (data.size() - off < n)
      throw Error(path + ": truncated file: " + what + " ends past the end (" +
                  std::to_string(data.size()) + " bytes)");
    std::memcpy(dst, data.data() + off, n);
    off += n;
  };

  std::unique_ptr<Tokenizer> t(new Tokenizer());
  int32_t maxTokenLength;
  readRaw(&maxTokenLength, 4, "the header");
  if (maxTokenLength < 1)
    throw Error(path + ": invalid max_token_length " +
                std::to_string(maxTokenLength));
  t->pieces.resize(vocabSize);
  t->scores.resize(vocabSize);
  t->byteValue.assign(vocabSize, -1);
  t->ids.reserve(vocabSize);
  for (int32_t i = 0; i < vocabSize; ++i) {
    std::string what = "token " + std::to_string(i);
    int32_t length;
    readRaw(&t->scores[i], 4, what);
    readRaw(&length, 4, what);
    if (length < 0 || length > maxTokenLength)
      throw Error(path + ": token " + std::to_string(i) + " has length " +
                  std::to_string(length) + ", outside [0, max_token_length = " +
                  std::to_string(maxTokenLength) + "]");
    t->pieces[i].resize(length);
    readRaw(t->pieces[i].data(), length, what);
    t->ids.emplace(t->pieces[i], i); // keeps the first id of a duplicate
    const std::string &p = t->pieces[i];
    if (p.size() == 6 && p.compare(0, 3, "<0x") == 0 && p[5] == '>' &&
        hexDigit(p[3]) >= 0 && hexDigit(p[4]) >= 0)
      t->byteValue[i] =
          static_cast<int16_t>(hexDigit(p[3]) * 16 + hexDigit(p[4]));
  }
  // A longer file means the vocabulary size from the metadata is wrong, and
  // every id past it would be unreachable: better to say so now.
  if (off != data.size())
    throw Error(path + ": " + std::to_string(data.size() - off) +
                " unexpected bytes after " + std::to_string(vocabSize) +
                " tokens (does the vocabulary size match?)");
  for (int b = 0; b < 256; ++b)
    t->bytePieces[b] = static_cast<char>(b);
  return t;
}

int32_t Tokenizer::lookup(const std::string &s) const {
  auto it = ids.find(s);
  return it == ids.end() ? -1 : it->second;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text,
                                       bool addBos) const {
  std::vector<int32_t> tokens;
  tokens.reserve(text.size() + 3);
  if (addBos)
    tokens.push_back(kBos);
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
  return tokens;
}

std::string_view Tokenizer::decode(int32_t prevToken, int32_t token) const {
  std::string_view piece = pieces[token];
  if (prevToken == kBos && !piece.empty() && piece.front() == ' ')
    piece.remove_prefix(1);
  if (int b = byteValue[token]; b >= 0)
    return std::string_view(&bytePieces[b], 1);
  return piece;
}

} // namespace llmc::rt
