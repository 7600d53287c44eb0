"""Helpers shared by the e2e tests (importable because pytest puts test/e2e on sys.path)."""
import json
import os
import re
import struct
import subprocess
import sys

import numpy as np

E2E_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.abspath(os.path.join(E2E_DIR, "..", ".."))
for sub in ("ref", "tools"):
    p = os.path.join(E2E_DIR, sub)
    if p not in sys.path:
        sys.path.insert(0, p)

TIMEOUT = int(os.environ.get("LLMC_TEST_TIMEOUT", "900"))


def bin_dir():
    return os.environ.get("LLMC_BIN_DIR") or os.path.join(REPO_ROOT, "build", "bin")


def models_dir():
    return os.environ.get("LLMC_MODELS_DIR") or os.path.join(REPO_ROOT, "..", "shared", "models")


def run(cmd, timeout=TIMEOUT, check=False, env=None):
    """Runs cmd (list), returns CompletedProcess with text stdout/stderr."""
    cmd = [str(c) for c in cmd]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                       env=env)
    p.stdout_bytes = p.stdout
    p.stdout = p.stdout.decode("utf-8", errors="replace")
    p.stderr = p.stderr.decode("utf-8", errors="replace")
    if check and p.returncode != 0:
        raise AssertionError(describe(p, "command failed"))
    return p


def describe(p, what=""):
    return "%s\n$ %s\nexit code %s\n--- stdout ---\n%s\n--- stderr ---\n%s" % (
        what, " ".join(p.args), p.returncode, p.stdout[-4000:], p.stderr[-4000:])


_IDS_LINE = re.compile(r"^[\s,\[\]]*-?\d+([\s,]+-?\d+)*[\s,\[\]]*$")


def parse_ids(stdout):
    """Token ids printed by `llmc run --print-ids`: every line that consists only of
    integers (separated by spaces or commas, optionally in brackets), concatenated."""
    ids = []
    for line in stdout.splitlines():
        if line.strip() and _IDS_LINE.match(line):
            ids.extend(int(x) for x in re.findall(r"-?\d+", line))
    return ids


def run_logits(llmc, art, prompt, steps, threads=2, extra=()):
    """Greedy `llmc run ART` from the prompt ids for `steps` tokens on
    `threads` threads. -> (CompletedProcess, prompt logits, step logits,
    generated ids)."""
    tag = "t%d" % threads
    pl, sl = os.path.join(str(art) + "." + tag + "-P.npy"), str(art) + "." + tag + "-S.npy"
    p = run([llmc, "run", art, "--prompt-ids", ",".join(map(str, prompt)),
             "--max-tokens", steps, "--dump-prompt-logits", pl, "--dump-logits", sl,
             "--print-ids", "--threads", threads] + list(extra))
    assert p.returncode == 0, describe(p, "llmc run failed")
    return p, np.load(pl), np.load(sl), parse_ids(p.stdout)


def check_threads(llmc, art, prompt, steps, got, exact_mode=True):
    """The same run on one thread gives the same logits as `got` (a
    run_logits result on two): bit for bit in llama.cpp mode (a parallel loop
    never splits a reduction there), within 1e-5 of max|logit| in exact
    mode."""
    _, P1, S1, ids1 = run_logits(llmc, art, prompt, steps, threads=1)
    _, P, S, ids = got
    assert ids1 == ids, "greedy ids differ between 1 and 2 threads: %s vs %s" % (ids1, ids)
    if exact_mode:
        scale = max(np.abs(P).max(), 1e-30)
        assert np.abs(P1 - P).max() <= 1e-5 * scale
        assert np.abs(S1 - S).max() <= 1e-5 * scale
    else:
        np.testing.assert_array_equal(P1, P)
        np.testing.assert_array_equal(S1, S)


