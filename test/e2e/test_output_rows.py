"""`llmc compile` reports its phases, and the compiled entry computes only the
rows of logits its caller reads (graph-output-rows, llmc/abi.h's n_out):
generating from a prompt asks for its last row, scoring for every row, and
both give that row the same logits."""
import os
import re

import numpy as np

import e2e_util
import make_gguf_model

PHASES = ["import", "graph", "weights", "tl", "lowering", "codegen", "write"]


def compile_tiny(llmc, tmp_path, mtype, act_quant):
    gguf = tmp_path / ("m-%s.gguf" % mtype)
    make_gguf_model.make_model(str(gguf), arch="qwen3", mtype=mtype, tied=False, seed=11)
    art = tmp_path / ("art-%s" % mtype)
    p = e2e_util.run([llmc, "compile", gguf, "--act-quant", act_quant, "-o", art], check=True)
    return p, art


def test_compile_prints_phases(llmc, tmp_path):
    p, art = compile_tiny(llmc, tmp_path, "q8_0", "llama.cpp")
    phases = re.findall(r"^llmc: (\w+) +([\d.]+) s", p.stderr, re.M)
    assert [name for name, _ in phases] == PHASES, p.stderr
    assert all(float(s) >= 0 for _, s in phases), p.stderr
    weights = re.search(r"^llmc: weights .*\((\d+) bytes\)", p.stderr, re.M)
    assert weights and int(weights.group(1)) == os.path.getsize(art / "weights.bin"), p.stderr


def last_row_only_and_all_rows(llmc, art, prompt):
    # Without --dump-prompt-logits the prompt call computes its last row only;
    # the first step's logits are that row.
    step = str(art) + ".step.npy"
    e2e_util.run([llmc, "run", art, "--prompt-ids", ",".join(map(str, prompt)),
                  "--max-tokens", "1", "--dump-logits", step, "--threads", "2"], check=True)
    _, every, _, _ = e2e_util.run_logits(llmc, art, prompt, 1)
    return np.load(step)[0], every


def test_last_row_alone_equals_last_of_all_rows(llmc, tmp_path):
    prompt = [1, 5, 9, 14, 3, 27, 8, 2, 40, 11]
    for mtype, act_quant in [("f32", "exact"), ("q4_0", "llama.cpp")]:
        _, art = compile_tiny(llmc, tmp_path, mtype, act_quant)
        last, every = last_row_only_and_all_rows(llmc, art, prompt)
        assert every.shape[0] == len(prompt)
        scale = np.abs(every).max()
        diff = np.abs(last - every[-1]).max() / scale
        # llama.cpp mode fixes every rounding step: the row is the same bit
        # for bit; exact mode may sum a GEMM tile in another order.
        assert diff <= (0 if act_quant == "llama.cpp" else 1e-5), (mtype, diff)


def steps_of(llmc, art, prompt, steps, *extra):
    """Greedy ids and the steps' logits from the prompt, whose call computes
    its last row alone (no --dump-prompt-logits)."""
    out = str(art) + ".steps%s.npy" % "".join(map(str, extra)).replace("-", "_")
    p = e2e_util.run([llmc, "run", art, "--prompt-ids", ",".join(map(str, prompt)),
                      "--max-tokens", steps, "--dump-logits", out, "--print-ids",
                      "--threads", "2"] + list(extra), check=True)
    return e2e_util.parse_ids(p.stdout), np.load(out)


def test_prompt_in_micro_batches(llmc, tmp_path):
    """`--micro-batch N` runs the prompt in calls of N tokens: those before
    the last compute no logits (n_out = 0; a one-token call computes its row
    and drops it), the last its last row; every prompt row's logits come from
    the pieces they fall in. The same ids, and logits within 1e-5 of
    max|logit| of one call's in exact mode (one-token calls take decode's
    code, which may sum in another order), bit for bit in llama.cpp mode
    (q4_0: its rounding steps fixed, as the figures' runs)."""
    prompt = [1, 5, 9, 14, 3, 27, 8, 2, 40, 11]
    for mtype, act_quant in [("f32", "exact"), ("q4_0", "llama.cpp")]:
        _, art = compile_tiny(llmc, tmp_path, mtype, act_quant)
        ids, steps = steps_of(llmc, art, prompt, 6)
        _, every, _, _ = e2e_util.run_logits(llmc, art, prompt, 1)
        scale = np.abs(every).max()
        tol = 0 if act_quant == "llama.cpp" else 1e-5
        for mb in ["1", "3", "4", "9", "10", "64"]:
            got_ids, got = steps_of(llmc, art, prompt, 6, "--micro-batch", mb)
            assert got_ids == ids, (mtype, mb)
            assert np.abs(got - steps).max() <= tol * scale, (mtype, mb)
            _, rows, _, _ = e2e_util.run_logits(llmc, art, prompt, 1,
                                                extra=["--micro-batch", mb])
            assert rows.shape == every.shape
            assert np.abs(rows - every).max() <= tol * scale, (mtype, mb)
    p = e2e_util.run([llmc, "run", art, "--prompt-ids", "1,2", "--micro-batch", "-1"])
    assert p.returncode != 0 and "--micro-batch" in p.stderr, p.stderr
