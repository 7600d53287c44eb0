"""The Vulkan back end on a real Vulkan device (Mesa's lavapipe in CI): the same
models as the CPU target, compiled with --target vulkan, checked against the CPU
target's logits and tokens, and every kernel module through spirv-val.

Skips (visibly) when there is no Vulkan device; LLMC_REQUIRE_VULKAN=1 makes that a
failure (the README's test command sets it: setup installs lavapipe).
"""
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import e2e_util

sys.path.insert(0, os.path.join(e2e_util.E2E_DIR, "tools"))
import gguf_writer  # noqa: E402
import make_hf_model  # noqa: E402

# lavapipe's limits (`vulkaninfo`): subgroups of 8 (its vector width; the
# fixture takes the device's own), 1024 threads, 32K shared, f64. Kernels that
# sum across a subgroup need the device's size.
LAVAPIPE = "vulkan:1.3,+fp64,subgroup=8,workgroup=1024,shared=32K"
SUBGROUP = 8


@pytest.fixture(scope="session")
def vulkan(llmc):
    global LAVAPIPE, SUBGROUP
    p = e2e_util.run([llmc, "devices"])
    if p.returncode != 0 or not p.stdout.strip():
        msg = "no Vulkan device (llmc devices: %s)" % (p.stderr.strip() or p.stdout.strip())
        if os.environ.get("LLMC_REQUIRE_VULKAN") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    m = re.search(r"subgroup=(\d+)", p.stdout)
    if m:
        SUBGROUP = int(m.group(1))
        LAVAPIPE = "vulkan:1.3,+fp64,subgroup=%d,workgroup=1024,shared=32K" % SUBGROUP
    return p.stdout


def _spirv_val(art):
    exe = shutil.which("spirv-val")
    if not exe:
        if os.environ.get("LLMC_REQUIRE_VULKAN") == "1":
            pytest.fail("spirv-val not found (install spirv-tools)")
        pytest.skip("spirv-val not found (install spirv-tools)")
    p = subprocess.run([exe, "--target-env", "vulkan1.3", str(art / "kernels.spv")],
                       capture_output=True, text=True)
    assert p.returncode == 0, "spirv-val rejects %s: %s" % (art, p.stdout + p.stderr)


def _against_cpu(llmc, tmp_path, model, extra=(), prompt_len=32, steps=12, target=None):
    """Compiles `model` for lavapipe and the CPU, runs both from the same prompt ids
    (every prompt row's logits, then greedy steps) and checks the Vulkan target
    against the CPU's: logits within 1e-3 x max|logit| at every position, greedy
    tokens identical; the kernels pass spirv-val."""
    vk = e2e_util.compile_for(llmc, model, tmp_path / "vk", target or LAVAPIPE, extra)
    cpu = e2e_util.compile_for(llmc, model, tmp_path / "cpu", "cpu", extra)
    _spirv_val(vk)
    ids = e2e_util.deterministic_prompt_ids(prompt_len, 300)
    _, vp, vs, vids = e2e_util.run_logits(llmc, vk, ids, steps, threads=1)
    _, cp, cs, cids = e2e_util.run_logits(llmc, cpu, ids, steps, threads=1)
    scale = max(np.abs(cp).max(), 1e-30)
    assert vids == cids, "greedy ids differ: vulkan %s, cpu %s" % (vids, cids)
    assert np.abs(vp - cp).max() <= 1e-3 * scale
    assert np.abs(vs - cs).max() <= 1e-3 * scale


def test_devices_lists_lavapipe(vulkan):
    assert "0: " in vulkan


def test_stories260k_text_matches_cpu(llmc, tmp_path, stories_paths, vulkan):
    """Greedy text of 100 tokens identical to the CPU target's, from a short
    prompt and from a 40-token one (the prompt's rows on the grid: each with a
    scores tile of its own)."""
    ckpt, tok = stories_paths
    vk = e2e_util.compile_for(llmc, ckpt, tmp_path / "vk", LAVAPIPE, ("--tokenizer", tok))
    cpu = e2e_util.compile_for(llmc, ckpt, tmp_path / "cpu", "cpu", ("--tokenizer", tok))
    _spirv_val(vk)
    meta = (vk / "metadata.json").read_text()
    assert '"target": "vulkan"' in meta and '"device"' in meta
    long_prompt = "Once upon a time, there was a little girl named Lily. She loved to " \
                  "play outside in the park with her friends every day"
    for prompt in ("Once upon a time", long_prompt):
        texts = []
        for art in (vk, cpu):
            p = e2e_util.run([llmc, "run", art, "--prompt", prompt, "--max-tokens", 100,
                              "--print-ids"])
            assert p.returncode == 0, e2e_util.describe(p, "llmc run failed")
            texts.append(p.stdout)
        assert texts[0] == texts[1]
        assert len(e2e_util.parse_ids(texts[0])) >= 50


