//===- HuggingFace.cpp - Hugging Face config.json + safetensors -----------===//
#include "Import/Import.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <set>

using namespace llmc;
namespace json = llvm::json;

/// The safetensors header is JSON; cap it so that a corrupt length field
/// cannot make us allocate gigabytes.
static constexpr uint64_t kMaxHeaderBytes = 100u << 20;

llvm::Error llmc::readSafetensors(llvm::StringRef path, WeightTable &weights) {
  // Mapped, not read: only the header is touched.
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return fileError(path, "cannot read: " + buffer.getError().message());
  return parseSafetensors(path, (*buffer)->getBuffer(), weights);
}

llvm::Error llmc::parseSafetensors(llvm::StringRef path, llvm::StringRef data,
                                   WeightTable &weights) {
  uint64_t fileSize = data.size();
  if (fileSize < 8)
    return fileError(path, "truncated safetensors file (no header length)");
  uint64_t headerLen = 0;
  std::memcpy(&headerLen, data.data(), 8);
  if (headerLen > fileSize - 8 || headerLen > kMaxHeaderBytes)
    return fileError(path, llvm::formatv("safetensors header length {0} "
                                         "exceeds the file size {1}",
                                         headerLen, fileSize));
  auto header = json::parse(data.substr(8, headerLen));
  if (!header)
    return fileError(path, "safetensors header is not valid JSON: " +
                               llvm::toString(header.takeError()));
  const json::Object *obj = header->getAsObject();
  if (!obj)
    return fileError(path, "safetensors header is not a JSON object");
  uint64_t dataStart = 8 + headerLen, dataSize = fileSize - dataStart;
  for (const auto &[key, value] : *obj) {
    std::string name = key.str();
    if (name == "__metadata__")
      continue;
    const json::Object *t = value.getAsObject();
    auto bad = [&](const llvm::Twine &what) {
      return fileError(path, "tensor '" + name + "': " + what);
    };
    if (!t)
      return bad("entry is not an object");
    auto dtype = t->getString("dtype");
    const json::Array *shape = t->getArray("shape");
    const json::Array *offsets = t->getArray("data_offsets");
    if (!dtype || !shape || !offsets || offsets->size() != 2)
      return bad("needs dtype, shape and two data_offsets");
    TensorSource src;
    src.file = path.str();
    uint64_t eltBytes;
    if (*dtype == "F32") {
      src.dtype = DType::F32;
      eltBytes = 4;
    } else if (*dtype == "F16") {
      src.dtype = DType::F16;
      eltBytes = 2;
    } else if (*dtype == "BF16") {
      src.dtype = DType::BF16;
      eltBytes = 2;
    } else {
      return bad("unsupported dtype '" + *dtype +
                 "' (supported: F32, F16, BF16)");
    }
    uint64_t numel = 1;
    for (const json::Value &d : *shape) {
      auto v = d.getAsInteger();
      if (!v || *v < 0 || *v > (int64_t(1) << 40))
        return bad("invalid shape");
      src.shape.push_back(*v);
      numel *= static_cast<uint64_t>(*v);
    }
    auto begin = (*offsets)[0].getAsInteger(), end = (*offsets)[1].getAsInteger();
    if (!begin || !end || *begin < 0 || *end < *begin)
      return bad("invalid data_offsets");
    if (static_cast<uint64_t>(*end) > dataSize)
      return bad(llvm::formatv("data_offsets [{0}, {1}] run past the end of "
                               "the data ({2} bytes)",
                               *begin, *end, dataSize));
    if (static_cast<uint64_t>(*end - *begin) != numel * eltBytes)
      return bad(llvm::formatv("data_offsets span {0} bytes but the shape "
                               "needs {1}",
                               *end - *begin, numel * eltBytes));
    src.offset = dataStart + static_cast<uint64_t>(*begin);
    weights[name] = std::move(src);
  }
  return llvm::Error::success();
}

static llvm::Expected<json::Value> readJSON(llvm::StringRef path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    return fileError(path, "cannot read: " + buf.getError().message());
  auto value = json::parse((*buf)->getBuffer());
  if (!value)
    return fileError(path,
                     "malformed JSON: " + llvm::toString(value.takeError()));
  return std::move(*value);
}

