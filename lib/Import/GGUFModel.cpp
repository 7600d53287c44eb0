//===- GGUFModel.cpp - GGUF llama/qwen2/qwen3 models to a decoder ---------===//
//
// Maps llama.cpp's metadata keys and tensor names onto the decoder builder's
// configuration and (Hugging Face) tensor names. GGUF stores dimensions
// innermost first, so a [out, in] matrix has ne = [in, out]. llama.cpp's
// converter permutes the q/k rows of `llama` models so that RoPE pairs
// adjacent elements: those models use interleaved RoPE; qwen2/qwen3 use
// rotate-half (NEOX) RoPE on unpermuted weights.
//
//===----------------------------------------------------------------------===//
#include "Import/GGUF.h"
#include "Import/Import.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace llmc;

/// "blk.3.attn_q.weight" -> "model.layers.3.self_attn.q_proj.weight".
static std::optional<std::string> canonicalName(llvm::StringRef name) {
  if (name == "token_embd.weight")
    return std::string("model.embed_tokens.weight");
  if (name == "output_norm.weight")
    return std::string("model.norm.weight");
  if (name == "output.weight")
    return std::string("lm_head.weight");
  if (!name.consume_front("blk."))
    return std::nullopt;
  auto [layer, rest] = name.split('.');
  unsigned l;
  if (layer.getAsInteger(10, l))
    return std::nullopt;
  auto [base, suffix] = rest.rsplit('.');
  std::optional<llvm::StringRef> mapped =
      llvm::StringSwitch<std::optional<llvm::StringRef>>(base)
          .Case("attn_norm", "input_layernorm")
          .Case("attn_q", "self_attn.q_proj")
          .Case("attn_k", "self_attn.k_proj")
          .Case("attn_v", "self_attn.v_proj")
          .Case("attn_output", "self_attn.o_proj")
          .Case("attn_q_norm", "self_attn.q_norm")
          .Case("attn_k_norm", "self_attn.k_norm")
          .Case("ffn_norm", "post_attention_layernorm")
          .Case("ffn_gate", "mlp.gate_proj")
          .Case("ffn_up", "mlp.up_proj")
          .Case("ffn_down", "mlp.down_proj")
          .Default(std::nullopt);
  if (!mapped)
    return std::nullopt;
  return llvm::formatv("model.layers.{0}.{1}.{2}", l, *mapped, suffix).str();
}

