"""Sharded models under mpirun (issue 12): an artifact compiled for a mesh
(`llmc compile --mesh` / `--shard-plan`) runs as one process per rank,
each mapping only its slice of the weights and holding only its KV heads;
greedy tokens identical to one process, logits within 1e-4 of max|logit|
(exact mode); and the faults: a mesh the heads do not divide, a job of
another size than the mesh, a rank that never starts or dies, a rank given
another artifact: an error on every rank and an exit status other than 0,
no hang."""
import json
import os
import subprocess

import numpy as np
import pytest

import e2e_util
import make_hf_model

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe"]
PROMPT = e2e_util.deterministic_prompt_ids(12, 300)


def _plan_file(tmp_path, mesh, roles):
    path = tmp_path / ("plan-%s-%s.json" % (mesh, "-".join(roles)))
    path.write_text(json.dumps({"mesh": mesh, "roles": roles}))
    return path


def _compile(llmc, model, out, *args):
    p = e2e_util.run([llmc, "compile", model, "-o", out, *args])
    assert p.returncode == 0, e2e_util.describe(p)
    return out


def _sharded(llmc, model, tmp_path, name, ranks, *args):
    plan = _plan_file(tmp_path, str(ranks), ["tp"])
    return _compile(llmc, model, tmp_path / name, "--shard-plan", plan, *args)


def _mpirun(np_, cmd, timeout=120, env=None):
    """`mpirun -np N cmd` (one thread a rank: the CI machine's 2 cores)."""
    e = dict(os.environ, LLMC_THREADS="1", **(env or {}))
    return subprocess.run(MPIRUN + ["-np", str(np_)] + [str(c) for c in cmd],
                          capture_output=True, text=True, timeout=timeout, env=e)


def _run_logits(llmc, art, tmp_path, ranks, steps=8, tag="", prompt_logits=True,
                extra=()):
    """Greedy ids and the prompt's (None without `prompt_logits`: its call
    then computes its last row alone) and steps' logits of `art` on `ranks`
    processes (1: no mpirun)."""
    pl = tmp_path / ("%s%s-r%d-P.npy" % (art.name, tag, ranks))
    sl = tmp_path / ("%s%s-r%d-S.npy" % (art.name, tag, ranks))
    cmd = [llmc, "run", art, "--prompt-ids", ",".join(map(str, PROMPT)),
           "--max-tokens", steps, "--print-ids", "--dump-logits", sl, *extra]
    if prompt_logits:
        cmd += ["--dump-prompt-logits", pl]
    if ranks == 1:
        p = e2e_util.run(cmd + ["--threads", 1])
    else:
        p = _mpirun(ranks, cmd)
    assert p.returncode == 0, e2e_util.describe(p)
    return (e2e_util.parse_ids(p.stdout), np.load(pl) if prompt_logits else None,
            np.load(sl))


def _assert_same(one, many):
    ids1, p1, s1 = one
    ids, p, s = many
    assert ids == ids1
    scale = max(np.abs(p1).max(), 1e-30)
    if p is not None:
        assert np.abs(p - p1).max() <= 1e-4 * scale
    assert np.abs(s - s1).max() <= 1e-4 * scale


@pytest.fixture(scope="module")
def stories(llmc, tmp_path_factory, model_file):
    tmp = tmp_path_factory.mktemp("stories")
    ckpt, tok = model_file("stories260K.bin"), model_file("tok512.bin")
    one = _compile(llmc, ckpt, tmp / "one", "--tokenizer", tok)
    tp2 = _sharded(llmc, ckpt, tmp, "tp2", 2, "--tokenizer", tok)
    return tmp, ckpt, tok, one, tp2


def test_stories_text_identical_on_two_ranks(llmc, stories):
    """stories260K, tensor parallel over two ranks: its 60 greedy tokens
    from a text prompt are one process's, printed once (rank 0)."""
    _, _, _, one, tp2 = stories
    args = ["run", None, "--prompt", "Once upon a time", "--max-tokens", 60]
    q = e2e_util.run([llmc] + [one if a is None else a for a in args])
    assert q.returncode == 0, e2e_util.describe(q)
    p = _mpirun(2, [llmc] + [tp2 if a is None else a for a in args])
    assert p.returncode == 0, e2e_util.describe(p)
    # (mpirun hands its ranks a terminal: a last newline.)
    assert p.stdout.rstrip("\n") == q.stdout.rstrip("\n") and len(q.stdout) > 100


