"""Malformed inputs: `llmc compile` must exit non-zero, name the offending file (and
tensor) on stderr, and leave no output (or temporary) directory behind.
`llm-opt` must report invalid IR with a file:line:col location."""
import json
import os
import re
import struct

import numpy as np
import pytest

import e2e_util
import make_hf_model
import make_llama2c_model
import safetensors_io

TENSOR_MISSING = "model.layers.1.mlp.up_proj.weight"
TENSOR_SHAPE = "model.layers.0.self_attn.k_proj.weight"
TENSOR_DTYPE = "model.layers.0.mlp.gate_proj.weight"
TENSOR_OFFSETS = "model.norm.weight"


def _compile_must_fail(llmc, tmp_path, model, must_contain):
    art = tmp_path / "ART"
    p = e2e_util.run([llmc, "compile", model, "--target", "cpu", "-o", art])
    assert p.returncode != 0, e2e_util.describe(p, "llmc compile accepted a bad input")
    assert p.returncode > 0 and p.returncode < 128, e2e_util.describe(p, "llmc crashed (signal?)")
    for s in must_contain:
        assert s in p.stderr, e2e_util.describe(p, "stderr does not mention %r" % s)
    assert not art.exists(), "output directory %s was left behind" % art
    left = e2e_util.no_artifact_left(tmp_path)
    assert not left, "temporary output left behind in %s: %s" % (tmp_path, left)
    return p


# ---- llama2.c checkpoints -------------------------------------------------------------

def _llama2c_bytes():
    header, tensors = make_llama2c_model.make_weights(tied=True, seed=1)
    body = b"".join(np.ascontiguousarray(a, "<f4").tobytes() for _, a in tensors)
    return header, body


def test_llama2c_header_only(llmc, tmp_path):
    header, _ = _llama2c_bytes()
    f = tmp_path / "trunc_header_only.bin"
    f.write_bytes(struct.pack("<7i", *header))
    _compile_must_fail(llmc, tmp_path, f, [f.name])


