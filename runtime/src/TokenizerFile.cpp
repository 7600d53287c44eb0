//===- TokenizerFile.cpp - Reading llmc tokenizer files ---------*- C++ -*-===//
//
// The llmc tokenizer file (docs/artifact.md) is JSON, written by the
// compiler from GGUF metadata, a Hugging Face tokenizer.json or a
// SentencePiece model. Every field is checked here, once, and every error
// names the file and the field.
//
//===----------------------------------------------------------------------===//

#include "Error.h"
#include "Json.h"
#include "TokenizerModels.h"
#include "Unicode.h"

#include <cmath>

namespace llmc::rt {

namespace {

class Fields {
public:
  explicit Fields(const std::string &path) : path(path) {}

  [[noreturn]] void fail(const std::string &field,
                         const std::string &message) const {
    throw Error(path + ": field '" + field + "' " + message);
  }

  const JsonValue *find(const JsonValue &root, const char *name) const {
    return root.find(name);
  }
  const JsonValue &get(const JsonValue &root, const char *name) const {
    const JsonValue *v = root.find(name);
    if (!v)
      fail(name, "is missing");
    return *v;
  }
  std::string getString(const JsonValue &root, const char *name) const {
    const JsonValue &v = get(root, name);
    if (!v.isString())
      fail(name, "must be a string");
    return v.asString();
  }
  bool getBool(const JsonValue &root, const char *name, bool dflt) const {
    const JsonValue *v = root.find(name);
    if (!v)
      return dflt;
    if (!v->isBool())
      fail(name, "must be true or false");
    return v->asBool();
  }
  /// An id in [-1, vocab) (-1: none); absent means -1.
  int32_t getId(const JsonValue &root, const char *name, int64_t vocab) const {
    const JsonValue *v = root.find(name);
    if (!v || v->isNull())
      return -1;
    if (!v->isInteger() || v->asInteger() < -1 || v->asInteger() >= vocab)
      fail(name,
           "must be a token id in [0, " + std::to_string(vocab) + ") or -1");
    return static_cast<int32_t>(v->asInteger());
  }
  const std::vector<JsonValue> &getArray(const JsonValue &root,
                                         const char *name,
                                         size_t expectSize = 0) const {
    const JsonValue &v = get(root, name);
    if (!v.isArray())
      fail(name, "must be an array");
    if (expectSize && v.asArray().size() != expectSize)
      fail(name, "has " + std::to_string(v.asArray().size()) +
                     " entries but there are " + std::to_string(expectSize) +
                     " tokens");
    return v.asArray();
  }
  static std::string at(const char *name, size_t i) {
    return std::string(name) + "[" + std::to_string(i) + "]";
  }

private:
  const std::string &path;
};

} // namespace

std::unique_ptr<Tokenizer> Tokenizer::parseLlmc(std::string_view json,
                                                const std::string &path) {
  JsonValue root;
  try {
    root = parseJson(json);
  } catch (const JsonError &e) {
    throw Error(path + ": " + e.what());
  }
  Fields f(path);
  if (!root.isObject())
    throw Error(path + ": not an llmc tokenizer file (expected a JSON object)");
  std::string format = f.getString(root, "format");
  if (format != "llmc-tokenizer")
    f.fail("format", "is \"" + format + "\", expected \"llmc-tokenizer\"");
  const JsonValue &version = f.get(root, "version");
  if (!version.isInteger() || version.asInteger() != 1)
    f.fail("version", "must be 1 (the only version this runtime reads)");
  std::string kind = f.getString(root, "kind");
  if (kind != "spm" && kind != "bpe")
    f.fail("kind", "is \"" + kind + "\", expected \"spm\" or \"bpe\"");

  LlmcTokenizerConfig config;
  const std::vector<JsonValue> &tokens = f.getArray(root, "tokens");
  if (tokens.empty())
    f.fail("tokens", "is empty");
  if (tokens.size() > static_cast<size_t>(INT32_MAX))
    f.fail("tokens", "has more than 2^31 - 1 entries");
  int64_t vocab = static_cast<int64_t>(tokens.size());
  config.pieces.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (!tokens[i].isString())
      f.fail(Fields::at("tokens", i), "must be a string");
    config.pieces.push_back(tokens[i].asString());
  }
  config.types.assign(tokens.size(), TokenType::Normal);
  if (f.find(root, "token_types")) {
    const auto &types = f.getArray(root, "token_types", tokens.size());
    for (size_t i = 0; i < types.size(); ++i) {
      if (!types[i].isInteger() || types[i].asInteger() < 0 ||
          types[i].asInteger() > 6)
        f.fail(Fields::at("token_types", i), "must be an integer in [0, 6]");
      config.types[i] = static_cast<TokenType>(types[i].asInteger());
    }
  }
  config.bos = f.getId(root, "bos_id", vocab);
  config.eos = f.getId(root, "eos_id", vocab);
  config.unk = f.getId(root, "unk_id", vocab);
  config.addBos = f.getBool(root, "add_bos", false);
  config.addEos = f.getBool(root, "add_eos", false);
  if (config.addBos && config.bos < 0)
    f.fail("add_bos", "is true but there is no bos_id");
  if (config.addEos && config.eos < 0)
    f.fail("add_eos", "is true but there is no eos_id");
  if (const JsonValue *n = f.find(root, "normalizer"); n && !n->isNull()) {
    if (!n->isString() || (n->asString() != "none" && n->asString() != "nfc"))
      f.fail("normalizer", "must be \"none\" or \"nfc\"");
    config.nfc = n->asString() == "nfc";
  }

