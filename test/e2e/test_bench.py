"""`llmc bench`: llama-bench's pp/tg tests on an artifact or a model file, with
llama.cpp beside it (here the npm build the oracles use), and its errors."""
import os
import re

import e2e_util
import make_gguf_model

ROW = re.compile(r"^\| (\d+) \| (pp|tg)(\d+) \| ([\d.]+) \(([\d.]+)-([\d.]+)\) \|(.*)$", re.M)


def rows(out):
    return [(int(t), kind, int(n), float(med), float(lo), float(hi), rest)
            for t, kind, n, med, lo, hi, rest in ROW.findall(out)]


def tiny_gguf(tmp_path, mtype="q8_0"):
    gguf = tmp_path / "m.gguf"
    make_gguf_model.make_model(str(gguf), arch="llama", mtype=mtype, tied=False, seed=5)
    return gguf


def test_bench_artifact_table(llmc, tmp_path):
    gguf = tiny_gguf(tmp_path)
    art = tmp_path / "art"
    e2e_util.run([llmc, "compile", gguf, "-o", art], check=True)
    out = e2e_util.run([llmc, "bench", art, "-p", "8", "-n", "4", "-t", "1,2", "-r", "2"],
                       check=True).stdout
    got = rows(out)
    assert [(t, k, n) for t, k, n, *_ in got] == [(1, "pp", 8), (1, "tg", 4), (2, "pp", 8), (2, "tg", 4)], out
    for t, k, n, med, lo, hi, rest in got:
        assert 0 < lo <= med <= hi and rest == "", out   # no peer column for an artifact
    assert "median of 2" in out and "memory: weights.bin" in out, out
    assert "prompts in calls of" not in out, out
    # -ub: the prompt in calls of 3 tokens, said in the header.
    out = e2e_util.run([llmc, "bench", art, "-p", "8", "-n", "0", "-r", "1", "-ub", "3"],
                       check=True).stdout
    assert "prompts in calls of 3 tokens" in out and len(rows(out)) == 1, out


