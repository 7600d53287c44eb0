#!/usr/bin/env python3
"""Model converters for the importer tests, on top of gguf_io's writer
(typed metadata, ggml tensor types, alignment, byte-level knobs for the
bad-input tests):

  llama2c_to_gguf(ckpt, tokenizer, out)   stories260K-style checkpoint -> GGUF
  hf_to_gguf(hf_dir, out, dtype)          make_hf_model output -> GGUF
"""
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

import gguf_io  # noqa: E402

# Metadata value types and ggml tensor types, as gguf_io defines them.
U32, I32, F32, BOOL, STRING, ARRAY, U64 = (gguf_io.UINT32, gguf_io.INT32, gguf_io.FLOAT32,
                                           gguf_io.BOOL, gguf_io.STRING, gguf_io.ARRAY,
                                           gguf_io.UINT64)
GGML_F32, GGML_F16, GGML_Q4_0, GGML_Q8_0, GGML_Q4_K, GGML_Q6_K = (
    gguf_io.F32, gguf_io.F16, gguf_io.Q4_0, gguf_io.Q8_0, gguf_io.Q4_K, gguf_io.Q6_K)
QUANTIZED = (GGML_Q8_0, GGML_Q4_0, GGML_Q4_K, GGML_Q6_K)

# write(path, metadata, [(name, array [out, in], ggml_type)], alignment=,
# version=, magic=): gguf_io's writer, with its byte-level knobs.
write = gguf_io.write


def _llama_meta(arch, dim, hidden, layers, heads, kv_heads, ctx, theta, eps, head_dim=None):
    m = [("general.architecture", STRING, arch),
         (arch + ".context_length", U32, ctx),
         (arch + ".embedding_length", U32, dim),
         (arch + ".feed_forward_length", U32, hidden),
         (arch + ".block_count", U32, layers),
         (arch + ".attention.head_count", U32, heads),
         (arch + ".attention.head_count_kv", U32, kv_heads),
         (arch + ".rope.freq_base", F32, theta),
         (arch + ".attention.layer_norm_rms_epsilon", F32, eps)]
    if head_dim:
        m += [(arch + ".attention.key_length", U32, head_dim),
              (arch + ".attention.value_length", U32, head_dim)]
    return m


