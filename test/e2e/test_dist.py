"""`llmc plan`: how dist-plan would shard a real model over a mesh (each
candidate with its predicted time per decoded token and bytes a rank, and
the chosen one), on a tiny Hugging Face checkpoint: 2 layers, 8 heads, 2 KV
heads, FFN 160, vocabulary 300."""
import re

import pytest

import e2e_util
import make_hf_model


@pytest.fixture(scope="module")
def hf(tmp_path_factory):
    path = tmp_path_factory.mktemp("hf") / "qwen3"
    make_hf_model.make_model(str(path), arch="qwen3", tied=True, dtype="f32", seed=3)
    return path


def _plan(llmc, model, *args):
    return e2e_util.run([llmc, "plan", model, *args])


def _candidates(out):
    """{candidate: seconds a token or None where it does not apply}."""
    found = {}
    for line in out.splitlines():
        m = re.match(r"\s+((?:tp|pp)=\d+(?: (?:tp|pp)=\d+)*): (.*)", line)
        if m:
            t = re.match(r"([0-9.e+-]+) s a token", m.group(2))
            found[m.group(1)] = float(t.group(1)) if t else None
    return found


def test_compute_bound_model_is_tensor_parallel(llmc, hf):
    """Weights read at 1 MB/s: compute dominates, tensor parallelism halves
    it, the pipeline does not (its stages run in turn for one token)."""
    p = _plan(llmc, hf, "--mesh", "2", "--memory-bandwidth", "1e6")
    assert p.returncode == 0, e2e_util.describe(p)
    assert "2 layers, 8 heads, 2 KV heads, hidden 64, FFN 160, vocabulary 300; mesh 2" in p.stdout
    c = _candidates(p.stdout)
    assert set(c) == {"pp=2", "tp=2"}, p.stdout
    assert c["tp=2"] < 0.6 * c["pp=2"], p.stdout
    assert p.stdout.rstrip().endswith("chosen: tp=2"), p.stdout


def test_slow_link_makes_a_pipeline(llmc, hf):
    """A link of 10 ms a message: a pipeline's one send (and the token's way
    back) beats tensor parallelism's all-reduces, five a token."""
    p = _plan(llmc, hf, "--mesh", "2", "--latency", "1e-2")
    assert p.returncode == 0, e2e_util.describe(p)
    c = _candidates(p.stdout)
    assert c["pp=2"] < c["tp=2"], p.stdout
    assert "chosen: pp=2" in p.stdout


def test_two_hosts_of_two(llmc, hf):
    """A 2x2 mesh whose first axis is a slow network and second a fast one:
    the pipeline across, tensor parallelism within; tp over all four ranks
    does not apply to two KV heads, nor four stages to two layers."""
    p = _plan(llmc, hf, "--mesh", "2x2", "--bandwidth", "1.25e9,2e10",
              "--latency", "5e-3,1e-6", "--memory-bandwidth", "1e8")
    assert p.returncode == 0, e2e_util.describe(p)
    c = _candidates(p.stdout)
    assert c["tp=2 tp=2"] is None and c["pp=2 pp=2"] is None, p.stdout
    assert "chosen: pp=2 tp=2" in p.stdout


def test_no_plan_is_an_error(llmc, hf):
    p = _plan(llmc, hf, "--mesh", "4")
    assert p.returncode == 1, e2e_util.describe(p)
    assert "dist-plan: no plan for a mesh of 4" in p.stderr
    assert "the KV heads (2) do not divide over 4 tensor-parallel ranks" in p.stderr
    assert "more stages (4) than layers (2)" in p.stderr


@pytest.mark.parametrize("args,message", [
    (["--mesh", "2x"], "dist-plan: bad mesh '2x'"),
    (["--latency", "fast"], "--latency: expected numbers separated by commas, got 'fast'"),
    (["--bandwidth", "0"], "bandwidths must be positive"),
    (["--memory"], "option --memory needs a value"),
    (["--shards", "2"], "unknown option '--shards' for llmc plan"),
    (["--memory", "lots"], "--memory: expected a number, got 'lots'"),
    (["--max-seq-len", "0"], "--max-seq-len: expected a positive integer, got '0'"),
    (["--act-quant", "int4"], "--act-quant: expected exact or llama.cpp, got 'int4'"),
    (["--kv-cache", "q8"], "--kv-cache: expected f32 or f16, got 'q8'"),
    (["--target", "tpu"], "--target: unknown target 'tpu'"),
    (["other.gguf"], "more than one model given"),
])
def test_bad_options(llmc, hf, args, message):
    p = _plan(llmc, hf, *args)
    assert p.returncode != 0 and message in p.stderr, e2e_util.describe(p)


def test_no_model(llmc):
    p = e2e_util.run([llmc, "plan", "--mesh", "2"])
    assert p.returncode != 0 and "llmc plan: no model given" in p.stderr, e2e_util.describe(p)