@pytest.mark.parametrize("ranks", [2, 4])
def test_stories_logits(llmc, stories, ranks):
    """8 heads, 4 KV heads: two and four tensor-parallel ranks give one
    process's ids, and its logits within 1e-4."""
    tmp, ckpt, tok, one, tp2 = stories
    art = tp2 if ranks == 2 else _sharded(llmc, ckpt, tmp, "tp4", 4, "--tokenizer", tok)
    meta = json.loads((art / "metadata.json").read_text())
    assert meta["dist"]["ranks"] == ranks and meta["dist"]["axes"] == ["tp"]
    # Each rank's KV heads: 4 / ranks.
    assert meta["kv_cache"]["shape"][2] == 4 // ranks
    _assert_same(_run_logits(llmc, one, tmp, 1), _run_logits(llmc, art, tmp, ranks))


def test_each_rank_maps_its_share(llmc, stories):
    """Per-rank resident weight memory (run --verbose, from /proc/self/smaps
    on each rank) about half the whole model's: the rank's slices, the norms
    whole."""
    _, _, _, one, tp2 = stories
    whole = os.path.getsize(one / "weights.bin")
    p = _mpirun(2, [llmc, "run", tp2, "--prompt", "Once", "--max-tokens", 20,
                    "--verbose"])
    assert p.returncode == 0, e2e_util.describe(p)
    import re
    found = dict((int(r), (int(b), int(k))) for r, b, k in re.findall(
        r"memory: rank (\d): \S+weights\.rank\d\.bin, (\d+) bytes mapped, (\d+) KiB resident",
        p.stderr))
    assert set(found) == {0, 1}, p.stderr
    for mapped, resident in found.values():
        assert 0.45 * whole <= mapped <= 0.55 * whole
        assert resident * 1024 <= 0.55 * whole
        assert resident * 1024 >= 0.3 * whole


@pytest.mark.parametrize("arch,tied", [("llama", False), ("qwen2", True), ("qwen3", True)])
def test_tiny_checkpoints(llmc, tmp_path, arch, tied):
    """The tiny Llama, Qwen2 (biases, tied head) and Qwen3 (q/k norms)
    checkpoints: 8 heads, 2 KV heads, FFN 160, vocabulary 300, over two
    ranks: one process's ids, logits within 1e-4."""
    hf = tmp_path / "hf"
    make_hf_model.make_model(str(hf), arch=arch, tied=tied, dtype="f32", seed=4)
    one = _compile(llmc, hf, tmp_path / "one", "--tokenizer", "none")
    tp2 = _sharded(llmc, hf, tmp_path, "tp2", 2, "--tokenizer", "none")
    _assert_same(_run_logits(llmc, one, tmp_path, 1), _run_logits(llmc, tp2, tmp_path, 2))


@pytest.mark.parametrize("arch,tied,qtype", [("qwen3", True, "q8_0"), ("llama", False, "q4_0")])
def test_quantized_gguf(llmc, tmp_path, arch, tied, qtype):
    """A quantized GGUF (weights kept quantized, sliced by whole rows and
    blocks; down's 80 columns a rank would split its 32-wide blocks, so its
    input is gathered and it stays whole): one process's ids and logits
    within 1e-4 (exact mode)."""
    _, gguf = e2e_util.quantized_gguf(tmp_path, arch, tied, qtype)
    one = _compile(llmc, gguf, tmp_path / "one", "--tokenizer", "none")
    tp2 = _sharded(llmc, gguf, tmp_path, "tp2", 2, "--tokenizer", "none")
    _assert_same(_run_logits(llmc, one, tmp_path, 1), _run_logits(llmc, tp2, tmp_path, 2))


