"""Compiling and running from Python agrees with the llmc command line."""
import os
import subprocess

import numpy as np
import pytest


@pytest.fixture(scope="module")
def stories_artifact(llmc, stories, tmp_path_factory):
    model, tok = stories
    out = tmp_path_factory.mktemp("py") / "stories.llmc"
    path = llmc.compile(llmc.import_model(model), out, tokenizer=tok)
    assert path == str(out) and (out / "model.so").exists()
    return str(out)


def test_logits_equal_cli_dump(llmc, llmc_bin, stories_artifact, tmp_path):
    ids = [1, 403, 407, 261, 378, 432]
    rt = llmc.Runtime(stories_artifact)
    logits = rt.logits(ids)
    assert logits.shape == (len(ids), rt.vocab_size) and logits.dtype == np.float32
    # The array owns the runtime's buffer (no copy): it is writable numpy memory.
    assert logits.flags["C_CONTIGUOUS"]
    dump = tmp_path / "prompt.npy"
    subprocess.run([llmc_bin, "run", stories_artifact, "--prompt-ids", ",".join(map(str, ids)),
                    "--max-tokens", "1", "--print-ids", "--dump-prompt-logits", str(dump)],
                   check=True, stdout=subprocess.PIPE)
    np.testing.assert_array_equal(logits, np.load(dump))
    # And the generated positions: logits of ids + greedy continuation.
    steps = tmp_path / "steps.npy"
    out = subprocess.run([llmc_bin, "run", stories_artifact, "--prompt", "", "--max-tokens", "8",
                          "--print-ids", "--dump-logits", str(steps)],
                         check=True, stdout=subprocess.PIPE, text=True).stdout
    gen = [int(t) for t in out.split()]
    full = rt.logits([1] + gen[:-1])
    # (A prompt's nests and decode's add some of their sums in different
    # orders: the same logits up to rounding, relative to their size.)
    np.testing.assert_allclose(full, np.load(steps), rtol=0,
                               atol=2e-6 * np.abs(full).max())


def test_generate_equals_cli(llmc, llmc_bin, stories_artifact):
    rt = llmc.Runtime(stories_artifact)
    result = rt.generate("Once upon a time", max_tokens=30)
    cli = subprocess.run([llmc_bin, "run", stories_artifact, "--prompt", "Once upon a time",
                          "--max-tokens", "30", "--print-ids"],
                         check=True, stdout=subprocess.PIPE, text=True).stdout
    assert result["ids"] == [int(t) for t in cli.split()]
    text = subprocess.run([llmc_bin, "run", stories_artifact, "--prompt", "Once upon a time",
                           "--max-tokens", "30"], check=True, stdout=subprocess.PIPE,
                          text=True).stdout
    assert result["text"] == text.rstrip("\n") or result["text"] == text
    # A prompt in calls of 2 tokens: the same ids (micro_batch, as
    # `llmc run --micro-batch`); a negative one is refused.
    assert rt.micro_batch == 0
    rt.micro_batch = 2
    assert rt.generate("Once upon a time", max_tokens=30)["ids"] == result["ids"]
    with pytest.raises(llmc.Error, match="micro-batch must be >= 0"):
        rt.micro_batch = -1
    assert rt.micro_batch == 2
    rt.micro_batch = 0
    sampled = rt.generate([1], max_tokens=20, temperature=0.9, top_p=0.9, seed=3)
    again = rt.generate([1], max_tokens=20, temperature=0.9, top_p=0.9, seed=3)
    assert sampled["ids"] == again["ids"]