llvm::Error llmc::readGGUF(llvm::StringRef path, DecoderConfig &c,
                           WeightTable &weights) {
  auto file = gguf::read(path);
  if (!file)
    return file.takeError();
  const gguf::Value *archValue = file->get("general.architecture");
  if (!archValue || !archValue->asString())
    return fileError(path, "missing metadata key 'general.architecture'");
  c.arch = *archValue->asString();
  if (c.arch != "llama" && c.arch != "qwen2" && c.arch != "qwen3")
    return fileError(path, "unsupported architecture '" + c.arch +
                               "' (supported: llama, qwen2, qwen3)");
  auto integer = [&](llvm::StringRef key, int64_t &out,
                     std::optional<int64_t> dflt) -> llvm::Error {
    std::string full = (c.arch + "." + key).str();
    const gguf::Value *v = file->get(full);
    if (!v) {
      if (!dflt)
        return fileError(path, "missing metadata key '" + full + "'");
      out = *dflt;
      return llvm::Error::success();
    }
    auto i = v->asInt();
    if (!i || *i <= 0)
      return fileError(path, "metadata key '" + full +
                                 "' must be a positive integer");
    out = *i;
    return llvm::Error::success();
  };
  if (auto e = integer("embedding_length", c.dim, std::nullopt))
    return e;
  if (auto e = integer("feed_forward_length", c.hiddenDim, std::nullopt))
    return e;
  if (auto e = integer("block_count", c.layers, std::nullopt))
    return e;
  if (auto e = integer("attention.head_count", c.heads, std::nullopt))
    return e;
  if (auto e = integer("attention.head_count_kv", c.kvHeads, c.heads))
    return e;
  if (auto e = integer("attention.key_length", c.headDim, c.dim / c.heads))
    return e;
  if (auto e = integer("context_length", c.maxSeq, 2048))
    return e;
  auto number = [&](llvm::StringRef key, double dflt) {
    const gguf::Value *v = file->get((c.arch + "." + key).str());
    return v && v->asFloat() ? *v->asFloat() : dflt;
  };
  c.ropeTheta = number("rope.freq_base", 10000.0);
  c.rmsEps = static_cast<float>(number("attention.layer_norm_rms_epsilon",
                                       1e-5));
  c.ropeInterleaved = c.arch == "llama";
  c.qkNorm = c.arch == "qwen3";
  c.qkvBias = c.arch == "qwen2";
  const gguf::Value *bos = file->get("tokenizer.ggml.bos_token_id");
  const gguf::Value *eos = file->get("tokenizer.ggml.eos_token_id");
  c.bos = bos && bos->asInt() ? *bos->asInt() : -1;
  c.eos.clear();
  if (eos && eos->asInt())
    c.eos.push_back(*eos->asInt());

  // RoPE scaling (Llama 3's rope_freqs, YaRN, linear) is not implemented:
  // refuse rather than compute the wrong positions.
  if (const gguf::Value *scaling =
          file->get((c.arch + ".rope.scaling.type")))
    if (!scaling->asString() || *scaling->asString() != "none")
      return fileError(path, "unsupported RoPE scaling '" +
                                 (scaling->asString() ? *scaling->asString()
                                                      : std::string("?")) +
                                 "' (only unscaled RoPE is implemented)");
  bool hasOutput = false;
  for (const gguf::TensorInfo &t : file->tensors) {
    if (t.name == "rope_freqs.weight")
      return fileError(path, "tensor 'rope_freqs.weight': RoPE frequency "
                             "factors (Llama 3 scaling) are not supported");
    auto name = canonicalName(t.name);
    if (!name)
      continue; // not part of the decoder llmc builds
    TensorSource src;
    src.file = path.str();
    src.offset = t.offset;
    switch (static_cast<gguf::TensorType>(t.type)) {
    case gguf::TensorType::F32: src.dtype = DType::F32; break;
    case gguf::TensorType::F16: src.dtype = DType::F16; break;
    case gguf::TensorType::BF16: src.dtype = DType::BF16; break;
    case gguf::TensorType::Q8_0:
    case gguf::TensorType::Q4_0:
    case gguf::TensorType::Q6_K:
    case gguf::TensorType::Q4_K:
      // Matrices stay quantized (matmuls and the embedding gather decode
      // their blocks); a quantized vector has no use in a decoder.
      if (t.ne.size() == 2) {
        auto type = static_cast<gguf::TensorType>(t.type);
        src.dtype = type == gguf::TensorType::Q8_0   ? DType::Q8_0
                    : type == gguf::TensorType::Q4_0 ? DType::Q4_0
                    : type == gguf::TensorType::Q4_K ? DType::Q4_K
                                                     : DType::Q6_K;
        break;
      }
      [[fallthrough]];
    default:
      return fileError(path, "tensor '" + t.name + "' is " +
                                 gguf::typeName(t.type)->str() +
                                 ": quantized GGUF tensors are not supported "
                                 "yet");
    }
    for (auto it = t.ne.rbegin(); it != t.ne.rend(); ++it)
      src.shape.push_back(static_cast<int64_t>(*it));
    hasOutput |= t.name == "output.weight";
    weights[*name] = std::move(src);
  }
  c.tiedEmbeddings = !hasOutput;
  if (!file->get((c.arch + ".context_length")) && c.maxSeq > 4096)
    c.maxSeq = 4096;
  auto vocabIt = weights.find("model.embed_tokens.weight");
  if (vocabIt == weights.end())
    return fileError(path, "missing tensor 'token_embd.weight'");
  c.vocab = vocabIt->second.shape[0];
  return llvm::Error::success();
}
