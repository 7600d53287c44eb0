#!/bin/bash
# The CUDA check on a GPU machine (issue 11), run there from DEV (.dev: this
# script, llmc-run, torch_peer.py, the artifacts in art/ from prep.py and
# prep_bench.sh with TARGET cuda:sm_NN), writing $OUT/log and
# $OUT/logits.tar: the devices, stories260K's greedy ids against the CPU's
# (s260.ref), the tiny models' logits through graphs and (suffix -nog)
# without, then `llmc-run bench --roofline` of each bench-* artifact (weights
# of random bytes: a kernel's time does not depend on the values),
# --profile of prof-*, and PyTorch eager's f16 rows where torch has CUDA;
# between them nccl_probe.py (issue 12: NCCL, an MPI, two ranks on one GPU).
# MODELS, PROFILES, PP, TG, PPP, TGP, REPS, BENCH_TIMEOUT select.
cd "$(dirname "$0")"
exec > >(tee $OUT/log) 2>&1
for d in /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu /usr/lib64; do
  [ -e $d/libcuda.so.1 ] && { export LLMC_CUDA_DRIVER=$d/libcuda.so.1; break; }
done
# cuBLAS for the +cublas artifacts: the toolkit's, or PyTorch's wheel's.
for f in /usr/local/cuda/lib64/libcublas.so.1[23] \
    $(python3 -c 'import nvidia.cublas, os; print(os.path.dirname(nvidia.cublas.__file__))' \
      2>/dev/null)/lib/libcublas.so.1[23]; do
  [ -e "$f" ] && { export LLMC_CUBLAS=$f; break; }
done
echo "driver: ${LLMC_CUDA_DRIVER:-libcuda.so.1 on the library path}; cuBLAS: ${LLMC_CUBLAS:-on the library path}"; date
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv
R=./llmc-run
$R devices || exit 1
$R run art/s260 --prompt "Once upon a time" --max-tokens 100 --print-ids > /tmp/s260.ids
cmp /tmp/s260.ids s260.ref && echo "stories260K: 100 greedy tokens identical to the CPU target"
mkdir -p /tmp/lg
# prep.py's 45 prompt ids (a matrix tile of 32 tokens and a tail)
P=11,48,85,122,159,196,233,270,7,44,81,118,155,192,229,266,3,40,77,114,151,188,225,262,299,36,73,110,147,184,221,258,295,32,69,106,143,180,217,254,291,28,65,102,139
for a in art/tiny-*; do
  n=${a#art/tiny-}
  $R run $a --prompt-ids $P --max-tokens 12 --dump-prompt-logits /tmp/lg/$n-P.npy \
    --dump-logits /tmp/lg/$n-S.npy --print-ids > /tmp/lg/$n.ids || echo "tiny $n failed"
  LLMC_CUDA_GRAPHS=0 $R run $a --prompt-ids $P --max-tokens 12 \
    --dump-prompt-logits /tmp/lg/$n-nog-P.npy --dump-logits /tmp/lg/$n-nog-S.npy \
    --print-ids > /tmp/lg/$n-nog.ids || echo "tiny $n without graphs failed"
done
tar cf $OUT/logits.tar -C /tmp/lg .
date
echo "== NCCL (issue 12)"; timeout 150 python3 nccl_probe.py
date
python3 - <<'PY'
import json, os
for d in sorted(os.listdir("art")):
    size = lambda a: json.load(open("art/%s/metadata.json" % a))["weights"]["bytes"]
    base = d.rsplit("-", 1)[0]
    if d.startswith("bench-") and os.path.isdir("art/" + base) and size(base) == size(d):
        # An A/B variant (-nomma, -nosplit, -nopdl, -cublas) reads weights of its base's size.
        os.symlink(os.path.abspath("art/%s/weights.bin" % base), "art/%s/weights.bin" % d)
    elif d.startswith("bench-"):
        with open("art/%s/weights.bin" % d, "wb") as f:
            left = size(d)
            while left:
                n = min(left, 64 << 20)
                f.write(os.urandom(n))
                left -= n
    if d.startswith("prof-") and os.path.isdir("art/bench-" + d[5:]):
        os.symlink(os.path.abspath("art/bench-%s/weights.bin" % d[5:]), "art/%s/weights.bin" % d)
PY
date
for m in ${MODELS-qwen3-0.6b-f16 qwen3-0.6b-q4_0 qwen3-0.6b-q8_0 qwen3-0.6b-f16-cublas qwen3-0.6b-f16-nopdl qwen3-0.6b-f16-nosplit qwen3-0.6b-f16-nomma}; do
  echo "== $m"; timeout ${BENCH_TIMEOUT:-60} $R bench art/bench-$m -p ${PP:-512} -n ${TG:-128} -r ${REPS:-2} --vs none --roofline -t 1
done
for m in ${PROFILES-qwen3-0.6b-f16 qwen3-0.6b-q4_0}; do
  echo "== profile $m"; timeout ${BENCH_TIMEOUT:-60} $R bench art/prof-$m -r 1 --vs none --profile -t 1 -p ${PPP:-512} -n ${TGP:-128}
done
echo "== PyTorch eager"; timeout ${BENCH_TIMEOUT:-120} python3 torch_peer.py ${PP:-512} ${TG:-128} 3
date
