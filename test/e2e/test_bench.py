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