@pytest.mark.parametrize("arch,tied,dtype", [("llama", False, "f32"), ("qwen3", True, "f16"),
                                             ("qwen2", False, "f32")])
def test_gguf_float_models_match_cpu(llmc, tmp_path, vulkan, arch, tied, dtype):
    _, gguf = e2e_util.float_gguf(tmp_path, arch, tied, dtype)
    _against_cpu(llmc, tmp_path, gguf)


@pytest.mark.parametrize("arch,tied,qtype", [("llama", False, "q8_0"), ("qwen3", True, "q4_0"),
                                              ("llama", True, "q4_k"), ("qwen3", False, "q6_k")])
def test_gguf_quantized_models_match_cpu(llmc, tmp_path, vulkan, arch, tied, qtype):
    """Quantized matrices stay quantized on the device (the kernels read the
    blocks): the same logits as the CPU target's exact mode."""
    _, gguf = e2e_util.quantized_gguf(tmp_path, arch, tied, qtype)
    _against_cpu(llmc, tmp_path, gguf)
    import json
    meta = json.loads((tmp_path / "vk" / "metadata.json").read_text())
    assert any(p["dtype"] == qtype for p in meta["params"])


@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3"])
def test_hf_checkpoints_match_cpu(llmc, tmp_path, vulkan, arch):
    hf = tmp_path / "hf"
    make_hf_model.make_model(str(hf), arch=arch, tied=arch != "llama", dtype="f32", seed=3)
    _against_cpu(llmc, tmp_path, hf)


def test_device_errors(llmc, tmp_path, stories_paths, vulkan):
    """A device number past the list, no driver, no loader: a clear error,
    exit != 0."""
    ckpt, tok = stories_paths
    vk = e2e_util.compile_for(llmc, ckpt, tmp_path / "vk", LAVAPIPE, ("--tokenizer", tok))
    env = dict(os.environ, LLMC_DEVICE="7")
    p = e2e_util.run([llmc, "run", vk, "--prompt", "Hi", "--max-tokens", 2], env=env)
    assert p.returncode != 0 and "no device 7" in p.stderr, e2e_util.describe(p)
    p = e2e_util.run([llmc, "run", vk, "--device", 5, "--prompt", "Hi", "--max-tokens", 2])
    assert p.returncode != 0 and "no device 5" in p.stderr, e2e_util.describe(p)
    p = e2e_util.run([llmc, "run", vk, "--device", 0, "--prompt", "Hi", "--max-tokens", 2])
    assert p.returncode == 0, e2e_util.describe(p)
    env = dict(os.environ, VK_DRIVER_FILES=str(tmp_path / "none.json"),
               VK_ICD_FILENAMES=str(tmp_path / "none.json"))
    p = e2e_util.run([llmc, "run", vk, "--prompt", "Hi", "--max-tokens", 2], env=env)
    assert p.returncode != 0 and "vulkan:" in p.stderr, e2e_util.describe(p)
    p = e2e_util.run([llmc, "devices"], env=env)
    assert p.returncode != 0, e2e_util.describe(p)
    # No loader at all (a CPU-only install): the runtime says what to install.
    env = dict(os.environ, LLMC_VULKAN_LOADER=str(tmp_path / "libvulkan-missing.so"))
    for cmd in ([llmc, "devices"], [llmc, "run", vk, "--prompt", "Hi", "--max-tokens", 2]):
        p = e2e_util.run(cmd, env=env)
        assert p.returncode != 0 and "cannot load the Vulkan loader" in p.stderr, \
            e2e_util.describe(p)



def test_bare_vulkan_is_the_device(llmc, tmp_path, stories_paths, vulkan):
    """`--target vulkan` compiles for the machine's device (its version,
    features and limits), as `cpu` is the host; items after it apply on top,
    and a kernel that needs a feature the target lacks (the exact mode's f64
    sums without fp64) is a clear error."""
    import json
    ckpt, tok = stories_paths
    art = e2e_util.compile_for(llmc, ckpt, tmp_path / "vk", "vulkan", ("--tokenizer", tok))
    meta = json.loads((art / "metadata.json").read_text())
    assert meta["target_description"] == \
        "vulkan:1.3,+fp64,subgroup=8,workgroup=1024,shared=32K,range=128M,device=cpu" or \
        "llvmpipe" not in vulkan
    p = e2e_util.run([llmc, "compile", ckpt, "--tokenizer", tok, "--target", "vulkan,-fp64",
                      "-o", tmp_path / "ART"])
    assert p.returncode != 0 and "needs the target feature fp64" in p.stderr, \
        e2e_util.describe(p)
    assert not e2e_util.no_artifact_left(tmp_path)


