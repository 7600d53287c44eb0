"""The CUDA back end without a GPU: the same models as the CPU target compiled
with --target cuda:sm_90 and cuda:sm_80, every kernel's PTX accepted by the
CUDA toolkit's ptxas for that SM, the artifact's dispatch program naming
kernels the PTX defines; the compile's error paths.

Skips (visibly) when the toolkit's ptxas is missing (CUDA_HOME, /usr/local/cuda
or PATH); LLMC_REQUIRE_CUDA_TOOLKIT=1 makes that a failure.
"""
import json
import os
import re
import shutil
import stat
import sys

import pytest

import e2e_util

sys.path.insert(0, os.path.join(e2e_util.E2E_DIR, "tools"))
import make_hf_model  # noqa: E402

SMS = ("sm_80", "sm_90")


def _ptxas_path():
    for var in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"):
        root = os.environ.get(var)
        if root and os.access(os.path.join(root, "bin", "ptxas"), os.X_OK):
            return os.path.join(root, "bin", "ptxas")
    if os.access("/usr/local/cuda/bin/ptxas", os.X_OK):
        return "/usr/local/cuda/bin/ptxas"
    return shutil.which("ptxas")


@pytest.fixture(scope="session")
def ptxas():
    exe = _ptxas_path()
    if not exe:
        msg = "no CUDA toolkit: ptxas not found (CUDA_HOME, /usr/local/cuda, PATH)"
        if os.environ.get("LLMC_REQUIRE_CUDA_TOOLKIT") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return exe


def _check_artifact(ptxas, art, sm):
    """The artifact of a cuda:SM compile: metadata names the cubin and the PTX,
    ptxas -arch=SM accepts the PTX, and every kernel of the dispatch program is
    an entry of it (and of no other name)."""
    meta = json.loads((art / "metadata.json").read_text())
    assert meta["target"] == "cuda"
    assert meta["library"] == "kernels.cubin"
    dev = meta["device"]
    assert dev["arch"] == sm and dev["ptx"] == "kernels.ptx"
    assert (art / "kernels.cubin").stat().st_size > 0
    ptx = (art / "kernels.ptx").read_text()
    assert re.search(r"^\.target %s\b" % sm, ptx, re.M), ptx[:400]
    p = e2e_util.run([ptxas, "-arch=" + sm, art / "kernels.ptx", "-o", art / "check.cubin"])
    assert p.returncode == 0, e2e_util.describe(p, "ptxas rejects the PTX")
    entries = set(re.findall(r"\.entry\s+([A-Za-z_$][\w$]*)", ptx))
    names = [k["name"] for k in dev["kernels"]]
    assert names and set(names) == entries
    launched = {l["kernel"] for ph in dev["phases"].values() for l in ph if "kernel" in l}
    assert launched == set(range(len(names)))
    assert dev["phases"]["prefill"] and dev["phases"]["decode"]
    return meta


@pytest.mark.parametrize("sm", SMS)
def test_stories260k(llmc, tmp_path, stories_paths, ptxas, sm):
    ckpt, tok = stories_paths
    art = e2e_util.compile_for(llmc, ckpt, tmp_path / "cu", "cuda:" + sm, ("--tokenizer", tok))
    meta = _check_artifact(ptxas, art, sm)
    assert meta["target_description"].startswith("cuda:" + sm)


@pytest.mark.parametrize("arch,tied,dtype", [("llama", False, "f32"), ("qwen3", True, "f16"),
                                             ("qwen2", False, "f32")])
def test_gguf_float_models(llmc, tmp_path, ptxas, arch, tied, dtype):
    """f16 weights, and f32 ones as f16 halves (dequant_halves): the prompt's
    products on the tensor cores (WMMA), whose kernels record the subgroup
    (warp) they were compiled for."""
    _, gguf = e2e_util.float_gguf(tmp_path, arch, tied, dtype)
    for sm in SMS:
        art = e2e_util.compile_for(llmc, gguf, tmp_path / sm, "cuda:" + sm)
        meta = _check_artifact(ptxas, art, sm)
        ptx = (art / "kernels.ptx").read_text()
        assert "wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32" in ptx
        names = [k["name"] for k in meta["device"]["kernels"]]
        assert any(n.endswith("_weight_halves") for n in names) == (dtype == "f32")
        if dtype == "f16":
            mma = [k for k in meta["device"]["kernels"] if k.get("subgroup") == 32
                   and k["name"].startswith("forward_prefill_matmul")]
            assert mma and all(k["workgroup"][0] == 32 for k in mma), meta["device"]["kernels"]


def test_without_matrix_units_no_wmma(llmc, tmp_path, ptxas):
    """`-mma` in the description: the same f16 model without tensor cores
    (the GPU schedule's other prompt rules)."""
    _, gguf = e2e_util.float_gguf(tmp_path, "llama", False, "f16")
    art = e2e_util.compile_for(llmc, gguf, tmp_path / "nomma", "cuda:sm_90,-mma")
    meta = _check_artifact(ptxas, art, "sm_90")
    assert "-mma" in meta["target_description"]
    assert "wmma" not in (art / "kernels.ptx").read_text()


