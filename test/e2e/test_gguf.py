"""GGUF import (F32/F16 tensors, llama and qwen3 metadata, the embedded
SentencePiece tokenizer), `llmc inspect`, and malformed GGUF files."""
import os
import re
import struct

import numpy as np
import pytest

import e2e_util
import gguf_writer
import hf_torch_ref
import make_hf_model


def _generated_prefix(got, ref_ids, eos=2):
    """llmc's ids equal the reference's up to and including the first EOS,
    where llmc stops; returns how many there are."""
    ref = list(ref_ids)
    if eos in ref:
        ref = ref[:ref.index(eos) + 1]
    assert got == ref
    return len(got)


def _run_ids(llmc, art, *args):
    p = e2e_util.run([llmc, "run", art] + list(args) + ["--print-ids"], check=True)
    return e2e_util.parse_ids(p.stdout)


def test_stories260k_as_gguf_matches_llama2c(llmc, tmp_path, stories_paths):
    ckpt, tok = stories_paths
    gguf = tmp_path / "stories.gguf"
    gguf_writer.llama2c_to_gguf(ckpt, tok, str(gguf))
    e2e_util.run([llmc, "compile", gguf, "-o", tmp_path / "g"], check=True)
    e2e_util.run([llmc, "compile", ckpt, "--tokenizer", tok, "-o", tmp_path / "c"], check=True)
    # Same weights, same interleaved RoPE, and the tokenizer converted from
    # the GGUF metadata: the same tokens for a text prompt.
    a = _run_ids(llmc, tmp_path / "g", "--prompt", "Once upon a time", "--max-tokens", "60")
    b = _run_ids(llmc, tmp_path / "c", "--prompt", "Once upon a time", "--max-tokens", "60")
    assert a == b and len(a) == 60
    text = e2e_util.run([llmc, "run", tmp_path / "g", "--prompt", "", "--max-tokens", "20"],
                        check=True).stdout
    assert text.startswith("Once upon a time")


def _logits_and_torch(llmc, art, hf, ids, steps):
    """`llmc run` of the artifact from the prompt ids (two threads, checked against
    one) and PyTorch's reference on the Hugging Face checkpoint: -> (prompt logits,
    step logits, how many generated ids agree, reference prompt and step logits)."""
    run = e2e_util.run_logits(llmc, art, ids, steps)
    e2e_util.check_threads(llmc, art, ids, steps, run)
    _, prompt, step_logits, got = run
    ref_prompt, ref_steps, ref_ids = hf_torch_ref.reference(str(hf), ids, steps)
    return prompt, step_logits, _generated_prefix(got, ref_ids), ref_prompt, ref_steps


@pytest.mark.parametrize("arch,tied,dtype", [("llama", False, "f32"), ("llama", True, "f16"),
                                             ("qwen3", True, "f32"), ("qwen3", False, "f16"),
                                             ("qwen2", True, "f32"), ("qwen2", False, "f16")])
def test_gguf_matches_torch(llmc, tmp_path, arch, tied, dtype):
    hf, gguf = e2e_util.float_gguf(tmp_path, arch, tied, dtype)
    art = tmp_path / "art"
    e2e_util.run([llmc, "compile", gguf, "-o", art], check=True)
    ids = e2e_util.deterministic_prompt_ids(32, 300)
    prompt, steps, n, ref_prompt, ref_steps = _logits_and_torch(llmc, art, hf, ids, 16)
    assert np.abs(prompt - ref_prompt).max() <= 1e-4
    assert np.abs(steps - ref_steps[:n]).max() <= 1e-4


@pytest.mark.parametrize("kv_heads,target,prompt_len", [
    (2, "cpu,cores=2", 300), (1, "cpu,cores=2", 300), (2, "cpu,cores=4", 300),
    (1, "cpu,cores=2", 5), (1, "cpu,cores=2", 70), (2, "cpu:x86-64-v3,cores=2", 37)])