def test_runtime_errors(llmc, stories_artifact, tmp_path, tiny_model):
    with pytest.raises(llmc.Error) as e:
        llmc.Runtime(str(tmp_path / "missing"))
    assert "missing" in str(e.value)
    rt = llmc.Runtime(stories_artifact)
    with pytest.raises(llmc.Error) as e:
        rt.logits([1, 100000])
    assert "100000" in str(e.value)
    art = llmc.compile(llmc.import_model(tiny_model), tmp_path / "notok")
    with pytest.raises(llmc.Error) as e:
        llmc.Runtime(art).generate("hello")
    assert "no tokenizer" in str(e.value)
    with pytest.raises(llmc.Error) as e:
        llmc.compile(llmc.import_model(tiny_model), tmp_path / "t", target="tpu")
    assert "unknown target 'tpu'" in str(e.value)


def _cli_prompt_logits(llmc_bin, model, compile_args, ids, tmp_path):
    """The prompt logits of `llmc compile MODEL compile_args` run on `ids`."""
    subprocess.run([llmc_bin, "compile", str(model), *compile_args, "-o",
                    str(tmp_path / "cli")], check=True)
    dump = tmp_path / "p.npy"
    subprocess.run([llmc_bin, "run", str(tmp_path / "cli"), "--prompt-ids",
                    ",".join(map(str, ids)), "--max-tokens", "1", "--print-ids",
                    "--dump-prompt-logits", str(dump)], check=True, stdout=subprocess.PIPE)
    return np.load(dump)


def test_act_quant_equals_cli(llmc, llmc_bin, tmp_path):
    """compile(act_quant="llama.cpp") is `llmc compile --act-quant llama.cpp`:
    the same logits to the bit, and not those of exact math."""
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e", "tools"))
    import make_gguf_model
    gguf = tmp_path / "q8.gguf"
    make_gguf_model.make_model(str(gguf), arch="llama", mtype="q8_0", seed=2)
    ids = [1, 40, 300, 7, 129, 64]
    compat = llmc.Runtime(llmc.compile(llmc.import_model(str(gguf)), tmp_path / "py",
                                       act_quant="llama.cpp")).logits(ids)
    exact = llmc.Runtime(llmc.compile(llmc.import_model(str(gguf)), tmp_path / "ex")).logits(ids)
    np.testing.assert_array_equal(
        compat, _cli_prompt_logits(llmc_bin, gguf, ["--act-quant", "llama.cpp"], ids, tmp_path))
    assert np.abs(compat - exact).max() > 1e-4
    with pytest.raises(ValueError, match="act_quant"):
        llmc.compile(llmc.import_model(str(gguf)), tmp_path / "bad", act_quant="int4")


def test_kv_cache_equals_cli(llmc, llmc_bin, tmp_path):
    """compile(kv_cache="f16") is `llmc compile --kv-cache f16`: the same
    logits to the bit, an f16 cache in the metadata; PassManager takes it too."""
    import json
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e", "tools"))
    import make_gguf_model
    gguf = tmp_path / "f32.gguf"
    make_gguf_model.make_model(str(gguf), arch="llama", mtype="f32", seed=2)
    ids = [1, 40, 300, 7, 129, 64]
    art = llmc.compile(llmc.import_model(str(gguf)), tmp_path / "py", kv_cache="f16")
    half = llmc.Runtime(art).logits(ids)
    assert json.loads((tmp_path / "py" / "metadata.json").read_text())["kv_cache"]["dtype"] == "f16"
    np.testing.assert_array_equal(
        half, _cli_prompt_logits(llmc_bin, gguf, ["--kv-cache", "f16"], ids, tmp_path))
    m = llmc.import_model(str(gguf))
    llmc.PassManager("graph", kv_cache="f16").run(m)
    assert "element_type = f16" in str(m)
    with pytest.raises(ValueError, match="kv_cache"):
        llmc.compile(llmc.import_model(str(gguf)), tmp_path / "bad", kv_cache="bf16")


