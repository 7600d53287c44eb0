"""Self-checks of the test tooling; needs no llmc binary.

transformers is not available, so hf_torch_ref (PyTorch, float32, full recompute) is
checked against hf_numpy_ref (numpy, float64, token-by-token with a KV cache), and
llama2c_ref against hf_torch_ref through the llama2.c -> HF conversion."""
import json
import os
import struct

import numpy as np
import pytest

import e2e_util
import hf_numpy_ref
import hf_torch_ref
import llama2c_ref
import make_hf_model
import make_llama2c_model
import safetensors_io

PROMPT = e2e_util.deterministic_prompt_ids(32, 300)


# ---- safetensors_io -------------------------------------------------------------------

def test_bf16_round_to_nearest_even():
    one = 1.0
    x = np.array([one, one + 2 ** -8, one + 3 * 2 ** -8, one + 2 ** -7 + 2 ** -9, -2.5,
                  np.inf, -np.inf, 3.0e38, 1e-40], np.float32)
    bits = safetensors_io.f32_to_bf16_bits(x)
    back = safetensors_io.bf16_bits_to_f32(bits)
    assert back[0] == 1.0
    assert back[1] == 1.0                      # tie -> even
    assert back[2] == one + 2 ** -6            # tie -> even (up)
    assert back[3] == one + 2 ** -7            # below half -> down
    assert back[4] == -2.5
    assert np.isposinf(back[5]) and np.isneginf(back[6])
    assert np.isnan(safetensors_io.bf16_bits_to_f32(safetensors_io.f32_to_bf16_bits(np.array([np.nan], np.float32))))[0]
    r = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    rb = safetensors_io.bf16_bits_to_f32(safetensors_io.f32_to_bf16_bits(r))
    assert np.all(np.abs(rb - r) <= np.abs(r) * 2 ** -8 + 1e-30)


def test_safetensors_roundtrip_and_layout(tmp_path):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 5)).astype(np.float32)
    b = rng.standard_normal((7,)).astype(np.float32)
    c = rng.standard_normal((2, 2, 2)).astype(np.float32)
    path = tmp_path / "t.safetensors"
    safetensors_io.save_file({"a": a, "b": ("F16", b), "c": ("BF16", c)}, str(path), {"format": "pt"})
    raw = path.read_bytes()
    n, = struct.unpack_from("<Q", raw, 0)
    assert n % 8 == 0 and 8 + n <= len(raw)
    hdr = json.loads(raw[8:8 + n])
    assert hdr["__metadata__"] == {"format": "pt"}
    assert hdr["a"] == {"dtype": "F32", "shape": [3, 5], "data_offsets": [0, 60]}
    assert hdr["b"] == {"dtype": "F16", "shape": [7], "data_offsets": [60, 74]}
    assert hdr["c"] == {"dtype": "BF16", "shape": [2, 2, 2], "data_offsets": [74, 90]}
    assert len(raw) == 8 + n + 90
    t, meta = safetensors_io.load_file(str(path))
    assert meta == {"format": "pt"}
    assert np.array_equal(t["a"], a)
    assert np.array_equal(t["b"], b.astype(np.float16).astype(np.float32))
    assert np.array_equal(t["c"], safetensors_io.round_to_dtype(c, "BF16"))
    t2, _ = safetensors_io.load_file(str(path), upcast=False)
    assert t2["b"].dtype == np.float16 and t2["c"].dtype == np.uint16


# ---- make_hf_model --------------------------------------------------------------------

def _files(d):
    return {f: (d / f).read_bytes() for f in sorted(os.listdir(d))}


@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3"])
def test_generator_deterministic_and_names(tmp_path, arch):
    a, b = tmp_path / "a", tmp_path / "b"
    make_hf_model.make_model(str(a), arch=arch, tied=False, dtype="bf16", shards=1, seed=5)
    make_hf_model.make_model(str(b), arch=arch, tied=False, dtype="bf16", shards=1, seed=5)
    assert _files(a) == _files(b)
    cfg = json.loads((a / "config.json").read_text())
    assert cfg["torch_dtype"] == "bfloat16" and cfg["tie_word_embeddings"] is False
    hdr, _, _ = safetensors_io.read_header(str(a / "model.safetensors"))
    hd = 16 if arch == "qwen3" else 8
    assert hdr["model.embed_tokens.weight"]["shape"] == [300, 64]
    assert hdr["lm_head.weight"]["shape"] == [300, 64]
    assert hdr["model.layers.1.self_attn.q_proj.weight"]["shape"] == [8 * hd, 64]
    assert hdr["model.layers.1.self_attn.k_proj.weight"]["shape"] == [2 * hd, 64]
    assert hdr["model.layers.1.self_attn.o_proj.weight"]["shape"] == [64, 8 * hd]
    assert hdr["model.layers.1.mlp.down_proj.weight"]["shape"] == [64, 160]
    assert all(v["dtype"] == "BF16" for v in hdr.values())
    assert ("model.layers.0.self_attn.q_proj.bias" in hdr) == (arch == "qwen2")
    assert ("model.layers.0.self_attn.q_norm.weight" in hdr) == (arch == "qwen3")
    if arch == "qwen3":
        assert cfg["head_dim"] == 16 and hdr["model.layers.0.self_attn.k_norm.weight"]["shape"] == [16]
    assert len(hdr) == 1 + 2 * (9 + {"llama": 0, "qwen2": 3, "qwen3": 2}[arch]) + 2