def test_llama2c_half_weights(llmc, tmp_path):
    header, body = _llama2c_bytes()
    f = tmp_path / "trunc_half_weights.bin"
    f.write_bytes(struct.pack("<7i", *header) + body[:len(body) // 2])
    _compile_must_fail(llmc, tmp_path, f, [f.name])


@pytest.mark.parametrize("field,value", [(0, -64), (2, 0)], ids=["negative_dim", "zero_layers"])
def test_llama2c_absurd_header(llmc, tmp_path, field, value):
    header, body = _llama2c_bytes()
    header = list(header)
    header[field] = value
    f = tmp_path / ("absurd_%d_%d.bin" % (field, value)).replace("-", "m")
    f.write_bytes(struct.pack("<7i", *header) + body)
    _compile_must_fail(llmc, tmp_path, f, [f.name])


# ---- Hugging Face directories -----------------------------------------------------------

@pytest.fixture
def hf_dir(tmp_path):
    """A valid tiny f32 Llama checkpoint to break; returns its directory."""
    d = tmp_path / "hf_model"
    make_hf_model.make_model(str(d), arch="llama", tied=False, dtype="f32", shards=1, seed=0)
    return d


def _rewrite_tensors(path, edit):
    tensors, meta = safetensors_io.load_file(str(path), upcast=False)
    edit(tensors)
    safetensors_io.save_file(tensors, str(path), meta)


def test_safetensors_header_length_past_eof(llmc, tmp_path, hf_dir):
    st = hf_dir / "model.safetensors"
    data = bytearray(st.read_bytes())
    data[:8] = struct.pack("<Q", len(data) + 1000)
    st.write_bytes(bytes(data))
    _compile_must_fail(llmc, tmp_path, hf_dir, [st.name])


def test_safetensors_header_not_json(llmc, tmp_path, hf_dir):
    st = hf_dir / "model.safetensors"
    data = bytearray(st.read_bytes())
    n, = struct.unpack_from("<Q", data, 0)
    junk = b"{this is not json" + b"?" * (n - 17)
    data[8:8 + n] = junk
    st.write_bytes(bytes(data))
    _compile_must_fail(llmc, tmp_path, hf_dir, [st.name])


def test_safetensors_data_offsets_past_end(llmc, tmp_path, hf_dir):
    st = hf_dir / "model.safetensors"
    header, body = e2e_util.read_raw(st)
    b, e = header[TENSOR_OFFSETS]["data_offsets"]
    shift = len(body) - b + 4096  # same size, moved past the end of the data
    header[TENSOR_OFFSETS]["data_offsets"] = [b + shift, e + shift]
    e2e_util.write_raw(st, header, body)
    _compile_must_fail(llmc, tmp_path, hf_dir, [st.name, TENSOR_OFFSETS])


def test_missing_tensor(llmc, tmp_path, hf_dir):
    st = hf_dir / "model.safetensors"
    _rewrite_tensors(st, lambda t: t.pop(TENSOR_MISSING))
    p = _compile_must_fail(llmc, tmp_path, hf_dir, [TENSOR_MISSING])
    assert st.name in p.stderr or hf_dir.name in p.stderr, e2e_util.describe(
        p, "stderr names neither %s nor %s" % (st.name, hf_dir.name))


def test_wrong_shape(llmc, tmp_path, hf_dir):
    st = hf_dir / "model.safetensors"

    def edit(t):
        t[TENSOR_SHAPE] = np.zeros((64, 64), np.float32)  # want [2*8, 64]
    _rewrite_tensors(st, edit)
    _compile_must_fail(llmc, tmp_path, hf_dir, [st.name, TENSOR_SHAPE])


def test_unsupported_dtype(llmc, tmp_path, hf_dir):
    st = hf_dir / "model.safetensors"

    def edit(t):
        t[TENSOR_DTYPE] = np.ones(t[TENSOR_DTYPE].shape, np.int64)
    _rewrite_tensors(st, edit)
    _compile_must_fail(llmc, tmp_path, hf_dir, [st.name, TENSOR_DTYPE])


def test_missing_shard(llmc, tmp_path):
    d = tmp_path / "hf_sharded"
    make_hf_model.make_model(str(d), arch="llama", tied=True, dtype="f32", shards=2, seed=0)
    gone = d / make_hf_model.shard_name(1, 2)
    gone.unlink()
    _compile_must_fail(llmc, tmp_path, d, [gone.name])


def _edit_config(d, edit):
    cfg_path = d / "config.json"
    cfg = json.loads(cfg_path.read_text())
    edit(cfg)
    cfg_path.write_text(json.dumps(cfg))


def test_unsupported_architecture(llmc, tmp_path, hf_dir):
    def edit(c):
        c["architectures"] = ["GPT2LMHeadModel"]
        c["model_type"] = "gpt2"
    _edit_config(hf_dir, edit)
    _compile_must_fail(llmc, tmp_path, hf_dir, ["config.json", "GPT2LMHeadModel"])


def test_config_not_json(llmc, tmp_path, hf_dir):
    (hf_dir / "config.json").write_text('{"architectures": ["LlamaForCausalLM"], "hidden_size": 64,,,')
    _compile_must_fail(llmc, tmp_path, hf_dir, ["config.json"])


def test_config_missing_hidden_size(llmc, tmp_path, hf_dir):
    _edit_config(hf_dir, lambda c: c.pop("hidden_size"))
    _compile_must_fail(llmc, tmp_path, hf_dir, ["config.json", "hidden_size"])


def test_model_path_does_not_exist(llmc, tmp_path):
    missing = tmp_path / "no_such_model_here"
    _compile_must_fail(llmc, tmp_path, missing, [missing.name])


# ---- llm-opt -------------------------------------------------------------------------

def test_llm_opt_invalid_ir_is_located(llm_opt, tmp_path):
    f = tmp_path / "bad_ir.mlir"
    f.write_text("module {\n"
                 "  func.func @main() {\n"
                 "    %0 = \"llm.nonsense\"( : () -> ()\n"
                 "  }\n"
                 "}\n")
    p = e2e_util.run([llm_opt, f])
    assert p.returncode != 0, e2e_util.describe(p, "llm-opt accepted invalid IR")
    assert re.search(r"bad_ir\.mlir:3:\d+", p.stderr), e2e_util.describe(p, "no file:line:col location")
