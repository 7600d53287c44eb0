#!/usr/bin/env python3
"""Write a deterministic random llama2.c checkpoint (legacy version-0 format:
7 int32 header, float32 tensors; negative vocab_size = untied classifier).

  make_llama2c_model.py --out F [--untied] [--seed S] [--dim 64 --hidden 160
      --layers 2 --heads 8 --kv-heads 2 --vocab 300 --seq-len 128]
"""
import argparse
import os
import struct
import sys

import numpy as np


def make_weights(dim=64, hidden=160, layers=2, heads=8, kv_heads=2, vocab=300, seq_len=128,
                 tied=True, seed=0):
    """-> (header tuple, ordered list of (name, float32 array)) in file order."""
    rng = np.random.default_rng(seed)
    hs = dim // heads
    kv_dim = hs * kv_heads

    def normal(shape, std):
        return (rng.standard_normal(shape, dtype=np.float32) * np.float32(std)).astype(np.float32)

    def norm_w(shape):
        return (np.float32(1.0) + normal(shape, 0.1)).astype(np.float32)

    pos = np.arange(seq_len, dtype=np.float32)[:, None]
    freqs = 1.0 / (10000.0 ** (np.arange(0, hs, 2, dtype=np.float32) / hs))
    ang = pos * freqs[None, :].astype(np.float32)
    t = [
        ("token_embedding", normal((vocab, dim), 0.1)),
        ("rms_att", norm_w((layers, dim))),
        ("wq", normal((layers, dim, dim), 0.08)),
        ("wk", normal((layers, kv_dim, dim), 0.08)),
        ("wv", normal((layers, kv_dim, dim), 0.15)),
        ("wo", normal((layers, dim, dim), 0.15)),
        ("rms_ffn", norm_w((layers, dim))),
        ("w1", normal((layers, hidden, dim), 0.08)),
        ("w2", normal((layers, dim, hidden), 0.12)),
        ("w3", normal((layers, hidden, dim), 0.08)),
        ("rms_final", norm_w((dim,))),
        ("freq_cis_real", np.cos(ang).astype(np.float32)),
        ("freq_cis_imag", np.sin(ang).astype(np.float32)),
    ]
    wcls = normal((vocab, dim), 0.1)
    if not tied:
        t.append(("wcls", wcls))
    header = (dim, hidden, layers, heads, kv_heads, vocab if tied else -vocab, seq_len)
    return header, t


def write_checkpoint(path, header, tensors):
    with open(path, "wb") as f:
        f.write(struct.pack("<7i", *header))
        for _, a in tensors:
            f.write(np.ascontiguousarray(a, dtype="<f4").tobytes())


def make_model(path, tied=True, seed=0, **sizes):
    header, tensors = make_weights(tied=tied, seed=seed, **sizes)
    write_checkpoint(path, header, tensors)
    return header


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--untied", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=160)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=300)
    ap.add_argument("--seq-len", type=int, default=128)
    a = ap.parse_args(argv)
    make_model(a.out, tied=not a.untied, seed=a.seed, dim=a.dim, hidden=a.hidden, layers=a.layers,
               heads=a.heads, kv_heads=a.kv_heads, vocab=a.vocab, seq_len=a.seq_len)
    return 0


if __name__ == "__main__":
    sys.exit(main())
