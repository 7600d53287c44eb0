#!/usr/bin/env python3
"""llama.cpp as a test oracle: a thin wrapper around test/oracles/llama_cpp.mjs
(node-llama-cpp's prebuilt CPU binaries; `npm install --omit=optional` in
test/oracles first). `node` is taken from PATH.

  available()                        -> bool: node and the installed module are there
  logits(model, ids, steps)          -> (prompt_logits [n, V] float32,
                                         step_logits [steps, V] float32, generated ids)
                                        same conventions as ref/hf_torch_ref.reference
  tokenize(model, strings, specials) -> [[ids], ...]  (no BOS/EOS added)
  detokenize(model, id_lists, specials) -> [str, ...]

llama.cpp runs with an F32 KV cache, flash attention off, 1 thread, the whole
prompt in one batch and greedy (first-maximum argmax) decoding.

ggml loads the CPU variant of its prebuilt library that best fits the host.
The sapphirerapids one (AMX tiles, AVX512-FP16) computes other products and
sums in another order than the AVX-512 kernels llmc's llama.cpp mode follows
(measured on an Emerald Rapids host: f16 weights 1.35e-3 x max|logit| off, an
f16 KV cache 5.7e-3); _run holds it back, so an AMX host runs the zen4
variant, the same kernels as an AMD AVX-512 host.
"""
import glob
import json
import os
import shutil
import subprocess
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ORACLES = os.path.normpath(os.path.join(HERE, "..", "..", "oracles"))
SCRIPT = os.path.join(ORACLES, "llama_cpp.mjs")
TIMEOUT = int(os.environ.get("LLMC_TEST_TIMEOUT", "900"))


class OracleError(RuntimeError):
    pass


def available():
    """True when node is on PATH and node-llama-cpp with its prebuilt binaries is installed."""
    mods = os.path.join(ORACLES, "node_modules")
    return (shutil.which("node") is not None and os.path.isfile(SCRIPT)
            and os.path.isfile(os.path.join(mods, "node-llama-cpp", "package.json"))
            and os.path.isdir(os.path.join(mods, "@node-llama-cpp")))


# Variants of ggml's CPU library the oracle never loads (see above).
HELD_BACK = ("libggml-cpu-sapphirerapids.so",)


def _hold_back_variants():
    """Moves HELD_BACK out of the installed binaries' folder (test/oracles'
    own npm install) into a sibling `held-back` folder, once."""
    bins = os.path.join(ORACLES, "node_modules", "@node-llama-cpp", "linux-x64", "bins")
    aside = os.path.join(bins, "held-back")
    for name in HELD_BACK:
        for path in glob.glob(os.path.join(bins, "*", name)):
            if os.path.dirname(path) != aside:
                os.makedirs(aside, exist_ok=True)
                os.replace(path, os.path.join(aside, name))


def _run(args):
    _hold_back_variants()
    node = shutil.which("node")
    if node is None:
        raise OracleError("node not found on PATH")
    cmd = [node, SCRIPT] + [str(a) for a in args]
    p = subprocess.run(cmd, cwd=ORACLES, capture_output=True, text=True, timeout=TIMEOUT)
    if p.returncode != 0:
        raise OracleError("llama.cpp oracle failed (exit %d): %s\n%s%s"
                          % (p.returncode, " ".join(cmd), p.stdout, p.stderr))
    return p


def logits(model, ids, steps, threads=1, kv_type="F32"):
    """-> (prompt_logits [len(ids), V], step_logits [steps, V], generated ids list);
    `kv_type` is the KV cache's type (F32 or F16)."""
    if not ids:
        raise ValueError("empty prompt")
    with tempfile.TemporaryDirectory(prefix="llama_cpp_oracle_") as d:
        p, s, i = (os.path.join(d, n) for n in ("prompt.npy", "steps.npy", "ids.txt"))
        _run(["logits", "--model", os.path.abspath(model), "--ids", ",".join(str(int(t)) for t in ids),
              "--steps", int(steps), "--threads", int(threads), "--kv-type", kv_type,
              "--out-prompt", p, "--out-steps", s, "--out-ids", i])
        with open(i) as f:
            gen = [int(t) for t in f.read().split()]
        return np.load(p), np.load(s), gen


def _json_mode(mode, model, items, specials):
    with tempfile.TemporaryDirectory(prefix="llama_cpp_oracle_") as d:
        src, dst = os.path.join(d, "in.json"), os.path.join(d, "out.json")
        with open(src, "w", encoding="utf-8") as f:
            json.dump(items, f)
        _run([mode, "--model", os.path.abspath(model), "--in", src, "--out", dst]
             + (["--specials"] if specials else []))
        with open(dst, encoding="utf-8") as f:
            return json.load(f)


def tokenize(model, strings, specials=False):
    """llama.cpp's tokenizer, no BOS/EOS; specials=True parses special tokens in the text."""
    return _json_mode("tokenize", model, list(strings), specials)


def detokenize(model, id_lists, specials=False):
    """llama_detokenize of each id list; specials=True renders special tokens as text."""
    return _json_mode("detokenize", model, [[int(t) for t in l] for l in id_lists], specials)