@pytest.mark.parametrize("arch,tied,qtype", [("llama", False, "q8_0"), ("qwen3", True, "q4_0"),
                                              ("llama", True, "q4_k"), ("qwen3", False, "q6_k")])
def test_gguf_quantized_models(llmc, tmp_path, ptxas, arch, tied, qtype):
    """Quantized matrices stay quantized: the kernels read the blocks."""
    _, gguf = e2e_util.quantized_gguf(tmp_path, arch, tied, qtype)
    for sm in SMS:
        meta = _check_artifact(ptxas, e2e_util.compile_for(llmc, gguf, tmp_path / sm, "cuda:" + sm), sm)
        assert any(p["dtype"] == qtype for p in meta["params"])


@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3"])
def test_hf_checkpoints(llmc, tmp_path, ptxas, arch):
    hf = tmp_path / "hf"
    make_hf_model.make_model(str(hf), arch=arch, tied=arch != "llama", dtype="f32", seed=3)
    for sm in SMS:
        _check_artifact(ptxas, e2e_util.compile_for(llmc, hf, tmp_path / sm, "cuda:" + sm), sm)


def _fake_toolkit(tmp_path, script):
    """A toolkit root whose bin/ptxas is `script` (sh), with the real
    toolkit's libdevice beside it."""
    root = tmp_path / "toolkit"
    (root / "bin").mkdir(parents=True)
    real = os.path.dirname(os.path.dirname(_ptxas_path()))
    os.symlink(os.path.join(real, "nvvm"), root / "nvvm")
    exe = root / "bin" / "ptxas"
    exe.write_text("#!/bin/sh\n" + script)
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    env = dict(os.environ, CUDA_HOME=str(root))
    return env


def test_ptxas_rejecting_the_ptx_is_a_compile_error(llmc, tmp_path, stories_paths, ptxas):
    """ptxas's complaint is quoted, the exit code is not 0 and no artifact
    (nor its temporary directory) is left."""
    env = _fake_toolkit(tmp_path, 'echo "ptxas fatal   : Unresolved extern function" >&2\nexit 3\n')
    ckpt, tok = stories_paths
    out = tmp_path / "ART"
    p = e2e_util.run([llmc, "compile", ckpt, "--tokenizer", tok, "--target", "cuda:sm_90",
                      "-o", out], env=env)
    assert p.returncode != 0
    assert "rejects the kernels' PTX" in p.stderr and "Unresolved extern function" in p.stderr
    assert e2e_util.no_artifact_left(tmp_path) == []


def test_without_ptxas_the_artifact_holds_ptx(llmc, tmp_path, stories_paths, ptxas):
    """A toolkit without ptxas: a warning, and the artifact's library is the
    PTX (which the driver compiles on load)."""
    root = tmp_path / "toolkit"
    root.mkdir()
    real = os.path.dirname(os.path.dirname(_ptxas_path()))
    os.symlink(os.path.join(real, "nvvm"), root / "nvvm")
    env = dict(os.environ, CUDA_HOME=str(root))
    ckpt, tok = stories_paths
    art = tmp_path / "cu"
    p = e2e_util.run([llmc, "compile", ckpt, "--tokenizer", tok, "--target", "cuda:sm_90",
                      "-o", art], env=env)
    assert p.returncode == 0, e2e_util.describe(p)
    assert "no CUDA toolkit (ptxas) found" in p.stderr
    meta = json.loads((art / "metadata.json").read_text())
    assert meta["library"] == "kernels.ptx" and not (art / "kernels.cubin").exists()
    q = e2e_util.run([ptxas, "-arch=sm_90", art / "kernels.ptx", "-o", tmp_path / "k.cubin"])
    assert q.returncode == 0, e2e_util.describe(q)


# Qwen3-0.6B's shape (issue 11's benchmark model): hidden 1024, 28 layers,
# 16 q / 8 kv heads of 128, FFN 3072, vocab 151936, tied, context 2048.
QWEN3_06B = dict(hidden=1024, inter=3072, heads=16, kv_heads=8, head_dim=128, vocab=151936,
                 layers=28)


def test_qwen3_06b_shape(llmc, tmp_path, ptxas):
    """Every kernel of the Qwen3-0.6B shape (q4_0, its weights zero: the
    kernels depend on the shapes only) through ptxas for both SMs; the tied
    311 MB table is one binding (under the 2 GiB range)."""
    import make_gguf_model
    gguf = tmp_path / "qwen3-0.6b-q4_0.gguf"
    make_gguf_model.make_shape_model(str(gguf), "qwen3", "q4_0", True, QWEN3_06B, ctx=2048)
    for sm in SMS:
        meta = _check_artifact(ptxas, e2e_util.compile_for(llmc, gguf, tmp_path / sm, "cuda:" + sm), sm)
        assert meta["target_description"].endswith("range=2G")