def test_llmc_run_without_the_compiler(llmc, tmp_path, stories_paths, vulkan):
    """llmc-run (run, bench, devices on artifacts) links no MLIR or LLVM
    library, and runs a vulkan artifact as llmc does; a model file where an
    artifact belongs, and an unknown command, are clear errors."""
    run = os.path.join(os.path.dirname(llmc), "llmc-run")
    libs = subprocess.run(["ldd", run], capture_output=True, text=True).stdout
    assert "libMLIR" not in libs and "libLLVM" not in libs, libs
    ckpt, tok = stories_paths
    vk = e2e_util.compile_for(llmc, ckpt, tmp_path / "vk", LAVAPIPE, ("--tokenizer", tok))
    outs = []
    for exe in (llmc, run):
        p = e2e_util.run([exe, "run", vk, "--prompt", "Once", "--max-tokens", 20,
                          "--print-ids"])
        assert p.returncode == 0, e2e_util.describe(p)
        outs.append(p.stdout)
    assert outs[0] == outs[1]
    p = e2e_util.run([run, "devices"])
    assert p.returncode == 0 and p.stdout == vulkan
    p = e2e_util.run([run, "run", ckpt, "--max-tokens", 2])
    assert p.returncode != 0 and "not an artifact directory" in p.stderr, e2e_util.describe(p)
    p = e2e_util.run([run, "compile", ckpt])
    assert p.returncode != 0 and "unknown command 'compile'" in p.stderr, e2e_util.describe(p)


def test_bench_profile_and_roofline_on_the_device(llmc, tmp_path, stories_paths, vulkan):
    """A vulkan artifact compiled with --profile: llmc bench --profile times every
    kernel with timestamp queries (each launched kernel of each phase, with its
    calls: 5 layers), --roofline measures the device's copy bandwidth;
    --device past the list is an error."""
    ckpt, tok = stories_paths
    vk = e2e_util.compile_for(llmc, ckpt, tmp_path / "vk", LAVAPIPE, ("--tokenizer", tok, "--profile"))
    p = e2e_util.run([llmc, "bench", vk, "-p", 8, "-n", 4, "-r", 1, "--vs", "none",
                      "--profile", "--roofline", "--device", 0])
    assert p.returncode == 0, e2e_util.describe(p)
    out = p.stdout
    assert "profile: pp8" in out and "profile: tg4" in out, out
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 5 and cells[0].startswith("forward_"):
            rows[cells[0]] = (int(cells[1]), float(cells[2]))
    # Every layer's kernels timed: 5 layers of stories260K, 4 decode steps
    # (each decode kernel's calls a multiple of the steps).
    assert rows["forward_prefill.matmul"][0] > 0
    assert rows["forward_decode.matmul"][0] > 0 and rows["forward_decode.matmul"][0] % 4 == 0
    # Decode's norms: the sum of squares and the scale one launch (two steps
    # of one workgroup), named after its last block.
    assert rows["forward_decode.rms_norm_scale"][0] == 4 * 2 * 5
    assert "forward_decode.rms_norm_sumsq" not in rows
    assert all(ms >= 0 for _, ms in rows.values()) and sum(ms for _, ms in rows.values()) > 0
    assert "bandwidth over 256 MiB, the best of 5: a kernel reading it" in out, out
    # The probe's bandwidth (the row after that line): measured, not 0.
    after = out.split("a kernel reading it in 16-byte loads)", 1)[1].splitlines()[1]
    assert float(after.strip("|").split("|")[1]) > 0, after
    p = e2e_util.run([llmc, "bench", vk, "-p", 8, "-n", 0, "-r", 1, "--vs", "none",
                      "--device", 9])
    assert p.returncode != 0 and "no device 9" in p.stderr, e2e_util.describe(p)


