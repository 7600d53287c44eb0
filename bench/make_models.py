#!/usr/bin/env python3
"""Writes the benchmark models: deterministic random weights in real model
shapes, as GGUF files, in the types llama.cpp users run.

  bench/make_models.py --out DIR [--shapes llama-110m,qwen3-0.6b]
                       [--types f32,f16,q8_0,q4_0,q4_k_m]
                       [--llama-quantize PATH]

Shapes (issue 9's benchmark rows):
  llama-110m   dim 768, 12 layers, 12 heads, FFN 2048, vocab 32000, untied
  qwen3-0.6b   hidden 1024, 28 layers, 16 q / 8 kv heads, head_dim 128,
               FFN 3072, vocab 151936, tied; written with the `llama`
               architecture (mainline llama.cpp at the peers' commit has no
               `qwen3`), so no q/k norms
  mqa-110m     llama-110m with one KV head (MQA, as Gemma-2B or Falcon):
               decode's attention has no KV heads to spread over threads
  qwen3qk-0.6b qwen3-0.6b with the `qwen3` architecture: q/k norms and
               NEOX RoPE, as the real model (ik_llama.cpp runs it; mainline
               at the peers' commit does not)

The F32 file is written by test/e2e/tools/make_gguf_model.py; the others are
made from it by `llama-quantize` when --llama-quantize is given (exactly as
users get them), else by the test tools' own quantizers (ggml's reference
layouts). Files that exist are kept. Prints one path per line.
"""
import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "e2e", "tools"))
import gguf_io as G  # noqa: E402
import make_gguf_model as M  # noqa: E402

SHAPES = {
    "llama-110m": dict(hidden_size=768, intermediate_size=2048, num_hidden_layers=12,
                       num_attention_heads=12, num_key_value_heads=12, vocab_size=32000,
                       max_position_embeddings=2048, tied=False, head_dim=64),
    "qwen3-0.6b": dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                       num_attention_heads=16, num_key_value_heads=8, vocab_size=151936,
                       max_position_embeddings=2048, tied=True, head_dim=128),
    "mqa-110m": dict(hidden_size=768, intermediate_size=2048, num_hidden_layers=12,
                     num_attention_heads=12, num_key_value_heads=1, vocab_size=32000,
                     max_position_embeddings=2048, tied=False, head_dim=64),
    "qwen3qk-0.6b": dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                         num_attention_heads=16, num_key_value_heads=8, vocab_size=151936,
                         max_position_embeddings=2048, tied=True, head_dim=128,
                         arch="qwen3"),
}
QUANT_NAMES = {"f16": "F16", "q8_0": "Q8_0", "q4_0": "Q4_0", "q4_k_m": "Q4_K_M"}


def config(shape):
    s = dict(SHAPES[shape])
    tied = s.pop("tied")
    cfg = M.hf_config(s.pop("arch", "llama"), tied)
    cfg.update(s)
    return cfg


def write_f32(path, shape, seed=0):
    cfg = config(shape)
    hf = M.hf_tensors(cfg, seed)
    tensors = [G.Tensor.from_array(name, a, G.F32) for name, a in M.gguf_tensor_arrays(cfg, hf)]
    del hf
    G.write(path, M.metadata(cfg, "f32"), tensors)


def write_quantized(src, dst, mtype, shape, quantize):
    if quantize:
        subprocess.run([quantize, src, dst, QUANT_NAMES[mtype]], check=True,
                       stdout=subprocess.DEVNULL)
        return
    cfg = config(shape)
    hf = M.hf_tensors(cfg, 0)
    tensors = [G.Tensor.from_array(name, a, M.tensor_type(name, a.ndim, mtype, SHAPES[shape]["tied"],
                                                            cfg["num_hidden_layers"]))
               for name, a in M.gguf_tensor_arrays(cfg, hf)]
    G.write(dst, M.metadata(cfg, mtype), tensors)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--shapes", default="llama-110m")
    ap.add_argument("--types", default="f32,q8_0,q4_k_m")
    ap.add_argument("--llama-quantize", help="llama.cpp's llama-quantize (else the test tools')")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for shape in args.shapes.split(","):
        if shape not in SHAPES:
            raise SystemExit("unknown shape %r (known: %s)" % (shape, ", ".join(SHAPES)))
        f32 = os.path.join(args.out, "%s-f32.gguf" % shape)
        if not os.path.exists(f32):
            write_f32(f32 + ".tmp", shape)
            os.rename(f32 + ".tmp", f32)
        for mtype in args.types.split(","):
            path = os.path.join(args.out, "%s-%s.gguf" % (shape, mtype))
            if mtype != "f32" and not os.path.exists(path):
                write_quantized(f32, path + ".tmp", mtype, shape, args.llama_quantize)
                os.rename(path + ".tmp", path)
            print(path)


if __name__ == "__main__":
    main()
