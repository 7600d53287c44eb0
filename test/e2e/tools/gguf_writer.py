#!/usr/bin/env python3
"""A small GGUF v3 writer for the importer tests: typed metadata, F32/F16
tensors, alignment padding. Byte-level knobs (version, magic, offsets) are
exposed so that the bad-input tests can corrupt files precisely.

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

U32, I32, F32, BOOL, STRING, ARRAY, U64 = 4, 5, 6, 7, 8, 9, 10
GGML_F32, GGML_F16, GGML_Q4_0, GGML_Q8_0 = 0, 1, 2, 8


def quantize_q8_0(a):
    """ggml's quantize_row_q8_0_ref over the rows of `a` ([rows, k], k a
    multiple of 32) -> (block bytes, the dequantized float32 array)."""
    rows, k = a.shape
    x = a.astype(np.float32).reshape(rows, k // 32, 32)
    amax = np.abs(x).max(axis=2, keepdims=True)
    d = (amax / np.float32(127)).astype(np.float32)
    inv = np.where(d > 0, np.float32(1) / np.where(d > 0, d, 1), 0).astype(np.float32)
    v = x * inv
    q = (np.sign(v) * np.floor(np.abs(v) + np.float32(0.5))).astype(np.int8)  # roundf
    d16 = d.astype(np.float16)
    blocks = np.zeros((rows, k // 32, 34), np.uint8)
    blocks[:, :, 0:2] = d16.view(np.uint8).reshape(rows, k // 32, 2)
    blocks[:, :, 2:] = q.view(np.uint8)
    deq = (q.astype(np.float32) * d16.astype(np.float32)).reshape(rows, k)
    return blocks.tobytes(), deq


def quantize_q4_0(a):
    """ggml's quantize_row_q4_0_ref: 18-byte blocks (f16 d, 16 bytes of
    nibbles: element j low, element j+16 high) -> (bytes, dequantized)."""
    rows, k = a.shape
    x = a.astype(np.float32).reshape(rows, k // 32, 32)
    idx = np.abs(x).argmax(axis=2)[..., None]
    mx = np.take_along_axis(x, idx, axis=2)                  # signed value of max |x|
    d = (mx / np.float32(-8)).astype(np.float32)
    inv = np.where(d != 0, np.float32(1) / np.where(d != 0, d, 1), 0).astype(np.float32)
    xi = np.minimum(15, np.trunc(x * inv + np.float32(8.5))).astype(np.uint8)
    qs = xi[:, :, :16] | (xi[:, :, 16:] << 4)
    d16 = d.astype(np.float16)
    blocks = np.zeros((rows, k // 32, 18), np.uint8)
    blocks[:, :, 0:2] = d16.view(np.uint8).reshape(rows, k // 32, 2)
    blocks[:, :, 2:] = qs
    vals = np.concatenate([(qs & 15).astype(np.int32) - 8, (qs >> 4).astype(np.int32) - 8], axis=2)
    deq = (vals.astype(np.float32) * d16.astype(np.float32)).reshape(rows, k)
    return blocks.tobytes(), deq


QUANTIZERS = {GGML_Q8_0: quantize_q8_0, GGML_Q4_0: quantize_q4_0}


def _str(s):
    b = s.encode("utf-8") if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def _value(vtype, v):
    if vtype == U32:
        return struct.pack("<I", v)
    if vtype == I32:
        return struct.pack("<i", v)
    if vtype == F32:
        return struct.pack("<f", v)
    if vtype == BOOL:
        return struct.pack("<B", 1 if v else 0)
    if vtype == STRING:
        return _str(v)
    if vtype == U64:
        return struct.pack("<Q", v)
    if vtype == ARRAY:
        etype, items = v
        return struct.pack("<IQ", etype, len(items)) + b"".join(_value(etype, x) for x in items)
    raise ValueError(vtype)


def write(path, metadata, tensors, alignment=32, version=3, magic=b"GGUF"):
    """metadata: list of (key, type, value); tensors: list of (name, array,
    ggml_type) with arrays in PyTorch order ([out, in])."""
    meta = list(metadata)
    if not any(k == "general.alignment" for k, _, _ in meta):
        meta.append(("general.alignment", U32, alignment))
    head = magic + struct.pack("<IQQ", version, len(tensors), len(meta))
    for key, vtype, v in meta:
        head += _str(key) + struct.pack("<I", vtype) + _value(vtype, v)
    blobs, offset = [], 0
    infos = b""
    for name, array, gtype in tensors:
        if gtype in QUANTIZERS:
            data = QUANTIZERS[gtype](np.asarray(array))[0]
        else:
            data = np.ascontiguousarray(array, "<f4" if gtype == GGML_F32 else "<f2").tobytes()
        ne = list(reversed(array.shape))
        infos += _str(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        infos += struct.pack("<IQ", gtype, offset)
        blobs.append((offset, data))
        offset += len(data)
        offset += -offset % alignment
    body = head + infos
    body += b"\0" * (-len(body) % alignment)
    data_start = len(body)
    out = bytearray(body)
    for off, data in blobs:
        out += b"\0" * (data_start + off - len(out))
        out += data
    with open(path, "wb") as f:
        f.write(bytes(out))


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
    """A make_hf_model checkpoint (llama or qwen3) as GGUF; llama q/k rows
    are permuted as llama.cpp's converter does. With Q8_0, matrices other
    than the embedding are quantized (Q8_0 or Q4_0), and `dequantized_dir`
    receives an HF
    checkpoint of the exactly dequantized weights (the exact-mode oracle's
    input; quantization is per row, so it commutes with the permutation)."""
    cfg = json.load(open(os.path.join(hf_dir, "config.json")))
    arch = {"LlamaForCausalLM": "llama", "Qwen3ForCausalLM": "qwen3"}[cfg["architectures"][0]]
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
    tensors.append(("output_norm.weight", w["model.norm.weight"], GGML_F32))
    if "lm_head.weight" in w and not cfg.get("tie_word_embeddings"):
        tensors.append(("output.weight", w["lm_head.weight"], gtype))
    if gtype in QUANTIZERS:
        # The embedding stays F32 (gathered, not multiplied).
        tensors[0] = (tensors[0][0], tensors[0][1], GGML_F32)
        if dequantized_dir:
            import shutil
            os.makedirs(dequantized_dir, exist_ok=True)
            shutil.copy(os.path.join(hf_dir, "config.json"), dequantized_dir)
            deq = {}
            for k, v in w.items():
                quantize = v.ndim == 2 and k != "model.embed_tokens.weight"
                deq[k] = QUANTIZERS[gtype](v)[1] if quantize else v
            safetensors_io.save_file({k: np.ascontiguousarray(v, np.float32) for k, v in deq.items()},
                                     os.path.join(dequantized_dir, "model.safetensors"))
    meta = _llama_meta(arch, cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"],
                       heads, kvh, cfg["max_position_embeddings"], float(cfg.get("rope_theta", 1e4)),
                       float(cfg["rms_norm_eps"]), hd if arch == "qwen3" else None)
    meta += [("tokenizer.ggml.bos_token_id", U32, cfg.get("bos_token_id", 1)),
             ("tokenizer.ggml.eos_token_id", U32, cfg.get("eos_token_id", 2))]
    write(out, meta, tensors)