def test_sharded_equals_unsharded(tmp_path):
    one, three = tmp_path / "one", tmp_path / "three"
    make_hf_model.make_model(str(one), arch="qwen3", tied=False, dtype="f16", shards=1, seed=0)
    make_hf_model.make_model(str(three), arch="qwen3", tied=False, dtype="f16", shards=3, seed=0)
    assert not (three / "model.safetensors").exists()
    index = json.loads((three / "model.safetensors.index.json").read_text())
    files = sorted(set(index["weight_map"].values()))
    assert files == ["model-0000%d-of-00003.safetensors" % i for i in (1, 2, 3)]
    t1 = safetensors_io.load_checkpoint_dir(str(one), upcast=False)
    t3 = safetensors_io.load_checkpoint_dir(str(three), upcast=False)
    assert sorted(t1) == sorted(t3) == sorted(index["weight_map"])
    assert index["metadata"]["total_size"] == sum(a.nbytes for a in t1.values())
    for k in t1:
        assert np.array_equal(t1[k], t3[k]), k
    r1 = hf_torch_ref.reference(str(one), PROMPT, 4)
    r3 = hf_torch_ref.reference(str(three), PROMPT, 4)
    assert np.array_equal(r1[0], r3[0]) and np.array_equal(r1[1], r3[1]) and r1[2] == r3[2]


def test_dtype_rounding(tmp_path):
    ref = {}
    for dt in ("f32", "f16", "bf16"):
        d = tmp_path / dt
        make_hf_model.make_model(str(d), arch="llama", tied=True, dtype=dt, seed=0)
        ref[dt] = safetensors_io.load_checkpoint_dir(str(d))
    for k, v in ref["f32"].items():
        assert np.array_equal(ref["f16"][k], safetensors_io.round_to_dtype(v, "F16")), k
        assert np.array_equal(ref["bf16"][k], safetensors_io.round_to_dtype(v, "BF16")), k


def test_tied_vs_untied(tmp_path):
    tied, untied = tmp_path / "tied", tmp_path / "untied"
    make_hf_model.make_model(str(tied), arch="qwen2", tied=True, dtype="f32", seed=0)
    make_hf_model.make_model(str(untied), arch="qwen2", tied=False, dtype="f32", seed=0)
    assert "lm_head.weight" not in safetensors_io.load_checkpoint_dir(str(tied))
    lt = hf_torch_ref.reference(str(tied), PROMPT, 2)[0]
    lu = hf_torch_ref.reference(str(untied), PROMPT, 2)[0]
    assert np.abs(lt - lu).max() > 0.1
    # untied with lm_head := embed_tokens gives the tied logits exactly
    st = untied / "model.safetensors"
    t, meta = safetensors_io.load_file(str(st))
    t["lm_head.weight"] = t["model.embed_tokens.weight"].copy()
    safetensors_io.save_file(t, str(st), meta)
    assert np.array_equal(hf_torch_ref.reference(str(untied), PROMPT, 2)[0], lt)


# ---- torch reference vs numpy reference ---------------------------------------------

@pytest.mark.parametrize("arch,tied,dtype", [
    ("qwen3", True, "f32"), ("qwen3", False, "f16"),
    ("qwen2", False, "bf16"), ("qwen2", True, "f32"),
    ("llama", False, "f32"),
])
def test_torch_ref_matches_numpy_ref(tmp_path, arch, tied, dtype):
    d = tmp_path / "m"
    make_hf_model.make_model(str(d), arch=arch, tied=tied, dtype=dtype, seed=0)
    pl_t, sl_t, ids_t = hf_torch_ref.reference(str(d), PROMPT, 16)
    pl_n, sl_n, ids_n = hf_numpy_ref.reference(str(d), PROMPT, 16)
    assert pl_t.shape == (32, 300) and sl_t.shape == (16, 300) and len(ids_t) == 16
    assert np.isfinite(pl_t).all() and np.isfinite(sl_t).all()
    assert np.abs(pl_t - pl_n).max() < 1e-5
    assert np.abs(sl_t - sl_n).max() < 1e-5
    assert ids_t == ids_n
    # logits are O(1) and not degenerate
    assert 0.3 < np.abs(pl_t).max() < 20 and pl_t.std() > 0.1


