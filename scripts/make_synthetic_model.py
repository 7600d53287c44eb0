#!/usr/bin/env python3
"""A small deterministic synthetic Llama for the demo when no real model is
present: a llama2.c checkpoint with RANDOM weights and a byte-level llama2.c
tokenizer (3 specials + 256 byte tokens).

  make_synthetic_model.py --out DIR  ->  DIR/model.bin, DIR/tokenizer.bin
"""
import argparse
import os
import struct
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = 259


def write_tokenizer(path):
    pieces = [b"<unk>", b"\n<s>\n", b"\n</s>\n"] + [b"<0x%02X>" % i for i in range(256)]
    with open(path, "wb") as f:
        f.write(struct.pack("<i", max(len(p) for p in pieces)))
        for p in pieces:
            f.write(struct.pack("<fi", 0.0, len(p)))
            f.write(p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    subprocess.check_call([sys.executable, os.path.join(ROOT, "test/e2e/tools/make_llama2c_model.py"),
                           "--out", os.path.join(args.out, "model.bin"), "--vocab", str(VOCAB),
                           "--seq-len", "256", "--seed", "7"])
    write_tokenizer(os.path.join(args.out, "tokenizer.bin"))


if __name__ == "__main__":
    main()
