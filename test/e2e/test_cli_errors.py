"""Error paths of the `llmc` command line itself: each exits non-zero with a
message naming what is wrong, and leaves nothing half-written behind."""
import os
import subprocess

import pytest

import e2e_util
import make_llama2c_model


@pytest.fixture()
def tiny_model(tmp_path):
    path = tmp_path / "tiny.bin"
    e2e_util.run([os.sys.executable, os.path.join(e2e_util.E2E_DIR, "tools", "make_llama2c_model.py"),
                  "--out", path, "--seq-len", "32"], check=True)
    return path


def _fails(p, *needles):
    assert 0 < p.returncode < 128, e2e_util.describe(p, "expected a clean failure")
    for n in needles:
        assert n in p.stderr, e2e_util.describe(p, "stderr does not mention %r" % n)


def test_unknown_target(llmc, tmp_path, tiny_model):
    p = e2e_util.run([llmc, "compile", tiny_model, "--target", "tpu", "-o", tmp_path / "ART"])
    _fails(p, "unknown target 'tpu'")
    assert not e2e_util.no_artifact_left(tmp_path)


@pytest.mark.parametrize("target,message", [
    ("cpu:pentium9", "unknown CPU 'pentium9'"),
    ("cpu:znver4,+avx1024", "unknown CPU feature 'avx1024'"),
    ("cpu:znver4,l2=lots", "bad item 'l2=lots'"),
    ("cpu:znver4,cores=0", "bad item 'cores=0'"),
    ("cpu:znver4,prefetch=-4K", "bad item 'prefetch=-4K'"),
    ("cpu:znver4,prefetch_level=4", "bad item 'prefetch_level=4'"),
    ("cuda:90", "expected cuda:sm_NN"),
    ("cuda:sm_90,cores=0", "bad item 'cores=0' (the compute units (SMs), a positive number)"),
    ("cuda:sm_90,+avx2", "bad item '+avx2' (GPU features: fp16, int8, fp64, int64, mma, pdl, async-copy, cublas)"),
    ("vulkan,+mma", "bad item '+mma' (matrix units are lowered for CUDA targets only)"),
    ("cuda:sm_61,+mma", "bad item '+mma' (tensor cores start at sm_70)"),
    ("cuda:sm_80,+pdl", "bad item '+pdl' (programmatic dependent launch is CUDA's, from sm_90)"),
    ("vulkan,+pdl", "bad item '+pdl' (programmatic dependent launch is CUDA's, from sm_90)"),
    ("vulkan,+cublas", "bad item '+cublas' (cuBLAS is a CUDA library)"),
    ("cuda:sm_75,+async-copy", "bad item '+async-copy' (asynchronous copies (cp.async) are CUDA's, from sm_80)"),
    ("vulkan:1.4", "expected vulkan or vulkan:VERSION (1.2 or 1.3)"),
    ("vulkan,subgroup=3", "bad item 'subgroup=3' (a power of two up to 1024)"),
    ("vulkan,+avx512f", "bad item '+avx512f' (GPU features: fp16, int8, fp64, int64, mma, pdl, async-copy, cublas)"),
    ("vulkan,shared=lots", "bad item 'shared=lots'"),
    ("vulkan,cores=many", "bad item 'cores=many'"),
    ("vulkan,l2=1M", "bad item 'l2=1M' (expected +feature, -feature, subgroup=N, workgroup=N, "
                     "shared=SIZE, range=SIZE, cores=N or device=cpu|gpu)"),
    ("vulkan,device=tpu", "bad item 'device=tpu' (cpu or gpu)"),
    ("vulkan,subgroup=64,workgroup=32", "the subgroup is larger than a workgroup"),
])
def test_bad_target_description(llmc, tmp_path, tiny_model, target, message):
    p = e2e_util.run([llmc, "compile", tiny_model, "--target", target, "-o", tmp_path / "ART"])
    _fails(p, message)
    assert not e2e_util.no_artifact_left(tmp_path)