def test_torch_ref_cli(tmp_path):
    d = tmp_path / "m"
    make_hf_model.make_model(str(d), arch="qwen3", tied=False, dtype="f16", shards=3, seed=0)
    P, S, I = tmp_path / "P.npy", tmp_path / "S.npy", tmp_path / "I.txt"
    ref_py = os.path.join(e2e_util.E2E_DIR, "ref", "hf_torch_ref.py")
    import sys
    p = e2e_util.run([sys.executable, ref_py, "--model", d, "--prompt-ids", ",".join(map(str, PROMPT)),
                      "--steps", 16, "--out-prompt-logits", P, "--out-step-logits", S, "--out-ids", I],
                     check=True)
    pl, sl, ids = hf_torch_ref.reference(str(d), PROMPT, 16)
    assert np.array_equal(np.load(P), pl) and np.array_equal(np.load(S), sl)
    assert [int(x) for x in I.read_text().split()] == ids
    # step row k+1 is the logits after appending generated token k
    full = hf_torch_ref.HFCausalLM(str(d)).forward(PROMPT + ids[:5]).numpy()
    assert np.allclose(full[-1], sl[5], atol=1e-6)
    assert np.allclose(full[:32], pl, atol=1e-6)


# ---- llama2.c reference -----------------------------------------------------------------

def test_llama2c_stories260k_greedy(stories_ref):
    model, tok = stories_ref
    ids = llama2c_ref.generate(model, [1], 100)
    assert len(ids) == 100
    text = tok.decode_ids(1, ids).decode()
    assert text.startswith("Once upon a time, there was a little girl named Lily.")


def test_llama2c_tokenizer(stories_ref):
    _, tok = stories_ref
    ids = tok.encode("Once upon a time", bos=True)
    assert ids[0] == 1 and len(ids) < 10
    assert tok.decode_ids(1, ids[1:]) == b"Once upon a time"
    assert tok.encode("", bos=True) == [1]
    # a character outside the vocabulary falls back to its UTF-8 bytes (+3)
    ids = tok.encode("\u4e2d", bos=False)
    assert ids[1:] == [b + 3 for b in "\u4e2d".encode()] and ids[0] == tok.lookup[b" "]
    assert tok.decode_ids(ids[0], ids[1:], safe=False) == "\u4e2d".encode()
    assert tok.decode_ids(ids[0], ids[1:]) == b""  # run.c safe_printf drops lone bytes


def test_llama2c_cli(stories_paths):
    import sys
    ckpt, tokf = stories_paths
    ref_py = os.path.join(e2e_util.E2E_DIR, "ref", "llama2c_ref.py")
    p = e2e_util.run([sys.executable, ref_py, "--checkpoint", ckpt, "--tokenizer", tokf,
                      "--steps", 20, "--prompt", ""], check=True)
    ids = [int(x) for x in p.stdout.split()]
    assert len(ids) == 20
    p = e2e_util.run([sys.executable, ref_py, "--checkpoint", ckpt, "--tokenizer", tokf,
                      "--steps", 20, "--prompt", "", "--text"], check=True)
    assert p.stdout.startswith("Once upon a time")


@pytest.mark.parametrize("tied", [True, False])
def test_llama2c_ref_vs_hf_ref_random(tmp_path, tied):
    import llama2c_to_hf
    ckpt = tmp_path / "r.bin"
    make_llama2c_model.make_model(str(ckpt), tied=tied, seed=3)
    cfg, _ = llama2c_ref.load_checkpoint(str(ckpt))
    assert cfg.shared_weights == tied
    llama2c_to_hf.convert(str(ckpt), str(tmp_path / "hf"))
    m = llama2c_ref.Transformer.from_file(str(ckpt))
    a = np.stack([m.forward(t, p) for p, t in enumerate(PROMPT)])
    b = hf_torch_ref.HFCausalLM(str(tmp_path / "hf")).forward(PROMPT).numpy()
    assert np.abs(a - b).max() < 1e-5


def test_llama2c_ref_vs_hf_ref_stories(tmp_path, stories_paths, stories_ref):
    import llama2c_to_hf
    ckpt, _ = stories_paths
    llama2c_to_hf.convert(ckpt, str(tmp_path / "hf"))
    model, _ = stories_ref
    ids = [1] + llama2c_ref.generate(model, [1], 40)
    model.reset()
    a = np.stack([model.forward(t, p) for p, t in enumerate(ids)])
    b = hf_torch_ref.HFCausalLM(str(tmp_path / "hf")).forward(ids).numpy()
    assert np.abs(a - b).max() < 1e-4  # logits reach ~20 here
    assert hf_torch_ref.reference(str(tmp_path / "hf"), [1], 40)[2] == ids[1:]


def test_llama2c_truncated_rejected_by_ref(tmp_path):
    header, tensors = make_llama2c_model.make_weights(seed=1)
    f = tmp_path / "t.bin"
    make_llama2c_model.write_checkpoint(str(f), header, tensors)
    f.write_bytes(f.read_bytes()[:1000])
    with pytest.raises(llama2c_ref.CheckpointError):
        llama2c_ref.load_checkpoint(str(f))