def test_flash_attention_tiles_match_torch(llmc, tmp_path, kv_heads, target, prompt_len):
    """The exact mode's attention runs online over tiles of 256 positions: a
    300-token prompt (its rows past 256 read two tiles) and decode steps past
    it, the cache 310 positions long (the last tile's values clipped there,
    not a whole number of lanes), against PyTorch's softmax. With fewer KV
    heads than the target's cores (MQA on 2, GQA on 4), each decode step
    splits its positions into kv_splits = cores parts merged at the end
    (multiples of 64 positions): at the 300-token prompt's first step 192
    and 109 positions on 2 cores, 128, 128, 45 and none on 4; at 5 tokens a
    second part with none (its weight 0), at 70 one of a few. The prompt's
    rows run in query tiles (q_tile: 4 rows with AVX-512's 32 vector
    registers, 2 with AVX2's 16), the rows after the last whole tile one at
    a time (5 = 4 + 1, 70 = 68 + 2, 37 = 36 + 1)."""
    hf = tmp_path / "hf"
    make_hf_model.make_model(str(hf), arch="qwen3", tied=True, dtype="f32", seed=7,
                             max_pos=1024, kv_heads=kv_heads)
    gguf = tmp_path / "model.gguf"
    gguf_writer.hf_to_gguf(str(hf), str(gguf), gguf_writer.GGML_F32)
    art = tmp_path / "art"
    e2e_util.run([llmc, "compile", gguf, "--target", target, "--max-seq-len", "310",
                  "--keep-ir", "-o", art], check=True)
    cores = int(target.split("cores=")[1])
    graph = (art / "graph.mlir").read_text()
    # (The host's target: 4 rows with AVX-512, 2 without.)
    assert ("q_tile = 2 : i64" in graph if "x86-64-v3" in target
            else re.search(r"q_tile = [24] : i64", graph))
    if kv_heads < cores:
        assert f"kv_splits = {cores} : i64" in graph
    else:
        assert "kv_splits" not in graph
    ids = e2e_util.deterministic_prompt_ids(prompt_len, 300)
    prompt, steps, n, ref_prompt, ref_steps = _logits_and_torch(llmc, art, hf, ids, 8)
    assert np.abs(prompt - ref_prompt).max() <= 1e-4
    assert n >= 1 and np.abs(steps[:n] - ref_steps[:n]).max() <= 1e-4


def test_inspect(llmc, tmp_path, stories_paths):
    gguf = tmp_path / "stories.gguf"
    gguf_writer.llama2c_to_gguf(*stories_paths, str(gguf))
    out = e2e_util.run([llmc, "inspect", gguf], check=True).stdout
    assert "format: GGUF v3 (alignment 32)" in out
    assert "llama.embedding_length = 64" in out
    assert "blk.0.attn_k.weight  F32  [32x64]  8192 bytes" in out
    out = e2e_util.run([llmc, "inspect", stories_paths[0]], check=True).stdout
    assert "format: llama2.c (dim 64" in out and "tensors: 47" in out


# ---- malformed GGUF files ---------------------------------------------------------

def _tiny_gguf(path, meta_extra=(), drop=(), tensors_extra=(), **kw):
    rng = np.random.default_rng(0)
    meta = [m for m in gguf_writer._llama_meta("llama", 32, 64, 1, 4, 4, 64, 1e4, 1e-5)
            if m[0] not in drop] + list(meta_extra)
    names = ["attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm",
             "ffn_gate", "ffn_up", "ffn_down"]
    shapes = {"attn_norm": (32,), "ffn_norm": (32,), "ffn_gate": (64, 32), "ffn_up": (64, 32),
              "ffn_down": (32, 64)}
    tensors = [("token_embd.weight", rng.standard_normal((40, 32)).astype(np.float32), 0)]
    for n in names:
        tensors.append(("blk.0.%s.weight" % n,
                        rng.standard_normal(shapes.get(n, (32, 32))).astype(np.float32), 0))
    tensors.append(("output_norm.weight", np.ones(32, np.float32), 0))
    tensors += list(tensors_extra)
    gguf_writer.write(str(path), meta, tensors, **kw)
    return path


def _must_fail(llmc, tmp_path, model, *needles):
    art = tmp_path / "ART"
    p = e2e_util.run([llmc, "compile", model, "-o", art])
    assert 0 < p.returncode < 128, e2e_util.describe(p, "llmc accepted a bad GGUF")
    for n in needles:
        assert n in p.stderr, e2e_util.describe(p, "stderr lacks %r" % n)
    assert not e2e_util.no_artifact_left(tmp_path)
    return p


def test_valid_tiny_gguf_compiles(llmc, tmp_path):
    model = _tiny_gguf(tmp_path / "ok.gguf")
    e2e_util.run([llmc, "compile", model, "-o", tmp_path / "out"], check=True)


def test_bad_magic_and_version(llmc, tmp_path):
    _must_fail(llmc, tmp_path, _tiny_gguf(tmp_path / "magic.gguf", magic=b"GGUX"),
               "magic.gguf", "not a GGUF file")
    _must_fail(llmc, tmp_path, _tiny_gguf(tmp_path / "v1.gguf", version=1),
               "v1.gguf", "unsupported GGUF version 1")