def test_qwen3_06b_shape_f16_tensor_cores(llmc, tmp_path, ptxas):
    """The Qwen3-0.6B shape in f16: every prompt product (Q, K, V, O, gate,
    up, down, the head; 1024-3072 wide) on the tensor cores, the
    activations' halves written once per shared input, decode's products
    with 16-byte loads, through ptxas for both SMs."""
    import make_gguf_model
    gguf = tmp_path / "qwen3-0.6b-f16.gguf"
    make_gguf_model.make_shape_model(str(gguf), "qwen3", "f16", True, QWEN3_06B, ctx=2048)
    for sm in SMS:
        art = e2e_util.compile_for(llmc, gguf, tmp_path / sm, "cuda:" + sm)
        meta = _check_artifact(ptxas, art, sm)
        dev = meta["device"]
        names = [k["name"] for k in dev["kernels"]]
        prefill = [names[l["kernel"]] for l in dev["phases"]["prefill"] if "kernel" in l]
        bands = [n for n in prefill if dev["kernels"][names.index(n)].get("subgroup") == 32
                 and n.startswith("forward_prefill_matmul") and not n.endswith("_tail")]
        halves = [n for n in prefill if n.endswith("_halves")]
        # 7 products a layer and the head; 4 shared inputs a layer (Q/K/V's,
        # O's, gate/up's, down's) and the head's.
        layers = QWEN3_06B["layers"]
        assert len(bands) == 7 * layers + 1, prefill[:40]
        assert len(halves) == 4 * layers + 1, prefill[:40]
        assert not any(n.endswith("_halves") for n in
                       (names[l["kernel"]] for l in dev["phases"]["decode"] if "kernel" in l))
        # Decode's products (those with a residual add in them too) read
        # their f16 rows 16 bytes a lane at a time.
        ptx = (art / "kernels.ptx").read_text()
        decode = [names[l["kernel"]] for l in dev["phases"]["decode"] if "kernel" in l]
        products = sorted({n for n in decode if n.startswith("forward_decode_matmul")})
        assert len(products) >= 4, decode[:40]
        for n in products:
            entry = ptx[ptx.index(".entry %s(" % n):]
            entry = entry[:entry.index("\n}\n")]
            assert "ld.global.v4.b32" in entry, (n, entry[:2000])
        # Launch fusion: a layer's Q, K and V products one launch, its gate
        # and up one: 4 product launches a layer (7 apart), and the head.
        assert len([n for n in decode if n.startswith("forward_decode_matmul")]) == \
            4 * layers + 1, decode[:40]


# ---- the runtime's CUDA device ----------------------------------------------------


def _has_cuda_device(llmc):
    p = e2e_util.run([llmc, "devices"])
    return p.returncode == 0 and re.search(r"^cuda \d+: ", p.stdout, re.M) is not None


@pytest.fixture(scope="session")
def stories_cuda(llmc, stories_paths, ptxas, tmp_path_factory):
    ckpt, tok = stories_paths
    return e2e_util.compile_for(llmc, ckpt, tmp_path_factory.mktemp("cu") / "sm_80", "cuda:sm_80",
                    ("--tokenizer", tok))


def test_no_driver_is_a_clear_error(llmc, tmp_path, stories_cuda):
    """Running a CUDA artifact where the driver cannot be opened: the message
    names the library; `llmc bench` too; exit code not 0."""
    env = dict(os.environ, LLMC_CUDA_DRIVER=str(tmp_path / "libcuda.so.1"))
    for cmd in (["run", stories_cuda, "--prompt", "Once", "--max-tokens", 2],
                ["bench", stories_cuda, "-p", 8, "-n", 2, "-r", 1, "--vs", "none"]):
        p = e2e_util.run([llmc, *cmd], env=env)
        assert p.returncode != 0, e2e_util.describe(p)
        assert "cuda: cannot open the CUDA driver %s" % (tmp_path / "libcuda.so.1") in p.stderr, \
            e2e_util.describe(p)


def test_stub_driver_is_a_clear_error(llmc, stories_cuda, ptxas):
    """The toolkit's stub libcuda (what links, not what runs) is named as such."""
    stub = os.path.join(os.path.dirname(os.path.dirname(ptxas)), "lib64", "stubs", "libcuda.so")
    if not os.path.exists(stub):
        pytest.skip("no stub driver at %s" % stub)
    env = dict(os.environ, LLMC_CUDA_DRIVER=stub)
    p = e2e_util.run([llmc, "run", stories_cuda, "--prompt", "Once", "--max-tokens", 2], env=env)
    assert p.returncode != 0
    assert "is the CUDA toolkit's stub library, not a driver" in p.stderr, e2e_util.describe(p)


@pytest.mark.parametrize("field,value,message", [
    ("arch", "90", "field 'device.arch' is \"90\", expected sm_NN"),
    ("ptx", "/kernels.ptx", "field 'device.ptx' must be a path relative to the artifact"),
    ("ptx", 3, "field 'device.ptx'"),
    ("pdl", "yes", "field 'device.pdl' must be true or false"),
])
def test_bad_cuda_metadata(llmc, tmp_path, stories_cuda, field, value, message):
    """A CUDA artifact's own metadata fields are checked before any driver is
    opened, each error naming the file and the field."""
    art = tmp_path / "art"
    shutil.copytree(stories_cuda, art)
    meta = json.loads((art / "metadata.json").read_text())
    meta["device"][field] = value
    (art / "metadata.json").write_text(json.dumps(meta))
    p = e2e_util.run([llmc, "run", art, "--prompt", "Once", "--max-tokens", 2])
    assert p.returncode != 0
    assert "metadata.json" in p.stderr and message in p.stderr, e2e_util.describe(p)


