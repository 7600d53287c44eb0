#!/usr/bin/env python3
"""Write a deterministic (seeded) random tiny llama/qwen3 model as a GGUF file,
laid out as llama.cpp's convert_hf_to_gguf.py + llama-quantize would write it.

  make_gguf_model.py --arch llama|qwen2|qwen3 --type f32|f16|bf16|q8_0|q4_0|q4_k_m
                     [--tied|--untied] [--seed S] --out FILE.gguf [--hf-out DIR]

The weights are drawn in HF layout by make_hf_model.make_tensors (same seed ->
same values) with these sizes: hidden 256, FFN 512, 2 layers, 8 heads, 2 KV
heads, vocab 512, context 256; head_dim 32 (llama) or 64 (qwen3, with q/k norm).
`llama` q/k rows are permuted for llama.cpp's interleaved (NORM) RoPE exactly as
convert_hf_to_gguf.py's LlamaModel.permute does; qwen3 is stored as in HF (NEOX
RoPE). --hf-out also writes the same float32 weights as an HF checkpoint
(config.json + model.safetensors) before any quantization.

Types: f32/f16/bf16 store every matrix in that type; q8_0 and q4_0 every matrix
(q4_0 is "pure": token_embd/output stay Q4_0 too); q4_k_m follows llama.cpp's
Q4_K_M recipe: Q4_K, with Q6_K for output.weight (and token_embd.weight when
tied, since it is then the output), and for attn_v / ffn_down of the layers
where use_more_bits(i, n_layers) holds (here layer 1 of 2). 1-D norm weights
are always F32.
"""
import argparse
import itertools
import json
import os
import sys


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_io as G  # noqa: E402
import make_hf_model  # noqa: E402
import safetensors_io  # noqa: E402

HIDDEN, INTER, LAYERS, HEADS, KV_HEADS, VOCAB, CTX = 256, 512, 2, 8, 2, 512, 256
HEAD_DIM = {"llama": HIDDEN // HEADS, "qwen2": HIDDEN // HEADS, "qwen3": 64}
BOS_ID, EOS_ID, UNK_ID = 1, 2, 0

# llama.cpp's LLAMA_FTYPE_* (general.file_type)
TYPES = {"f32": (G.F32, 0), "f16": (G.F16, 1), "bf16": (G.BF16, 32), "q8_0": (G.Q8_0, 7),
         "q4_0": (G.Q4_0, 2), "q4_k_m": (G.Q4_K, 15)}

# HF module name -> GGUF name inside blk.{i}.
LAYER_NAMES = [("input_layernorm", "attn_norm"), ("self_attn.q_proj", "attn_q"),
               ("self_attn.k_proj", "attn_k"), ("self_attn.v_proj", "attn_v"),
               ("self_attn.o_proj", "attn_output"), ("self_attn.q_norm", "attn_q_norm"),
               ("self_attn.k_norm", "attn_k_norm"), ("post_attention_layernorm", "ffn_norm"),
               ("mlp.gate_proj", "ffn_gate"), ("mlp.up_proj", "ffn_up"), ("mlp.down_proj", "ffn_down")]

# llama.cpp token types
TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_BYTE = 1, 2, 3, 6


def permute(w, n_head):
    """HF rotate-half rows -> interleaved rows (convert_hf_to_gguf.py LlamaModel.permute):
    new row h*hd + 2*i + j = old row h*hd + j*(hd/2) + i  (i < hd/2, j in {0, 1})."""
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
             .swapaxes(1, 2).reshape(w.shape))


def unpermute(w, n_head):
    """Inverse of permute(): GGUF llama q/k rows -> HF rotate-half rows."""
    return (w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:])
             .swapaxes(1, 2).reshape(w.shape))


def hf_config(arch, tied, shape=None):
    """The HF config.json dict of the model (make_hf_model's, resized).
    `shape` overrides sizes: hidden, inter, heads, kv_heads, head_dim, vocab,
    layers."""
    if arch not in HEAD_DIM:
        raise ValueError("unknown arch %r" % arch)
    sh = dict(hidden=HIDDEN, inter=INTER, heads=HEADS, kv_heads=KV_HEADS, vocab=VOCAB,
              layers=LAYERS, head_dim=HEAD_DIM["qwen3"] if arch == "qwen3" else None)
    sh.update(shape or {})
    cfg = make_hf_model.make_config(arch, tied, "f32")
    cfg.update(hidden_size=sh["hidden"], intermediate_size=sh["inter"],
               num_hidden_layers=sh["layers"], num_attention_heads=sh["heads"],
               num_key_value_heads=sh["kv_heads"], vocab_size=sh["vocab"],
               max_position_embeddings=CTX)
    if "max_window_layers" in cfg:
        cfg["max_window_layers"] = sh["layers"]
    if sh["head_dim"]:
        cfg["head_dim"] = sh["head_dim"]
    return cfg


def hf_tensors(cfg, seed):
    """{HF name: float32 array} for the config (before any rounding)."""
    return make_hf_model.make_tensors(cfg, seed)


