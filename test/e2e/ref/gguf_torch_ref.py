#!/usr/bin/env python3
"""Float32 PyTorch reference for llama / qwen3 (/ qwen2) GGUF files: every tensor
is dequantized exactly as ggml does (gguf_io.dequantize), `llama` q/k rows are
un-permuted from llama.cpp's interleaved-RoPE layout back to the HF rotate-half
layout, and the model runs through hf_torch_ref's forward (the same code as the
HF reference: rotate-half RoPE; qwen3 q/k RMSNorm before RoPE; qwen3/qwen2 are
NEOX = rotate-half natively, so their q/k are used as stored).

  gguf_torch_ref.py --model FILE.gguf --prompt-ids 1,2,3 --steps 16 \
      --out-prompt-logits P.npy --out-step-logits S.npy --out-ids I.txt [--save-hf DIR]

Outputs as hf_torch_ref.py. --save-hf DIR keeps the equivalent float32 HF
checkpoint (config.json + model.safetensors) that the forward ran on.
"""
import argparse
import json
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, HERE)
import gguf_io  # noqa: E402
import hf_torch_ref  # noqa: E402
import safetensors_io  # noqa: E402

ARCHS = {"llama": ("LlamaForCausalLM", 10000.0), "qwen3": ("Qwen3ForCausalLM", 1000000.0),
         "qwen2": ("Qwen2ForCausalLM", 1000000.0)}
# GGUF blk.{i}.NAME -> HF model.layers.{i}.NAME
LAYER_NAMES = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj",
               "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
               "attn_output": "self_attn.o_proj", "attn_q_norm": "self_attn.q_norm",
               "attn_k_norm": "self_attn.k_norm", "ffn_norm": "post_attention_layernorm",
               "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}


def unpermute(w, n_head):
    """GGUF llama q/k rows (interleaved RoPE pairs) -> HF rotate-half rows; the
    inverse of convert_hf_to_gguf.py's permute(w, n_head)."""
    return (w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:])
             .swapaxes(1, 2).reshape(w.shape))


def gguf_to_hf(path):
    """-> (HF config dict, {HF name: float32 array}) of a GGUF model."""
    g = gguf_io.read(path)
    kv = g.kv
    arch = kv.get("general.architecture")
    if arch not in ARCHS:
        raise ValueError("%s: unsupported general.architecture %r" % (path, arch))

    def need(key):
        k = arch + "." + key
        if k not in kv:
            raise ValueError("%s: missing metadata %s" % (path, k))
        return kv[k]

    hidden, heads = need("embedding_length"), need("attention.head_count")
    n_kv = kv.get(arch + ".attention.head_count_kv", heads)
    head_dim = kv.get(arch + ".attention.key_length", hidden // heads)
    if kv.get(arch + ".attention.value_length", head_dim) != head_dim:
        raise ValueError("%s: key_length != value_length is not supported" % path)
    if kv.get(arch + ".rope.dimension_count", head_dim) != head_dim:
        raise ValueError("%s: partial rotary (rope.dimension_count != head_dim) is not supported" % path)
    if kv.get(arch + ".rope.scaling.type", "none") not in ("none", ""):
        raise ValueError("%s: rope scaling is not supported" % path)
    tied = "output.weight" not in g.tensors
    w = {"model.embed_tokens.weight": g.tensor("token_embd.weight"),
         "model.norm.weight": g.tensor("output_norm.weight")}
    if not tied:
        w["lm_head.weight"] = g.tensor("output.weight")
    for name in g.tensors:
        parts = name.split(".")
        if parts[0] != "blk":
            continue
        if len(parts) != 4 or parts[2] not in LAYER_NAMES or parts[3] not in ("weight", "bias"):
            raise ValueError("%s: unexpected tensor %s" % (path, name))
        a = g.tensor(name)
        if arch == "llama" and parts[2] in ("attn_q", "attn_k"):
            a = unpermute(a, heads if parts[2] == "attn_q" else n_kv)
        w["model.layers.%s.%s.%s" % (parts[1], LAYER_NAMES[parts[2]], parts[3])] = a
    vocab = w["model.embed_tokens.weight"].shape[0]
    cfg = {
        "architectures": [ARCHS[arch][0]],
        "model_type": arch,
        "hidden_size": hidden,
        "intermediate_size": need("feed_forward_length"),
        "num_hidden_layers": need("block_count"),
        "num_attention_heads": heads,
        "num_key_value_heads": n_kv,
        "head_dim": head_dim,
        "vocab_size": vocab,
        "max_position_embeddings": kv.get(arch + ".context_length", 2048),
        "rms_norm_eps": need("attention.layer_norm_rms_epsilon"),
        "rope_theta": float(kv.get(arch + ".rope.freq_base", ARCHS[arch][1])),
        "rope_scaling": None,
        "hidden_act": "silu",
        "tie_word_embeddings": tied,
        "bos_token_id": kv.get("tokenizer.ggml.bos_token_id", 1),
        "eos_token_id": kv.get("tokenizer.ggml.eos_token_id", 2),
        "torch_dtype": "float32",
    }
    if arch == "llama":
        cfg.update(attention_bias="blk.0.attn_q.bias" in g.tensors, mlp_bias=False)
    return cfg, w


def write_hf(path, out_dir):
    """Writes the float32 HF checkpoint of a GGUF model to out_dir; returns the config."""
    cfg, w = gguf_to_hf(path)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    safetensors_io.save_file({k: ("F32", np.ascontiguousarray(v, np.float32)) for k, v in w.items()},
                             os.path.join(out_dir, "model.safetensors"), {"format": "pt"})
    return cfg


def reference(gguf_path, prompt_ids, steps, save_hf=None):
    """-> (prompt_logits [n, V], step_logits [steps, V], generated ids), as hf_torch_ref."""
    if save_hf:
        write_hf(gguf_path, save_hf)
        return hf_torch_ref.reference(save_hf, prompt_ids, steps)
    with tempfile.TemporaryDirectory(prefix="gguf_ref_") as d:
        write_hf(gguf_path, d)
        return hf_torch_ref.reference(d, prompt_ids, steps)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="GGUF file")
    ap.add_argument("--prompt-ids", required=True, help="comma separated token ids")
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--out-prompt-logits")
    ap.add_argument("--out-step-logits")
    ap.add_argument("--out-ids")
    ap.add_argument("--save-hf", help="keep the dequantized float32 HF checkpoint in this directory")
    args = ap.parse_args(argv)
    prompt = [int(s) for s in args.prompt_ids.replace(" ", "").split(",") if s]
    if not prompt:
        ap.error("empty --prompt-ids")
    pl, sl, ids = reference(args.model, prompt, args.steps, args.save_hf)
    return hf_torch_ref.write_outputs(args, pl, sl, ids)


if __name__ == "__main__":
    sys.exit(main())