def test_bandwidth_probe_assembled_from_its_source(tmp_path):
    """The device read-bandwidth probe the runtime embeds (runtime/src/probe/
    read.inc) is what its assembly source gives (spirv-as), and valid
    SPIR-V for Vulkan 1.1."""
    if not shutil.which("spirv-as") or not shutil.which("spirv-val"):
        pytest.skip("spirv-as / spirv-val (spirv-tools) not installed")
    probe = os.path.join(e2e_util.REPO_ROOT, "runtime", "src", "probe")
    p = e2e_util.run(["/usr/bin/python3", os.path.join(probe, "assemble.py"), "--check"])
    assert p.returncode == 0, e2e_util.describe(p, "read.inc is stale")
    spv = tmp_path / "read.spv"
    for cmd in (["spirv-as", "--target-env", "vulkan1.1", os.path.join(probe, "read.spvasm"),
                 "-o", spv], ["spirv-val", "--target-env", "vulkan1.1", spv]):
        p = e2e_util.run(cmd)
        assert p.returncode == 0, e2e_util.describe(p)


def test_subgroup_size_mismatch(llmc, tmp_path, vulkan):
    """Kernels that sum across a subgroup run only on a device whose subgroups
    are the size they were compiled for: anything else is a clear error naming
    both sizes, not wrong sums. The dispatch program records the size per
    kernel."""
    import json
    hf = tmp_path / "hf"
    make_hf_model.make_model(str(hf), arch="llama", tied=False, dtype="f32", seed=5)
    gguf = tmp_path / "model.gguf"
    gguf_writer.hf_to_gguf(str(hf), str(gguf), gguf_writer.GGML_F32)
    other = 32 if SUBGROUP != 32 else 16
    wide = LAVAPIPE.replace("subgroup=%d" % SUBGROUP, "subgroup=%d" % other)
    art = e2e_util.compile_for(llmc, gguf, tmp_path / "vk", wide)
    meta = json.loads((art / "metadata.json").read_text())
    assert any(k.get("subgroup") == other for k in meta["device"]["kernels"])
    p = e2e_util.run([llmc, "run", art, "--prompt-ids", "1,2,3", "--max-tokens", 2])
    assert p.returncode != 0 and "was compiled for subgroups of %d" % other in p.stderr \
        and "subgroup=%d" % SUBGROUP in p.stderr, e2e_util.describe(p)
    # A size the metadata cannot hold is refused where it is read.
    for k in meta["device"]["kernels"]:
        if "subgroup" in k:
            k["subgroup"] = 0
    (art / "metadata.json").write_text(json.dumps(meta))
    p = e2e_util.run([llmc, "run", art, "--prompt-ids", "1,2,3", "--max-tokens", 2])
    assert p.returncode != 0 and ".subgroup' is 0, expected a value in [1, 1024]" in p.stderr, \
        e2e_util.describe(p)


def test_prompt_tiles_and_their_tail(llmc, tmp_path, vulkan):
    """A 13-token prompt: the prompt matmuls' whole tiles of 8 tokens (each
    thread's weight loads serving 8 tokens, their sums in registers) and the 5
    tokens after them (a nest of their own) together match the CPU target."""
    hf = tmp_path / "hf"
    make_hf_model.make_model(str(hf), arch="qwen3", tied=True, dtype="f32", seed=11)
    _against_cpu(llmc, tmp_path, hf, prompt_len=13, steps=4)


@pytest.mark.parametrize("arch,qtype", [("llama", None), ("qwen3", "q4_0")])
def test_staged_prompt_matmuls_match_cpu(llmc, tmp_path, vulkan, monkeypatch, arch, qtype):
    """Prompt matmuls with their activations staged in workgroup memory (a
    target that is not a CPU device, as a GPU's): a model 512 wide with 1024
    in the MLP, so that the products run in several chunks of 256 (a copy
    into workgroup memory and a barrier each, every thread's sums carried
    across them in its own registers); the 13-token prompt's whole tiles and
    their tail match the CPU target."""
    monkeypatch.setattr(make_hf_model, "HIDDEN", 512)
    monkeypatch.setattr(make_hf_model, "INTER", 1024)
    if qtype:
        _, model = e2e_util.quantized_gguf(tmp_path, arch, True, qtype)
    else:
        model = tmp_path / "hf"
        make_hf_model.make_model(str(model), arch=arch, tied=False, dtype="f32", seed=7)
    assert "device=cpu" not in LAVAPIPE
    _against_cpu(llmc, tmp_path, model, extra=("--keep-ir",), prompt_len=13, steps=4)
    tl = (tmp_path / "vk" / "tl.mlir").read_text()
    assert '_rf_stage"' in tl