def use_more_bits(i_layer, n_layers):
    """llama.cpp llama-quant.cpp: which layers Q4_K_M gives Q6_K attn_v / ffn_down."""
    return i_layer < n_layers // 8 or i_layer >= 7 * n_layers // 8 or (i_layer - n_layers // 8) % 3 == 2


def tensor_type(name, ndim, mtype, tied, n_layers=LAYERS):
    """ggml type llama.cpp would give tensor `name` in a model of type `mtype`."""
    if ndim == 1:
        return G.F32
    base = TYPES[mtype][0]
    if mtype != "q4_k_m":
        return base
    if name == "output.weight" or (tied and name == "token_embd.weight"):
        return G.Q6_K
    if name.endswith(".attn_v.weight") or name.endswith(".ffn_down.weight"):
        return G.Q6_K if use_more_bits(int(name.split(".")[1]), n_layers) else G.Q4_K
    return G.Q4_K


def gguf_tensor_arrays(cfg, hf):
    """[(GGUF name, float32 array in PyTorch order)] from HF-layout tensors."""
    arch = cfg["model_type"]
    out = [("token_embd.weight", hf["model.embed_tokens.weight"])]
    for i in range(cfg["num_hidden_layers"]):
        for hf_name, gg_name in LAYER_NAMES:
            key = "model.layers.%d.%s.weight" % (i, hf_name)
            if key not in hf:
                continue
            bias = "model.layers.%d.%s.bias" % (i, hf_name)
            if bias in hf:  # qwen2's q/k/v biases
                out.append(("blk.%d.%s.bias" % (i, gg_name), hf[bias]))
            a = hf[key]
            if arch == "llama" and gg_name == "attn_q":
                a = permute(a, cfg["num_attention_heads"])
            elif arch == "llama" and gg_name == "attn_k":
                a = permute(a, cfg["num_key_value_heads"])
            out.append(("blk.%d.%s.weight" % (i, gg_name), a))
    out.append(("output_norm.weight", hf["model.norm.weight"]))
    if not cfg["tie_word_embeddings"]:
        out.append(("output.weight", hf["lm_head.weight"]))
    return out


def tokenizer_fields(vocab):
    """A SentencePiece-style ("llama") vocabulary: <unk> <s> </s>, the 256 byte
    tokens <0x00>..<0xFF>, then short pieces (U+2581 = space) to fill `vocab`."""
    tokens = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)]
    types = [TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_CONTROL] + [TOKEN_BYTE] * 256
    scores = [0.0] * len(tokens)
    chars = ["\u2581"] + list("etaoinshrdlucmfwypvbgkqjxz")

    def pieces_of_length(n):
        """The n-letter pieces, the word-start mark only first."""
        if n == 1:
            yield from chars
            return
        for head in pieces_of_length(n - 1):
            for c in chars[1:]:
                yield head + c

    def all_pieces():
        n = 1
        while True:
            yield from pieces_of_length(n)
            n += 1

    need = vocab - len(tokens)
    if need < 0:
        raise ValueError("vocab %d out of range" % vocab)
    pieces = list(itertools.islice(all_pieces(), need))
    for k, p in enumerate(pieces[:need]):
        tokens.append(p)
        types.append(TOKEN_NORMAL)
        scores.append(-float(k))
    return [("tokenizer.ggml.model", G.STRING, "llama"),
            ("tokenizer.ggml.pre", G.STRING, "default"),
            ("tokenizer.ggml.tokens", G.ARRAY, (G.STRING, tokens)),
            ("tokenizer.ggml.scores", G.ARRAY, (G.FLOAT32, scores)),
            ("tokenizer.ggml.token_type", G.ARRAY, (G.INT32, types)),
            ("tokenizer.ggml.bos_token_id", G.UINT32, BOS_ID),
            ("tokenizer.ggml.eos_token_id", G.UINT32, EOS_ID),
            ("tokenizer.ggml.unknown_token_id", G.UINT32, UNK_ID),
            ("tokenizer.ggml.add_bos_token", G.BOOL, True),
            ("tokenizer.ggml.add_eos_token", G.BOOL, False)]


def metadata(cfg, mtype, tokenizer=None):
    """GGUF metadata of the model; `tokenizer` (tokenizer.ggml.* fields, e.g. from
    tokenizer_vocab.gguf_fields) replaces the synthetic SentencePiece vocabulary."""
    arch = cfg["model_type"]
    hd = make_hf_model.head_dim_of(cfg)
    f = [("general.architecture", G.STRING, arch),
         ("general.alignment", G.UINT32, G.DEFAULT_ALIGNMENT),
         ("general.name", G.STRING, "llmc-test-%s-%s" % (arch, mtype)),
         ("general.file_type", G.UINT32, TYPES[mtype][1])]
    if mtype not in ("f32", "f16", "bf16"):
        f.append(("general.quantization_version", G.UINT32, 2))
    f += [(arch + ".vocab_size", G.UINT32, cfg["vocab_size"]),
          (arch + ".context_length", G.UINT32, cfg["max_position_embeddings"]),
          (arch + ".embedding_length", G.UINT32, cfg["hidden_size"]),
          (arch + ".feed_forward_length", G.UINT32, cfg["intermediate_size"]),
          (arch + ".block_count", G.UINT32, cfg["num_hidden_layers"]),
          (arch + ".attention.head_count", G.UINT32, cfg["num_attention_heads"]),
          (arch + ".attention.head_count_kv", G.UINT32, cfg["num_key_value_heads"])]
    if arch == "qwen3" or hd != cfg["hidden_size"] // cfg["num_attention_heads"]:
        f += [(arch + ".attention.key_length", G.UINT32, hd),
              (arch + ".attention.value_length", G.UINT32, hd)]
    f += [(arch + ".rope.dimension_count", G.UINT32, hd),
          (arch + ".rope.freq_base", G.FLOAT32, float(cfg["rope_theta"])),
          (arch + ".attention.layer_norm_rms_epsilon", G.FLOAT32, float(cfg["rms_norm_eps"]))]
    return f + (tokenizer if tokenizer is not None else tokenizer_fields(cfg["vocab_size"]))


