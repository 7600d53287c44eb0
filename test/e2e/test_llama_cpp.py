"""llmc against llama.cpp itself (node-llama-cpp's prebuilt CPU build, F32 KV
cache, no flash attention) on deterministic random tiny GGUF models of every
tensor type, in both numeric modes:

- `--act-quant=llama.cpp` rounds each matmul's activations as llama.cpp does
  (f16 / bf16, Q8_0 blocks, Q8_K super-blocks with int8 dot products);
- the default exact mode must still agree with llama.cpp on F32 weights.

What is asserted (measured, see docs/numerics.md): on an AVX-512 host,
where llmc's llama.cpp mode follows ggml's integer, F16/BF16 and f32
kernels, every position within 1e-3 x max|logit| (these models come out
bit-identical). llama.cpp picks its SIMD code by CPU, and llmc does not
emulate the AVX2 variants: there a last-bit difference occasionally moves an
activation across an 8-bit (or bf16) rounding boundary, and later positions
differ by up to ~1e-2 on these tiny random models; on such hosts the types
are held to identical greedy tokens and a 3e-2 bound. That the integer path
is what brings llmc to llama.cpp is checked against exact mode.
"""
import numpy as np
import pytest

import e2e_util
import make_gguf_model

PROMPT = [3 + (i * 97 + 13) % 509 for i in range(24)]
STEPS = 32
EOS = make_gguf_model.EOS_ID