# ---- cuBLAS (+cublas) -------------------------------------------------------------


@pytest.fixture(scope="session")
def cublas_model(llmc, ptxas, tmp_path_factory):
    """A tiny f16 Qwen3 (tied head) compiled for cuda:sm_90,+cublas."""
    tmp = tmp_path_factory.mktemp("cublas")
    _, gguf = e2e_util.float_gguf(tmp, "qwen3", True, "f16")
    return e2e_util.compile_for(llmc, gguf, tmp / "art", "cuda:sm_90,+cublas")


def _gemms(meta, phase):
    return [l["gemm"] for l in meta["device"]["phases"][phase] if "gemm" in l]


def _rows(gemm, tokens):
    """A product's rows at a call of `tokens` tokens whose logits are its
    last token's: the tokens, or the one row the last layer keeps
    (graph-output-rows: n_out)."""
    return {"tokens": tokens, "n_out": 1}[gemm["m"]]


def test_cublas_products(llmc, tmp_path, ptxas, cublas_model):
    """+cublas: every prompt product of an f16 weight is cuBLAS's (two
    entries: the activations' f16 halves, the low one scaled by 2^-11 into
    the sums), a residual added into one copied into its output first;
    decode's products and every other nest stay kernels, through ptxas."""
    meta = _check_artifact(ptxas, cublas_model, "sm_90")
    assert "+cublas" in meta["target_description"]
    layers = meta["model"]["n_layers"]
    prefill = meta["device"]["phases"]["prefill"]
    gemms = _gemms(meta, "prefill")
    assert gemms and not _gemms(meta, "decode")
    assert len(gemms) % 2 == 0
    for hi, lo in zip(gemms[::2], gemms[1::2]):
        assert hi["alpha"] == 1.0 and lo["alpha"] == 2.0 ** -11 and lo["beta"] == 1.0
        assert hi["b"] == lo["b"] and hi["out"] == lo["out"]
        assert hi["type"] == "f16" and hi["b"]["buffer"] == "weights"
        # The prompt's tokens: m is a size of the call, not a constant.
        assert not isinstance(hi["m"], int), hi
        assert hi["lda"] >= hi["k"] and hi["ldb"] >= hi["k"] and hi["ldc"] >= hi["n"]
    # A residual's products (O, down) start from a copy into their output.
    for i, l in enumerate(prefill):
        if "gemm" in l and l["gemm"]["beta"] == 1.0 and l["gemm"]["alpha"] == 1.0:
            before = prefill[i - 1]
            assert "copy" in before and before["copy"]["dst"]["offset"] == l["gemm"]["out"]["offset"]
    assert sum(1 for g in gemms[::2] if g["beta"] == 1.0) > 0
    # No prompt product left on the tensor cores; the halves are kernels.
    names = [k["name"] for k in meta["device"]["kernels"]]
    assert "wmma.mma" not in (cublas_model / "kernels.ptx").read_text()
    assert any(n.endswith("_halves") for n in names)
    # 7 products a layer (Q, K, V, O, gate, up, down); the tied head's
    # 300 rows are no multiple of 16 (a kernel of its own).
    assert len(gemms) == 2 * 7 * layers, len(gemms)


def test_device_protocol_with_cublas(llmc, tmp_path, cublas_model, fake_driver):
    """The CUDA device runs cuBLAS's products (a fake cuBLAS that checks
    every matrix lies in device memory and computes it there): in a graph,
    each a child graph captured from a stream, captured again only for a
    prompt of another length; without graphs, on the stream; decode's graph
    has none."""
    meta = json.loads((cublas_model / "metadata.json").read_text())
    gemms = _gemms(meta, "prefill")
    env = {"LLMC_CUBLAS": fake_driver}
    _, lines = _fake_run(llmc, fake_driver, tmp_path,
                         ["run", cublas_model, "--prompt-ids", "1,2,3,4,5", "--max-tokens", 3, "--print-ids"],
                         env)
    captured = [l.split() for l in lines if l.startswith("gemm_captured ")]
    assert len(captured) == len(gemms), (len(captured), len(gemms))
    # cuBLAS's column-major view: m = the outputs, n = the tokens.
    for c, g in zip(captured, gemms):
        assert int(c[1]) == g["n"] and int(c[2]) == _rows(g, 5) and int(c[3]) == g["k"]
    assert lines.count("capture 1") == len(gemms)
    assert len([l for l in lines if l.startswith("graph_child ")]) == len(gemms)
    assert not [l for l in lines if l.startswith("gemm ")]
    # bench's prompts (a warm-up and two runs) of one length: captured once.
    _, lines = _fake_run(llmc, fake_driver, tmp_path,
                         ["bench", cublas_model, "-p", 6, "-n", 2, "-r", 2, "--vs", "none"],
                         env)
    captured = [l.split() for l in lines if l.startswith("gemm_captured ")]
    assert [int(c[2]) for c in captured] == [_rows(g, 6) for g in gemms]
    # Without graphs: each product on the stream.
    _, lines = _fake_run(llmc, fake_driver, tmp_path,
                         ["run", cublas_model, "--prompt-ids", "1,2,3", "--max-tokens", 2, "--print-ids"],
                         dict(env, LLMC_CUDA_GRAPHS="0"))
    direct = [l.split() for l in lines if l.startswith("gemm ")]
    assert [int(d[2]) for d in direct] == [_rows(g, 3) for g in gemms]
    assert not [l for l in lines if l.startswith("capture ")]


