//===- TokenizeCommand.cpp - llmc tokenize ----------------------*- C++ -*-===//
//
//   llmc tokenize FILE [--text TEXT | --input STRINGS.json | --ids IDS.json]
//                 [--specials] [--add-special] [--decode] [--vocab-size N]
//                 [--output OUT.json]
//
// Tokenizes with exactly what an artifact would run: sources other than an
// artifact or a llama2.c file are converted into an llmc tokenizer file (as
// `llmc compile` does) and loaded by the runtime. Uses the runtime's C API
// only: this file is built with LLVM's flags (no exceptions).
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "Import/Tokenizer.h"

#include "llmc/runtime.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

using llvm::StringRef;

namespace {

const char *kTokenizeUsage =
    "usage: llmc tokenize FILE [--text TEXT | --input STRINGS.json | --ids "
    "IDS.json]\n"
    "                     [--specials] [--add-special] [--decode]\n"
    "                     [--vocab-size N] [--output OUT.json]\n"
    "\n"
    "Encodes (or decodes) with the tokenizer in FILE and prints JSON:\n"
    "  {\"tokenizer\": {kind, vocab_size, bos_id, eos_id, add_bos, add_eos},\n"
    "   \"ids\": [[...], ...], \"decoded\": [\"...\", ...]}\n"
    "FILE: a compiled artifact directory, a GGUF model, a Hugging Face\n"
    "tokenizer.json or model directory, a SentencePiece tokenizer.model, an\n"
    "llmc tokenizer file, or a llama2.c tokenizer.bin.\n"
    "  --text TEXT      encode one string\n"
    "  --input F        encode each string of the JSON list in F\n"
    "  --ids F          decode each id list of the JSON list of lists in F\n"
    "  --specials       recognize special tokens written in the text (encode)\n"
    "                   and write special tokens as text (decode)\n"
    "  --add-special    add BOS/EOS as the tokenizer's metadata says\n"
    "  --decode         also decode the ids again (\"decoded\")\n"
    "  --vocab-size N   tokens in a llama2.c tokenizer.bin (default: all)\n"
    "  --output F       write the JSON to F instead of stdout\n";

int fail(const llvm::Twine &message) {
  llvm::outs().flush();
  llvm::errs() << "llmc: error: " << message << "\n";
  return 1;
}

/// Takes a C API error message.
std::string takeError(char *error) {
  std::string message = error ? error : "unknown error";
  llmc_string_free(error);
  return message;
}

/// Reads a JSON file; `what` describes the expected contents.
llvm::Expected<llvm::json::Value> readJson(StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return llvm::createStringError(
        path + ": cannot read: " + buffer.getError().message());
  auto v = llvm::json::parse((*buffer)->getBuffer());
  if (!v)
    return llvm::createStringError(
        path + ": invalid JSON: " + llvm::toString(v.takeError()));
  return std::move(*v);
}

struct Options {
  std::string file, text, input, idsFile, output;
  bool haveText = false, specials = false, addSpecial = false, decode = false;
  int64_t vocabSize = 0;
};

/// Owns the runtime objects.
struct Loaded {
  llmc_model *model = nullptr;
  llmc_tokenizer *tokenizer = nullptr;
  ~Loaded() {
    llmc_tokenizer_close(tokenizer);
    llmc_model_close(model);
  }
};

/// Opens the tokenizer of `o.file`; returns an error message or "".
std::string open(const Options &o, Loaded &l) {
  char *error = nullptr;
  llvm::SmallString<256> meta(o.file);
  llvm::sys::path::append(meta, "metadata.json");
  if (llvm::sys::fs::is_directory(o.file) && llvm::sys::fs::exists(meta)) {
    if (llmc_model_open(o.file.c_str(), &l.model, &error) ||
        llmc_tokenizer_open_for_model(l.model, &l.tokenizer, &error))
      return takeError(error);
    return "";
  }
  if (!llvm::sys::fs::exists(o.file))
    return o.file + ": no such file or directory";
  if (llmc::isLlama2CTokenizer(o.file)) {
    // --vocab-size 0 (the default): every token the file holds.
    if (llmc_tokenizer_open(o.file.c_str(), o.vocabSize, &l.tokenizer, &error))
      return takeError(error);
    return "";
  }
  auto spec = llmc::readTokenizer(o.file);
  if (!spec)
    return llvm::toString(spec.takeError());
  llvm::SmallString<128> tmp;
  if (auto ec =
          llvm::sys::fs::createTemporaryFile("llmc-tokenizer", "json", tmp))
    return "cannot create a temporary file: " + ec.message();
  llvm::Error e = llmc::writeTokenizer(*spec, tmp);
  std::string message;
  if (e)
    message = llvm::toString(std::move(e));
  else if (llmc_tokenizer_open(tmp.c_str(), 0, &l.tokenizer, &error))
    message = takeError(error);
  llvm::sys::fs::remove(tmp);
  return message;
}

} // namespace