def test_buffers_past_the_range_bound_in_windows(llmc, tmp_path, vulkan):
    """A weight matrix larger than one binding may span (the target's range=:
    Qwen3-0.6B's 311 MB embedding on a device of 128 MB; here 32K against
    the tiny model's 77 KB embedding and output matrices) is bound in windows
    of the range, a kernel argument each, every load reading the window its
    element lies in: the same logits as the CPU target. A kernel that
    writes such a buffer (the KV cache at 16K) is refused at compile time."""
    import json
    hf = tmp_path / "hf"
    make_hf_model.make_model(str(hf), arch="llama", tied=False, dtype="f32", seed=5)
    target = LAVAPIPE + ",range=32K"
    vk = e2e_util.compile_for(llmc, hf, tmp_path / "vk", target)
    cpu = e2e_util.compile_for(llmc, hf, tmp_path / "cpu", "cpu")
    meta = json.loads((vk / "metadata.json").read_text())
    windowed = 0
    for phase in meta["device"]["phases"].values():
        for launch in phase:
            binds = [a for a in launch.get("args", []) if "buffer" in a]
            for a, b in zip(binds, binds[1:]):
                if (a["buffer"] == b["buffer"] == "weights" and a["bytes"] == 32768
                        and b["offset"] == a["offset"] + 32768):
                    windowed += 1
                    assert not a["writes"] and not b["writes"]
    assert windowed
    ids = e2e_util.deterministic_prompt_ids(13, 300)
    _, vp, vs, vids = e2e_util.run_logits(llmc, vk, ids, 4, threads=1)
    _, cp, cs, cids = e2e_util.run_logits(llmc, cpu, ids, 4, threads=1)
    scale = np.abs(cp).max()
    assert vids == cids
    assert np.abs(vp - cp).max() <= 1e-3 * scale and np.abs(vs - cs).max() <= 1e-3 * scale
    p = e2e_util.run([llmc, "compile", hf, "--target", LAVAPIPE + ",range=16K",
                      "-o", tmp_path / "small"])
    assert p.returncode != 0 and "past the target's range of 16384" in p.stderr
    assert not (tmp_path / "small").exists()


def test_bindings_say_what_the_kernels_write(llmc, tmp_path, vulkan):
    """Each buffer binding of the dispatch program says whether its kernel
    writes it: the weights never, every launch something. The runtime puts a
    barrier only between launches whose bindings overlap where one writes:
    the same tokens with every binding marked written (a barrier before
    every launch, as an artifact without the field gets) give the same
    logits. A value that is not a boolean is refused where it is read."""
    import json
    hf = tmp_path / "hf"
    make_hf_model.make_model(str(hf), arch="qwen3", tied=True, dtype="f32", seed=5)
    art = e2e_util.compile_for(llmc, hf, tmp_path / "vk", LAVAPIPE)
    meta = json.loads((art / "metadata.json").read_text())
    for phase in meta["device"]["phases"].values():
        for launch in phase:
            binds = [a for a in launch.get("args", []) if "buffer" in a]
            if not binds:
                continue
            assert any(a["writes"] for a in binds)
            assert not any(a["writes"] for a in binds if a["buffer"] == "weights")
    ids = e2e_util.deterministic_prompt_ids(13, 300)
    _, p0, s0, ids0 = e2e_util.run_logits(llmc, art, ids, 6, threads=1)
    for phase in meta["device"]["phases"].values():
        for launch in phase:
            for a in launch.get("args", []):
                if "buffer" in a:
                    a["writes"] = True
    (art / "metadata.json").write_text(json.dumps(meta))
    _, p1, s1, ids1 = e2e_util.run_logits(llmc, art, ids, 6, threads=1)
    assert ids0 == ids1 and np.array_equal(p0, p1) and np.array_equal(s0, s1)
    meta["device"]["phases"]["decode"][1]["args"][1]["writes"] = 3
    (art / "metadata.json").write_text(json.dumps(meta))
    p = e2e_util.run([llmc, "run", art, "--prompt-ids", "1,2,3", "--max-tokens", 2])
    assert p.returncode != 0 and "writes' must be true or false" in p.stderr, \
        e2e_util.describe(p)


