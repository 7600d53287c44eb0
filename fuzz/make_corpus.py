#!/usr/bin/env python3
"""Writes small valid seed inputs for the fuzzers: OUT/gguf/*.gguf and
OUT/safetensors/*.safetensors (a tiny random model of each kind), and
OUT/tokenizer/* (a mode byte, then a small SentencePiece model, corpus text, or
an llmc tokenizer file; see tokenizer_fuzzer.cpp)."""
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "e2e", "tools"))
import gguf_writer  # noqa: E402
import make_hf_model  # noqa: E402


def main(out):
    os.makedirs(os.path.join(out, "gguf"), exist_ok=True)
    os.makedirs(os.path.join(out, "safetensors"), exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for arch, dtype in (("llama", "f32"), ("qwen3", "f16")):
            hf = os.path.join(tmp, arch)
            make_hf_model.make_model(hf, arch=arch, tied=True, dtype=dtype, seed=1)
            gguf_writer.hf_to_gguf(hf, os.path.join(out, "gguf", arch + ".gguf"),
                                   gguf_writer.GGML_F16 if dtype == "f16" else gguf_writer.GGML_F32)
            os.replace(os.path.join(hf, "model.safetensors"),
                       os.path.join(out, "safetensors", arch + ".safetensors"))


def _proto_field(num, payload):
    """A length-delimited protobuf field."""
    n, length = len(payload), b""
    while True:
        length += bytes([(n & 0x7F) | (0x80 if n > 0x7F else 0)])
        n >>= 7
        if not n:
            break
    return bytes([num << 3 | 2]) + length + payload


def tokenizer_seeds(out):
    import json
    import struct
    d = os.path.join(out, "tokenizer")
    os.makedirs(d, exist_ok=True)
    # A SentencePiece BPE model: <unk> <s> </s>, byte pieces, a few pieces.
    pieces = [("<unk>", 0.0, 2), ("<s>", 0.0, 3), ("</s>", 0.0, 3)]
    pieces += [("<0x%02X>" % b, 0.0, 6) for b in range(256)]
    pieces += [("\u2581", -1.0, 1), ("a", -2.0, 1), ("\u2581a", -0.5, 1)]
    model = b"".join(_proto_field(1, _proto_field(1, p.encode()) + b"\x15" +
                                  struct.pack("<f", sc) + bytes([0x18, t]))
                     for p, sc, t in pieces)
    model += _proto_field(2, bytes([0x18, 2, 0x98, 0x02, 1]))  # BPE, byte_fallback
    model += _proto_field(3, _proto_field(1, b"identity") + bytes([0x18, 1, 0x20, 0]))
    with open(os.path.join(d, "spm"), "wb") as f:
        f.write(b"\x00" + model)
    with open(os.path.join(ROOT, "test", "e2e", "data", "tokenizer_corpus.json"),
              encoding="utf-8") as f:
        corpus = json.load(f)
    for i, text in enumerate(corpus[::15]):
        with open(os.path.join(d, "text%d" % i), "wb") as f:
            f.write(b"\x01" + text.encode("utf-8"))
    llmc = {"format": "llmc-tokenizer", "version": 1, "kind": "bpe",
            "pre_tokenizer": "gpt2", "tokens": ["a", "b", "c", "ab", "abc"],
            "token_types": [1, 1, 1, 1, 1], "merges": ["a b", "ab c"]}
    with open(os.path.join(d, "llmc"), "wb") as f:
        f.write(b"\x02" + json.dumps(llmc).encode())


if __name__ == "__main__":
    main(sys.argv[1])
    tokenizer_seeds(sys.argv[1])