def test_profile(llmc, tiny_model, tmp_path):
    """compile(profile=True): the runtime counts each kernel's calls and
    time, beside the cost model's work for the same calls; without it the
    profile is empty."""
    module = llmc.import_model(tiny_model)
    rt = llmc.Runtime(llmc.compile(module, tmp_path / "prof", profile=True), threads=1)
    ids = [1, 5, 9, 13]
    rt.logits(ids)
    prof = rt.profile()
    ran = [k for k in prof if k["calls"]]
    assert ran and {k["phase"] for k in ran} == {"prefill"}, prof
    assert all(k["seconds"] > 0 for k in ran), ran
    mains = [k for k in ran if k["name"].startswith("forward_prefill.matmul")
             and not k["name"].endswith("_tail")]
    assert mains and all(k["flops"] > 0 and k["bytes"] > 0 for k in mains), ran
    # The tiles of 4 tokens leave no remainder: the remainder kernels are
    # called but do nothing (no bytes either); with 5 tokens they work.
    def tails(profile):
        return [k for k in profile if k["calls"] and "_tail" in k["name"]
                and k["name"].startswith("forward_prefill.matmul")]
    assert tails(prof) and all(k["flops"] == 0 and k["bytes"] == 0 for k in tails(prof))
    rt.reset_profile()
    rt.logits(ids + [17])
    assert any(k["flops"] > 0 and k["bytes"] > 0 for k in tails(rt.profile()))
    rt.reset_profile()
    assert all(k["calls"] == 0 and k["flops"] == 0 for k in rt.profile())
    # The same logits as an artifact without the counters.
    plain = llmc.Runtime(llmc.compile(module, tmp_path / "plain"), threads=1)
    assert plain.profile() == []
    np.testing.assert_array_equal(rt.logits(ids), plain.logits(ids))


def test_tuning_choices(llmc, tiny_model, tmp_path):
    """compile(tuning=...) hands `llmc tune`'s choices to the schedule; the
    artifact's kernels carry their keys; a bad spelling is a ValueError."""
    import json
    module = llmc.import_model(tiny_model)
    out = llmc.compile(module, tmp_path / "t", tuning="*=r0c0")
    meta = json.loads(open(os.path.join(out, "metadata.json")).read())
    assert any(k.get("tune", "").startswith("matmul.prefill.") for k in meta["kernels"])
    with pytest.raises(ValueError, match="tuning: expected KEY=r<R>c<C>"):
        llmc.compile(module, tmp_path / "bad", tuning="fast")
    with pytest.raises(ValueError, match="tuning"):
        llmc.PassManager("tl", tuning="k=x")


