#!/usr/bin/env python3
"""Benchmark: a schedule written in Python against the default schedule, on
the matmuls of a synthetic Llama (dim 512, FFN 1536, 2 layers, random
weights), measured side by side in one run.

The default lowering computes each output of x . W^T as one serial dot
product: a single floating-point dependency chain. The schedule splits the
output loop by 8, moves the reduction loop outside the 8 outputs and unrolls
them, giving 8 independent chains per reduction step (and one load of x for
8 products). Reductions keep their order, so the logits are bit-identical.

    PYTHONPATH=build/python /usr/bin/python3 bench/schedule_matmul.py
"""
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "build", "python"))
import numpy as np  # noqa: E402
import llmc  # noqa: E402


def matmul_blocks(sch):
    name, n = "matmul", 0
    while True:
        try:
            yield sch.get_block(name)
        except llmc.Error:
            return
        n += 1
        name = "matmul_%d" % n


def schedule(sch):
    for b in list(matmul_blocks(sch)):
        s, j, k = sch.get_loops(b)
        jo, ji = sch.split(j, [-1, 8])
        s, jo, k, ji = sch.reorder([s, jo, k, ji])
        sch.unroll(ji)


def best_of(fn, n=5):
    best = float("inf")
    for _ in range(n):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main():
    work = tempfile.mkdtemp(prefix="llmc-bench-")
    model = os.path.join(work, "model.bin")
    subprocess.check_call([sys.executable, os.path.join(ROOT, "test/e2e/tools/make_llama2c_model.py"),
                           "--out", model, "--dim", "512", "--hidden", "1536", "--layers", "2",
                           "--heads", "8", "--kv-heads", "8", "--vocab", "2048", "--seq-len", "256"])
    m = llmc.import_model(model)
    default = llmc.Runtime(llmc.compile(m, os.path.join(work, "default")))
    scheduled = llmc.Runtime(llmc.compile(m, os.path.join(work, "scheduled"), schedule=schedule))
    ids = list(range(1, 33))
    a, b = default.logits(ids), scheduled.logits(ids)
    assert np.array_equal(a, b), "the schedule changed the numbers"
    td = best_of(lambda: default.logits(ids))
    ts = best_of(lambda: scheduled.logits(ids))
    print("prefill of 32 tokens, best of 5:")
    print("  default schedule: %8.2f ms" % (td * 1e3))
    print("  Python schedule:  %8.2f ms" % (ts * 1e3))
    print("  speed-up: %.2fx (logits identical)" % (td / ts))


if __name__ == "__main__":
    main()