def test_explicit_target_is_recorded(llmc, tmp_path, tiny_model):
    """An explicit CPU compiles without looking at the host, and the artifact
    records the description it was built for."""
    art = tmp_path / "ART"
    p = e2e_util.run([llmc, "compile", tiny_model, "--target", "cpu:x86-64-v2,cores=3", "-o", art])
    assert p.returncode == 0, e2e_util.describe(p, "compile failed")
    import json
    md = json.loads((art / "metadata.json").read_text())
    assert md["target"] == "cpu"
    assert md["target_description"] == "cpu:x86-64-v2,cores=3,l1d=32K,l2=1M,l3=8M"
    # The prefetch distance is spelled out where it is not the default (0:
    # no software prefetch).
    art0 = tmp_path / "ART0"
    p = e2e_util.run([llmc, "compile", tiny_model, "--target", "cpu:x86-64-v2,prefetch=0",
                      "-o", art0])
    assert p.returncode == 0, e2e_util.describe(p, "compile failed")
    md = json.loads((art0 / "metadata.json").read_text())
    assert md["target_description"] == "cpu:x86-64-v2,cores=1,l1d=32K,l2=1M,l3=8M,prefetch=0"


def test_bad_thread_counts(llmc, tmp_path, tiny_model):
    art = tmp_path / "ART"
    assert e2e_util.run([llmc, "compile", tiny_model, "-o", art]).returncode == 0
    _fails(e2e_util.run([llmc, "run", art, "--prompt-ids", "1", "--threads", "0"]),
           "--threads", "a positive integer")
    env = dict(os.environ, LLMC_THREADS="many")
    _fails(e2e_util.run([llmc, "run", art, "--prompt-ids", "1"], env=env),
           "LLMC_THREADS is 'many', expected a positive integer")


def test_missing_tokenizer(llmc, tmp_path, tiny_model):
    p = e2e_util.run([llmc, "compile", tiny_model, "--tokenizer", tmp_path / "nope.bin",
                      "-o", tmp_path / "ART"])
    _fails(p, "nope.bin")
    assert not e2e_util.no_artifact_left(tmp_path)


def test_bad_max_seq_len(llmc, tmp_path, tiny_model):
    p = e2e_util.run([llmc, "compile", tiny_model, "--max-seq-len", "-3", "-o", tmp_path / "ART"])
    _fails(p, "--max-seq-len", "-3")


def test_bad_kv_cache_type(llmc, tmp_path, tiny_model):
    p = e2e_util.run([llmc, "compile", tiny_model, "--kv-cache", "bf16", "-o", tmp_path / "ART"])
    _fails(p, "--kv-cache: expected f32 or f16, got 'bf16'")
    assert e2e_util.no_artifact_left(tmp_path) == []
    # `llmc run MODEL` passes it to the compilation into the cache.
    cache = tmp_path / "cache"
    env = dict(os.environ, LLMC_CACHE_DIR=str(cache))
    p = subprocess.run([llmc, "run", str(tiny_model), "--prompt-ids", "1", "--kv-cache=q8"],
                       capture_output=True, text=True, env=env)
    _fails(p, "--kv-cache: expected f32 or f16, got 'q8'")
    assert not cache.exists() or os.listdir(cache) == []


def test_unknown_option_and_command(llmc, tmp_path, tiny_model):
    _fails(e2e_util.run([llmc, "compile", tiny_model, "--frobnicate", "-o", tmp_path / "ART"]),
           "--frobnicate")
    _fails(e2e_util.run([llmc, "transmogrify"]), "transmogrify")
    _fails(e2e_util.run([llmc, "compile", tiny_model]), "-o DIR")


def test_refuses_to_overwrite_a_foreign_directory(llmc, tmp_path, tiny_model):
    out = tmp_path / "ART"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    p = e2e_util.run([llmc, "compile", tiny_model, "-o", out])
    _fails(p, "not an llmc artifact")
    assert (out / "precious.txt").read_text() == "keep me"
    assert sorted(os.listdir(tmp_path)) == sorted(["ART", "tiny.bin"])