def test_f16_kv_cache_matches_cpu(llmc, tmp_path, vulkan):
    """--kv-cache f16 on the device: keys and values stored as f16 (the
    kernels convert on store and load), logits within 1e-3 x max|logit| of
    the CPU target's f16 cache at every position, greedy tokens identical; a
    target without f16 storage is refused naming the feature."""
    hf = tmp_path / "hf"
    make_hf_model.make_model(str(hf), arch="qwen3", tied=True, dtype="f32", seed=5)
    _against_cpu(llmc, tmp_path, hf, extra=("--kv-cache", "f16"))
    import json
    meta = json.loads((tmp_path / "vk" / "metadata.json").read_text())
    assert "f16" in json.dumps(meta["kv_cache"])
    p = e2e_util.run([llmc, "compile", hf, "--target", LAVAPIPE + ",-fp16", "--kv-cache", "f16",
                      "-o", tmp_path / "ART"])
    assert p.returncode != 0 and "needs the target feature fp16" in p.stderr, e2e_util.describe(p)
    assert not e2e_util.no_artifact_left(tmp_path)


@pytest.mark.parametrize("kv", ["f32", "f16"])
def test_split_attention_matches_cpu(llmc, tmp_path, vulkan, kv):
    """A device of 8 compute units (cores=8) and a model of 2 KV heads: each
    decode step's attention split over its positions into ceil(2 * 8 / 2) = 8
    parts, as many as its 256-position cache can fill in parts of 64: 4, a
    workgroup per head and part (a launch of their own), then the parts
    merged per head; a 200-token prompt, so that every part holds positions
    (the last one partly) and the merge takes all four. Logits and greedy
    tokens as the CPU target's."""
    hf = tmp_path / "hf"
    make_hf_model.make_model(str(hf), arch="qwen3", tied=True, dtype="f32", seed=13)
    _against_cpu(llmc, tmp_path, hf, extra=("--kv-cache", kv), prompt_len=200, steps=8,
                 target=LAVAPIPE + ",cores=8")
    import json
    meta = json.loads((tmp_path / "vk" / "metadata.json").read_text())
    assert ",cores=8" in meta["target_description"]
    dev = meta["device"]
    grids = [l["grid"] for l in dev["phases"]["decode"]
             if "kernel" in l and dev["kernels"][l["kernel"]]["name"].endswith("attention_values")]
    assert grids and all(g[0] == 4 and g[1] == 2 for g in grids), grids


def test_kernels_checked_against_the_module(llmc, tmp_path, stories_paths, vulkan):
    """Before it creates a pipeline the runtime reads kernels.spv's entry
    points: a kernel the dispatch program launches that the module lacks is a
    clear error naming both files and the kernel (not the driver's invalid
    usage), as is a module cut short."""
    import json
    ckpt, tok = stories_paths
    art = e2e_util.compile_for(llmc, ckpt, tmp_path / "vk", LAVAPIPE, ("--tokenizer", tok))
    meta_path = art / "metadata.json"
    meta = json.loads(meta_path.read_text())
    name = meta["device"]["kernels"][0]["name"]
    meta["device"]["kernels"][0]["name"] = name + "_gone"
    meta_path.write_text(json.dumps(meta))
    p = e2e_util.run([llmc, "run", art, "--prompt", "Once", "--max-tokens", 2])
    assert p.returncode != 0 and "kernels.spv: no compute entry point '%s_gone'" % name \
        in p.stderr and "metadata.json launches" in p.stderr, e2e_util.describe(p)
    meta["device"]["kernels"][0]["name"] = name
    # A kernel whose launches pass fewer bindings than its entry point uses.
    cut = json.loads(json.dumps(meta))
    for phase in cut["device"]["phases"].values():
        for launch in phase:
            if launch.get("kernel") == 0 and "copy" not in launch:
                launch["args"].pop()
    meta_path.write_text(json.dumps(cut))
    p = e2e_util.run([llmc, "run", art, "--prompt", "Once", "--max-tokens", 2])
    assert p.returncode != 0 and "kernels.spv: entry point '%s' uses descriptor set 0 binding" \
        % name in p.stderr and "metadata.json binds" in p.stderr, e2e_util.describe(p)
    meta_path.write_text(json.dumps(meta))
    # Cut inside an instruction past the middle (its word count runs on).
    spv = (art / "kernels.spv").read_bytes()
    words = np.frombuffer(spv, dtype="<u4")
    at = 5
    while at < len(words) // 2 or words[at] >> 16 < 3:
        at += int(words[at] >> 16)
    (art / "kernels.spv").write_bytes(spv[:(at + 1) * 4])
    p = e2e_util.run([llmc, "run", art, "--prompt", "Once", "--max-tokens", 2])
    assert p.returncode != 0 and "kernels.spv: instruction at word" in p.stderr, \
        e2e_util.describe(p)