def test_cublas_quantized_products(llmc, tmp_path, ptxas, fake_driver):
    """+cublas on Q8_0 weights: each prompt product's weight written as f16
    halves into the arena by a kernel of its own (dequant_halves), then
    three cuBLAS products (the cross terms scaled by 2^-11), which the CUDA
    device runs; decode's products read the blocks."""
    _, gguf = e2e_util.quantized_gguf(tmp_path, "llama", False, "q8_0")
    art = e2e_util.compile_for(llmc, gguf, tmp_path / "art", "cuda:sm_90,+cublas")
    meta = _check_artifact(ptxas, art, "sm_90")
    gemms = _gemms(meta, "prefill")
    assert gemms and len(gemms) % 3 == 0 and not _gemms(meta, "decode")
    for hi, lo_a, lo_w in zip(gemms[::3], gemms[1::3], gemms[2::3]):
        assert hi["alpha"] == 1.0 and lo_a["alpha"] == lo_w["alpha"] == 2.0 ** -11
        assert lo_a["beta"] == lo_w["beta"] == 1.0
        # The weight's halves in the arena (not the blocks in weights.bin).
        assert hi["b"]["buffer"] == "arena" and lo_a["b"] == hi["b"] and lo_w["b"] != hi["b"]
        assert lo_w["a"] == hi["a"] and lo_a["a"] != hi["a"]
    names = [k["name"] for k in meta["device"]["kernels"]]
    launched = [names[l["kernel"]] for l in meta["device"]["phases"]["prefill"] if "kernel" in l]
    assert len([n for n in launched if n.endswith("_weight_halves")]) == len(gemms) // 3
    _, lines = _fake_run(llmc, fake_driver, tmp_path,
                         ["run", art, "--prompt-ids", "1,2,3,4", "--max-tokens", 2, "--print-ids"],
                         {"LLMC_CUBLAS": fake_driver})
    assert len([l for l in lines if l.startswith("gemm_captured ")]) == len(gemms)


@pytest.mark.parametrize("env,message", [
    ({"LLMC_CUBLAS": "/nonexistent/libcublas.so.13"},
     "cuda: the artifact calls cuBLAS (compiled with +cublas), and no cuBLAS library "
     "opens (/nonexistent/libcublas.so.13: cannot open shared object file"),
    ({"LLMC_FAKE_CUBLAS_FAIL": "1"}, "cuBLAS cublasGemmEx: CUBLAS_STATUS_NOT_SUPPORTED"),
])
def test_cublas_errors(llmc, tmp_path, cublas_model, fake_driver, env, message):
    """No cuBLAS where the artifact calls it, and cuBLAS refusing a product:
    each a clear error, exit code not 0."""
    full = dict(os.environ, LLMC_CUDA_DRIVER=fake_driver, LLMC_CUBLAS=fake_driver)
    full.update(env)
    p = e2e_util.run([llmc, "run", cublas_model, "--prompt-ids", "1,2,3", "--max-tokens", 2, "--print-ids"],
                     env=full)
    assert p.returncode != 0
    assert message in p.stderr, e2e_util.describe(p)


@pytest.mark.parametrize("edit,message", [
    (lambda g: g.update(beta=0.5), "gemm.beta' must be 0 or 1"),
    (lambda g: g.update(type="f32"), "gemm.type' is \"f32\", expected f16"),
    (lambda g: g.pop("ldb"), "gemm.ldb' is missing"),
    (lambda g: g.update(k=1 << 40), "has a size or leading dimension of"),
    (lambda g: g["a"].update(bytes=2), "reads past its binding of a"),
])
def test_bad_cublas_metadata(llmc, tmp_path, cublas_model, fake_driver, edit, message):
    """A gemm entry's fields are checked (its metadata, then its sizes and
    bindings before anything runs), each error naming what is wrong."""
    art = tmp_path / "art"
    shutil.copytree(cublas_model, art)
    meta = json.loads((art / "metadata.json").read_text())
    first = next(l for l in meta["device"]["phases"]["prefill"] if "gemm" in l)
    edit(first["gemm"])
    (art / "metadata.json").write_text(json.dumps(meta))
    env = dict(os.environ, LLMC_CUDA_DRIVER=fake_driver, LLMC_CUBLAS=fake_driver)
    p = e2e_util.run([llmc, "run", art, "--prompt-ids", "1,2,3", "--max-tokens", 2, "--print-ids"], env=env)
    assert p.returncode != 0
    assert message in p.stderr, e2e_util.describe(p)