def write_hf(out_dir, cfg, hf):
    """The float32 HF checkpoint of the same weights (config.json + model.safetensors)."""
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "config.json"), "w") as fh:
        json.dump(cfg, fh, indent=2)
        fh.write("\n")
    safetensors_io.save_file({k: ("F32", v) for k, v in hf.items()},
                             os.path.join(out_dir, "model.safetensors"), {"format": "pt"})


def make_model(out, arch="llama", mtype="f32", tied=True, seed=0, hf_out=None, shape=None,
               types=None):
    """Writes the GGUF file `out` (and optionally the HF checkpoint). Returns the HF config.
    `shape`: size overrides (hf_config); `types`: {GGUF tensor name: gguf_io type} overrides
    of the recipe (a model llama-quantize would not write, but llama.cpp loads)."""
    if mtype not in TYPES:
        raise ValueError("unknown type %r" % mtype)
    cfg = hf_config(arch, tied, shape)
    hf = hf_tensors(cfg, seed)
    types = types or {}
    tensors = [G.Tensor.from_array(name, a, types.get(name) or tensor_type(name, a.ndim, mtype, tied))
               for name, a in gguf_tensor_arrays(cfg, hf)]
    G.write(out, metadata(cfg, mtype), tensors)
    if hf_out:
        write_hf(hf_out, cfg, hf)
    return cfg


def make_shape_model(out, arch="qwen3", mtype="q4_0", tied=True, shape=None, ctx=CTX):
    """A GGUF model of `shape` (hf_config's overrides) whose weights are all
    zero bytes of the recipe's types, neither drawn nor quantized: for what
    depends only on the shapes (the kernels a compile makes), written in
    seconds at any size; `ctx` its context length. Returns the HF config."""
    cfg = hf_config(arch, tied, shape)
    cfg["max_position_embeddings"] = ctx
    hf = make_hf_model.make_tensors(cfg, 0, zeros=True)
    tensors = []
    for name, a in gguf_tensor_arrays(cfg, hf):
        t = tensor_type(name, a.ndim, mtype, tied, cfg["num_hidden_layers"])
        tensors.append(G.Tensor(name, a.shape, t, bytes(G.tensor_nbytes(t, a.size))))
    G.write(out, metadata(cfg, mtype), tensors)
    return cfg


def make_vocab_model(out, vocab, n_vocab=None, arch=None, seed=0, hidden=64, **fields):
    """A tiny model (1 layer, `hidden` wide, tied F16 embedding) around a real
    vocabulary (tokenizer_vocab.read_sentencepiece / read_hf): token_embd has one
    row per token, after padding to n_vocab. `fields` go to
    tokenizer_vocab.gguf_fields (pre=, add_bos=, merges=False, ...). Returns the
    vocabulary size."""
    import tokenizer_vocab
    arch = arch or ("llama" if vocab["model"] == "llama" else "qwen3")
    n = n_vocab or len(vocab["tokens"])
    cfg = hf_config(arch, True)
    cfg.update(hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=1,
               num_attention_heads=4, num_key_value_heads=2, vocab_size=n)
    if arch == "qwen3":
        cfg["head_dim"] = hidden // 4
    if "max_window_layers" in cfg:
        cfg["max_window_layers"] = 1
    hf = hf_tensors(cfg, seed)
    tensors = [G.Tensor.from_array(name, a, G.F16 if name == "token_embd.weight"
                                   else tensor_type(name, a.ndim, "f32", True, 1))
               for name, a in gguf_tensor_arrays(cfg, hf)]
    tok = tokenizer_vocab.gguf_fields(vocab, n_vocab=n, **fields)
    G.write(out, metadata(cfg, "f32", tokenizer=tok), tensors)
    return n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", choices=sorted(HEAD_DIM), default="llama")
    ap.add_argument("--type", dest="mtype", choices=list(TYPES), default="f32")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--tied", dest="tied", action="store_true", default=True)
    g.add_argument("--untied", dest="tied", action="store_false")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    ap.add_argument("--hf-out", help="also write the float32 HF checkpoint of the same weights here")
    args = ap.parse_args(argv)
    make_model(args.out, args.arch, args.mtype, args.tied, args.seed, args.hf_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