def test_vulkan_target_runs_the_same_model(llmc, llmc_bin, tiny_model, tmp_path):
    """`llmc.compile(..., target="vulkan")` (the machine's device) writes an artifact that
    `Runtime` runs on the Vulkan device (lavapipe): the same logits as the CPU
    target's within 1e-3 of their largest."""
    devices = subprocess.run([llmc_bin, "devices"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    if devices.returncode != 0 or not devices.stdout.strip():
        msg = "no Vulkan device: " + devices.stderr.strip()
        if os.environ.get("LLMC_REQUIRE_VULKAN") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    module = llmc.import_model(tiny_model)
    vk = llmc.compile(module, tmp_path / "vk",
                      target="vulkan")
    cpu = llmc.compile(llmc.import_model(tiny_model), tmp_path / "cpu")
    assert (tmp_path / "vk" / "kernels.spv").exists()
    ids = [1, 7, 30, 2, 55, 9, 17]
    got = llmc.Runtime(vk).logits(ids)
    want = llmc.Runtime(cpu).logits(ids)
    assert np.abs(got - want).max() <= 1e-3 * np.abs(want).max()


RANK_SCRIPT = """
import sys
import llmc
rt = llmc.Runtime(sys.argv[1])
ids = rt.generate("Once upon a time", max_tokens=24)["ids"]
with open("%s.rank%d" % (sys.argv[2], rt.rank), "w") as f:
    f.write(" ".join(map(str, ids)))
"""


def test_sharded_runtime_under_mpirun(llmc, stories, tmp_path):
    """A script that opens a sharded artifact runs as one process a rank
    (`mpirun -np 2 python3 script.py`), the runtime finding its MPI plugin
    from the Python module: tensor parallel and a pipeline (in micro-batches
    of 3) generate one process's ids on every rank."""
    import shutil
    import sys
    if not shutil.which("mpirun"):
        pytest.skip("mpirun not found (openmpi-bin)")
    path, tok = stories
    m = llmc.import_model(path)
    whole = llmc.Runtime(llmc.compile(m, tmp_path / "one", tokenizer=tok))
    assert whole.rank == 0
    want = whole.generate("Once upon a time", max_tokens=24)["ids"]
    script = tmp_path / "ranks.py"
    script.write_text(RANK_SCRIPT)
    env = dict(os.environ, LLMC_THREADS="1",
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    for name, roles, extra in [("tp2", ["tp"], {}), ("pp2", ["pp"], {"micro_batch": 3})]:
        art = llmc.compile(m, tmp_path / name, tokenizer=tok, mesh="2", roles=roles, **extra)
        out = tmp_path / ("%s.ids" % name)
        p = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
                            sys.executable, str(script), art, str(out)],
                           capture_output=True, text=True, timeout=120, env=env)
        assert p.returncode == 0, p.stderr
        for r in (0, 1):
            got = (tmp_path / ("%s.ids.rank%d" % (name, r))).read_text().split()
            assert list(map(int, got)) == want, (name, r)


def test_compile_sharded(llmc, stories, tmp_path):
    """compile(mesh=, roles=) runs the same pipeline as `llmc compile
    --shard-plan`: a weight blob per rank, each about half the whole, and
    metadata's dist; roles without a mesh, or a role that is neither tp nor
    pp, are errors."""
    import json
    path, tok = stories
    m = llmc.import_model(path)
    whole = llmc.compile(m, tmp_path / "one", tokenizer=tok)
    art = llmc.compile(m, tmp_path / "tp2", tokenizer=tok, mesh="2", roles=["tp"])
    meta = json.loads(open(os.path.join(art, "metadata.json")).read())
    assert meta["dist"]["ranks"] == 2 and meta["dist"]["groups"] == [["tp"]]
    assert meta["weights"]["file"] == "weights.rank{rank}.bin"
    size = os.path.getsize(os.path.join(whole, "weights.bin"))
    for r in (0, 1):
        part = os.path.getsize(os.path.join(art, "weights.rank%d.bin" % r))
        assert 0.45 * size <= part <= 0.55 * size
    # A pipeline's micro-batch as given, in metadata; the runtime's default.
    pp2 = llmc.compile(m, tmp_path / "pp2", tokenizer=tok, mesh="2", roles=["pp"],
                       micro_batch=6)
    meta = json.loads(open(os.path.join(pp2, "metadata.json")).read())
    assert meta["dist"]["micro_batch"] == 6 and meta["dist"]["pp"] == ["pp"]
    with pytest.raises(ValueError, match="roles: given without a mesh"):
        llmc.compile(m, tmp_path / "bad", roles=["tp"])
    with pytest.raises(ValueError, match="micro_batch: given without a mesh"):
        llmc.compile(m, tmp_path / "bad", micro_batch=4)
    with pytest.raises(ValueError, match="micro_batch: expected tokens >= 0, got -1"):
        llmc.compile(m, tmp_path / "bad", mesh="2", roles=["pp"], micro_batch=-1)
    with pytest.raises(llmc.Error, match="the plan has no pipeline stages"):
        llmc.compile(m, tmp_path / "bad", mesh="2", roles=["tp"], micro_batch=8)
    with pytest.raises(llmc.Error, match="roles must name tp or pp"):
        llmc.compile(m, tmp_path / "bad", mesh="2", roles=["xp"])
    assert not os.path.exists(tmp_path / "bad")
