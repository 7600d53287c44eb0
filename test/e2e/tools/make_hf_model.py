#!/usr/bin/env python3
"""Write a deterministic (seeded) random tiny Hugging Face causal-LM checkpoint.

  make_hf_model.py --arch llama|qwen2|qwen3 [--tied|--untied] [--dtype f32|f16|bf16]
                   [--shards N] [--seed S] --out DIR

DIR gets config.json and model.safetensors, or (--shards N > 1)
model-0000i-of-0000N.safetensors + model.safetensors.index.json.
Sizes: hidden 64, intermediate 160, 2 layers, 8 heads, 2 KV heads, vocab 300,
max_position_embeddings 256. qwen3: head_dim 16 (!= 64/8) with q_norm/k_norm;
qwen2: q/k/v biases. Tied models (tie_word_embeddings) have no lm_head.weight.
The weights are drawn in float32 and rounded to --dtype when stored; the same
seed gives the same values whatever --shards is.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

ARCHS = {
    "llama": dict(architectures=["LlamaForCausalLM"], model_type="llama",
                  rope_theta=10000.0, rms_norm_eps=1e-5),
    "qwen2": dict(architectures=["Qwen2ForCausalLM"], model_type="qwen2",
                  rope_theta=1000000.0, rms_norm_eps=1e-6),
    "qwen3": dict(architectures=["Qwen3ForCausalLM"], model_type="qwen3",
                  rope_theta=1000000.0, rms_norm_eps=1e-6),
}
DTYPES = {"f32": ("F32", "float32"), "f16": ("F16", "float16"), "bf16": ("BF16", "bfloat16")}

HIDDEN, INTER, LAYERS, HEADS, KV_HEADS, VOCAB, MAX_POS = 64, 160, 2, 8, 2, 300, 256
BOS_ID, EOS_ID = 1, 2


def make_config(arch, tied, dtype, max_pos=MAX_POS, kv_heads=KV_HEADS):
    a = ARCHS[arch]
    cfg = {
        "architectures": a["architectures"],
        "model_type": a["model_type"],
        "hidden_size": HIDDEN,
        "intermediate_size": INTER,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "num_key_value_heads": kv_heads,
        "vocab_size": VOCAB,
        "max_position_embeddings": max_pos,
        "rms_norm_eps": a["rms_norm_eps"],
        "rope_theta": a["rope_theta"],
        "rope_scaling": None,
        "hidden_act": "silu",
        "tie_word_embeddings": bool(tied),
        "torch_dtype": DTYPES[dtype][1],
        "bos_token_id": BOS_ID,
        "eos_token_id": EOS_ID,
        "initializer_range": 0.02,
        "attention_dropout": 0.0,
        "use_cache": True,
        "transformers_version": "4.51.0",
    }
    if arch == "llama":
        cfg.update(attention_bias=False, mlp_bias=False, pretraining_tp=1)
    else:
        cfg.update(use_sliding_window=False, sliding_window=None, max_window_layers=LAYERS)
    if arch == "qwen3":
        cfg.update(head_dim=16, attention_bias=False)
    return cfg


def head_dim_of(cfg):
    return cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]


def make_tensors(cfg, seed, zeros=False):
    """-> ordered {name: float32 array} (before dtype rounding). `zeros`: every
    array a read-only zero of its shape, allocating nothing (for the shapes)."""
    rng = np.random.default_rng(seed)
    arch = cfg["model_type"]
    H, I, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    hd = head_dim_of(cfg)
    nq, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]

    def normal(shape, std):
        if zeros:
            return np.broadcast_to(np.float32(0), shape)
        return (rng.standard_normal(shape, dtype=np.float32) * np.float32(std)).astype(np.float32)

    def norm_w(n):
        if zeros:
            return normal((n,), 0)
        return (np.float32(1.0) + normal((n,), 0.1)).astype(np.float32)

    t = {"model.embed_tokens.weight": normal((V, H), 0.1)}
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        t[p + "input_layernorm.weight"] = norm_w(H)
        t[p + "self_attn.q_proj.weight"] = normal((nq * hd, H), 0.08)
        t[p + "self_attn.k_proj.weight"] = normal((nkv * hd, H), 0.08)
        t[p + "self_attn.v_proj.weight"] = normal((nkv * hd, H), 0.15)
        if arch == "qwen2":
            t[p + "self_attn.q_proj.bias"] = normal((nq * hd,), 0.2)
            t[p + "self_attn.k_proj.bias"] = normal((nkv * hd,), 0.2)
            t[p + "self_attn.v_proj.bias"] = normal((nkv * hd,), 0.2)
        if arch == "qwen3":
            t[p + "self_attn.q_norm.weight"] = norm_w(hd)
            t[p + "self_attn.k_norm.weight"] = norm_w(hd)
        t[p + "self_attn.o_proj.weight"] = normal((H, nq * hd), 0.15)
        t[p + "post_attention_layernorm.weight"] = norm_w(H)
        t[p + "mlp.gate_proj.weight"] = normal((I, H), 0.08)
        t[p + "mlp.up_proj.weight"] = normal((I, H), 0.08)
        t[p + "mlp.down_proj.weight"] = normal((H, I), 0.12)
    t["model.norm.weight"] = norm_w(H)
    lm_head = normal((V, H), 0.1)  # always drawn, so tied/untied share all other values
    if not cfg["tie_word_embeddings"]:
        t["lm_head.weight"] = lm_head
    return t


def shard_name(i, n):
    return "model-%05d-of-%05d.safetensors" % (i + 1, n)


def make_model(out, arch="llama", tied=True, dtype="f32", shards=1, seed=0, max_pos=MAX_POS,
               kv_heads=KV_HEADS):
    """Writes the checkpoint into `out` (created). Returns the config dict."""
    if arch not in ARCHS:
        raise ValueError("unknown arch %r" % arch)
    if dtype not in DTYPES:
        raise ValueError("unknown dtype %r" % dtype)
    os.makedirs(out, exist_ok=True)
    cfg = make_config(arch, tied, dtype, max_pos, kv_heads)
    tensors = make_tensors(cfg, seed)
    st_dtype = DTYPES[dtype][0]
    items = [(name, (st_dtype, arr)) for name, arr in tensors.items()]
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    meta = {"format": "pt"}
    if shards <= 1:
        safetensors_io.save_file(dict(items), os.path.join(out, "model.safetensors"), meta)
        return cfg
    if shards > len(items):
        raise ValueError("more shards than tensors")
    # contiguous groups of roughly equal byte size, each non-empty
    itemsize = {"F32": 4, "F16": 2, "BF16": 2}[st_dtype]
    sizes = [arr.size * itemsize for _, (_, arr) in items]
    total = sum(sizes)
    groups, cur, acc = [], [], 0
    for k, (item, sz) in enumerate(zip(items, sizes)):
        cur.append(item)
        acc += sz
        remaining_items = len(items) - k - 1
        remaining_groups = shards - len(groups) - 1
        if remaining_groups > 0 and (acc >= total * (len(groups) + 1) / shards
                                     or remaining_items == remaining_groups):
            groups.append(cur)
            cur = []
    groups.append(cur)
    assert len(groups) == shards and all(groups)
    weight_map = {}
    for i, g in enumerate(groups):
        fname = shard_name(i, shards)
        safetensors_io.save_file(dict(g), os.path.join(out, fname), meta)
        for name, _ in g:
            weight_map[name] = fname
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
        f.write("\n")
    return cfg


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", choices=sorted(ARCHS), default="llama")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--tied", dest="tied", action="store_true", default=True)
    g.add_argument("--untied", dest="tied", action="store_false")
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="f32")
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    make_model(args.out, args.arch, args.tied, args.dtype, args.shards, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
