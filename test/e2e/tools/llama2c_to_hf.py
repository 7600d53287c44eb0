#!/usr/bin/env python3
"""Convert a llama2.c checkpoint to a Hugging Face LlamaForCausalLM directory
(config.json + model.safetensors, float32), permuting wq/wk from llama2.c's
interleaved-pair RoPE layout to HF's rotate-half layout exactly as transformers'
convert_llama_weights_to_hf.py does. Used to cross-check the two references and
to give the HF path a trained model.

  llama2c_to_hf.py --checkpoint stories260K.bin --out DIR
"""
import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "ref"))
import safetensors_io  # noqa: E402
import llama2c_ref  # noqa: E402


def permute(w, n_heads):
    dim1, dim2 = w.shape
    return w.reshape(n_heads, dim1 // n_heads // 2, 2, dim2).transpose(0, 2, 1, 3).reshape(dim1, dim2)


def convert(checkpoint, out):
    cfg, w = llama2c_ref.load_checkpoint(checkpoint)
    os.makedirs(out, exist_ok=True)
    t = {"model.embed_tokens.weight": w["token_embedding"]}
    for l in range(cfg.n_layers):
        p = "model.layers.%d." % l
        t[p + "input_layernorm.weight"] = w["rms_att"][l]
        t[p + "self_attn.q_proj.weight"] = permute(w["wq"][l], cfg.n_heads)
        t[p + "self_attn.k_proj.weight"] = permute(w["wk"][l], cfg.n_kv_heads)
        t[p + "self_attn.v_proj.weight"] = w["wv"][l]
        t[p + "self_attn.o_proj.weight"] = w["wo"][l]
        t[p + "post_attention_layernorm.weight"] = w["rms_ffn"][l]
        t[p + "mlp.gate_proj.weight"] = w["w1"][l]
        t[p + "mlp.down_proj.weight"] = w["w2"][l]
        t[p + "mlp.up_proj.weight"] = w["w3"][l]
    t["model.norm.weight"] = w["rms_final"]
    if not cfg.shared_weights:
        t["lm_head.weight"] = w["wcls"]
    t = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in t.items()}
    safetensors_io.save_file(t, os.path.join(out, "model.safetensors"), {"format": "pt"})
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": cfg.dim, "intermediate_size": cfg.hidden_dim,
        "num_hidden_layers": cfg.n_layers, "num_attention_heads": cfg.n_heads,
        "num_key_value_heads": cfg.n_kv_heads, "vocab_size": cfg.vocab_size,
        "max_position_embeddings": cfg.seq_len, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
        "rope_scaling": None, "hidden_act": "silu", "tie_word_embeddings": cfg.shared_weights,
        "torch_dtype": "float32", "bos_token_id": 1, "eos_token_id": 2,
        "attention_bias": False, "mlp_bias": False,
    }
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    return config


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    convert(a.checkpoint, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