def test_truncated(llmc, tmp_path):
    good = _tiny_gguf(tmp_path / "full.gguf").read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(good[: len(good) - 100])
    _must_fail(llmc, tmp_path, cut, "cut.gguf", "output_norm.weight", "runs past the end")
    head = tmp_path / "head.gguf"
    head.write_bytes(good[:30])
    _must_fail(llmc, tmp_path, head, "head.gguf", "truncated")


def _patch_tensor_info(data, name, field, value):
    """Rewrites the type (field 'type') or offset (field 'offset') of tensor
    `name` in a GGUF image."""
    key = struct.pack("<Q", len(name)) + name.encode()
    at = data.index(key) + len(key)
    ndims, = struct.unpack_from("<I", data, at)
    at += 4 + 8 * ndims
    if field == "offset":
        at += 4
        return data[:at] + struct.pack("<Q", value) + data[at + 8:]
    return data[:at] + struct.pack("<I", value) + data[at + 4:]


def test_offsets_and_types(llmc, tmp_path):
    good = _tiny_gguf(tmp_path / "base.gguf").read_bytes()
    cases = [("far.gguf", "blk.0.attn_q.weight", "offset", 1 << 40, "runs past the end"),
             ("misaligned.gguf", "blk.0.attn_q.weight", "offset", 4, "is not aligned to 32"),
             ("unknown.gguf", "blk.0.attn_q.weight", "type", 99, "unknown ggml type 99"),
             ("kblocks.gguf", "blk.0.attn_q.weight", "type", 12,
              "row of 32 elements is not a whole number of Q4_K blocks"),
             # A quantized norm vector has no use (only matrices are quantized).
             ("qnorm.gguf", "blk.0.attn_norm.weight", "type", 8,
              "quantized GGUF tensors are not supported yet")]
    for fname, tensor, field, value, msg in cases:
        f = tmp_path / fname
        f.write_bytes(_patch_tensor_info(good, tensor, field, value))
        _must_fail(llmc, tmp_path, f, fname, tensor, msg)


def test_absurd_counts_and_lengths(llmc, tmp_path):
    good = _tiny_gguf(tmp_path / "base.gguf").read_bytes()
    huge_kv = tmp_path / "kv.gguf"
    huge_kv.write_bytes(good[:16] + struct.pack("<Q", 1 << 60) + good[24:])
    _must_fail(llmc, tmp_path, huge_kv, "kv.gguf", "cannot fit")
    # The first key's length field, just after the header.
    long_key = tmp_path / "key.gguf"
    long_key.write_bytes(good[:24] + struct.pack("<Q", 1 << 50) + good[32:])
    _must_fail(llmc, tmp_path, long_key, "key.gguf", "string length")


def test_missing_metadata_and_rope_scaling(llmc, tmp_path):
    _must_fail(llmc, tmp_path, _tiny_gguf(tmp_path / "nodim.gguf", drop=("llama.embedding_length",)),
               "nodim.gguf", "llama.embedding_length")
    _must_fail(llmc, tmp_path, _tiny_gguf(tmp_path / "noarch.gguf", drop=("general.architecture",)),
               "noarch.gguf", "general.architecture")
    _must_fail(llmc, tmp_path, _tiny_gguf(
        tmp_path / "yarn.gguf", meta_extra=[("llama.rope.scaling.type", gguf_writer.STRING, "yarn")]),
        "yarn.gguf", "unsupported RoPE scaling 'yarn'")
    _must_fail(llmc, tmp_path, _tiny_gguf(
        tmp_path / "freqs.gguf", tensors_extra=[("rope_freqs.weight", np.ones(4, np.float32), 0)]),
        "freqs.gguf", "rope_freqs.weight")


