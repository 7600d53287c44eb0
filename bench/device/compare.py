#!/usr/bin/env python3
"""Compares the device's logits (the logits.tar bench/device/run.sh or
run_cuda.sh leaves in $OUT) with the CPU references prep.py wrote: greedy ids identical, the largest
logit difference over the largest logit.

  bench/device/compare.py LOGITS.tar [REF]
"""
import json, sys, tarfile, io, numpy as np
REF = sys.argv[2] if len(sys.argv) > 2 else "/tmp/llmc-device-ref"
ref = json.load(open(REF + "/ref.json"))
t = tarfile.open(sys.argv[1])
get = lambda n: t.extractfile("./" + n).read()
names = set(t.getnames())
for name, ids in ref["ref"].items():
    # "-nog": run_cuda.sh's second run, without CUDA graphs.
    for run in ("", "-nog"):
        if "./%s%s.ids" % (name, run) not in names:
            continue
        got = [int(x) for x in get(name + run + ".ids").split()]
        worst = 0
        for k in "PS":
            a = np.load(io.BytesIO(get("%s%s-%s.npy" % (name, run, k))))
            b = np.load("%s/%s-%s.npy" % (REF, name, k))
            worst = max(worst, np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))
        print("%-16s ids %s, max |logit diff| / max|logit| = %.2e" % (
            name + run, "identical" if got == ids else "DIFFER %s vs %s" % (got, ids), worst))
