//===- DecoderBuilder.cpp - the graph of a Llama-family decoder -----------===//
#include "Import/Import.h"

#include "Dialect/Graph/IR/Graph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <cmath>

using namespace mlir;
using namespace llmc;

static std::string shapeStr(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

namespace {
/// Emits the ops of one decoder, looking weights up by canonical name.
class DecoderEmitter {
public:
  DecoderEmitter(MLIRContext *ctx, const DecoderConfig &c,
                 const WeightTable &w, StringRef modelFile)
      : ctx(ctx), b(ctx), c(c), weights(w), modelFile(modelFile.str()) {}

  llvm::Expected<OwningOpRef<ModuleOp>> build();

private:
  /// A `graph.param` for tensor `name`, which must have shape `shape`.
  Value param(StringRef name, ArrayRef<int64_t> shape);
  Value linear(Value x, StringRef prefix, int64_t out, int64_t in,
               bool bias);
  RankedTensorType act(int64_t width) {
    return RankedTensorType::get({ShapedType::kDynamic, width},
                                 b.getF32Type());
  }
  Location loc(StringRef name) {
    return NameLoc::get(b.getStringAttr(name),
                        FileLineColLoc::get(ctx, modelFile, 0, 0));
  }
  Value headNorm(Value x, int64_t heads, StringRef weight);

  MLIRContext *ctx;
  OpBuilder b;
  const DecoderConfig &c;
  const WeightTable &weights;
  std::string modelFile;
  Value weightsArg;
  std::optional<llvm::Error> error;
};
} // namespace

Value DecoderEmitter::param(StringRef name, ArrayRef<int64_t> shape) {
  if (error)
    return {};
  auto it = weights.find(name);
  if (it == weights.end()) {
    error = fileError(modelFile, "missing tensor '" + name + "'");
    return {};
  }
  const TensorSource &src = it->second;
  if (llvm::ArrayRef<int64_t>(src.shape) != shape) {
    error = fileError(src.file, "tensor '" + name + "' has shape " +
                                    shapeStr(src.shape) + ", expected " +
                                    shapeStr(shape));
    return {};
  }
  Type dtype = src.dtype == DType::F32    ? Type(b.getF32Type())
               : src.dtype == DType::F16  ? Type(b.getF16Type())
               : src.dtype == DType::BF16 ? Type(b.getBF16Type())
               : src.dtype == DType::Q8_0 ? Type(graph::Q8_0Type::get(ctx))
               : src.dtype == DType::Q4_0 ? Type(graph::Q4_0Type::get(ctx))
               : src.dtype == DType::Q4_K ? Type(graph::Q4_KType::get(ctx))
                                          : Type(graph::Q6_KType::get(ctx));
  auto source =
      graph::ExternalTensorAttr::get(ctx, src.file, src.offset, dtype);
  // Matrices keep their element type: quantized ones stay quantized and
  // f16/bf16 ones 16-bit (widened inside the loops that read them); vectors
  // (norms, biases) become f32.
  auto type = RankedTensorType::get(
      shape, shape.size() == 2 ? dtype : Type(b.getF32Type()));
  return graph::ParamOp::create(b, loc(name), type, weightsArg,
                                b.getStringAttr(name), source,
                                /*blob_offset=*/IntegerAttr());
}

Value DecoderEmitter::linear(Value x, StringRef prefix, int64_t out,
                             int64_t in, bool bias) {
  Value w = param((prefix + ".weight").str(), {out, in});
  if (!w)
    return {};
  Value y = graph::MatmulOp::create(b, loc((prefix + ".weight").str()),
                                    act(out), x, w);
  if (!bias)
    return y;
  Value bv = param((prefix + ".bias").str(), {out});
  if (!bv)
    return {};
  return graph::AddOp::create(b, loc((prefix + ".bias").str()), y, bv);
}

/// RMSNorm over each head of `x` ([seq, heads*head_dim]), for Qwen3's q/k
/// norms.
Value DecoderEmitter::headNorm(Value x, int64_t heads, StringRef weight) {
  Value g = param(weight, {c.headDim});
  if (!g)
    return {};
  Location l = loc(weight);
  auto split = RankedTensorType::get({ShapedType::kDynamic, heads, c.headDim},
                                     b.getF32Type());
  Value r = graph::ReshapeOp::create(b, l, split, x);
  Value n = graph::RMSNormOp::create(b, l, r, g, c.rmsEps);
  return graph::ReshapeOp::create(b, l, act(heads * c.headDim), n);
}

llvm::Expected<OwningOpRef<ModuleOp>> DecoderEmitter::build() {
  OwningOpRef<ModuleOp> module =
      ModuleOp::create(FileLineColLoc::get(ctx, modelFile, 0, 0));
  b.setInsertionPointToEnd(module->getBody());
  Type f32 = b.getF32Type();
  auto cacheType = graph::KVCacheType::get(ctx, c.layers, c.maxSeq, c.kvHeads,
                                           c.headDim, f32,
                                           /*values_by_position=*/false,
                                           /*keys_by_dim=*/false,
                                           /*values_block=*/0);
  auto tokensType = RankedTensorType::get({ShapedType::kDynamic},
                                          b.getI32Type());
  auto fnType = b.getFunctionType(
      {tokensType, b.getIndexType(), graph::WeightsType::get(ctx), cacheType},
      {act(c.vocab)});
  auto fn = func::FuncOp::create(b, module->getLoc(), "forward", fnType);
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value tokens = entry->getArgument(0), pos0 = entry->getArgument(1);
  weightsArg = entry->getArgument(2);
  Value cache = entry->getArgument(3);

  const char *embName = "model.embed_tokens.weight";
  Value emb = param(embName, {c.vocab, c.dim});
  if (!emb)
    return std::move(*error);
  Value x = graph::EmbeddingOp::create(b, loc(embName), act(c.dim), emb, tokens,
                                       /*row_offset=*/Value());
  int64_t qDim = c.heads * c.headDim, kvDim = c.kvHeads * c.headDim;
  float scale = 1.0f / std::sqrt(static_cast<float>(c.headDim));
  auto ropeStyle = c.ropeInterleaved ? graph::RopeStyle::interleaved
                                     : graph::RopeStyle::half;
  for (int64_t l = 0; l < c.layers; ++l) {
    std::string p = llvm::formatv("model.layers.{0}.", l).str();
    Value g = param(p + "input_layernorm.weight", {c.dim});
    if (!g)
      return std::move(*error);
    Value h = graph::RMSNormOp::create(b, loc(p + "input_layernorm.weight"), x,
                                       g, c.rmsEps);
    Value q = linear(h, p + "self_attn.q_proj", qDim, c.dim, c.qkvBias);
    Value k = linear(h, p + "self_attn.k_proj", kvDim, c.dim, c.qkvBias);
    Value v = linear(h, p + "self_attn.v_proj", kvDim, c.dim, c.qkvBias);
    if (error)
      return std::move(*error);
    if (c.qkNorm) {
      q = headNorm(q, c.heads, p + "self_attn.q_norm.weight");
      k = headNorm(k, c.kvHeads, p + "self_attn.k_norm.weight");
      if (error)
        return std::move(*error);
    }
    auto rope = [&](Value t, StringRef what) -> Value {
      return graph::RopeOp::create(
          b, loc(p + "self_attn." + what.str()), t.getType(), t, pos0,
          /*norm_weight=*/Value(), b.getI64IntegerAttr(c.headDim),
          b.getF64FloatAttr(c.ropeTheta),
          graph::RopeStyleAttr::get(ctx, ropeStyle),
          graph::RopeAnglesAttr::get(ctx, graph::RopeAngles::direct),
          /*norm_eps=*/FloatAttr());
    };
    q = rope(q, "q_rope");
    k = rope(k, "k_rope");
    Value a = graph::AttentionOp::create(
        b, loc(p + "self_attn"), act(qDim), q, k, v, cache, pos0,
        b.getI64IntegerAttr(l), b.getI64IntegerAttr(c.heads),
        b.getI64IntegerAttr(c.kvHeads), b.getI64IntegerAttr(c.headDim),
        b.getF32FloatAttr(scale));
    Value o = linear(a, p + "self_attn.o_proj", c.dim, qDim, false);
    if (!o)
      return std::move(*error);
    x = graph::AddOp::create(b, loc(p + "self_attn.o_proj.weight"), x, o);
    Value g2 = param(p + "post_attention_layernorm.weight", {c.dim});
    if (!g2)
      return std::move(*error);
    Value h2 = graph::RMSNormOp::create(
        b, loc(p + "post_attention_layernorm.weight"), x, g2, c.rmsEps);
    Value gate = linear(h2, p + "mlp.gate_proj", c.hiddenDim, c.dim, false);
    Value up = linear(h2, p + "mlp.up_proj", c.hiddenDim, c.dim, false);
    if (error)
      return std::move(*error);
    Value act1 = graph::SiluOp::create(b, loc(p + "mlp.gate_proj.weight"), gate);
    Value m = graph::MulOp::create(b, loc(p + "mlp.up_proj.weight"), act1, up);
    Value d = linear(m, p + "mlp.down_proj", c.dim, c.hiddenDim, false);
    if (!d)
      return std::move(*error);
    x = graph::AddOp::create(b, loc(p + "mlp.down_proj.weight"), x, d);
  }
  Value gf = param("model.norm.weight", {c.dim});
  if (!gf)
    return std::move(*error);
  x = graph::RMSNormOp::create(b, loc("model.norm.weight"), x, gf, c.rmsEps);
  const char *headName =
      c.tiedEmbeddings ? "model.embed_tokens.weight" : "lm_head.weight";
  Value head = param(headName, {c.vocab, c.dim});
  if (!head)
    return std::move(*error);
  Value logits =
      graph::MatmulOp::create(b, loc(headName), act(c.vocab), x, head);
  func::ReturnOp::create(b, module->getLoc(), logits);

  // The model description the artifact's metadata is written from.
  SmallVector<NamedAttribute> cfg = {
      b.getNamedAttr("arch", b.getStringAttr(c.arch)),
      b.getNamedAttr("dim", b.getI64IntegerAttr(c.dim)),
      b.getNamedAttr("hidden_dim", b.getI64IntegerAttr(c.hiddenDim)),
      b.getNamedAttr("n_layers", b.getI64IntegerAttr(c.layers)),
      b.getNamedAttr("n_heads", b.getI64IntegerAttr(c.heads)),
      b.getNamedAttr("n_kv_heads", b.getI64IntegerAttr(c.kvHeads)),
      b.getNamedAttr("head_dim", b.getI64IntegerAttr(c.headDim)),
      b.getNamedAttr("vocab_size", b.getI64IntegerAttr(c.vocab)),
      b.getNamedAttr("max_seq_len", b.getI64IntegerAttr(c.maxSeq)),
      b.getNamedAttr("rope_theta", b.getF64FloatAttr(c.ropeTheta)),
      b.getNamedAttr("rms_eps", b.getF64FloatAttr(c.rmsEps)),
      b.getNamedAttr("bos_id", b.getI64IntegerAttr(c.bos)),
      b.getNamedAttr("eos_ids", b.getI64ArrayAttr(c.eos)),
  };
  (*module)->setAttr("graph.model", b.getDictionaryAttr(cfg));
  if (failed(verify(*module)))
    return fileError(modelFile, "the imported graph does not verify");
  return std::move(module);
}

llvm::Expected<OwningOpRef<ModuleOp>>
llmc::buildDecoderModule(MLIRContext *ctx, const DecoderConfig &config,
                         const WeightTable &weights, StringRef modelFile) {
  ctx->loadDialect<graph::GraphDialect, func::FuncDialect>();
  if (config.dim <= 0 || config.layers <= 0 || config.heads <= 0 ||
      config.kvHeads <= 0 || config.headDim <= 0 || config.vocab <= 0 ||
      config.hiddenDim <= 0 || config.maxSeq <= 0)
    return fileError(modelFile, "model sizes must be positive");
  if (config.heads % config.kvHeads)
    return fileError(modelFile, llvm::formatv("n_heads ({0}) is not a multiple "
                                              "of n_kv_heads ({1})",
                                              config.heads, config.kvHeads));
  if (config.headDim % 2)
    return fileError(modelFile, "head_dim must be even for RoPE");
  DecoderEmitter emitter(ctx, config, weights, modelFile);
  return emitter.build();
}