def test_pipeline_stages(llmc, stories):
    """stories260K on two ranks of the default links: the cost model picks
    two pipeline stages (layers 0-1 and 2-4), an artifact each (the second in
    stage1/); one process's ids and logits within 1e-4."""
    tmp, ckpt, tok, one, _ = stories
    art = _compile(llmc, ckpt, tmp / "pp2", "--mesh", "2", "--tokenizer", tok)
    meta = json.loads((art / "metadata.json").read_text())
    assert meta["dist"]["pp"] == ["pp"] and meta["dist"]["stage_dirs"] == [".", "stage1"]
    stage1 = json.loads((art / "stage1" / "metadata.json").read_text())
    assert stage1["dist"]["stage"] == 1
    # Each stage's cache holds its layers; each rank's blob its stage's.
    assert meta["kv_cache"]["shape"][0] + stage1["kv_cache"]["shape"][0] == 5
    assert (art / "weights.rank0.bin").exists() and (art / "stage1" / "weights.rank1.bin").exists()
    _assert_same(_run_logits(llmc, one, tmp, 1), _run_logits(llmc, art, tmp, 2, tag="pp"))


def test_four_pipeline_stages(llmc, stories):
    """Four stages of stories260K's five layers (the middle ones receive
    rows, send rows and receive the logits): one process's ids and logits
    within 1e-4."""
    tmp, ckpt, tok, one, _ = stories
    plan = _plan_file(tmp, "4", ["pp"])
    art = tmp / "pp4"
    p = e2e_util.run([llmc, "compile", ckpt, "-o", art, "--shard-plan", plan, "--tokenizer", tok])
    assert p.returncode == 0, e2e_util.describe(p)
    # The plan as compile prints it: the stages by their layers.
    assert "plan: pp=4 (layers 0, 1, 2, 3-4) predicted" in p.stdout, p.stdout
    meta = json.loads((art / "metadata.json").read_text())
    assert meta["dist"]["stage_dirs"] == [".", "stage1", "stage2", "stage3"]
    layers = [json.loads(((art / d) / "metadata.json").read_text())["kv_cache"]["shape"][0]
              for d in meta["dist"]["stage_dirs"]]
    assert layers == [1, 1, 1, 2]
    _assert_same(_run_logits(llmc, one, tmp, 1), _run_logits(llmc, art, tmp, 4, tag="pp4"))


def test_pipeline_micro_batches(llmc, stories):
    """A pipeline takes a prompt in micro-batches (the shard plan's 5 here;
    --micro-batch at run time): each stage sends a piece on and starts the
    next, the pieces before the last exchange no logits. Two and four
    stages, the prompt's last row alone and every row's, pieces of 1 (one-token
    calls), 3, 5 and the whole: one process's ids and logits within 1e-4."""
    tmp, ckpt, tok, one, _ = stories
    plan = tmp / "plan-pp2-mb5.json"
    plan.write_text(json.dumps({"mesh": "2", "roles": ["pp"], "micro_batch": 5}))
    art = tmp / "pp2mb5"
    p = e2e_util.run([llmc, "compile", ckpt, "-o", art, "--shard-plan", plan, "--tokenizer", tok])
    assert p.returncode == 0, e2e_util.describe(p)
    assert "prompts in micro-batches of 5 tokens" in p.stdout, p.stdout
    assert json.loads((art / "metadata.json").read_text())["dist"]["micro_batch"] == 5
    ref = _run_logits(llmc, one, tmp, 1)
    _assert_same(ref, _run_logits(llmc, art, tmp, 2, tag="mb"))
    _assert_same(ref, _run_logits(llmc, art, tmp, 2, tag="mb-last", prompt_logits=False))
    for mb in ["1", "3", "0"]:
        _assert_same(ref, _run_logits(llmc, art, tmp, 2, tag="mb" + mb, prompt_logits=False,
                                      extra=["--micro-batch", mb]))
    pp4 = _compile(llmc, ckpt, tmp / "pp4mb", "--shard-plan", _plan_file(tmp, "4", ["pp"]),
                   "--tokenizer", tok)
    _assert_same(ref, _run_logits(llmc, pp4, tmp, 4, tag="mb3", prompt_logits=False,
                                  extra=["--micro-batch", "3"]))