def test_bench_model_file_vs_llama_cpp(llmc, tmp_path, llama_cpp):
    gguf = tiny_gguf(tmp_path)
    env = dict(os.environ, LLMC_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("LLAMA_BENCH", None)
    p = e2e_util.run([llmc, "bench", gguf, "--act-quant", "llama.cpp", "-p", "16", "-n", "8",
                      "-t", "1", "-r", "1", "--vs", "npm"], check=True, env=env)
    got = rows(p.stdout)
    assert [(t, k, n) for t, k, n, *_ in got] == [(1, "pp", 16), (1, "tg", 8)], p.stdout
    for *_, rest in got:
        peer = re.fullmatch(r" ([\d.]+) \(([\d.]+)-([\d.]+)\) \| ([\d.]+) \|", rest)
        assert peer and float(peer.group(1)) > 0 and float(peer.group(4)) > 0, p.stdout
    assert "vs  llama.cpp (npm)" in p.stdout and "compiling" in p.stderr
    assert len(os.listdir(tmp_path / "cache")) == 1


def test_bench_two_peers(llmc, tmp_path, llama_cpp):
    """--vs twice (llama.cpp and ik_llama.cpp in docs/performance.md): each
    peer in its own column with its own ratio, run in turn after llmc."""
    gguf = tiny_gguf(tmp_path)
    env = dict(os.environ, LLMC_CACHE_DIR=str(tmp_path / "cache"))
    p = e2e_util.run([llmc, "bench", gguf, "-p", "8", "-n", "4", "-t", "1", "-r", "1",
                      "--vs", "npm", "--vs", "npm"], check=True, env=env)
    assert "| peer 1 | llmc / peer 1 | peer 2 | llmc / peer 2 |" in p.stdout, p.stdout
    got = rows(p.stdout)
    assert [(t, k, n) for t, k, n, *_ in got] == [(1, "pp", 8), (1, "tg", 4)], p.stdout
    for *_, rest in got:
        cell = r" ([\d.]+) \(([\d.]+)-([\d.]+)\) \| ([\d.]+) \|"
        peers = re.fullmatch(cell + cell, rest)
        assert peers and all(float(peers.group(i)) > 0 for i in (1, 4, 5, 8)), p.stdout
    assert "vs  llama.cpp (npm)  and  llama.cpp (npm)" in p.stdout


def test_bench_defaults_shrink_to_context(llmc, tmp_path):
    gguf = tiny_gguf(tmp_path)
    art = tmp_path / "art"
    e2e_util.run([llmc, "compile", gguf, "-o", art], check=True)
    out = e2e_util.run([llmc, "bench", art, "-r", "1", "-t", "1"], check=True).stdout
    lens = {k: n for _, k, n, *_ in rows(out)}
    ctx = make_gguf_model.CTX
    assert 128 < ctx < 512
    assert lens == {"pp": ctx, "tg": 128}, out   # -p 512 shrinks to the context, -n 128 fits


def test_bench_errors(llmc, tmp_path):
    gguf = tiny_gguf(tmp_path)
    art = tmp_path / "art"
    e2e_util.run([llmc, "compile", gguf, "-o", art], check=True)
    env = dict(os.environ, LLMC_CACHE_DIR=str(tmp_path / "cache"))
    cases = [
        ([art, "-p", "100000"], "-p: 100000 tokens exceed the model's max_seq_len"),
        ([art, "-p", "0", "-n", "0"], "nothing to time"),
        ([art, "-t", "1,0"], "-t"),
        ([art, "--vs", "npm"], "needs the model file"),
        ([gguf, "-p", "4", "-n", "2", "--vs", str(tmp_path / "no-llama-bench")],
         "--vs: not an executable llama-bench"),
        ([art, "--bogus"], "unknown option"),
        ([art, "-ub", "-2"], "-ub"),
        ([gguf, "-p", "4", "-n", "2", "--vs", "none", "--vs", "npm"],
         "--vs: none cannot be given with other peers"),
    ]
    for args, msg in cases:
        p = e2e_util.run([llmc, "bench", *args], env=env)
        assert p.returncode != 0 and msg in p.stderr, (args, p.stderr)


def test_bench_roofline(llmc, tmp_path):
    """--roofline: the bytes a decode step reads (metadata's
    weights.decode_read_bytes: all of weights.bin but the untied embedding
    table, of which one row; plus the KV cache attended) against the read
    bandwidth measured at each thread count."""
    import json
    gguf = tiny_gguf(tmp_path)
    art = tmp_path / "art"
    e2e_util.run([llmc, "compile", gguf, "-o", art], check=True)
    meta = json.loads((art / "metadata.json").read_text())
    table = [p for p in meta["params"] if p["name"] == "model.embed_tokens.weight"][0]
    row = table["bytes"] // table["shape"][0]
    assert meta["weights"]["decode_read_bytes"] == \
        sum(p["bytes"] for p in meta["params"]) - table["bytes"] + row
    out = e2e_util.run([llmc, "bench", art, "-p", "0", "-n", "4", "-t", "1,2", "-r", "1",
                        "--roofline"], check=True).stdout
    mb = re.search(r"roofline \(decode\): ([\d.]+) MB per token \(weights ([\d.]+) MB", out)
    assert mb and abs(float(mb.group(2)) - meta["weights"]["decode_read_bytes"] / 1e6) < 0.06, out
    lines = re.findall(r"^\| (\d) \| ([\d.]+) \| ([\d.]+) \| (\d+) % \|$", out, re.M)
    assert [int(t) for t, *_ in lines] == [1, 2], out
    for _, bw, got, pct in lines:
        assert float(bw) > 0.1 and float(got) > 0, out
        assert abs(int(pct) - 100 * float(got) / float(bw)) <= 1, out
    # An artifact from before the field says so instead of a figure.
    meta["weights"].pop("decode_read_bytes")
    (art / "metadata.json").write_text(json.dumps(meta))
    out = e2e_util.run([llmc, "bench", art, "-p", "0", "-n", "2", "-t", "1", "-r", "1",
                        "--roofline"], check=True).stdout
    assert "roofline: this artifact does not record what decode reads (compile it again)" \
        in out, out
    # A tied table is read whole by the head: nothing is left out.
    tied = tmp_path / "tied.gguf"
    make_gguf_model.make_model(str(tied), arch="llama", mtype="q8_0", tied=True, seed=5)
    e2e_util.run([llmc, "compile", tied, "-o", tmp_path / "tart"], check=True)
    tmeta = json.loads((tmp_path / "tart" / "metadata.json").read_text())
    assert tmeta["weights"]["decode_read_bytes"] == sum(p["bytes"] for p in tmeta["params"])


def test_bench_roofline_prefill(llmc, tmp_path):
    """--roofline with a prompt: the artifact's arithmetic (metadata's compute:
    2 x the matmul weights' elements per token, those after graph.last_rows
    -- the output matmul and the last layer's row-local tail -- per row of
    logits, q.k and p.V per query and attended position) for one ppN call
    against the f32 FMA peak measured at each thread count."""
    import json
    gguf = tiny_gguf(tmp_path)
    art = tmp_path / "art"
    e2e_util.run([llmc, "compile", gguf, "-o", art], check=True)
    meta = json.loads((art / "metadata.json").read_text())
    m = meta["model"]
    dim, hidden, hd = m["dim"], m["hidden_dim"], m["head_dim"]
    per_layer = dim * hd * (2 * m["n_heads"] + 2 * m["n_kv_heads"]) + 3 * dim * hidden
    c = meta["compute"]
    assert c["token_flops"] + c["row_flops"] == \
        2 * m["n_layers"] * per_layer + 2 * m["vocab_size"] * dim
    assert 2 * m["vocab_size"] * dim < c["row_flops"] < 2 * m["vocab_size"] * dim + \
        2 * per_layer
    assert c["pair_flops"] == 4 * m["n_layers"] * m["n_heads"] * hd
    n = 16
    out = e2e_util.run([llmc, "bench", art, "-p", str(n), "-n", "0", "-t", "1,2", "-r", "1",
                        "--roofline"], check=True).stdout
    gflop = (n * c["token_flops"] + c["row_flops"] + n * (n + 1) // 2 * c["pair_flops"]) / 1e9
    got = re.search(r"roofline \(prefill\): ([\d.]+) GFLOP per pp16", out)
    assert got and abs(float(got.group(1)) - gflop) < 0.06, out
    lines = re.findall(r"^\| (\d) \| ([\d.]+) \| ([\d.]+) \| (\d+) % \|$", out, re.M)
    assert [int(t) for t, *_ in lines] == [1, 2], out
    for _, peak, achieved, pct in lines:
        assert float(peak) > 1 and float(achieved) > 0, out
        assert abs(int(pct) - 100 * float(achieved) / float(peak)) <= 1, out
    # An artifact from before the field says so instead of a figure.
    meta.pop("compute")
    (art / "metadata.json").write_text(json.dumps(meta))
    out = e2e_util.run([llmc, "bench", art, "-p", "4", "-n", "0", "-t", "1", "-r", "1",
                        "--roofline"], check=True).stdout
    assert "roofline: this artifact does not record its arithmetic (compile it again)" \
        in out, out


PROFILE = re.compile(r"^profile: (pp|tg)(\d+) at (\d+) threads?: ([\d.]+) ms in (\d+) kernels "
                     r"\((\d+) % of the run's ([\d.]+) ms\); the cost model predicts ([\d.]+) ms",
                     re.M)
KERNEL_ROW = re.compile(r"^\| (forward_(?:prefill|decode)\.[\w.]+)(?: \(inexact\))? \| (-?\d+) \| "
                        r"(-?[\d.]+) \| (-?[\d.]+) \| (-?[\d.]+) \| (-?[\d.]+) \| (memory|compute) \|",
                        re.M)


def test_bench_profile(llmc, tmp_path):
    """--profile: an artifact compiled with `llmc compile --profile` times
    every kernel call; bench prints each kernel's measured time beside the
    time the compiler's cost model predicts for its work (metadata's
    `kernels`). The counters do not change what the model computes."""
    import json
    import numpy as np
    gguf = tiny_gguf(tmp_path)
    art, plain = tmp_path / "art", tmp_path / "plain"
    e2e_util.run([llmc, "compile", gguf, "--profile", "-o", art], check=True)
    e2e_util.run([llmc, "compile", gguf, "-o", plain], check=True)
    meta = json.loads((art / "metadata.json").read_text())
    assert meta["profiled"] is True
    assert json.loads((plain / "metadata.json").read_text())["profiled"] is False
    phases = {k["phase"] for k in meta["kernels"]}
    assert phases == {"prefill", "decode"}, phases
    mm = [k for k in meta["kernels"] if k["name"] == "forward_decode.matmul"]
    assert mm and mm[0]["flops"] and mm[0]["bytes"], meta["kernels"]

    out = e2e_util.run([llmc, "bench", art, "-p", "16", "-n", "4", "-t", "1", "-r", "1",
                        "--profile"], check=True).stdout
    runs = PROFILE.findall(out)
    assert [(k, int(n)) for k, n, *_ in runs] == [("pp", 16), ("tg", 4)], out
    for _, _, threads, measured, count, _, wall, predicted in runs:
        assert int(threads) == 1 and int(count) > 3, out
        assert 0 < float(measured) <= float(wall) + 0.01 and float(predicted) > 0, out
    rows = KERNEL_ROW.findall(out)
    # Every kernel that ran has a row, up to 12 per run.
    assert len(rows) == sum(min(12, int(count)) for _, _, _, _, count, *_ in runs), out
    decode = [r for r in rows if r[0].startswith("forward_decode.")]
    assert decode and all(int(calls) % 4 == 0 for _, calls, *_ in decode), out
    for name, calls, ms, pct, pred, ratio, bound in rows:
        assert int(calls) > 0 and float(ms) >= 0 and float(pred) >= 0, out

    # Counters or not, the same logits.
    prompt = [1, 17, 33, 5, 9]
    _, P, S, ids = e2e_util.run_logits(llmc, art, prompt, 4, threads=1)
    _, P0, S0, ids0 = e2e_util.run_logits(llmc, plain, prompt, 4, threads=1)
    assert ids == ids0 and np.array_equal(P, P0) and np.array_equal(S, S0)

    # An artifact without the counters is refused, by name.
    p = e2e_util.run([llmc, "bench", plain, "-p", "4", "-n", "2", "--profile"])
    assert p.returncode != 0 and "--profile" in p.stderr and \
        "was compiled without --profile" in p.stderr, p.stderr
    # A model file is compiled with them (its own cache entry).
    env = dict(os.environ, LLMC_CACHE_DIR=str(tmp_path / "cache"))
    out = e2e_util.run([llmc, "bench", gguf, "-p", "8", "-n", "2", "-t", "1", "-r", "1",
                        "--vs", "none", "--profile"], check=True, env=env).stdout
    assert [(k, int(n)) for k, n, *_ in PROFILE.findall(out)] == [("pp", 8), ("tg", 2)], out


def test_tune(llmc, tmp_path):
    """`llmc tune`: compiles the model once per candidate of the schedule's
    tunable choices, times each kernel key's kernels on a prompt, and keeps
    the fastest per key in the tune cache, which `llmc compile` reads for
    the same target (and --tune none ignores)."""
    import json
    gguf = tiny_gguf(tmp_path, mtype="f32")
    cache = tmp_path / "tune.json"
    p = e2e_util.run([llmc, "tune", gguf, "-p", "8", "-n", "4", "-r", "1", "-t", "1", "-o", cache],
                     check=True)
    choice_re = r"r\d+c\d+(?:p\d+)?(?:t\d)?"
    cands = re.search(r"^\| key \|((?: %s \|)+) choice" % choice_re, p.stdout, re.M).group(1)
    cands = cands.strip(" |").split(" | ")
    assert cands[0] == "r2c2" and {"r0c2", "r2c2p0", "r2c2p16", "r2c2p0t1"} <= set(cands), cands
    table = re.findall(r"^\| (matmul\.(?:prefill|decode)\.[\w.]+) \|((?: [\d.]+ \|){%d}) "
                       r"(%s) \| ([\d.]+) \|$" % (len(cands), choice_re), p.stdout, re.M)
    # Keys of both phases: the prompt's products, and the decode steps'
    # weight streams; each picks among the choices of its own phase.
    assert {k.split(".")[1] for k, *_ in table} == {"prefill", "decode"}, p.stdout
    for key, _, choice, _ in table:
        if key.startswith("matmul.prefill."):
            assert re.fullmatch(r"r\d+c\d+", choice), (key, choice)
        else:
            assert choice.startswith("r2c2"), (key, choice)
    doc = json.loads(cache.read_text())
    assert doc["format"] == "llmc-tune" and doc["version"] == 1
    keys = {e["key"]: e for e in doc["entries"]}
    assert set(keys) == {k for k, *_ in table}
    for key, times, choice, ratio in table:
        ms = [float(t) for t in times.strip(" |").split(" | ")]
        # The choice's time, the rule (the first) its reference.
        chosen = ms[cands.index(choice)]
        assert keys[key]["choice"] == choice and abs(chosen - keys[key]["ms"]) < 0.01
        assert abs(ms[0] - keys[key]["default_ms"]) < 0.01
        # Another choice than the rule only when more than 3 % faster (the
        # cache's unrounded times; the table prints the ratio rounded).
        assert choice == "r2c2" or keys[key]["default_ms"] > 1.03 * keys[key]["ms"], (key, ratio)
        assert abs(float(ratio) - keys[key]["default_ms"] / keys[key]["ms"]) < 0.006
    # Compiling reads the choices for this target; the artifact's kernels
    # carry their keys.
    art = tmp_path / "art"
    p = e2e_util.run([llmc, "compile", gguf, "--tune", cache, "-o", art], check=True)
    assert "llmc: tuning   %d schedule choices for this target from %s" % (len(keys), cache) \
        in p.stderr, p.stderr
    meta = json.loads((art / "metadata.json").read_text())
    assert set(keys) <= {k.get("tune") for k in meta["kernels"]}
    p = e2e_util.run([llmc, "compile", gguf, "--tune", "none", "-o", tmp_path / "plain"],
                     check=True)
    assert "tuning" not in p.stderr
    # A cache for another target is not used.
    doc["entries"] = [dict(e, target="cpu:x86-64-v3") for e in doc["entries"]]
    other = tmp_path / "other.json"
    other.write_text(json.dumps(doc))
    p = e2e_util.run([llmc, "compile", gguf, "--tune", other, "-o", tmp_path / "o"], check=True)
    assert "tuning" not in p.stderr


def test_tune_errors(llmc, tmp_path):
    gguf = tiny_gguf(tmp_path, mtype="f32")
    bad = tmp_path / "bad.json"
    cases = [
        ("{", "not JSON"),
        ('{"format": "other", "version": 1, "entries": []}', "not an llmc tune cache"),
        ('{"format": "llmc-tune", "version": 2, "entries": []}', "unsupported version"),
        ('{"format": "llmc-tune", "version": 1, "entries": [{"target": "cpu", "key": "k"}]}',
         "field 'entries[0]' must be an object with strings target, key and choice"),
        ('{"format": "llmc-tune", "version": 1, "entries": '
         '[{"target": "cpu", "key": "k", "choice": "fast"}]}',
         "field 'entries[0].choice' is \"fast\", expected r<R>c<C>"),
    ]
    for text, msg in cases:
        bad.write_text(text)
        out = tmp_path / "out"
        p = e2e_util.run([llmc, "compile", gguf, "--tune", bad, "-o", out])
        assert p.returncode != 0 and str(bad) in p.stderr and msg in p.stderr, (text, p.stderr)
        assert not out.exists()
        # The tuner refuses to measure for a cache it could not update.
        p = e2e_util.run([llmc, "tune", gguf, "-p", "8", "-o", bad])
        assert p.returncode != 0 and msg in p.stderr, (text, p.stderr)
    p = e2e_util.run([llmc, "compile", gguf, "--tune", tmp_path / "none.json", "-o",
                      tmp_path / "out"])
    assert p.returncode != 0 and "--tune: " in p.stderr and "no such file" in p.stderr
    for args, msg in [([], "no model given"), ([gguf, "-p", "1"], "-p: expected a prompt length"),
                      ([gguf, "--act-quant", "x"], "--act-quant: expected exact or llama.cpp"),
                      ([gguf, "-n", "x"], "-n: expected a number of decode steps"),
                      ([gguf, "--bogus"], "unknown option")]:
        p = e2e_util.run([llmc, "tune", *args])
        assert p.returncode != 0 and msg in p.stderr, (args, p.stderr)
