//===- Tokenizer.cpp - model tokenizers to llmc's tokenizer file ----------===//
//
// Conventions follow the tools that made the sources: llama.cpp's
// llama-vocab.cpp for GGUF defaults (BOS/EOS/add_bos by tokenizer model,
// the pre-tokenizer names), Hugging Face tokenizers for tokenizer.json, and
// sentencepiece_model.proto for tokenizer.model.
//
//===----------------------------------------------------------------------===//
#include "Import/Tokenizer.h"

#include "Import/GGUF.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>

using namespace llmc;
using llvm::StringRef;

static llvm::Error tokError(StringRef file, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 (file + ": " + message).str());
}

static bool isGGUFFile(StringRef path) {
  auto head = llvm::MemoryBuffer::getFileSlice(path, 4, 0);
  return head && (*head)->getBuffer() == "GGUF";
}

/// The first non-blank byte of a file, or 0.
static char firstByte(StringRef path) {
  auto head = llvm::MemoryBuffer::getFileSlice(path, 64, 0);
  if (!head)
    return 0;
  StringRef s = (*head)->getBuffer().ltrim(" \t\r\n");
  return s.empty() ? 0 : s.front();
}

bool llmc::isLlama2CTokenizer(StringRef path) {
  return path.ends_with(".bin") && !llvm::sys::fs::is_directory(path) &&
         !isGGUFFile(path) && firstByte(path) != '{';
}

/// "<0xNN>" -> NN, or -1.
static int bytePieceValue(StringRef p) {
  unsigned v;
  if (p.size() != 6 || !p.starts_with("<0x") || !p.ends_with(">") ||
      p.substr(3, 2).getAsInteger(16, v))
    return -1;
  return static_cast<int>(v);
}

//===----------------------------------------------------------------------===//
// Checking and writing
//===----------------------------------------------------------------------===//

llvm::Error llmc::verifyTokenizer(const TokenizerSpec &s, StringRef what) {
  size_t n = s.tokens.size();
  if (n == 0)
    return tokError(what, "the tokenizer has no tokens");
  if (n > static_cast<size_t>(INT32_MAX))
    return tokError(what, "the tokenizer has more than 2^31 - 1 tokens");
  if (s.kind != "spm" && s.kind != "bpe")
    return tokError(what, "unknown tokenizer kind '" + s.kind + "'");
  if (s.types.size() != n)
    return tokError(what, llvm::formatv("{0} token types for {1} tokens",
                                        s.types.size(), n));
  for (size_t i = 0; i < n; ++i) {
    if (!llvm::json::isUTF8(s.tokens[i]))
      return tokError(what, llvm::formatv("token {0} is not valid UTF-8", i));
    if (s.types[i] < 0 || s.types[i] > 6)
      return tokError(what, llvm::formatv("token {0} has type {1}, outside "
                                          "[0, 6]",
                                          i, s.types[i]));
  }
  for (auto [name, id] : {std::pair<const char *, int64_t>{"BOS", s.bos},
                          {"EOS", s.eos},
                          {"unknown-token", s.unk}})
    if (id < -1 || id >= static_cast<int64_t>(n))
      return tokError(what, llvm::formatv("the {0} id {1} is outside the "
                                          "vocabulary [0, {2})",
                                          name, id, n));
  if (s.addBos && s.bos < 0)
    return tokError(what, "BOS is to be added but the tokenizer has none");
  if (s.addEos && s.eos < 0)
    return tokError(what, "EOS is to be added but the tokenizer has none");
  if (s.normalizer != "none" && s.normalizer != "nfc")
    return tokError(what, "unknown normalizer '" + s.normalizer + "'");
  if (s.kind == "spm") {
    if (s.scores.size() != n)
      return tokError(
          what, llvm::formatv("{0} scores for {1} tokens", s.scores.size(), n));
    for (size_t i = 0; i < n; ++i)
      if (!std::isfinite(s.scores[i]))
        return tokError(what, llvm::formatv("token {0} has a score that is "
                                            "not a finite number",
                                            i));
    return llvm::Error::success();
  }
  if (s.preTokenizer != "gpt2" && s.preTokenizer != "qwen2" &&
      s.preTokenizer != "llama3" && s.preTokenizer != "default")
    return tokError(what, "unknown pre-tokenizer '" + s.preTokenizer + "'");
  llvm::StringMap<int32_t> ids;
  for (size_t i = 0; i < n; ++i)
    ids.try_emplace(s.tokens[i], static_cast<int32_t>(i));
  for (size_t i = 0; i < s.merges.size(); ++i) {
    StringRef m = s.merges[i];
    size_t space = m.size() > 1 ? m.find(' ', 1) : StringRef::npos;
    if (space == StringRef::npos)
      return tokError(what, llvm::formatv("merge {0} ('{1}') is not two "
                                          "tokens separated by a space",
                                          i, m));
    StringRef left = m.take_front(space), right = m.drop_front(space + 1);
    if (!ids.count(left) || !ids.count(right) ||
        !ids.count((left + right).str()))
      return tokError(what, llvm::formatv("merge {0} ('{1}') names a token "
                                          "that is not in the vocabulary",
                                          i, m));
  }
  return llvm::Error::success();
}

llvm::Error llmc::padTokenizer(TokenizerSpec &s, int64_t vocab,
                               StringRef what) {
  int64_t n = static_cast<int64_t>(s.tokens.size());
  if (n > vocab)
    return tokError(what, llvm::formatv("the tokenizer has {0} tokens but "
                                        "the model's vocabulary only {1}",
                                        n, vocab));
  for (int64_t i = n; i < vocab; ++i) {
    s.tokens.push_back(llvm::formatv("[PAD{0}]", i).str());
    s.types.push_back(static_cast<int32_t>(TokenType::Unused));
    if (s.kind == "spm")
      s.scores.push_back(0.0f);
  }
  return llvm::Error::success();
}