def test_pipeline_of_tensor_parallel_stages(llmc, stories):
    """A 2x2 mesh: two stages across, each tensor parallel over two ranks
    (four processes): one process's ids and logits within 1e-4."""
    tmp, ckpt, tok, one, _ = stories
    plan = _plan_file(tmp, "2x2", ["pp", "tp"])
    art = _compile(llmc, ckpt, tmp / "pp2tp2", "--shard-plan", plan, "--tokenizer", tok)
    meta = json.loads((art / "metadata.json").read_text())
    assert meta["dist"]["axes"] == ["pp", "tp"] and meta["dist"]["groups"] == [["pp"], ["tp"]]
    _assert_same(_run_logits(llmc, one, tmp, 1), _run_logits(llmc, art, tmp, 4, tag="pp2tp2"))


# --- Faults -------------------------------------------------------------


def test_heads_not_divisible(llmc, tmp_path):
    """Four tensor-parallel ranks over 2 KV heads: the plan says why, and no
    artifact is left."""
    hf = tmp_path / "hf"
    make_hf_model.make_model(str(hf), arch="llama", tied=False, dtype="f32", seed=4)
    plan = _plan_file(tmp_path, "4", ["tp"])
    p = e2e_util.run([llmc, "compile", hf, "--shard-plan", plan, "-o", tmp_path / "ART"])
    assert p.returncode != 0
    assert "the KV heads (2) do not divide over 4 tensor-parallel ranks" in p.stderr
    e2e_util.no_artifact_left(tmp_path)


def test_bad_shard_plan(llmc, tmp_path, model_file):
    bad = tmp_path / "bad.json"
    for text, why in [('{"mesh": "2", "roles": ["xp"]}', "'roles' must be a list"),
                      ('{"mesh": "2"}', "'roles' must be a list"),
                      ('{"mesh": "2", "roles": ["tp"], "spin": 1}', "unknown key 'spin'"),
                      ('{"mesh": "2", "roles": ["pp"], "micro_batch": -1}',
                       "'micro_batch' must be a number of tokens"),
                      ('{"mesh": "2", "roles": ["pp"], "flops": 0}',
                       "'flops' must be a positive number"),
                      ("{", "not JSON")]:
        bad.write_text(text)
        p = e2e_util.run([llmc, "compile", model_file("stories260K.bin"), "--shard-plan",
                          bad, "-o", tmp_path / "ART"])
        assert p.returncode != 0 and str(bad) in p.stderr and why in p.stderr, p.stderr
        e2e_util.no_artifact_left(tmp_path)


@pytest.mark.parametrize("ranks", [1, 3])
def test_job_of_another_size(llmc, stories, ranks):
    """A two-rank artifact on a job of one or three: every rank says so and
    exits non-zero."""
    _, _, _, _, tp2 = stories
    p = _mpirun(ranks, [llmc, "run", tp2, "--prompt", "Once", "--max-tokens", 5], timeout=60)
    assert p.returncode != 0
    assert p.stderr.count("is sharded over 2 ranks (mesh 2), but the job has %d" % ranks) == ranks, p.stderr


def test_rank_given_another_artifact(llmc, stories):
    """Two ranks, two artifacts of the same mesh (one with an f16 KV
    cache): both refuse before the first forward."""
    tmp, ckpt, tok, _, tp2 = stories
    other = _sharded(llmc, ckpt, tmp, "tp2-f16kv", 2, "--tokenizer", tok, "--kv-cache", "f16")
    e = dict(os.environ, LLMC_THREADS="1")
    run = lambda art: [llmc, "run", art, "--prompt", "Once", "--max-tokens", 5]
    p = subprocess.run(MPIRUN + ["-np", "1"] + list(map(str, run(tp2))) + [":", "-np", "1"]
                       + list(map(str, run(other))), capture_output=True, text=True,
                       timeout=60, env=e)
    assert p.returncode != 0
    assert p.stderr.count("the ranks do not agree on the artifact") == 2, p.stderr


