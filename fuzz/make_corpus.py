#!/usr/bin/env python3
"""Writes small valid seed inputs for the fuzzers: OUT/gguf/*.gguf and
OUT/safetensors/*.safetensors (a tiny random model of each kind)."""
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


if __name__ == "__main__":
    main(sys.argv[1])