def test_run_compiles_into_a_cache(llmc, tmp_path, stories_paths):
    gguf = tmp_path / "stories.gguf"
    gguf_writer.llama2c_to_gguf(*stories_paths, str(gguf))
    cache = tmp_path / "cache"
    env = dict(os.environ, LLMC_CACHE_DIR=str(cache))
    import subprocess

    def run():
        p = subprocess.run([llmc, "run", str(gguf), "--prompt", "Once upon a time",
                            "--max-tokens", "12", "--print-ids"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=True)
        return e2e_util.parse_ids(p.stdout), p.stderr
    first, log1 = run()
    second, log2 = run()
    assert "compiling" in log1 and "compiling" not in log2   # the second run hits the cache
    assert first == second and len(first) == 12
    entries = os.listdir(cache)
    assert len(entries) == 1 and entries[0].endswith("-cpu")
    # A changed model is a different entry.
    data = bytearray(gguf.read_bytes())
    data[-1] ^= 1
    gguf.write_bytes(bytes(data))
    run()
    assert len(os.listdir(cache)) == 2


@pytest.mark.parametrize("arch,tied,qtype", [("llama", False, "q8_0"), ("qwen3", True, "q8_0"),
                                              ("llama", True, "q4_0"), ("qwen3", False, "q4_0"),
                                              ("llama", False, "q6_k"), ("qwen3", True, "q6_k"),
                                              ("llama", True, "q4_k"), ("qwen3", False, "q4_k")])
def test_quantized_stays_quantized_and_matches_exact_dequantization(llmc, tmp_path, arch, tied,
                                                                     qtype):
    """Q8_0/Q4_0/Q4_K/Q6_K matrices are compiled as they are (the artifact holds
    the blocks, not floats) and dequantized inside the matmul: the logits
    equal PyTorch on the exactly dequantized weights."""
    deq = tmp_path / "deq"
    _, gguf = e2e_util.quantized_gguf(tmp_path, arch, tied, qtype, dequantized_dir=deq)
    art = tmp_path / "art"
    e2e_util.run([llmc, "compile", gguf, "-o", art], check=True)
    import json
    meta = json.loads((art / "metadata.json").read_text())
    elems, block = {"q8_0": (32, 34), "q4_0": (32, 18), "q6_k": (256, 210),
                    "q4_k": (256, 144)}[qtype]
    quant = [p for p in meta["params"] if p["dtype"] == qtype]
    assert quant and all(p["bytes"] == np.prod(p["shape"]) // elems * block for p in quant)
    # The weight blob is about the size of the quantized file, not 4x it.
    assert os.path.getsize(art / "weights.bin") <= 1.1 * os.path.getsize(gguf)
    ids = e2e_util.deterministic_prompt_ids(32, 300)
    run = e2e_util.run_logits(llmc, art, ids, 16)
    e2e_util.check_threads(llmc, art, ids, 16, run)
    _, prompt, steps, got = run
    ref_prompt, ref_steps, ref_ids = hf_torch_ref.reference(str(deq), ids, 16)
    scale = np.abs(ref_prompt).max()
    if qtype in ("q6_k", "q4_k"):
        assert scale > 0.1   # a model whose logits are not all ~0
    assert np.abs(prompt - ref_prompt).max() <= 1e-4 * max(scale, 1.0)
    # llmc stops at the model's EOS (id 2); the reference does not.
    n = _generated_prefix(got, ref_ids)
    assert np.abs(steps - ref_steps[:n]).max() <= 1e-4 * max(scale, 1.0)


@pytest.mark.parametrize("arch,tied", [("llama", True), ("qwen3", False)])
def test_q4_k_m_mix_matches_ggml_dequantization(llmc, tmp_path, arch, tied):
    """A Q4_K_M-style file (Q4_K matrices, Q6_K output/embedding and some
    v/down layers, a quantized embedding table that is gathered) equals the
    independent GGUF reference, which dequantizes as ggml does."""
    import subprocess
    import sys
    gguf = tmp_path / "m.gguf"
    subprocess.check_call([sys.executable, os.path.join(e2e_util.E2E_DIR, "tools",
                                                        "make_gguf_model.py"),
                           "--arch", arch, "--type", "q4_k_m", "--tied" if tied else "--untied",
                           "--seed", "4", "--out", str(gguf)], stdout=subprocess.DEVNULL)
    out = e2e_util.run([llmc, "inspect", gguf], check=True).stdout
    assert "token_embd.weight  Q" in out          # the embedding itself is quantized
    art = tmp_path / "art"
    e2e_util.run([llmc, "compile", gguf, "-o", art], check=True)
    assert os.path.getsize(art / "weights.bin") <= 1.1 * os.path.getsize(gguf)
    ids = [(i * 13 + 7) % 500 for i in range(24)]
    run = e2e_util.run_logits(llmc, art, ids, 12)
    e2e_util.check_threads(llmc, art, ids, 12, run)
    _, prompt, steps, got = run
    import gguf_torch_ref
    ref_prompt, ref_steps, ref_ids = gguf_torch_ref.reference(str(gguf), ids, 12)
    scale = max(np.abs(ref_prompt).max(), 1.0)
    assert np.abs(prompt - ref_prompt).max() <= 1e-4 * scale
    n = _generated_prefix(got, ref_ids)
    assert np.abs(steps - ref_steps[:n]).max() <= 1e-4 * scale


@pytest.mark.parametrize("target,rows,mtype", [("cpu:x86-64-v4", 16, "q4_0"),
                                               ("cpu:x86-64-v3", 8, "q4_0"),
                                               ("cpu:x86-64-v4", 16, "q4_k_m"),
                                               ("cpu:x86-64-v4", 16, "q8_0")])
def test_interleaved_weights_bin(llmc, tmp_path, target, rows, mtype):
    """llama.cpp mode interleaves the Q8_0, Q4_0, Q4_K and Q6_K matrices the
    integer products read (R rows side by side, R the target's i32 lanes),
    and a tied embedding table where its product keeps vec_dot's steps
    interleaved (Q8_0, Q6_K; the gather reads it so): weights.bin holds the
    GGUF's blocks permuted as docs/artifact.md says, byte for byte, and
    every other parameter (a tied Q4_0 table) as the file has it."""
    import json
    import make_gguf_model
    import gguf_io as G
    gguf = tmp_path / "m.gguf"
    make_gguf_model.make_model(str(gguf), arch="llama", mtype=mtype, seed=3, tied=True)
    art = tmp_path / "art"
    e2e_util.run([llmc, "compile", gguf, "--act-quant", "llama.cpp", "--target", target,
                  "-o", art], check=True)
    meta = json.loads((art / "metadata.json").read_text())
    blob = (art / "weights.bin").read_bytes()
    src = G.read(str(gguf))
    gguf_name = {"model.embed_tokens.weight": "token_embd.weight",
                 "model.norm.weight": "output_norm.weight"}
    for i in range(meta["model"]["n_layers"]):
        for hf_name, gg_name in make_gguf_model.LAYER_NAMES:
            gguf_name["model.layers.%d.%s.weight" % (i, hf_name)] = "blk.%d.%s.weight" % (i, gg_name)
    packed = [p for p in meta["params"] if "interleaved" in p]
    qtype = mtype[:4]
    assert packed and {p["dtype"] for p in packed} == (
        {"q4_k", "q6_k"} if mtype == "q4_k_m" else {qtype})
    names = {p["name"] for p in packed}
    table = next(p for p in meta["params"] if p["name"] == "model.embed_tokens.weight")
    tied_packed = table["dtype"] in ("q8_0", "q6_k")
    assert ("model.embed_tokens.weight" in names) == tied_packed, table
    assert len(names) == 7 * meta["model"]["n_layers"] + tied_packed
    # Elements and bytes of a block, and where its header lies (bytes).
    layout = {"q4_0": (32, 18, 0, 2), "q4_k": (256, 144, 0, 16),
              "q8_0": (32, 34, 0, 2), "q6_k": (256, 210, 192, 18)}
    for p in meta["params"]:
        plain = np.frombuffer(bytes(src.tensor_bytes(gguf_name[p["name"]])), np.uint8)
        got = np.frombuffer(blob[p["offset"]:p["offset"] + p["bytes"]], np.uint8)
        if p["name"] not in names:
            if p["dtype"] != "f32":                   # f32 vectors may be widened
                assert np.array_equal(got, plain), p["name"]
            continue
        assert p["interleaved"] == {"rows": rows, "chunk": 4}
        elems, size, start, header = layout[p["dtype"]]
        n, k = p["shape"]
        nb = k // elems
        blocks = plain.reshape(n // rows, rows, nb, size)        # [group, r, blk, bytes]
        blocks = blocks.transpose(0, 2, 1, 3)                    # [group, blk, r, bytes]
        head = np.arange(start, start + header)
        rest = np.setdiff1d(np.arange(size), head)               # the quants, in order
        scales = blocks[..., head].transpose(0, 1, 3, 2)         # byte plane, then r
        quants = blocks[..., rest].reshape(n // rows, nb, rows, -1, 4)  # r, chunk, byte
        quants = quants.transpose(0, 1, 3, 2, 4)                 # chunk, then r
        want = np.concatenate([scales.reshape(n // rows, nb, -1),
                               quants.reshape(n // rows, nb, -1)], axis=2)
        assert np.array_equal(got, want.reshape(-1)), p["name"]
    # Exact mode keeps every parameter plain.
    e2e_util.run([llmc, "compile", gguf, "--target", target, "-o", tmp_path / "exact"],
                 check=True)
    exact = json.loads((tmp_path / "exact" / "metadata.json").read_text())
    assert not any("interleaved" in p for p in exact["params"])