def test_gemm_in_another_target_is_a_metadata_error(llmc, tmp_path, stories_paths):
    """A gemm entry in a Vulkan artifact's program: an error of its metadata."""
    ckpt, tok = stories_paths
    art = e2e_util.compile_for(llmc, ckpt, tmp_path / "vk", "vulkan", ("--tokenizer", tok))
    meta = json.loads((art / "metadata.json").read_text())
    meta["device"]["phases"]["prefill"].insert(0, {"gemm": {}})
    (art / "metadata.json").write_text(json.dumps(meta))
    p = e2e_util.run([llmc, "run", art, "--prompt", "Once", "--max-tokens", 2])
    assert p.returncode != 0
    assert "metadata.json" in p.stderr and "cannot call (target cuda only)" in p.stderr, \
        e2e_util.describe(p)


def test_gpu_matches_cpu(llmc, tmp_path, stories_paths):
    """On a machine with an NVIDIA GPU (never in CI): stories260K's greedy
    text identical to the CPU target's; logits of a prompt and of decode
    steps within 1e-3 x max|logit|, through graphs and with LLMC_CUDA_GRAPHS=0,
    for stories260K and an f16 model (tensor cores)."""
    import numpy as np
    if not _has_cuda_device(llmc):
        pytest.skip("no CUDA device (llmc devices lists none)")
    ckpt, tok = stories_paths
    p = e2e_util.run([llmc, "devices"])
    sm = re.search(r"--target (cuda:sm_\d+)", p.stdout).group(1)
    cu = e2e_util.compile_for(llmc, ckpt, tmp_path / "cu", sm, ("--tokenizer", tok))
    cpu = e2e_util.compile_for(llmc, ckpt, tmp_path / "cpu", "cpu", ("--tokenizer", tok))
    texts = []
    for art in (cu, cpu):
        q = e2e_util.run([llmc, "run", art, "--prompt", "Once upon a time", "--max-tokens", 100,
                          "--print-ids"])
        assert q.returncode == 0, e2e_util.describe(q)
        texts.append(q.stdout)
    assert texts[0] == texts[1]
    # 40 tokens: a whole tile of the tensor cores' prompt products (32) and a
    # tail; the f16 model's products run on them (its activations' halves).
    ids = e2e_util.deterministic_prompt_ids(40, 300)
    _, gguf = e2e_util.float_gguf(tmp_path, "qwen3", True, "f16")
    pairs = [(cu, cpu),
             (e2e_util.compile_for(llmc, gguf, tmp_path / "cu16", sm),
              e2e_util.compile_for(llmc, gguf, tmp_path / "cpu16", "cpu"))]
    for gpu_art, cpu_art in pairs:
        _, cp, cs, cids = e2e_util.run_logits(llmc, cpu_art, ids, 12, threads=1)
        scale = max(np.abs(cp).max(), 1e-30)
        for env in ({}, {"LLMC_CUDA_GRAPHS": "0"}):
            os.environ.update(env)
            try:
                _, gp, gs, gids = e2e_util.run_logits(llmc, gpu_art, ids, 12, threads=1)
            finally:
                for k in env:
                    del os.environ[k]
            assert gids == cids
            assert np.abs(gp - cp).max() <= 1e-3 * scale
            assert np.abs(gs - cs).max() <= 1e-3 * max(np.abs(cs).max(), 1e-30)
        assert np.abs(gs - cs).max() <= 1e-3 * scale


# ---- the CUDA device's protocol, against a driver that runs no kernel --------------


@pytest.fixture(scope="session")
def fake_driver():
    lib = os.path.normpath(os.path.join(e2e_util.bin_dir(), "..", "lib",
                                        "libllmc_fake_cuda.so"))
    if not os.path.exists(lib):
        pytest.skip("%s not built (the runtime's tests need GTest)" % lib)
    return lib


def _fake_run(llmc, fake_driver, tmp_path, args, extra_env=None):
    log = tmp_path / "driver.log"
    if log.exists():
        log.unlink()
    env = dict(os.environ, LLMC_CUDA_DRIVER=fake_driver, LLMC_FAKE_CUDA_LOG=str(log),
               **(extra_env or {}))
    p = e2e_util.run([llmc, *args], env=env)
    assert p.returncode == 0, e2e_util.describe(p)
    lines = log.read_text().splitlines()
    errors = [l for l in lines if l.startswith("error:")]
    assert not errors, errors
    return p, lines