def test_recompile_replaces_an_artifact(llmc, tmp_path, tiny_model):
    out = tmp_path / "ART"
    e2e_util.run([llmc, "compile", tiny_model, "--max-seq-len", "16", "-o", out], check=True)
    e2e_util.run([llmc, "compile", tiny_model, "--max-seq-len", "32", "-o", out], check=True)
    import json
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["model"]["max_seq_len"] == 32
    assert meta["kv_cache"]["shape"][3] == 32 * meta["model"]["head_dim"]


def test_kv_cache_layout_in_metadata(llmc, tmp_path, tiny_model):
    """The exact mode's flash attention stores the values by position and the
    keys transposed on a CPU (graph-kv-layout); llama.cpp's two-pass softmax
    keeps the keys by position and the values transposed, in blocks of one
    f32 vector's positions (the host's: 4, 8 or 16). metadata.json says
    which (llmc/abi.h)."""
    import json
    caches = {}
    for mode in ("exact", "llama.cpp"):
        out = tmp_path / mode
        e2e_util.run([llmc, "compile", tiny_model, "--act-quant", mode, "-o", out], check=True)
        caches[mode] = json.loads((out / "metadata.json").read_text())["kv_cache"]
    assert {mode: c["layout"] for mode, c in caches.items()} == {
        "exact": "layer, k|v, kv_head, k: head_dim x position | v: position x head_dim",
        "llama.cpp": "layer, k|v, kv_head, k: position x head_dim | "
                     "v: position / values_block x head_dim x values_block",
    }
    assert "values_block" not in caches["exact"]
    assert caches["llama.cpp"]["values_block"] in (4, 8, 16)


def test_graph_mlir_input_and_invalid_mlir(llmc, tmp_path, tiny_model):
    """`llmc compile` accepts the graph IR that `llm-translate --import` prints,
    and reports a located error for IR that does not parse."""
    translate = os.path.join(e2e_util.bin_dir(), "llm-translate")
    mlir = tmp_path / "model.mlir"
    e2e_util.run([translate, "--import", tiny_model, "-o", mlir], check=True)
    e2e_util.run([llmc, "compile", mlir, "-o", tmp_path / "ART"], check=True)
    ids_ir = e2e_util.parse_ids(e2e_util.run(
        [llmc, "run", tmp_path / "ART", "--prompt-ids", "1,2,3", "--max-tokens", "5", "--print-ids"],
        check=True).stdout)
    e2e_util.run([llmc, "compile", tiny_model, "-o", tmp_path / "ART2"], check=True)
    ids_direct = e2e_util.parse_ids(e2e_util.run(
        [llmc, "run", tmp_path / "ART2", "--prompt-ids", "1,2,3", "--max-tokens", "5", "--print-ids"],
        check=True).stdout)
    assert ids_ir == ids_direct and len(ids_ir) == 5

    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @forward() {\n  %0 = graph.silu %x : tensor<4xf32>\n}\n")
    p = e2e_util.run([llmc, "compile", bad, "-o", tmp_path / "ART3"])
    _fails(p, "bad.mlir:2:")
    assert not (tmp_path / "ART3").exists()


def test_run_errors(llmc, tmp_path, tiny_model):
    _fails(e2e_util.run([llmc, "run", tmp_path / "missing", "--prompt-ids", "1"]), "missing")
    art = tmp_path / "ART"
    e2e_util.run([llmc, "compile", tiny_model, "-o", art], check=True)
    # No tokenizer in this artifact: a text prompt cannot be encoded.
    _fails(e2e_util.run([llmc, "run", art, "--prompt", "hello", "--max-tokens", "2"]), "tokenizer")
    _fails(e2e_util.run([llmc, "run", art, "--prompt-ids", "1", "--max-tokens", "x"]), "--max-tokens")
    _fails(e2e_util.run([llmc, "run", art, "--prompt-ids", "99999", "--max-tokens", "2", "--print-ids"]), "99999")


