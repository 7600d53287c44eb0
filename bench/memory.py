#!/usr/bin/env python3
"""Resident memory of a Q4_K_M model: are the weights kept quantized?

Writes a deterministic random llama model (hidden 1024, FFN 2816, 4 layers,
vocab 960, ~29 MB as Q4_K_M) with test/e2e/tools/make_gguf_model.py, compiles
it, and runs `llmc bench`, which reports the bytes of weights.bin (memory-
mapped, never copied), how many are resident, and the process's peak RSS. The
same is measured on the tiny test model, whose peak RSS is the baseline of the
process (code, libraries), so that

  weights resident / GGUF file size        -> target <= 1.1
  (peak RSS - baseline) / GGUF file size   -> everything the model added

  bench/memory.py [--llmc build/bin/llmc] [--keep DIR]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "e2e", "tools"))
import make_gguf_model as M  # noqa: E402

MEM = re.compile(r"memory: weights.bin (\d+) bytes mapped, (\d+) KiB resident; peak RSS (\d+) KiB")


def measure(llmc, gguf, art):
    subprocess.run([llmc, "compile", gguf, "-o", art], check=True)
    out = subprocess.run([llmc, "bench", art, "-r", "1", "-p", "16", "-n", "8"], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    m = MEM.search(out)
    if not m:
        raise SystemExit("no memory line in llmc bench output:\n" + out)
    return int(m.group(1)), int(m.group(2)) * 1024, int(m.group(3)) * 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llmc", default=os.path.join(ROOT, "build", "bin", "llmc"))
    ap.add_argument("--keep", help="work in this directory and keep it")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="llmc-mem-")
    os.makedirs(work, exist_ok=True)

    tiny = os.path.join(work, "tiny.gguf")
    M.make_model(tiny, arch="llama", mtype="q4_k_m", tied=False, seed=1)
    _, _, base_rss = measure(args.llmc, tiny, os.path.join(work, "tiny-art"))

    M.HIDDEN, M.INTER, M.LAYERS, M.HEADS, M.KV_HEADS, M.VOCAB = 1024, 2816, 4, 16, 4, 960
    M.HEAD_DIM = {"llama": 64, "qwen3": 64}
    big = os.path.join(work, "big.gguf")
    M.make_model(big, arch="llama", mtype="q4_k_m", tied=False, seed=1)
    size = os.path.getsize(big)
    mapped, resident, rss = measure(args.llmc, big, os.path.join(work, "big-art"))
    print("GGUF file                 %10d bytes" % size)
    print("weights.bin               %10d bytes  %.3f x file" % (mapped, mapped / size))
    print("weights resident          %10d bytes  %.3f x file" % (resident, resident / size))
    print("peak RSS - baseline       %10d bytes  %.3f x file  (baseline %d)"
          % (rss - base_rss, (rss - base_rss) / size, base_rss))
    return 0 if resident <= 1.1 * size else 1


if __name__ == "__main__":
    sys.exit(main())