static void writeJsonString(llvm::raw_ostream &os, StringRef s) {
  os << '"';
  for (unsigned char c : s) {
    switch (c) {
    case '"':
      os << "\\\"";
      break;
    case '\\':
      os << "\\\\";
      break;
    case '\n':
      os << "\\n";
      break;
    case '\r':
      os << "\\r";
      break;
    case '\t':
      os << "\\t";
      break;
    case '\b':
      os << "\\b";
      break;
    case '\f':
      os << "\\f";
      break;
    default:
      if (c < 0x20 || c == 0x7F)
        os << llvm::formatv("\\u{0:x-4}", static_cast<unsigned>(c));
      else
        os << static_cast<char>(c);
    }
  }
  os << '"';
}

std::string llmc::tokenizerToJson(const TokenizerSpec &s) {
  std::string out;
  llvm::raw_string_ostream os(out);
  auto boolean = [](bool b) { return b ? "true" : "false"; };
  os << "{\n  \"format\": \"llmc-tokenizer\",\n  \"version\": 1,\n"
     << "  \"kind\": \"" << s.kind << "\",\n  \"source\": ";
  writeJsonString(os, s.source);
  os << ",\n  \"normalizer\": \"" << s.normalizer << "\",\n"
     << "  \"bos_id\": " << s.bos << ",\n  \"eos_id\": " << s.eos
     << ",\n  \"unk_id\": " << s.unk
     << ",\n  \"add_bos\": " << boolean(s.addBos)
     << ",\n  \"add_eos\": " << boolean(s.addEos) << ",\n";
  if (s.kind == "spm")
    os << "  \"add_space_prefix\": " << boolean(s.addSpacePrefix)
       << ",\n  \"remove_extra_whitespaces\": "
       << boolean(s.removeExtraWhitespaces)
       << ",\n  \"byte_fallback\": " << boolean(s.byteFallback) << ",\n";
  else
    os << "  \"pre_tokenizer\": \"" << s.preTokenizer
       << "\",\n  \"ignore_merges\": " << boolean(s.ignoreMerges) << ",\n";
  auto list = [&](const char *name, size_t n, size_t perLine, auto &&item) {
    os << "  \"" << name << "\": [";
    for (size_t i = 0; i < n; ++i) {
      os << (i ? "," : "") << (i % perLine == 0 ? "\n    " : " ");
      item(i);
    }
    os << "\n  ]";
  };
  list("tokens", s.tokens.size(), 1,
       [&](size_t i) { writeJsonString(os, s.tokens[i]); });
  os << ",\n";
  list("token_types", s.types.size(), 32, [&](size_t i) { os << s.types[i]; });
  if (s.kind == "spm") {
    os << ",\n";
    list("scores", s.scores.size(), 16, [&](size_t i) {
      // %.9g round-trips every float.
      os << llvm::format("%.9g", static_cast<double>(s.scores[i]));
    });
  } else {
    os << ",\n";
    list("merges", s.merges.size(), 1,
         [&](size_t i) { writeJsonString(os, s.merges[i]); });
  }
  os << "\n}\n";
  return out;
}

llvm::Error llmc::writeTokenizer(const TokenizerSpec &s, StringRef path) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return tokError(path, "cannot write: " + ec.message());
  os << tokenizerToJson(s);
  os.close();
  if (os.has_error())
    return tokError(path, "write failed: " + os.error().message());
  return llvm::Error::success();
}

/// After a source set the types of BOS/EOS/unk that a format leaves
/// implicit: marks them, and "<0xNN>" pieces, when every type is Normal.
static void inferTypes(TokenizerSpec &s) {
  for (int32_t t : s.types)
    if (t != static_cast<int32_t>(TokenType::Normal))
      return;
  for (size_t i = 0; i < s.tokens.size(); ++i)
    if (s.kind == "spm" && bytePieceValue(s.tokens[i]) >= 0)
      s.types[i] = static_cast<int32_t>(TokenType::Byte);
  for (int64_t id : {s.bos, s.eos})
    if (id >= 0)
      s.types[id] = static_cast<int32_t>(TokenType::Control);
  if (s.unk >= 0)
    s.types[s.unk] = static_cast<int32_t>(TokenType::Unknown);
}

//===----------------------------------------------------------------------===//
// GGUF
//===----------------------------------------------------------------------===//

/// llama.cpp's tokenizer.ggml.pre names -> (llmc pre-tokenizer,
/// ignore_merges, add_bos default). Only names whose regexes llmc's scanners
/// implement exactly are listed.
static std::optional<std::tuple<const char *, bool, bool>>
ggufPreTokenizer(StringRef pre) {
  using R = std::optional<std::tuple<const char *, bool, bool>>;
  return llvm::StringSwitch<R>(pre)
      .Cases({"", "default"}, R(std::make_tuple("default", false, false)))
      .Cases({"qwen2", "deepseek-r1-qwen", "megrez", "stablelm2", "hunyuan",
              "kormo", "f2llmv2", "solar-open", "grok-2"},
             R(std::make_tuple("qwen2", false, false)))
      .Cases({"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1",
              "pixtral", "midm-2.0", "lfm2", "jina-v5-nano"},
             R(std::make_tuple("llama3", true, true)))
      .Cases({"dbrx", "smaug-bpe", "chatglm-bpe", "glm4"},
             R(std::make_tuple("llama3", false, false)))
      .Cases({"gpt-2",   "gpt2",       "phi-2",        "jina-es",
              "jina-de", "gigachat",   "jina-v2-es",   "jina-v2-de",
              "a.x-4.0", "mellum",     "modern-bert",  "mpt",
              "olmo",    "jais",       "trillion",     "granite-docling",
              "exaone4", "jina-v1-en", "jina-v2-code", "roberta-bpe"},
             R(std::make_tuple("gpt2", false, false)))
      .Default(std::nullopt);
}