int llmcTokenizeMain(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    StringRef arg(argv[i]);
    auto value = [&](std::string &out) {
      if (i + 1 >= argc)
        return false;
      out = argv[++i];
      return true;
    };
    std::string number;
    if (arg == "-h" || arg == "--help") {
      llvm::outs() << kTokenizeUsage;
      return 0;
    } else if (arg == "--text") {
      if (!value(o.text))
        return fail("option --text needs a value");
      o.haveText = true;
    } else if (arg == "--input") {
      if (!value(o.input))
        return fail("option --input needs a value");
    } else if (arg == "--ids") {
      if (!value(o.idsFile))
        return fail("option --ids needs a value");
    } else if (arg == "--output" || arg == "-o") {
      if (!value(o.output))
        return fail("option --output needs a value");
    } else if (arg == "--vocab-size") {
      if (!value(number) || StringRef(number).getAsInteger(10, o.vocabSize) ||
          o.vocabSize <= 0)
        return fail("--vocab-size: expected a positive integer");
    } else if (arg == "--specials") {
      o.specials = true;
    } else if (arg == "--add-special") {
      o.addSpecial = true;
    } else if (arg == "--decode") {
      o.decode = true;
    } else if (arg.starts_with("-") && arg != "-") {
      return fail("unknown option '" + arg + "' for llmc tokenize");
    } else if (o.file.empty()) {
      o.file = arg.str();
    } else {
      return fail("llmc tokenize: unexpected argument '" + arg + "'");
    }
  }
  if (o.file.empty())
    return fail("llmc tokenize: no tokenizer or model given");
  if (int(o.haveText) + int(!o.input.empty()) + int(!o.idsFile.empty()) != 1)
    return fail("llmc tokenize: give exactly one of --text, --input, --ids");

  // The inputs, checked before loading anything big.
  std::vector<std::string> strings;
  std::vector<std::vector<int64_t>> idLists;
  if (o.haveText) {
    strings.push_back(o.text);
  } else if (!o.input.empty()) {
    auto v = readJson(o.input);
    if (!v)
      return fail(llvm::toString(v.takeError()));
    const llvm::json::Array *a = v->getAsArray();
    if (!a)
      return fail(o.input + ": expected a JSON list of strings");
    for (const llvm::json::Value &s : *a) {
      auto str = s.getAsString();
      if (!str)
        return fail(o.input + ": expected a JSON list of strings");
      strings.push_back(str->str());
    }
  } else {
    auto v = readJson(o.idsFile);
    if (!v)
      return fail(llvm::toString(v.takeError()));
    const llvm::json::Array *a = v->getAsArray();
    if (!a)
      return fail(o.idsFile + ": expected a JSON list of lists of token ids");
    for (const llvm::json::Value &l : *a) {
      const llvm::json::Array *ids = l.getAsArray();
      if (!ids)
        return fail(o.idsFile + ": expected a JSON list of lists of token ids");
      idLists.emplace_back();
      for (const llvm::json::Value &id : *ids) {
        auto i = id.getAsInteger();
        if (!i)
          return fail(o.idsFile +
                      ": expected a JSON list of lists of token ids");
        idLists.back().push_back(*i);
      }
    }
  }

  Loaded l;
  if (std::string error = open(o, l); !error.empty())
    return fail(error);
  const llmc_tokenizer_info *info = llmc_tokenizer_get_info(l.tokenizer);

  unsigned flags = (o.specials ? LLMC_TOKENIZE_PARSE_SPECIAL : 0u) |
                   (o.addSpecial ? LLMC_TOKENIZE_ADD_SPECIAL : 0u);
  char *error = nullptr;
  for (const std::string &s : strings) {
    std::vector<int32_t> ids(s.size() + 3);
    size_t n = 0;
    int status = llmc_tokenizer_tokenize(l.tokenizer, s.data(), s.size(), flags,
                                         ids.data(), ids.size(), &n, &error);
    if (status && n > ids.size()) {
      llmc_string_free(error);
      ids.resize(n);
      status = llmc_tokenizer_tokenize(l.tokenizer, s.data(), s.size(), flags,
                                       ids.data(), ids.size(), &n, &error);
    }
    if (status)
      return fail(takeError(error));
    idLists.emplace_back(ids.begin(), ids.begin() + n);
  }
  bool decode = o.decode || !o.idsFile.empty();
  std::vector<std::string> decoded;
  if (decode) {
    for (size_t k = 0; k < idLists.size(); ++k) {
      std::vector<int32_t> ids;
      for (size_t j = 0; j < idLists[k].size(); ++j) {
        int64_t id = idLists[k][j];
        if (id < 0 || id >= info->vocab_size)
          return fail(llvm::formatv("{0}: list {1}, entry {2}: token id {3} "
                                    "is outside the vocabulary [0, {4})",
                                    o.idsFile.empty() ? o.file : o.idsFile, k,
                                    j, id, info->vocab_size));
        ids.push_back(static_cast<int32_t>(id));
      }
      std::string text(ids.size() * 8 + 16, '\0');
      size_t n = 0;
      unsigned dflags = o.specials ? LLMC_DETOKENIZE_RENDER_SPECIAL : 0u;
      int status =
          llmc_tokenizer_detokenize(l.tokenizer, ids.data(), ids.size(), dflags,
                                    text.data(), text.size(), &n, &error);
      if (status && n > text.size()) {
        llmc_string_free(error);
        text.resize(n);
        status = llmc_tokenizer_detokenize(l.tokenizer, ids.data(), ids.size(),
                                           dflags, text.data(), text.size(), &n,
                                           &error);
      }
      if (status)
        return fail(takeError(error));
      text.resize(n);
      decoded.push_back(std::move(text));
    }
  }

  std::string out;
  llvm::raw_string_ostream os(out);
  {
    llvm::json::OStream j(os);
    j.object([&] {
      j.attributeObject("tokenizer", [&] {
        j.attribute("kind", info->kind);
        j.attribute("vocab_size", info->vocab_size);
        j.attribute("bos_id", info->bos_id);
        j.attribute("eos_id", info->eos_id);
        j.attribute("add_bos", info->add_bos != 0);
        j.attribute("add_eos", info->add_eos != 0);
      });
      j.attributeArray("ids", [&] {
        for (const auto &ids : idLists)
          j.array([&] {
            for (int64_t id : ids)
              j.value(id);
          });
      });
      if (decode)
        j.attributeArray("decoded", [&] {
          // Invalid UTF-8 (a sequence cut inside a character) is shown with
          // U+FFFD replacement characters.
          for (const std::string &d : decoded)
            j.value(llvm::json::isUTF8(d) ? d : llvm::json::fixUTF8(d));
        });
    });
  }
  os << "\n";
  if (o.output.empty()) {
    llvm::outs() << out;
    return 0;
  }
  std::error_code ec;
  llvm::raw_fd_ostream f(o.output, ec, llvm::sys::fs::OF_None);
  if (ec)
    return fail(o.output + ": cannot write: " + ec.message());
  f << out;
  f.close();
  if (f.has_error())
    return fail(o.output + ": write failed: " + f.error().message());
  return 0;
}