def test_device_protocol_with_graphs(llmc, tmp_path, stories_cuda, fake_driver):
    """A prompt and decode steps through the CUDA device on a driver that
    checks every address, copy and graph call but runs no kernel (an sm_90
    GPU): the sm_80 artifact's PTX loaded (a cubin of another major is not
    tried), every launch's parameters agreeing with the PTX's
    (cuFuncGetParamInfo);
    the weights copied once; one graph per phase, instantiated once and
    replayed, a decode step updating only the nodes whose arguments moved."""
    meta = json.loads((stories_cuda / "metadata.json").read_text())
    ids = ",".join(str(i) for i in e2e_util.deterministic_prompt_ids(12, 300))
    steps = 6
    _, lines = _fake_run(llmc, fake_driver, tmp_path,
                         ["run", stories_cuda, "--prompt-ids", ids, "--max-tokens", steps])
    assert "module refused: not PTX" not in lines
    assert "module %d" % len(meta["device"]["kernels"]) in lines
    htod = [int(l.split()[1]) for l in lines if l.startswith("htod ")]
    assert htod[0] == meta["weights"]["bytes"]
    assert htod.count(meta["weights"]["bytes"]) == 1
    inst = [int(l.split()[1]) for l in lines if l.startswith("graph_instantiate ")]
    launches = [l for l in lines if l.startswith("graph_launch ")]
    # The prompt, then steps - 1 decode calls (the last token is sampled
    # from the step before it).
    assert len(launches) >= steps
    assert len(inst) == 2, inst
    prefill_nodes, decode_nodes = inst
    assert prefill_nodes > 0 and decode_nodes > 0
    first_decode = lines.index("graph_instantiate %d" % decode_nodes)
    updates = [l for l in lines[first_decode:] if l.startswith("graph_update ")]
    decode_calls = len(launches) - 1
    assert 0 < len(updates) < (decode_calls - 1) * decode_nodes / 2, \
        "%d updates over %d decode calls of %d nodes" % (len(updates), decode_calls,
                                                          decode_nodes)
    assert not [l for l in lines if l.startswith("launch ")]


def test_device_protocol_with_dependent_launch(llmc, tmp_path, stories_paths, ptxas,
                                               fake_driver):
    """An sm_90 artifact (programmatic dependent launch, device.pdl: every
    kernel waits for the grid before it, griddepcontrol.wait first in its
    PTX) links each kernel of a graph to the kernel before by a programmatic
    edge (the driver's cuGraphAddDependencies_v2); with -pdl the kernels do
    not wait and the edges are the default ones of cuGraphAddKernelNode."""
    ckpt, tok = stories_paths
    for target, pdl in (("cuda:sm_90", True), ("cuda:sm_90,-pdl", False)):
        art = e2e_util.compile_for(llmc, ckpt, tmp_path / str(pdl), target,
                                   ("--tokenizer", tok))
        meta = json.loads((art / "metadata.json").read_text())
        assert meta["device"]["pdl"] is pdl
        ptx = (art / "kernels.ptx").read_text()
        entries = ptx.count(".entry ")
        assert ptx.count("griddepcontrol.wait;") == (entries if pdl else 0)
        _, lines = _fake_run(llmc, fake_driver, tmp_path,
                             ["run", art, "--prompt-ids", "1,2,3,4,5", "--max-tokens", 3])
        edges = [l for l in lines if l.startswith("graph_edge ")]
        inst = [int(l.split()[1]) for l in lines if l.startswith("graph_instantiate ")]
        assert inst
        if pdl:
            # Every kernel after a kernel (a copy node before or after one
            # keeps the default edge): all but at most two per copy.
            copies = sum(1 for ph in meta["device"]["phases"].values() for l in ph
                         if "copy" in l)
            links = sum(n - 1 for n in inst)
            assert set(edges) == {"graph_edge programmatic"}, edges[:4]
            assert links - 2 * copies <= len(edges) <= links, (len(edges), inst, copies)
        else:
            assert not edges
    # A driver that refuses programmatic edges: the default edge instead,
    # and no further programmatic one.
    _, lines = _fake_run(llmc, fake_driver, tmp_path,
                         ["run", tmp_path / "True", "--prompt-ids", "1,2,3,4,5",
                          "--max-tokens", 3], {"LLMC_FAKE_CUDA_NO_PDL": "1"})
    edges = [l for l in lines if l.startswith("graph_edge ")]
    assert edges[:2] == ["graph_edge refused", "graph_edge default"], edges[:4]
    assert "graph_edge refused" not in edges[2:] and "graph_edge programmatic" not in edges


def test_device_protocol_without_graphs(llmc, tmp_path, stories_cuda, fake_driver):
    """LLMC_CUDA_GRAPHS=0: every launch of the program directly, each with a
    nonempty grid and its parameters checked, no graph."""
    meta = json.loads((stories_cuda / "metadata.json").read_text())
    _, lines = _fake_run(llmc, fake_driver, tmp_path,
                         ["run", stories_cuda, "--prompt-ids", "1,2,3,4,5", "--max-tokens", 3],
                         {"LLMC_CUDA_GRAPHS": "0"})
    launched = {l.split()[1] for l in lines if l.startswith("launch ")}
    names = {k["name"] for k in meta["device"]["kernels"]}
    assert launched and launched <= names
    assert not [l for l in lines if l.startswith("graph_")]


def test_device_bench_profile_and_roofline(llmc, tmp_path, stories_paths, ptxas, fake_driver):
    """`llmc bench --profile --roofline` on a profiled sm_90 artifact: its
    cubin refused as a GPU of another architecture would, the PTX loaded
    instead; every kernel timed between events (no graphs), the bandwidth
    from device copies."""
    ckpt, tok = stories_paths
    art = e2e_util.compile_for(llmc, ckpt, tmp_path / "cu", "cuda:sm_90", ("--tokenizer", tok, "--profile"))
    p, lines = _fake_run(llmc, fake_driver, tmp_path,
                         ["bench", art, "-p", 8, "-n", 4, "-r", 1, "--vs", "none", "--profile",
                          "--roofline"])
    assert "module refused: not PTX" in lines
    assert [l for l in lines if l.startswith("launch ")]
    assert not [l for l in lines if l.startswith("graph_")]
    assert [l for l in lines if l.startswith("dtod ")]
    assert "forward_decode" in p.stdout, p.stdout
    assert "best of 5: a device-to-device copy, the bytes it reads and writes" in p.stdout