def test_ranks_cut_the_prompt_alike(llmc, stories):
    """Two ranks told different micro-batches would make collectives of
    different sizes: the prompt's call checks first, an error on every rank
    and exit != 0, no hang."""
    tmp, ckpt, tok, _, _ = stories
    pp2 = tmp / "pp2"   # test_pipeline_stages's, else compiled here
    if not (pp2 / "metadata.json").exists():
        pp2 = _compile(llmc, ckpt, tmp / "pp2-cut", "--mesh", "2", "--tokenizer", tok)
    e = dict(os.environ, LLMC_THREADS="1")
    run = lambda mb: [llmc, "run", pp2, "--prompt", "Once upon a time", "--max-tokens", 5,
                      "--micro-batch", mb]
    p = subprocess.run(MPIRUN + ["-np", "1"] + list(map(str, run(2))) + [":", "-np", "1"]
                       + list(map(str, run(3))), capture_output=True, text=True,
                       timeout=60, env=e)
    assert p.returncode != 0
    assert p.stderr.count("the ranks do not agree on the micro-batch") == 2, p.stderr


@pytest.mark.parametrize("second", [["sleep", "60"], ["bash", "-c", "kill -9 $$"]],
                         ids=["never-starts", "dies"])
def test_missing_rank_ends_the_job(llmc, stories, second):
    """A rank that never joins (a process that is not llmc) or dies at once:
    the other ends with an error within the collective set-up's limit
    (LLMC_COLLECTIVE_TIMEOUT) or mpirun ends the job; no hang."""
    _, _, _, _, tp2 = stories
    e = dict(os.environ, LLMC_THREADS="1", LLMC_COLLECTIVE_TIMEOUT="3")
    cmd = (MPIRUN + ["-np", "1", str(llmc), "run", str(tp2), "--prompt", "Once",
                     "--max-tokens", "5", ":", "-np", "1"] + second)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=90, env=e)
    assert p.returncode != 0, p.stdout + p.stderr


def test_one_rank_error_ends_the_job(llmc, stories):
    """An error on rank 0 alone (its dump file cannot be written) after every
    rank opened the model: the job ends with an error, the other rank is not
    left waiting in its first collective."""
    _, _, _, _, tp2 = stories
    p = _mpirun(2, [llmc, "run", tp2, "--prompt", "Once", "--max-tokens", 5,
                    "--dump-logits", "/nonexistent-dir/x.npy"], timeout=60)
    assert p.returncode != 0
    assert "/nonexistent-dir" in p.stderr and "ending every rank" in p.stderr, p.stderr


def test_bench_sharded_alone(llmc, stories):
    """`llmc bench` of a sharded model reports from rank 0; a peer beside it
    is refused (every rank would run it on the cores rank 0 times)."""
    _, _, _, _, tp2 = stories
    p = _mpirun(2, [llmc, "bench", tp2, "-p", 16, "-n", 4, "-r", 1, "--vs", "none"])
    assert p.returncode == 0, e2e_util.describe(p)
    assert p.stdout.count("| tg4 |") == 1 and "weights.rank0.bin" in p.stdout
    q = _mpirun(2, [llmc, "bench", tp2, "-p", 16, "-n", 4, "--vs", "/bin/true"], timeout=60)
    assert q.returncode != 0 and "a sharded model is timed alone" in q.stderr, q.stderr


def test_gpu_target_refuses_a_mesh(llmc, tmp_path, model_file):
    """Sharded models run on CPU targets (MPI) in this version: a GPU target
    with --mesh is an error naming why, no artifact."""
    p = e2e_util.run([llmc, "compile", model_file("stories260K.bin"), "--mesh", "2",
                      "--target", "cuda:sm_90", "--tokenizer", "none", "-o", tmp_path / "ART"])
    assert p.returncode != 0
    assert "--mesh: sharded models run on CPU targets" in p.stderr, p.stderr
    e2e_util.no_artifact_left(tmp_path)