def llama2c_to_gguf(ckpt, tokenizer, out, gtype=GGML_F32):
    """A llama2.c checkpoint (Meta layout, interleaved RoPE: what GGUF
    `llama` stores) plus its tokenizer as a GGUF file."""
    raw = open(ckpt, "rb").read()
    dim, hidden, layers, heads, kv_heads, vocab, seq = struct.unpack_from("<7i", raw, 0)
    tied = vocab > 0
    vocab = abs(vocab)
    hd = dim // heads
    kv = kv_heads * hd
    pos = 28

    def take(*shape):
        nonlocal pos
        n = int(np.prod(shape))
        a = np.frombuffer(raw, "<f4", n, pos).reshape(shape)
        pos += 4 * n
        return a
    emb = take(vocab, dim)
    att, wq, wk = take(layers, dim), take(layers, dim, dim), take(layers, kv, dim)
    wv, wo, ffn = take(layers, kv, dim), take(layers, dim, dim), take(layers, dim)
    w1, w2, w3 = take(layers, hidden, dim), take(layers, dim, hidden), take(layers, hidden, dim)
    norm = take(dim)
    take(seq, hd // 2)
    take(seq, hd // 2)
    tensors = [("token_embd.weight", emb, gtype)]
    for l in range(layers):
        p = "blk.%d." % l
        tensors += [(p + "attn_norm.weight", att[l], GGML_F32), (p + "attn_q.weight", wq[l], gtype),
                    (p + "attn_k.weight", wk[l], gtype), (p + "attn_v.weight", wv[l], gtype),
                    (p + "attn_output.weight", wo[l], gtype), (p + "ffn_norm.weight", ffn[l], GGML_F32),
                    (p + "ffn_gate.weight", w1[l], gtype), (p + "ffn_down.weight", w2[l], gtype),
                    (p + "ffn_up.weight", w3[l], gtype)]
    tensors.append(("output_norm.weight", norm, GGML_F32))
    if not tied:
        tensors.append(("output.weight", take(vocab, dim), gtype))
    meta = _llama_meta("llama", dim, hidden, layers, heads, kv_heads, seq, 10000.0, 1e-5)
    # The llama2.c tokenizer as SentencePiece pieces (space -> U+2581).
    t = open(tokenizer, "rb").read()
    tpos = 4
    pieces, scores = [], []
    for _ in range(vocab):
        score, n = struct.unpack_from("<fi", t, tpos)
        tpos += 8
        pieces.append(t[tpos:tpos + n].decode("utf-8", "replace").replace(" ", "\u2581"))
        scores.append(score)
        tpos += n
    meta += [("tokenizer.ggml.model", STRING, "llama"),
             ("tokenizer.ggml.tokens", ARRAY, (STRING, pieces)),
             ("tokenizer.ggml.scores", ARRAY, (F32, scores)),
             ("tokenizer.ggml.bos_token_id", U32, 1),
             ("tokenizer.ggml.eos_token_id", U32, 2)]
    write(out, meta, tensors)


def _permute(w, n_head):
    """HF rotate-half rows -> Meta interleaved rows (llama.cpp's converter)."""
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
             .swapaxes(1, 2).reshape(w.shape))


def hf_to_gguf(hf_dir, out, gtype=GGML_F32, dequantized_dir=None):
    """A make_hf_model checkpoint (llama, qwen2 or qwen3) as GGUF; llama q/k rows
    are permuted as llama.cpp's converter does. With Q8_0, matrices other
    than the embedding are quantized (Q8_0 or Q4_0), and `dequantized_dir`
    receives an HF
    checkpoint of the exactly dequantized weights (the exact-mode oracle's
    input; quantization is per row, so it commutes with the permutation)."""
    cfg = json.load(open(os.path.join(hf_dir, "config.json")))
    arch = {"LlamaForCausalLM": "llama", "Qwen2ForCausalLM": "qwen2",
            "Qwen3ForCausalLM": "qwen3"}[cfg["architectures"][0]]
    w = {k: np.asarray(v, np.float32)
         for k, v in safetensors_io.load_checkpoint_dir(hf_dir).items()}
    heads, kvh = cfg["num_attention_heads"], cfg.get("num_key_value_heads", cfg["num_attention_heads"])
    hd = cfg.get("head_dim") or cfg["hidden_size"] // heads
    names = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
             "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
             "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm",
             "post_attention_layernorm": "ffn_norm", "mlp.gate_proj": "ffn_gate",
             "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
    tensors = [("token_embd.weight", w["model.embed_tokens.weight"], gtype)]
    for l in range(cfg["num_hidden_layers"]):
        for hf, gg in names.items():
            key = "model.layers.%d.%s.weight" % (l, hf)
            if key not in w:
                continue
            a = w[key]
            if arch == "llama" and hf == "self_attn.q_proj":
                a = _permute(a, heads)
            if arch == "llama" and hf == "self_attn.k_proj":
                a = _permute(a, kvh)
            tensors.append(("blk.%d.%s.weight" % (l, gg), a, GGML_F32 if a.ndim == 1 else gtype))
            bias = "model.layers.%d.%s.bias" % (l, hf)
            if bias in w:  # qwen2's q/k/v biases
                tensors.append(("blk.%d.%s.bias" % (l, gg), w[bias], GGML_F32))
    tensors.append(("output_norm.weight", w["model.norm.weight"], GGML_F32))
    if "lm_head.weight" in w and not cfg.get("tie_word_embeddings"):
        tensors.append(("output.weight", w["lm_head.weight"], gtype))
    if gtype in QUANTIZED:
        # The embedding stays F32 (gathered, not multiplied).
        tensors[0] = (tensors[0][0], tensors[0][1], GGML_F32)
        if dequantized_dir:
            import shutil
            os.makedirs(dequantized_dir, exist_ok=True)
            shutil.copy(os.path.join(hf_dir, "config.json"), dequantized_dir)
            deq = {}
            for k, v in w.items():
                quantize = v.ndim == 2 and k != "model.embed_tokens.weight"
                deq[k] = gguf_io.round_trip(gtype, v) if quantize else v
            safetensors_io.save_file({k: np.ascontiguousarray(v, np.float32) for k, v in deq.items()},
                                     os.path.join(dequantized_dir, "model.safetensors"))
    meta = _llama_meta(arch, cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"],
                       heads, kvh, cfg["max_position_embeddings"], float(cfg.get("rope_theta", 1e4)),
                       float(cfg["rms_norm_eps"]), hd if arch == "qwen3" else None)
    meta += [("tokenizer.ggml.bos_token_id", U32, cfg.get("bos_token_id", 1)),
             ("tokenizer.ggml.eos_token_id", U32, cfg.get("eos_token_id", 2))]
    write(out, meta, tensors)