def test_devices_lists_cuda_devices(llmc, tmp_path, fake_driver):
    """`llmc devices` lists the driver's CUDA devices after the Vulkan ones,
    each with the --target to compile for it (its SM and its own SMs)."""
    env = dict(os.environ, LLMC_CUDA_DRIVER=fake_driver)
    p = e2e_util.run([llmc, "devices"], env=env)
    assert p.returncode == 0, e2e_util.describe(p)
    assert re.search(r"^cuda 0: llmc fake GPU \(sm_90, [0-9.]+ GiB, 114 SMs\)\n"
                     r"   --target cuda:sm_90,cores=114$", p.stdout, re.M), p.stdout


def test_bare_cuda_is_the_device(llmc, tmp_path, stories_paths, ptxas, fake_driver):
    """`--target cuda` compiles for this machine's CUDA device (its SM and
    its count of SMs, from the driver: the fake's 114, not sm_90's default
    132, so the split attention's parts are the device's); with no driver it
    is an error that says to name the SM."""
    ckpt, tok = stories_paths
    env = dict(os.environ, LLMC_CUDA_DRIVER=fake_driver)
    p = e2e_util.run([llmc, "compile", ckpt, "--tokenizer", tok, "--target", "cuda,shared=32K",
                      "-o", tmp_path / "cu"], env=env)
    assert p.returncode == 0, e2e_util.describe(p)
    meta = json.loads((tmp_path / "cu" / "metadata.json").read_text())
    assert meta["target_description"].startswith("cuda:sm_90,")
    assert "shared=32K" in meta["target_description"]
    assert "cores=114" in meta["target_description"]
    env["LLMC_CUDA_DRIVER"] = str(tmp_path / "none.so")
    p = e2e_util.run([llmc, "compile", ckpt, "--tokenizer", tok, "--target", "cuda",
                      "-o", tmp_path / "ART"], env=env)
    assert p.returncode != 0
    assert "target 'cuda' describes this machine's CUDA device, and there is none" in p.stderr
    assert "name the SM: cuda:sm_80" in p.stderr, e2e_util.describe(p)
    assert not e2e_util.no_artifact_left(tmp_path)


def _edit_first_launch(meta, edit):
    """Applies `edit` to the first kernel launch of the prefill phase."""
    for launch in meta["device"]["phases"]["prefill"]:
        if "kernel" in launch:
            edit(launch)
            return


@pytest.mark.parametrize("case,message", [
    ("device", "cuda: no device 3 (the driver lists 1; LLMC_DEVICE picks one)"),
    ("arch", "the kernels are compiled for sm_100; llmc fake GPU (sm_90) is older "
             "(compile for it: --target cuda:sm_90)"),
    ("subgroup", "was scheduled for subgroups of 16 threads; llmc fake GPU's warps have 32"),
    ("block", "threads on axis z; llmc fake GPU runs at most 64"),
    ("kernel", "_gone (named by"),
    ("params", "(the artifact's program and its kernels disagree)"),
    ("binding", "buffer of"),
])
def test_device_errors_are_named(llmc, tmp_path, stories_cuda, fake_driver, case, message):
    """What the CUDA device refuses before it launches anything, each a clear
    error with exit code not 0: a device number past the driver's list, an SM
    newer than the GPU's, a subgroup size other than the warp's, a block past
    an axis' limit, a kernel the module lacks, launches whose parameters are
    not the kernel's, a binding outside its buffer."""
    art = tmp_path / "art"
    shutil.copytree(stories_cuda, art)
    meta = json.loads((art / "metadata.json").read_text())
    env = {}
    kernel0 = meta["device"]["kernels"][0]
    if case == "device":
        env["LLMC_DEVICE"] = "3"
    elif case == "arch":
        meta["device"]["arch"] = "sm_100"
    elif case == "subgroup":
        kernel0["subgroup"] = 16
    elif case == "block":
        kernel0["workgroup"] = [1, 1, 128]
    elif case == "kernel":
        kernel0["name"] += "_gone"
    elif case == "params":
        _edit_first_launch(meta, lambda l: l["args"].pop())
    elif case == "binding":
        def far(launch):
            for a in launch["args"]:
                if "buffer" in a:
                    a["offset"] = 1 << 40
                    return
        _edit_first_launch(meta, far)
    (art / "metadata.json").write_text(json.dumps(meta))
    env.update(LLMC_CUDA_DRIVER=fake_driver)
    p = e2e_util.run([llmc, "run", art, "--prompt-ids", "1,2,3", "--max-tokens", 2],
                     env=dict(os.environ, **env))
    assert p.returncode != 0
    assert "cuda: " in p.stderr and message in p.stderr, e2e_util.describe(p)
