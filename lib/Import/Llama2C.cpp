//===- Llama2C.cpp - llama2.c checkpoints ---------------------------------===//
//
// Layout (see llama2.c's run.c): seven little-endian int32 (dim, hidden_dim,
// n_layers, n_heads, n_kv_heads, vocab_size, seq_len; a negative vocab_size
// means an untied classifier), then float32 tensors, each stacked over
// layers, then wcls when untied. Tensors are mapped onto the Hugging Face
// names the decoder builder uses; RoPE is interleaved, as llama2.c computes it.
//
//===----------------------------------------------------------------------===//
#include "Import/Import.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace llmc;

llvm::Error llmc::readLlama2C(llvm::StringRef path, DecoderConfig &c,
                              WeightTable &weights) {
  uint64_t fileSize = 0;
  if (std::error_code ec = llvm::sys::fs::file_size(path, fileSize))
    return fileError(path, "cannot read: " + ec.message());
  auto buffer = llvm::MemoryBuffer::getFileSlice(path, 28, 0);
  if (fileSize < 28 || !buffer)
    return fileError(path, llvm::formatv("truncated llama2.c header: {0} "
                                         "bytes, need 28",
                                         fileSize));
  int32_t h[7];
  std::memcpy(h, (*buffer)->getBufferStart(), sizeof(h));
  const char *names[7] = {"dim",        "hidden_dim", "n_layers", "n_heads",
                          "n_kv_heads", "vocab_size", "seq_len"};
  for (int i = 0; i < 7; ++i)
    if (h[i] == 0 || (i != 5 && h[i] < 0))
      return fileError(path, llvm::formatv("invalid llama2.c header: {0} = {1}",
                                           names[i], h[i]));
  c.arch = "llama";
  c.dim = h[0];
  c.hiddenDim = h[1];
  c.layers = h[2];
  c.heads = h[3];
  c.kvHeads = h[4];
  c.tiedEmbeddings = h[5] > 0;
  c.vocab = h[5] > 0 ? h[5] : -static_cast<int64_t>(h[5]);
  c.maxSeq = h[6];
  if (c.dim % c.heads)
    return fileError(path, llvm::formatv("dim ({0}) is not a multiple of "
                                         "n_heads ({1})",
                                         c.dim, c.heads));
  c.headDim = c.dim / c.heads;
  c.ropeTheta = 10000.0;
  c.ropeInterleaved = true;
  c.rmsEps = 1e-5f;
  c.bos = 1;
  // llama2.c stops generating at BOS (a story delimiter); EOS is 2.
  c.eos = {1, 2};

  int64_t kvDim = c.kvHeads * c.headDim, L = c.layers;
  uint64_t offset = 28;
  auto add = [&](const std::string &name, std::vector<int64_t> shape) {
    TensorSource src;
    src.file = path.str();
    src.offset = offset;
    src.dtype = DType::F32;
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    src.shape = std::move(shape);
    weights[name] = src;
    offset += static_cast<uint64_t>(n) * 4;
  };
  auto perLayer = [&](const char *suffix, std::vector<int64_t> shape) {
    for (int64_t l = 0; l < L; ++l)
      add(llvm::formatv("model.layers.{0}.{1}", l, suffix).str(), shape);
  };
  add("model.embed_tokens.weight", {c.vocab, c.dim});
  perLayer("input_layernorm.weight", {c.dim});
  perLayer("self_attn.q_proj.weight", {c.dim, c.dim});
  perLayer("self_attn.k_proj.weight", {kvDim, c.dim});
  perLayer("self_attn.v_proj.weight", {kvDim, c.dim});
  perLayer("self_attn.o_proj.weight", {c.dim, c.dim});
  perLayer("post_attention_layernorm.weight", {c.dim});
  perLayer("mlp.gate_proj.weight", {c.hiddenDim, c.dim});
  perLayer("mlp.down_proj.weight", {c.dim, c.hiddenDim});
  perLayer("mlp.up_proj.weight", {c.hiddenDim, c.dim});
  add("model.norm.weight", {c.dim});
  // freq_cis_real and freq_cis_imag: RoPE tables llmc recomputes.
  offset += static_cast<uint64_t>(c.maxSeq) * (c.headDim / 2) * 4 * 2;
  if (!c.tiedEmbeddings)
    add("lm_head.weight", {c.vocab, c.dim});
  if (offset > fileSize)
    return fileError(path, llvm::formatv("truncated llama2.c checkpoint: the "
                                         "header describes {0} bytes, the file "
                                         "has {1}",
                                         offset, fileSize));
  return llvm::Error::success();
}