def compile_and_run(llmc, model, tmp_path, prompt, steps, compile_args=()):
    """`llmc compile MODEL [compile_args]` into tmp_path/ART, then greedy
    `llmc run` from the prompt ids for `steps` tokens on two threads, checked
    against one (check_threads). -> (CompletedProcess, prompt logits, step
    logits, generated ids)."""
    art = tmp_path / "ART"
    p = run([llmc, "compile", model, "--target", "cpu", *compile_args, "-o", art])
    assert p.returncode == 0, describe(p, "llmc compile failed")
    got = run_logits(llmc, art, prompt, steps)
    check_threads(llmc, art, prompt, steps, got)
    return got


def deterministic_prompt_ids(n=32, vocab=300):
    return [(i * 37 + 11) % vocab for i in range(n)]


def no_artifact_left(tmp_path, name="ART"):
    """Names of entries in tmp_path that look like an (temporary) output dir."""
    return sorted(e for e in os.listdir(tmp_path) if name in e)


# ---- safetensors surgery for the bad-input tests ----------------------------------

def read_raw(path):
    with open(path, "rb") as f:
        data = f.read()
    n, = struct.unpack_from("<Q", data, 0)
    return json.loads(data[8:8 + n]), data[8 + n:]


def write_raw(path, header, body, pad=True):
    hb = json.dumps(header).encode()
    if pad:
        hb += b" " * (-len(hb) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)) + hb + body)


def compile_for(llmc, model, out, target, extra=()):
    """`llmc compile MODEL --target TARGET [EXTRA] -o OUT`, which must succeed. -> out"""
    p = run([llmc, "compile", model, "--target", target, *extra, "-o", out])
    assert p.returncode == 0, describe(p, "llmc compile --target %s failed" % target)
    return out


def float_gguf(tmp_path, arch, tied, dtype, seed=5):
    """A random tiny checkpoint (tmp_path/hf) written as an F32 or F16 GGUF
    (`dtype`) at tmp_path/model.gguf. -> (hf dir, gguf path)"""
    import gguf_writer
    import make_hf_model
    hf = tmp_path / "hf"
    make_hf_model.make_model(str(hf), arch=arch, tied=tied, dtype=dtype, seed=seed)
    gguf = tmp_path / "model.gguf"
    gguf_writer.hf_to_gguf(str(hf), str(gguf),
                           gguf_writer.GGML_F16 if dtype == "f16" else gguf_writer.GGML_F32)
    return hf, gguf


def quantized_gguf(tmp_path, arch, tied, qtype, dequantized_dir=None):
    """A random tiny checkpoint (tmp_path/hf) written as a GGUF of `qtype`
    (q8_0, q4_0, q4_k, q6_k) at tmp_path/model.gguf; K-quant rows are 256
    long, so those use make_gguf_model's 256-wide model. With
    `dequantized_dir`, the exactly dequantized weights go there too (a
    PyTorch reference). -> (hf dir, gguf path)"""
    import subprocess
    import sys
    sys.path.insert(0, os.path.join(E2E_DIR, "tools"))
    import gguf_writer
    import make_hf_model
    hf = tmp_path / "hf"
    if qtype in ("q6_k", "q4_k"):
        subprocess.check_call([sys.executable, os.path.join(E2E_DIR, "tools",
                                                            "make_gguf_model.py"),
                               "--arch", arch, "--type", "f32", "--tied" if tied else "--untied",
                               "--seed", "9", "--out", str(tmp_path / "f32.gguf"),
                               "--hf-out", str(hf)], stdout=subprocess.DEVNULL)
    else:
        make_hf_model.make_model(str(hf), arch=arch, tied=tied, dtype="f32", seed=9)
    gguf = tmp_path / "model.gguf"
    gtype = {"q8_0": gguf_writer.GGML_Q8_0, "q4_0": gguf_writer.GGML_Q4_0,
             "q6_k": gguf_writer.GGML_Q6_K, "q4_k": gguf_writer.GGML_Q4_K}[qtype]
    gguf_writer.hf_to_gguf(str(hf), str(gguf), gtype,
                           **({"dequantized_dir": str(dequantized_dir)} if dequantized_dir else {}))
    return hf, gguf