def test_run_model_act_quant_errors(llmc, tmp_path, tiny_model):
    """`llmc run MODEL --act-quant ...` passes the option to the compilation
    into the cache: a missing or unknown value is an error, and nothing is
    cached."""
    cache = tmp_path / "cache"
    env = dict(os.environ, LLMC_CACHE_DIR=str(cache))
    p = subprocess.run([llmc, "run", str(tiny_model), "--prompt-ids", "1", "--act-quant"],
                       capture_output=True, text=True, env=env)
    _fails(p, "option --act-quant needs a value")
    p = subprocess.run([llmc, "run", str(tiny_model), "--prompt-ids", "1", "--act-quant=int4"],
                       capture_output=True, text=True, env=env)
    _fails(p, "--act-quant: expected exact or llama.cpp, got 'int4'")
    assert not cache.exists() or os.listdir(cache) == []


@pytest.mark.parametrize("args,message", [
    (["--text"], "option --text needs a value"),
    (["--input"], "option --input needs a value"),
    (["--ids"], "option --ids needs a value"),
    (["--text", "a", "--output"], "option --output needs a value"),
    (["--text", "a", "--vocab-size", "0"], "--vocab-size: expected a positive integer"),
    (["--text", "a", "--frobnicate"], "unknown option '--frobnicate' for llmc tokenize"),
    (["--text", "a", "extra"], "llmc tokenize: unexpected argument 'extra'"),
    (["--text", "a", "--ids", "ids.json"], "give exactly one of --text, --input, --ids"),
    ([], "give exactly one of --text, --input, --ids"),
])
def test_tokenize_usage_errors(llmc, tmp_path, model_file, args, message):
    p = e2e_util.run([llmc, "tokenize", model_file("tok512.bin")] + args)
    _fails(p, message)


def test_tokenize_input_errors(llmc, tmp_path, model_file):
    tok = model_file("tok512.bin")
    _fails(e2e_util.run([llmc, "tokenize"]), "llmc tokenize: no tokenizer or model given")
    _fails(e2e_util.run([llmc, "tokenize", tmp_path / "nope.model", "--text", "a"]),
           "nope.model: no such file or directory")
    strings = tmp_path / "strings.json"
    strings.write_text('{"a": 1}')
    _fails(e2e_util.run([llmc, "tokenize", tok, "--input", strings]),
           "strings.json: expected a JSON list of strings")
    strings.write_text('["a", 3]')
    _fails(e2e_util.run([llmc, "tokenize", tok, "--input", strings]),
           "strings.json: expected a JSON list of strings")
    strings.write_text('["a"')
    _fails(e2e_util.run([llmc, "tokenize", tok, "--input", strings]),
           "strings.json: invalid JSON")
    ids = tmp_path / "ids.json"
    ids.write_text('[[1, "x"]]')
    _fails(e2e_util.run([llmc, "tokenize", tok, "--ids", ids]),
           "ids.json: expected a JSON list of lists of token ids")
    _fails(e2e_util.run([llmc, "tokenize", tok, "--text", "a", "--output",
                         tmp_path / "no" / "dir" / "out.json"]), "out.json: cannot write")


def test_llama_cpp_mode_is_refused_for_gpus(llmc, tmp_path, tiny_model):
    """llama.cpp's numerics are its CPU back end's: a GPU target compiles the
    exact mode, and says so for the other (no artifact left)."""
    p = e2e_util.run([llmc, "compile", tiny_model, "--target", "vulkan", "--act-quant",
                      "llama.cpp", "-o", tmp_path / "ART"])
    _fails(p, "is for CPU targets")
    assert not e2e_util.no_artifact_left(tmp_path)


def test_link_failure_is_reported(llmc, tmp_path, tiny_model):
    """A C compiler driver that fails to link model.so: the compile names it
    and quotes its output; nothing is left behind."""
    cc = tmp_path / "cc"
    cc.write_text("#!/bin/sh\necho 'ld: cannot find -lm' >&2\nexit 1\n")
    cc.chmod(0o755)
    env = dict(os.environ, LLMC_CC=str(cc))
    p = e2e_util.run([llmc, "compile", tiny_model, "-o", tmp_path / "ART"], env=env)
    _fails(p, "linking failed (%s): ld: cannot find -lm" % cc)
    assert not e2e_util.no_artifact_left(tmp_path)