  if (kind == "spm") {
    SpmTokenizer::Options o;
    o.scores.assign(tokens.size(), 0.0f);
    if (f.find(root, "scores")) {
      const auto &scores = f.getArray(root, "scores", tokens.size());
      for (size_t i = 0; i < scores.size(); ++i) {
        if (!scores[i].isNumber() || !std::isfinite(scores[i].asDouble()))
          f.fail(Fields::at("scores", i), "must be a finite number");
        o.scores[i] = static_cast<float>(scores[i].asDouble());
      }
    }
    o.addSpacePrefix = f.getBool(root, "add_space_prefix", true);
    o.removeExtraWhitespaces =
        f.getBool(root, "remove_extra_whitespaces", false);
    o.byteFallback = f.getBool(root, "byte_fallback", true);
    return std::make_unique<SpmTokenizer>(std::move(config), std::move(o));
  }

  BpeTokenizer::Options o;
  std::string pre = f.getString(root, "pre_tokenizer");
  auto p = parsePreTokenizer(pre);
  if (!p)
    f.fail("pre_tokenizer", "is \"" + pre +
                                "\", expected \"gpt2\", \"qwen2\", "
                                "\"llama3\" or \"default\"");
  o.preTokenizer = *p;
  o.ignoreMerges = f.getBool(root, "ignore_merges", false);
  // Merges "left right" (split at the first space after the first byte, as
  // llama.cpp does); both sides and their concatenation must be tokens.
  std::unordered_map<std::string_view, int32_t> index;
  index.reserve(config.pieces.size());
  for (size_t i = 0; i < config.pieces.size(); ++i)
    index.emplace(config.pieces[i], static_cast<int32_t>(i));
  auto id = [&](std::string_view s) {
    auto it = index.find(s);
    return it == index.end() ? -1 : it->second;
  };
  const auto &merges = f.getArray(root, "merges");
  o.merges.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    if (!merges[i].isString())
      f.fail(Fields::at("merges", i), "must be a string \"left right\"");
    const std::string &m = merges[i].asString();
    size_t space = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
    if (space == std::string::npos)
      f.fail(Fields::at("merges", i),
             "(\"" + m + "\") must be two tokens separated by a space");
    std::string_view left(m.data(), space),
        right(m.data() + space + 1, m.size() - space - 1);
    int32_t a = id(left), b = id(right);
    if (a < 0 || b < 0 || id(std::string(left) + std::string(right)) < 0)
      f.fail(Fields::at("merges", i),
             "(\"" + m + "\") names a token that is not in the vocabulary");
    o.merges.emplace_back(a, b);
  }
  return std::make_unique<BpeTokenizer>(std::move(config), std::move(o));
}

} // namespace llmc::rt