/// llama.cpp (llama_vocab::impl::load) also decides by text that some tokens
/// are control tokens, whatever the file says: end-of-generation and
/// fill-in-the-middle markers ("</s>" even where it is a normal piece of a
/// byte-level vocabulary), with a few model-specific exceptions. GGUF files
/// get the same so that they tokenize as llama.cpp does.
static void applyLlamaCppTypeOverrides(TokenizerSpec &s) {
  static const char *const kControl[] = {// end of generation / turn / message
                                         "<|eot_id|>",
                                         "<|im_end|>",
                                         "<|end|>",
                                         "<|return|>",
                                         "<|call|>",
                                         "<|flush|>",
                                         "<|calls|>",
                                         "<end_of_turn>",
                                         "<|endoftext|>",
                                         "</s>",
                                         "<|eom_id|>",
                                         "<EOT>",
                                         "_<EOT>",
                                         "[EOT]",
                                         "[EOS]",
                                         "<|end_of_text|>",
                                         "<end_of_utterance>",
                                         "<eos>",
                                         "<turn|>",
                                         "<|tool_response>",
                                         "<｜end▁of▁sentence｜>",
                                         "[e~["};
  // Fill-in-the-middle markers: llama.cpp takes the first of each list it
  // finds (in hash order; real vocabularies have one of each).
  static const std::vector<std::vector<const char *>> kFim = {
      {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>",
       "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>"},
      {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>",
       "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>"},
      {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>",
       "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>"},
      {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"},
      {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"},
      {"<|file_sep|>"},
      {"<|eom_id|>"}};
  llvm::StringMap<int64_t> ids;
  for (size_t i = 0; i < s.tokens.size(); ++i)
    ids.try_emplace(s.tokens[i], static_cast<int64_t>(i));
  auto set = [&](StringRef text, TokenType type) {
    auto it = ids.find(text);
    if (it != ids.end())
      s.types[it->second] = static_cast<int32_t>(type);
    return it != ids.end();
  };
  for (const char *t : kControl)
    set(t, TokenType::Control);
  for (const auto &group : kFim)
    for (const char *t : group)
      if (set(t, TokenType::Control))
        break;
  // gpt-oss renders these always.
  for (const char *t :
       {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"})
    set(t, TokenType::UserDefined);
  // o200k_harmony / solar-open: <|end|> is no end of generation there.
  if ((ids.count("<|return|>") && ids.count("<|call|>") &&
       ids.count("<|end|>")) ||
      (ids.count("<|calls|>") && ids.count("<|flush|>") &&
       ids.count("<|end|>")))
    set("<|end|>", TokenType::UserDefined);
  // gemma4 / paddleocr: </s> is a normal token there.
  if (ids.count("<|tool_response>") && ids.count("</s>"))
    set("</s>", TokenType::Normal);
}

llvm::Expected<TokenizerSpec> llmc::readGGUFTokenizer(StringRef path) {
  auto file = gguf::read(path);
  if (!file)
    return file.takeError();
  auto key = [&](StringRef k) {
    return file->get(("tokenizer.ggml." + k).str());
  };
  // The array of strings at tokenizer.ggml.<k>, required; `hint` says why
  // when it is missing.
  auto strings = [&](StringRef k, StringRef hint, bool nonEmpty,
                     std::vector<std::string> &out) -> llvm::Error {
    const gguf::Value *v = key(k);
    if (!v)
      return tokError(path, "missing metadata key 'tokenizer.ggml." + k + "'" +
                                hint);
    if (!v->asArray() || (nonEmpty && v->asArray()->empty()))
      return tokError(path, "metadata key 'tokenizer.ggml." + k + "' must be " +
                                (nonEmpty ? "a non-empty array of strings"
                                          : "an array of strings"));
    for (const gguf::Value &e : *v->asArray()) {
      if (!e.asString())
        return tokError(path, "tokenizer.ggml." + k + " holds a non-string");
      out.push_back(*e.asString());
    }
    return llvm::Error::success();
  };
  const gguf::Value *model = key("model");
  if (!model)
    return tokError(path, "missing metadata key 'tokenizer.ggml.model' (the "
                          "file has no tokenizer)");
  if (!model->asString())
    return tokError(path, "metadata key 'tokenizer.ggml.model' must be a "
                          "string");
  StringRef kind = *model->asString();
  TokenizerSpec s;
  if (kind == "llama") {
    s.kind = "spm";
  } else if (kind == "gpt2") {
    s.kind = "bpe";
  } else {
    return tokError(path, "tokenizer.ggml.model '" + kind +
                              "' is not supported (supported: llama, gpt2)");
  }
  s.source = (path + " (GGUF tokenizer.ggml.model = " + kind + ")").str();

  if (auto e = strings("tokens", "", /*nonEmpty=*/true, s.tokens))
    return std::move(e);
  size_t n = s.tokens.size();
  auto sameLength =
      [&](StringRef k,
          const gguf::Value *v) -> llvm::Expected<const gguf::Value::Array *> {
    if (!v)
      return nullptr;
    if (!v->asArray())
      return tokError(path, "metadata key 'tokenizer.ggml." + k +
                                "' must be an array");
    if (v->asArray()->size() != n)
      return tokError(path, llvm::formatv("tokenizer.ggml.{0} has {1} "
                                          "entries but tokenizer.ggml.tokens "
                                          "{2}",
                                          k, v->asArray()->size(), n));
    return v->asArray();
  };
  auto scores = sameLength("scores", key("scores"));
  if (!scores)
    return scores.takeError();
  auto types = sameLength("token_type", key("token_type"));
  if (!types)
    return types.takeError();
  s.types.assign(n, static_cast<int32_t>(TokenType::Normal));
  if (*types)
    for (size_t i = 0; i < n; ++i) {
      auto t = (**types)[i].asInt();
      if (!t)
        return tokError(path, "tokenizer.ggml.token_type holds a non-integer");
      // llama.cpp treats unknown type numbers as undefined (normal).
      s.types[i] = *t >= 1 && *t <= 6 ? static_cast<int32_t>(*t)
                                      : static_cast<int32_t>(TokenType::Normal);
    }
  if (s.kind == "spm") {
    s.scores.assign(n, 0.0f);
    if (*scores)
      for (size_t i = 0; i < n; ++i) {
        auto f = (**scores)[i].asFloat();
        if (!f || !std::isfinite(*f))
          return tokError(path, llvm::formatv("tokenizer.ggml.scores[{0}] is "
                                              "not a finite number",
                                              i));
        s.scores[i] = static_cast<float>(*f);
      }
  }

  // llama.cpp's defaults by tokenizer model, then the metadata's keys.
  bool spm = s.kind == "spm";
  s.bos = spm ? 1 : -1;
  s.eos = spm ? 2 : -1;
  s.unk = spm ? 0 : -1;
  s.addBos = spm;
  s.addSpacePrefix = spm;
  if (!spm) {
    const gguf::Value *pre = key("pre");
    std::string name =
        pre && pre->asString() ? *pre->asString() : std::string();
    auto mapped = ggufPreTokenizer(name);
    if (!mapped)
      return tokError(path, "tokenizer.ggml.pre '" + name +
                                "' is not supported (llmc implements the "
                                "qwen2, llama3, gpt2 and default "
                                "pre-tokenizers)");
    s.preTokenizer = std::get<0>(*mapped);
    s.ignoreMerges = std::get<1>(*mapped);
    s.addBos = std::get<2>(*mapped);
    if (auto e = strings("merges", " (a gpt2 tokenizer needs its BPE merges)",
                         /*nonEmpty=*/false, s.merges))
      return std::move(e);
  }
  for (auto [k, field] :
       {std::pair<StringRef, int64_t *>{"bos_token_id", &s.bos},
        {"eos_token_id", &s.eos},
        {"unknown_token_id", &s.unk}}) {
    if (*field >= static_cast<int64_t>(n))
      *field = -1; // a default outside the vocabulary
    const gguf::Value *v = key(k);
    if (!v)
      continue;
    auto id = v->asInt();
    if (!id || *id < 0 || *id >= static_cast<int64_t>(n))
      return tokError(path, llvm::formatv("tokenizer.ggml.{0} = {1} is "
                                          "outside the vocabulary [0, {2})",
                                          k, v->str(), n));
    *field = *id;
  }
  auto flag = [&](StringRef k, bool &out) -> llvm::Error {
    const gguf::Value *v = key(k);
    if (!v)
      return llvm::Error::success();
    const bool *b = std::get_if<bool>(&v->v);
    if (!b)
      return tokError(path, "metadata key 'tokenizer.ggml." + k +
                                "' must be a boolean");
    out = *b;
    return llvm::Error::success();
  };
  if (auto e = flag("add_bos_token", s.addBos))
    return std::move(e);
  if (auto e = flag("add_eos_token", s.addEos))
    return std::move(e);
  if (auto e = flag("add_space_prefix", s.addSpacePrefix))
    return std::move(e);
  if (auto e = flag("remove_extra_whitespaces", s.removeExtraWhitespaces))
    return std::move(e);
  if (!spm && s.addSpacePrefix)
    return tokError(path, "tokenizer.ggml.add_space_prefix is not supported "
                          "for gpt2 tokenizers");
  if (spm) {
    // llama.cpp falls back to <0xNN> tokens whenever the vocabulary has them.
    s.byteFallback = false;
    for (const std::string &t : s.tokens)
      s.byteFallback |= bytePieceValue(t) >= 0;
  }
  if (!*types)
    inferTypes(s);
  applyLlamaCppTypeOverrides(s);
  if (auto e = verifyTokenizer(s, path))
    return std::move(e);
  return s;
}

//===----------------------------------------------------------------------===//
// Hugging Face tokenizer.json
//===----------------------------------------------------------------------===//

namespace {
/// The pre-tokenizer regexes of tokenizer.json files llmc implements.
const char *const kQwen2Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char *const kLlama3Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char *const kGpt2Regex =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!"
    "\\S)|\\s+";

llvm::Expected<llvm::json::Value> readJsonFile(StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return tokError(path, "cannot read: " + buffer.getError().message());
  auto json = llvm::json::parse((*buffer)->getBuffer());
  if (!json)
    return tokError(path, "invalid JSON: " + llvm::toString(json.takeError()));
  return std::move(*json);
}

/// A token named in tokenizer_config.json: "text" or {"content": "text"}.
std::optional<std::string> configToken(const llvm::json::Value *v) {
  if (!v)
    return std::nullopt;
  if (auto s = v->getAsString())
    return s->str();
  if (const llvm::json::Object *o = v->getAsObject())
    if (auto s = o->getString("content"))
      return s->str();
  return std::nullopt;
}
} // namespace

llvm::Expected<TokenizerSpec> llmc::readHFTokenizer(StringRef path) {
  auto root = readJsonFile(path);
  if (!root)
    return root.takeError();
  const llvm::json::Object *obj = root->getAsObject();
  if (!obj)
    return tokError(path, "not a tokenizer.json (expected a JSON object)");
  const llvm::json::Object *model = obj->getObject("model");
  if (!model)
    return tokError(path, "not a Hugging Face tokenizer.json: no 'model' "
                          "object");
  auto type = model->getString("type");
  if (!type)
    return tokError(path, "model.type is missing");
  if (*type != "BPE")
    return tokError(path, "model type '" + *type +
                              "' is not supported (llmc reads byte-level "
                              "BPE tokenizer.json files; for SentencePiece "
                              "models use tokenizer.model)");
  for (const char *k : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (auto v = model->getString(k); v && !v->empty())
      return tokError(path, llvm::Twine("model.") + k + " is not supported ('" +
                                *v + "')");
  if (auto fb = model->getBoolean("byte_fallback"); fb && *fb)
    return tokError(path, "model.byte_fallback is not supported with a "
                          "byte-level BPE");
  if (auto d = model->getNumber("dropout"); d && *d != 0)
    return tokError(path, "model.dropout is not supported");

  TokenizerSpec s;
  s.kind = "bpe";
  s.source = (path + " (Hugging Face BPE)").str();
  s.ignoreMerges = model->getBoolean("ignore_merges").value_or(false);

  // Vocabulary and added tokens: ids must cover [0, n) exactly.
  const llvm::json::Object *vocab = model->getObject("vocab");
  if (!vocab)
    return tokError(path, "model.vocab must be an object");
  std::vector<std::string> tokens;
  std::vector<bool> have;
  std::vector<int32_t> types;
  auto place = [&](int64_t id, StringRef text, int32_t type) -> llvm::Error {
    if (id < 0 || id >= INT32_MAX)
      return tokError(path, llvm::formatv("token '{0}' has id {1}", text, id));
    if (static_cast<size_t>(id) >= tokens.size()) {
      tokens.resize(id + 1);
      have.resize(id + 1);
      types.resize(id + 1, static_cast<int32_t>(TokenType::Normal));
    }
    if (have[id] && tokens[id] != text)
      return tokError(path, llvm::formatv("id {0} is both '{1}' and '{2}'", id,
                                          tokens[id], text));
    tokens[id] = text.str();
    have[id] = true;
    types[id] = type;
    return llvm::Error::success();
  };
  for (const auto &kv : *vocab) {
    auto id = kv.second.getAsInteger();
    if (!id)
      return tokError(path, "model.vocab['" + kv.first.str() +
                                "'] is not an integer id");
    if (auto e = place(*id, kv.first, static_cast<int32_t>(TokenType::Normal)))
      return std::move(e);
  }
  if (const llvm::json::Array *added = obj->getArray("added_tokens")) {
    for (const llvm::json::Value &v : *added) {
      const llvm::json::Object *t = v.getAsObject();
      auto id = t ? t->getInteger("id") : std::nullopt;
      auto content = t ? t->getString("content") : std::nullopt;
      if (!id || !content)
        return tokError(path, "added_tokens entries need an integer 'id' and "
                              "a string 'content'");
      bool special = t->getBoolean("special").value_or(false);
      if (auto e =
              place(*id, *content,
                    static_cast<int32_t>(special ? TokenType::Control
                                                 : TokenType::UserDefined)))
        return std::move(e);
    }
  }
  for (size_t i = 0; i < tokens.size(); ++i)
    if (!have[i])
      return tokError(path, llvm::formatv("no token has id {0} (ids must be "
                                          "0 to {1})",
                                          i, tokens.size() - 1));
  s.tokens = std::move(tokens);
  s.types = std::move(types);

  const llvm::json::Array *merges = model->getArray("merges");
  if (!merges)
    return tokError(path, "model.merges is missing");
  for (const llvm::json::Value &m : *merges) {
    if (auto str = m.getAsString()) {
      s.merges.push_back(str->str());
      continue;
    }
    const llvm::json::Array *pair = m.getAsArray();
    std::optional<StringRef> a, b;
    if (pair && pair->size() == 2) {
      a = (*pair)[0].getAsString();
      b = (*pair)[1].getAsString();
    }
    if (!a || !b || a->empty() || a->contains(' ') || b->contains(' '))
      return tokError(path, "model.merges entries must be \"a b\" strings or "
                            "[a, b] pairs of tokens without spaces");
    s.merges.push_back((*a + " " + *b).str());
  }

  // Normalizer: none or NFC.
  const llvm::json::Value *norm = obj->get("normalizer");
  if (norm && !norm->getAsNull()) {
    const llvm::json::Object *n = norm->getAsObject();
    auto ntype = n ? n->getString("type") : std::nullopt;
    if (!ntype || *ntype != "NFC")
      return tokError(path, "normalizer " +
                                (ntype ? "'" + ntype->str() + "'"
                                       : std::string("(malformed)")) +
                                " is not supported (only NFC or none)");
    s.normalizer = "nfc";
  }

  // Pre-tokenizer: a byte-level one whose regex llmc implements.
  auto unsupportedPre = [&](const llvm::Twine &why) {
    return tokError(path, "pre_tokenizer: " + why +
                              " (llmc reads ByteLevel, or Split with the "
                              "GPT-2, Llama 3 or Qwen2 regex then ByteLevel)");
  };
  const llvm::json::Object *pre = obj->getObject("pre_tokenizer");
  if (!pre)
    return unsupportedPre("missing");
  auto byteLevel = [&](const llvm::json::Object &o,
                       bool regexUsed) -> llvm::Error {
    if (o.getBoolean("add_prefix_space").value_or(false))
      return unsupportedPre("ByteLevel add_prefix_space is not supported");
    if (o.getBoolean("use_regex").value_or(true) != regexUsed)
      return unsupportedPre(regexUsed ? "ByteLevel without its regex"
                                      : "ByteLevel splitting again after a "
                                        "Split");
    return llvm::Error::success();
  };
  auto preType = pre->getString("type");
  if (preType && *preType == "ByteLevel") {
    if (auto e = byteLevel(*pre, true))
      return std::move(e);
    s.preTokenizer = "gpt2";
  } else if (preType && *preType == "Sequence") {
    const llvm::json::Array *seq = pre->getArray("pretokenizers");
    if (!seq || seq->size() != 2 || !(*seq)[0].getAsObject() ||
        !(*seq)[1].getAsObject())
      return unsupportedPre("a Sequence other than [Split, ByteLevel]");
    const llvm::json::Object &split = *(*seq)[0].getAsObject();
    const llvm::json::Object &bl = *(*seq)[1].getAsObject();
    if (split.getString("type") != StringRef("Split") ||
        bl.getString("type") != StringRef("ByteLevel"))
      return unsupportedPre("a Sequence other than [Split, ByteLevel]");
    if (auto e = byteLevel(bl, false))
      return std::move(e);
    const llvm::json::Object *pattern = split.getObject("pattern");
    auto regex = pattern ? pattern->getString("Regex") : std::nullopt;
    if (!regex)
      return unsupportedPre("Split without a Regex pattern");
    if (split.getString("behavior") != StringRef("Isolated") ||
        split.getBoolean("invert").value_or(false))
      return unsupportedPre("Split other than Isolated");
    if (*regex == kQwen2Regex)
      s.preTokenizer = "qwen2";
    else if (*regex == kLlama3Regex)
      s.preTokenizer = "llama3";
    else if (*regex == kGpt2Regex)
      s.preTokenizer = "gpt2";
    else
      return unsupportedPre("the Split regex '" + *regex +
                            "' is not implemented");
  } else {
    return unsupportedPre("type '" + (preType ? *preType : StringRef("?")) +
                          "'");
  }

  // BOS/EOS: a TemplateProcessing post-processor that wraps the sequence in
  // special tokens adds them; tokenizer_config.json (next to the file) says
  // which tokens BOS and EOS are and may override whether they are added.
  auto idOf = [&](StringRef text) -> int64_t {
    for (size_t i = 0; i < s.tokens.size(); ++i)
      if (s.tokens[i] == text)
        return static_cast<int64_t>(i);
    return -1;
  };
  if (const llvm::json::Object *post = obj->getObject("post_processor");
      post && post->getString("type") == StringRef("TemplateProcessing")) {
    if (const llvm::json::Array *single = post->getArray("single");
        single && !single->empty()) {
      auto special =
          [](const llvm::json::Value &v) -> std::optional<StringRef> {
        const llvm::json::Object *o = v.getAsObject();
        const llvm::json::Object *st =
            o ? o->getObject("SpecialToken") : nullptr;
        return st ? st->getString("id") : std::nullopt;
      };
      if (auto first = special(single->front())) {
        s.bos = idOf(*first);
        s.addBos = s.bos >= 0;
      }
      if (single->size() > 1)
        if (auto last = special(single->back())) {
          s.eos = idOf(*last);
          s.addEos = s.eos >= 0;
        }
    }
  }
  llvm::SmallString<256> configPath(llvm::sys::path::parent_path(path));
  llvm::sys::path::append(configPath, "tokenizer_config.json");
  if (llvm::sys::fs::exists(configPath)) {
    auto config = readJsonFile(configPath);
    if (!config)
      return config.takeError();
    if (const llvm::json::Object *c = config->getAsObject()) {
      if (auto bos = configToken(c->get("bos_token")))
        s.bos = idOf(*bos);
      if (auto eos = configToken(c->get("eos_token")))
        s.eos = idOf(*eos);
      if (auto unk = configToken(c->get("unk_token")))
        s.unk = idOf(*unk);
      if (auto b = c->getBoolean("add_bos_token"))
        s.addBos = *b && s.bos >= 0;
      if (auto b = c->getBoolean("add_eos_token"))
        s.addEos = *b && s.eos >= 0;
    }
  }
  if (auto unk = model->getString("unk_token"); unk && s.unk < 0)
    s.unk = idOf(*unk);
  if (auto e = verifyTokenizer(s, path))
    return std::move(e);
  return s;
}

//===----------------------------------------------------------------------===//
// SentencePiece tokenizer.model (protobuf wire format)
//===----------------------------------------------------------------------===//

namespace {

/// A bounds-checked reader of protobuf's wire format: fields of one message.
class ProtoReader {
public:
  ProtoReader(StringRef data, StringRef path, std::string what)
      : data(data), path(path), what(std::move(what)) {}

  struct Field {
    uint32_t number;
    uint32_t wire;   ///< 0 varint, 1 fixed64, 2 bytes, 5 fixed32
    uint64_t value;  ///< varint / fixed values
    StringRef bytes; ///< wire type 2
  };

  bool done() const { return pos >= data.size(); }

  llvm::Expected<Field> next() {
    size_t at = pos;
    auto key = varint();
    if (!key)
      return key.takeError();
    Field f;
    f.number = static_cast<uint32_t>(*key >> 3);
    f.wire = static_cast<uint32_t>(*key & 7);
    if (f.number == 0 || *key >> 32)
      return fail(at, "invalid field number");
    switch (f.wire) {
    case 0: {
      auto v = varint();
      if (!v)
        return v.takeError();
      f.value = *v;
      break;
    }
    case 1:
    case 5: {
      size_t n = f.wire == 1 ? 8 : 4;
      if (data.size() - pos < n)
        return fail(pos, "truncated fixed-size field");
      f.value = 0;
      std::memcpy(&f.value, data.data() + pos, n); // little-endian host
      pos += n;
      break;
    }
    case 2: {
      auto n = varint();
      if (!n)
        return n.takeError();
      if (*n > data.size() - pos)
        return fail(pos, llvm::formatv("field {0} is {1} bytes long but only "
                                       "{2} remain",
                                       f.number, *n, data.size() - pos)
                             .str());
      f.bytes = data.substr(pos, *n);
      pos += *n;
      break;
    }
    default:
      return fail(at, llvm::formatv("field {0} has unsupported wire type {1}",
                                    f.number, f.wire)
                          .str());
    }
    return f;
  }

  /// An error at `offset` of this message.
  llvm::Error fail(size_t offset, const std::string &message) const {
    return tokError(path, "not a valid SentencePiece model: " + what +
                              " at byte " + std::to_string(offset) + ": " +
                              message);
  }

private:
  llvm::Expected<uint64_t> varint() {
    uint64_t v = 0;
    size_t at = pos;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos >= data.size())
        return fail(at, "truncated varint");
      uint8_t b = static_cast<uint8_t>(data[pos++]);
      v |= uint64_t(b & 0x7F) << shift;
      if (!(b & 0x80))
        return v;
    }
    return fail(at, "varint longer than 10 bytes");
  }

  StringRef data, path;
  std::string what;
  size_t pos = 0;
};

} // namespace

llvm::Expected<TokenizerSpec> llmc::parseSentencePiece(StringRef path,
                                                       StringRef data) {
  TokenizerSpec s;
  s.kind = "spm";
  s.source = (path + " (SentencePiece)").str();
  // Proto defaults (sentencepiece_model.proto).
  int64_t modelType = 1; // UNIGRAM
  bool byteFallback = false, treatWsAsSuffix = false;
  int64_t unkId = 0, bosId = 1, eosId = 2;
  std::string normName;
  StringRef charsmap;
  bool addDummyPrefix = true, removeExtraWs = true, escapeWs = true;

  ProtoReader top(data, path, "ModelProto");
  if (data.empty())
    return tokError(path, "not a valid SentencePiece model: the file is "
                          "empty");
  auto asInt32 = [](uint64_t v) {
    return static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(v)));
  };
  while (!top.done()) {
    auto f = top.next();
    if (!f)
      return f.takeError();
    if (f->number == 1 && f->wire == 2) { // pieces
      ProtoReader p(f->bytes, path, "piece " + std::to_string(s.tokens.size()));
      std::string piece;
      float score = 0;
      int64_t type = 1;
      bool havePiece = false;
      while (!p.done()) {
        auto g = p.next();
        if (!g)
          return g.takeError();
        if (g->number == 1 && g->wire == 2) {
          piece = g->bytes.str();
          havePiece = true;
        } else if (g->number == 2 && g->wire == 5) {
          uint32_t bits = static_cast<uint32_t>(g->value);
          std::memcpy(&score, &bits, 4);
        } else if (g->number == 3 && g->wire == 0) {
          type = static_cast<int64_t>(g->value);
        }
      }
      if (!havePiece || piece.empty())
        return tokError(path, llvm::formatv("not a valid SentencePiece model: "
                                            "piece {0} has no text",
                                            s.tokens.size()));
      if (type < 1 || type > 6)
        return tokError(path, llvm::formatv("not a valid SentencePiece model: "
                                            "piece {0} has type {1}",
                                            s.tokens.size(), type));
      s.tokens.push_back(std::move(piece));
      s.scores.push_back(score);
      s.types.push_back(static_cast<int32_t>(type));
    } else if (f->number == 2 && f->wire == 2) { // trainer_spec
      ProtoReader t(f->bytes, path, "trainer_spec");
      while (!t.done()) {
        auto g = t.next();
        if (!g)
          return g.takeError();
        if (g->wire != 0)
          continue;
        switch (g->number) {
        case 3:
          modelType = static_cast<int64_t>(g->value);
          break;
        case 24:
          treatWsAsSuffix = g->value != 0;
          break;
        case 35:
          byteFallback = g->value != 0;
          break;
        case 40:
          unkId = asInt32(g->value);
          break;
        case 41:
          bosId = asInt32(g->value);
          break;
        case 42:
          eosId = asInt32(g->value);
          break;
        default:
          break;
        }
      }
    } else if (f->number == 3 && f->wire == 2) { // normalizer_spec
      ProtoReader nr(f->bytes, path, "normalizer_spec");
      while (!nr.done()) {
        auto g = nr.next();
        if (!g)
          return g.takeError();
        if (g->number == 1 && g->wire == 2)
          normName = g->bytes.str();
        else if (g->number == 2 && g->wire == 2)
          charsmap = g->bytes;
        else if (g->number == 3 && g->wire == 0)
          addDummyPrefix = g->value != 0;
        else if (g->number == 4 && g->wire == 0)
          removeExtraWs = g->value != 0;
        else if (g->number == 5 && g->wire == 0)
          escapeWs = g->value != 0;
      }
    }
  }
  if (s.tokens.empty())
    return tokError(path, "not a valid SentencePiece model: it has no pieces");
  if (modelType != 2)
    return tokError(path, llvm::formatv("SentencePiece model type {0} ({1}) "
                                        "is not supported (only BPE models)",
                                        modelType,
                                        modelType == 1   ? "unigram"
                                        : modelType == 3 ? "word"
                                        : modelType == 4 ? "char"
                                                         : "unknown"));
  if (!charsmap.empty() && normName != "identity")
    return tokError(path, "SentencePiece normalization rule '" + normName +
                              "' is not supported (only identity)");
  if (treatWsAsSuffix)
    return tokError(path, "SentencePiece treat_whitespace_as_suffix is not "
                          "supported");
  if (!escapeWs)
    return tokError(path, "SentencePiece models without escape_whitespaces "
                          "are not supported");
  int64_t n = static_cast<int64_t>(s.tokens.size());
  auto id = [&](int64_t v, const char *name) -> llvm::Expected<int64_t> {
    if (v < -1 || v >= n)
      return tokError(path, llvm::formatv("trainer_spec.{0} = {1} is outside "
                                          "the vocabulary [0, {2})",
                                          name, v, n));
    return v;
  };
  auto u = id(unkId, "unk_id"), b = id(bosId, "bos_id"),
       e = id(eosId, "eos_id");
  if (!u)
    return u.takeError();
  if (!b)
    return b.takeError();
  if (!e)
    return e.takeError();
  s.unk = *u;
  s.bos = *b;
  s.eos = *e;
  // SentencePiece itself adds no BOS; the models that ship it (Llama,
  // Mistral) expect one, which is llama.cpp's default too.
  s.addBos = s.bos >= 0;
  s.addSpacePrefix = addDummyPrefix;
  s.removeExtraWhitespaces = removeExtraWs;
  s.byteFallback = byteFallback;
  // tokenizer_config.json next to the model may say otherwise.
  llvm::SmallString<256> configPath(llvm::sys::path::parent_path(path));
  llvm::sys::path::append(configPath, "tokenizer_config.json");
  if (llvm::sys::fs::exists(configPath)) {
    auto config = readJsonFile(configPath);
    if (!config)
      return config.takeError();
    if (const llvm::json::Object *c = config->getAsObject()) {
      if (auto v = c->getBoolean("add_bos_token"))
        s.addBos = *v && s.bos >= 0;
      if (auto v = c->getBoolean("add_eos_token"))
        s.addEos = *v && s.eos >= 0;
    }
  }
  if (auto err = verifyTokenizer(s, path))
    return std::move(err);
  return s;
}

llvm::Expected<TokenizerSpec> llmc::readSentencePiece(StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return tokError(path, "cannot read: " + buffer.getError().message());
  return parseSentencePiece(path, (*buffer)->getBuffer());
}

//===----------------------------------------------------------------------===//
// llmc tokenizer files (read back)
//===----------------------------------------------------------------------===//

static llvm::Expected<TokenizerSpec>
readLlmcTokenizer(StringRef path, const llvm::json::Object &o) {
  auto bad = [&](const llvm::Twine &field) {
    return tokError(path, "field '" + field + "' is missing or malformed");
  };
  TokenizerSpec s;
  if (o.getInteger("version") != 1)
    return bad("version");
  auto kind = o.getString("kind");
  if (!kind)
    return bad("kind");
  s.kind = kind->str();
  s.source = o.getString("source").value_or(path).str();
  s.normalizer = o.getString("normalizer").value_or("none").str();
  s.bos = o.getInteger("bos_id").value_or(-1);
  s.eos = o.getInteger("eos_id").value_or(-1);
  s.unk = o.getInteger("unk_id").value_or(-1);
  s.addBos = o.getBoolean("add_bos").value_or(false);
  s.addEos = o.getBoolean("add_eos").value_or(false);
  s.addSpacePrefix = o.getBoolean("add_space_prefix").value_or(true);
  s.removeExtraWhitespaces =
      o.getBoolean("remove_extra_whitespaces").value_or(false);
  s.byteFallback = o.getBoolean("byte_fallback").value_or(true);
  s.preTokenizer = o.getString("pre_tokenizer").value_or("").str();
  s.ignoreMerges = o.getBoolean("ignore_merges").value_or(false);
  const llvm::json::Array *tokens = o.getArray("tokens");
  if (!tokens)
    return bad("tokens");
  for (const auto &t : *tokens) {
    auto str = t.getAsString();
    if (!str)
      return bad("tokens");
    s.tokens.push_back(str->str());
  }
  s.types.assign(s.tokens.size(), static_cast<int32_t>(TokenType::Normal));
  if (const llvm::json::Array *types = o.getArray("token_types")) {
    s.types.clear();
    for (const auto &t : *types) {
      auto v = t.getAsInteger();
      if (!v)
        return bad("token_types");
      s.types.push_back(static_cast<int32_t>(*v));
    }
  }
  if (s.kind == "spm") {
    s.scores.assign(s.tokens.size(), 0.0f);
    if (const llvm::json::Array *scores = o.getArray("scores")) {
      s.scores.clear();
      for (const auto &v : *scores) {
        auto f = v.getAsNumber();
        if (!f)
          return bad("scores");
        s.scores.push_back(static_cast<float>(*f));
      }
    }
  } else if (const llvm::json::Array *merges = o.getArray("merges")) {
    for (const auto &m : *merges) {
      auto str = m.getAsString();
      if (!str)
        return bad("merges");
      s.merges.push_back(str->str());
    }
  } else {
    return bad("merges");
  }
  if (auto e = verifyTokenizer(s, path))
    return std::move(e);
  return s;
}

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

std::string llmc::findModelTokenizer(StringRef model) {
  if (llvm::sys::fs::is_directory(model)) {
    for (const char *name : {"tokenizer.model", "tokenizer.json"}) {
      llvm::SmallString<256> p(model);
      llvm::sys::path::append(p, name);
      if (llvm::sys::fs::exists(p))
        return p.str().str();
    }
    return "";
  }
  if (isGGUFFile(model)) {
    auto file = gguf::read(model);
    if (!file) {
      llvm::consumeError(file.takeError()); // importing the model reports it
      return "";
    }
    if (file->get("tokenizer.ggml.model"))
      return model.str();
  }
  return "";
}

llvm::Expected<TokenizerSpec> llmc::readTokenizer(StringRef path) {
  if (!llvm::sys::fs::exists(path))
    return tokError(path, "no such file or directory");
  if (llvm::sys::fs::is_directory(path)) {
    std::string found = findModelTokenizer(path);
    if (found.empty())
      return tokError(path, "no tokenizer.model or tokenizer.json in this "
                            "directory");
    return readTokenizer(found);
  }
  if (isGGUFFile(path))
    return readGGUFTokenizer(path);
  if (firstByte(path) == '{') {
    auto root = readJsonFile(path);
    if (!root)
      return root.takeError();
    const llvm::json::Object *o = root->getAsObject();
    if (o && o->getString("format") == StringRef("llmc-tokenizer"))
      return readLlmcTokenizer(path, *o);
    return readHFTokenizer(path);
  }
  if (isLlama2CTokenizer(path))
    return tokError(path, "a llama2.c tokenizer file, which is used as it is "
                          "(not converted)");
  return readSentencePiece(path);
}