def _host_avx512():
    """Whether this CPU makes llama.cpp run the AVX-512 kernels llmc follows:
    the feature set of ggml's zen4 build (AVX-512 F/DQ/BW/VL, VNNI, VBMI,
    BF16). An AMX host runs that build too: the oracle holds back the
    sapphirerapids one (tools/llama_cpp_oracle.py)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = set(next((l for l in f if l.startswith("flags")), "").split())
    except OSError:
        return False
    need = {"avx512f", "avx512dq", "avx512bw", "avx512vl", "avx512_vnni",
            "avx512vbmi", "avx512_bf16"}
    return need <= flags


def _llmc(llmc, model, tmp_path, mode, prompt=PROMPT, kv_cache="f32"):
    art = tmp_path / ("art-%s-%s" % (mode, kv_cache))
    p = e2e_util.run([llmc, "compile", model, "--act-quant", mode, "--kv-cache", kv_cache,
                      "-o", art])
    assert p.returncode == 0, e2e_util.describe(p, "llmc compile failed")
    got = e2e_util.run_logits(llmc, art, prompt, STEPS)
    e2e_util.check_threads(llmc, art, prompt, STEPS, got, exact_mode=mode == "exact")
    return got[1:]


def _compare(got, ref):
    """-> (per-position errors / max|logit| over prompt and steps, greedy ids
    equal). llmc stops after EOS, llama.cpp does not: compare up to it."""
    P, S, ids = got
    rP, rS, rids = ref
    if EOS in rids:
        rids = rids[:rids.index(EOS) + 1]
    assert ids == rids, "greedy ids differ:\n llmc      %s\n llama.cpp %s" % (ids, rids)
    scale = max(np.abs(rP).max(), np.abs(rS).max())
    n = len(ids)
    rows = np.concatenate([np.abs(P - rP).max(axis=1), np.abs(S[:n] - rS[:n]).max(axis=1)])
    return rows / scale


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """GGUF path for (arch, type), written once per module."""
    d = tmp_path_factory.mktemp("gguf")
    cache = {}

    def get(arch, mtype):
        if (arch, mtype) not in cache:
            path = d / ("%s_%s.gguf" % (arch, mtype))
            make_gguf_model.make_model(str(path), arch=arch, mtype=mtype, seed=0)
            cache[(arch, mtype)] = path
        return cache[(arch, mtype)]
    return get


@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3"])
@pytest.mark.parametrize("mtype", ["f32", "f16", "bf16", "q8_0", "q4_0", "q4_k_m"])
def test_llama_cpp_mode_matches_llama_cpp(llmc, llama_cpp, models, tmp_path, arch, mtype):
    model = models(arch, mtype)
    ref = llama_cpp.logits(str(model), PROMPT, STEPS)
    err = _compare(_llmc(llmc, model, tmp_path, "llama.cpp"), ref)
    if mtype == "f32":
        assert err.max() <= 1e-4, err.max()
    elif mtype == "f16":
        assert err.max() <= 1e-3, err.max()
    else:
        # Rounding-boundary flips (module docstring) aside, which move later
        # positions by up to ~1e-2.
        assert err.max() <= 3e-2, err.max()
    if _host_avx512():
        # Where llmc follows ggml's AVX-512 kernels too (docs/numerics.md)
        # every position agrees within 1e-3 (bit for bit, measured).
        assert err.max() <= 1e-3, err


# Shapes kernel libraries special-case: hidden and FFN sizes that are not
# multiples of 64 (hidden 96, FFN 224), a head dim that is neither a multiple
# of 32 nor a power of two (36), grouped-query attention 8:1 and a vocabulary
# (the output matmul's rows) that is not a multiple of 8, whose Q4_0 and Q4_K
# matrices ggml does not repack. Quantized row lengths stay multiples of the
# block (llama-quantize refuses others).
ODD_SHAPE = dict(hidden=96, inter=224, heads=8, kv_heads=1, head_dim=36, vocab=500)
ODD_PROMPT = [3 + (i * 97 + 13) % 491 for i in range(24)]


@pytest.fixture(scope="module")
def odd_models(tmp_path_factory):
    """GGUF path for (variant, type), written once per module: "odd" is
    qwen3 in ODD_SHAPE; "rows" the default llama shape with a 500-token
    vocabulary and an untied output matrix of `rows_type` (Q4_K or Q4_0)."""
    import gguf_io as G
    d = tmp_path_factory.mktemp("gguf-odd")
    cache = {}

    def get(variant, mtype):
        if (variant, mtype) not in cache:
            path = d / ("%s_%s.gguf" % (variant, mtype))
            if variant == "odd":
                make_gguf_model.make_model(str(path), arch="qwen3", mtype=mtype, seed=0,
                                           shape=ODD_SHAPE)
            else:
                out_type = G.Q4_K if mtype == "q4_k_m" else G.Q4_0
                make_gguf_model.make_model(str(path), arch="llama", mtype=mtype, seed=0,
                                           tied=False, shape=dict(vocab=500),
                                           types={"output.weight": out_type})
            cache[(variant, mtype)] = path
        return cache[(variant, mtype)]
    return get


@pytest.mark.parametrize("variant,mtype", [("odd", t) for t in ["f32", "f16", "bf16", "q8_0", "q4_0"]]
                         + [("rows", "q4_0"), ("rows", "q4_k_m")])
def test_llama_cpp_mode_odd_shapes(llmc, llama_cpp, odd_models, tmp_path, variant, mtype):
    model = odd_models(variant, mtype)
    ref = llama_cpp.logits(str(model), ODD_PROMPT, STEPS)
    err = _compare(_llmc(llmc, model, tmp_path, "llama.cpp", ODD_PROMPT), ref)
    assert err.max() <= (1e-3 if _host_avx512() else 3e-2), err


@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3"])
def test_exact_mode_matches_llama_cpp_on_f32(llmc, llama_cpp, models, tmp_path, arch):
    model = models(arch, "f32")
    err = _compare(_llmc(llmc, model, tmp_path, "exact"), llama_cpp.logits(str(model), PROMPT, STEPS))
    assert err.max() <= 1e-4, err.max()


@pytest.mark.parametrize("arch,mtype", [("qwen3", "q4_k_m"), ("llama", "q8_0")])
def test_llama_cpp_mode_is_what_brings_llmc_to_llama_cpp(llmc, llama_cpp, models, tmp_path,
                                                          arch, mtype):
    """Exact math is measurably farther from llama.cpp than the llama.cpp mode
    (activation rounding is the difference, not noise)."""
    model = models(arch, mtype)
    rP, _, _ = ref = llama_cpp.logits(str(model), PROMPT, STEPS)
    scale = np.abs(rP).max()
    exact = _llmc(llmc, model, tmp_path, "exact")
    compat = _llmc(llmc, model, tmp_path, "llama.cpp")
    e_exact = np.median(np.abs(exact[0] - rP).max(axis=1)) / scale
    e_compat = np.median(np.abs(compat[0] - rP).max(axis=1)) / scale
    assert e_compat * 10 <= e_exact, (e_compat, e_exact)
    _compare(compat, ref)


@pytest.mark.parametrize("arch,mtype", [("llama", "f32"), ("qwen3", "q8_0"), ("qwen2", "q4_k_m")])
def test_f16_kv_cache_matches_llama_cpp(llmc, llama_cpp, models, tmp_path, arch, mtype):
    """`--kv-cache f16`, llama.cpp's default cache: keys and values stored in
    f16, q and the probabilities rounded to f16 for their products as ggml's
    mul_mat converts them, against llama.cpp with an F16 cache. The f16
    cache is what brings llmc there: with an f32 one it is farther."""
    model = models(arch, mtype)
    ref = llama_cpp.logits(str(model), PROMPT, STEPS, kv_type="F16")
    err = _compare(_llmc(llmc, model, tmp_path, "llama.cpp", kv_cache="f16"), ref)
    assert err.max() <= (1e-3 if _host_avx512() else 3e-2), err
    f32 = _llmc(llmc, model, tmp_path, "llama.cpp")
    scale = np.abs(ref[0]).max()
    e_f32 = np.median(np.abs(f32[0] - ref[0]).max(axis=1)) / scale
    assert np.median(err) * 10 <= e_f32, (np.median(err), e_f32)


def test_act_quant_bad_mode(llmc, models, tmp_path):
    p = e2e_util.run([llmc, "compile", models("llama", "q8_0"), "--act-quant", "int4",
                      "-o", tmp_path / "ART"])
    assert p.returncode != 0
    assert "--act-quant: expected exact or llama.cpp, got 'int4'" in p.stderr
    assert e2e_util.no_artifact_left(tmp_path) == []