llvm::Error llmc::readHuggingFace(llvm::StringRef dir, DecoderConfig &c,
                                  WeightTable &weights) {
  llvm::SmallString<256> configPath(dir);
  llvm::sys::path::append(configPath, "config.json");
  auto config = readJSON(configPath);
  if (!config)
    return config.takeError();
  const json::Object *cfg = config->getAsObject();
  if (!cfg)
    return fileError(configPath, "expected a JSON object");

  std::string arch;
  if (const json::Array *archs = cfg->getArray("architectures"))
    if (!archs->empty())
      if (auto a = (*archs)[0].getAsString())
        arch = a->str();
  if (arch == "LlamaForCausalLM")
    c.arch = "llama";
  else if (arch == "Qwen2ForCausalLM")
    c.arch = "qwen2";
  else if (arch == "Qwen3ForCausalLM")
    c.arch = "qwen3";
  else
    return fileError(configPath,
                     "unsupported architecture '" + arch +
                         "' (supported: LlamaForCausalLM, Qwen2ForCausalLM, "
                         "Qwen3ForCausalLM)");

  auto getInt = [&](llvm::StringRef key, int64_t &out,
                    std::optional<int64_t> dflt) -> llvm::Error {
    const json::Value *v = cfg->get(key);
    if (!v || v->kind() == json::Value::Null) {
      if (!dflt)
        return fileError(configPath, "missing key '" + key + "'");
      out = *dflt;
      return llvm::Error::success();
    }
    auto i = v->getAsInteger();
    if (!i)
      return fileError(configPath, "key '" + key + "' must be an integer");
    out = *i;
    return llvm::Error::success();
  };
  auto getNum = [&](llvm::StringRef key, double dflt) -> llvm::Expected<double> {
    const json::Value *v = cfg->get(key);
    if (!v || v->kind() == json::Value::Null)
      return dflt;
    auto d = v->getAsNumber();
    if (!d)
      return fileError(configPath, "key '" + key + "' must be a number");
    return *d;
  };
  if (auto e = getInt("hidden_size", c.dim, std::nullopt))
    return e;
  if (auto e = getInt("intermediate_size", c.hiddenDim, std::nullopt))
    return e;
  if (auto e = getInt("num_hidden_layers", c.layers, std::nullopt))
    return e;
  if (auto e = getInt("num_attention_heads", c.heads, std::nullopt))
    return e;
  if (auto e = getInt("num_key_value_heads", c.kvHeads, c.heads))
    return e;
  if (c.heads <= 0 || c.dim <= 0)
    return fileError(configPath, "hidden_size and num_attention_heads must be "
                                 "positive");
  if (auto e = getInt("head_dim", c.headDim, c.dim / c.heads))
    return e;
  if (auto e = getInt("vocab_size", c.vocab, std::nullopt))
    return e;
  if (auto e = getInt("max_position_embeddings", c.maxSeq, 2048))
    return e;
  auto theta = getNum("rope_theta", 10000.0);
  if (!theta)
    return theta.takeError();
  c.ropeTheta = *theta;
  auto eps = getNum("rms_norm_eps", 1e-6);
  if (!eps)
    return eps.takeError();
  c.rmsEps = static_cast<float>(*eps);
  if (const json::Value *rs = cfg->get("rope_scaling");
      rs && rs->kind() != json::Value::Null) {
    const json::Object *o = rs->getAsObject();
    std::optional<llvm::StringRef> type =
        o ? (o->getString("rope_type") ? o->getString("rope_type")
                                       : o->getString("type"))
          : std::nullopt;
    if (!type || *type != "default")
      return fileError(configPath, "unsupported rope_scaling (only the "
                                   "default RoPE is implemented)");
  }
  c.tiedEmbeddings = cfg->getBoolean("tie_word_embeddings").value_or(false);
  c.ropeInterleaved = false;
  c.qkvBias = c.arch == "qwen2" ||
              cfg->getBoolean("attention_bias").value_or(false);
  c.qkNorm = c.arch == "qwen3";
  if (auto e = getInt("bos_token_id", c.bos, -1))
    return e;
  c.eos.clear();
  if (const json::Value *eos = cfg->get("eos_token_id")) {
    if (auto i = eos->getAsInteger())
      c.eos.push_back(*i);
    else if (const json::Array *a = eos->getAsArray())
      for (const json::Value &v : *a)
        if (auto i = v.getAsInteger())
          c.eos.push_back(*i);
  }

  // Weights: a sharded index, or one model.safetensors.
  llvm::SmallString<256> index(dir), single(dir);
  llvm::sys::path::append(index, "model.safetensors.index.json");
  llvm::sys::path::append(single, "model.safetensors");
  if (llvm::sys::fs::exists(index)) {
    auto idx = readJSON(index);
    if (!idx)
      return idx.takeError();
    const json::Object *map =
        idx->getAsObject() ? idx->getAsObject()->getObject("weight_map")
                           : nullptr;
    if (!map)
      return fileError(index, "missing 'weight_map'");
    std::set<std::string> files;
    for (const auto &[name, file] : *map) {
      auto f = file.getAsString();
      if (!f)
        return fileError(index, "weight_map entry '" + name.str() +
                                    "' is not a file name");
      files.insert(f->str());
    }
    for (const std::string &f : files) {
      llvm::SmallString<256> shard(dir);
      llvm::sys::path::append(shard, f);
      if (auto e = readSafetensors(shard, weights))
        return e;
    }
  } else if (llvm::sys::fs::exists(single)) {
    if (auto e = readSafetensors(single, weights))
      return e;
  } else {
    return fileError(dir, "no model.safetensors or "
                          "model.safetensors.index.json");
  }
  return llvm::Error::success();
}
