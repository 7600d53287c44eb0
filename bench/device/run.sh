#!/bin/bash
# The GPU machine's check (docs/performance.md, Issue 10 steps 2-3), run
# there from DEV (.dev: this script, llmc-run, libvulkan.so.1, glvnd's
# libraries in gl/, the artifacts in art/ from prep.py), writing $OUT/log and
# $OUT/logits.tar: the devices, stories260K's greedy ids against the CPU's
# (s260.ref), the tiny models' logits, then `llmc-run bench` of each
# bench-* artifact (weights.bin filled with random bytes of its size: a
# kernel's time does not depend on the values) and --profile of prof-*.
# MODELS, PROFILES, PP, TG, PPP, TGP, REPS, BENCH_TIMEOUT select.
cd "$(dirname "$0")"
exec > >(tee $OUT/log) 2>&1
export LLMC_VULKAN_LOADER=$PWD/libvulkan.so.1
for f in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json; do [ -f $f ] && { export VK_DRIVER_FILES=$f; break; }; done
echo "ICD: ${VK_DRIVER_FILES:-none}"; date
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv
R=./llmc-run
# The NVIDIA ICD (libGLX_nvidia) needs glvnd's libraries, which the image may lack.
export LD_LIBRARY_PATH=$PWD/gl${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if ! $R devices; then cat $VK_DRIVER_FILES; VK_LOADER_DEBUG=error,warn,driver $R devices 2>&1 | tail -20; ldd /usr/local/nvidia/lib64/libGLX_nvidia.so.0 | grep -i "not found"; ls -la /usr/local/nvidia/share/vulkan/icd.d /etc/vulkan/icd.d /usr/share/vulkan/icd.d /usr/local/nvidia/lib* 2>&1 | head -40; exit 1; fi
$R run art/s260 --prompt "Once upon a time" --max-tokens 100 --print-ids > /tmp/s260.ids
cmp /tmp/s260.ids s260.ref && echo "stories260K: 100 greedy tokens identical to the CPU target"
mkdir -p /tmp/lg
for a in art/tiny-*; do n=${a#art/tiny-}; $R run $a --prompt-ids 11,48,85,122,159,196,233,270,7,44,81,118,155,192,229,266,3,40,77,114,151,188,225,262,299,36,73,110,147,184,221,258 --max-tokens 12 --dump-prompt-logits /tmp/lg/$n-P.npy --dump-logits /tmp/lg/$n-S.npy --print-ids > /tmp/lg/$n.ids || echo "tiny $n failed"; done
tar cf $OUT/logits.tar -C /tmp/lg .
date
# Weights of each artifact's size: random bytes (a kernel's time does not depend on them).
python3 - <<'PY'
import json, os, numpy as np
rng = np.random.default_rng(1)
for d in sorted(os.listdir("art")):
    base = d.rsplit("-", 1)[0]
    size = lambda a: json.load(open("art/%s/metadata.json" % a))["weights"]["bytes"]
    if d.startswith("bench-") and os.path.isdir("art/" + base) and size(base) == size(d):
        # An A/B variant (-nostage, -allbar, ...) reads weights of its base's size.
        os.symlink(os.path.abspath("art/%s/weights.bin" % base), "art/%s/weights.bin" % d)
    elif d.startswith("bench-"):
        rng.integers(0, 256, size(d), dtype=np.uint8).tofile("art/%s/weights.bin" % d)
    if d.startswith("prof-"):
        os.symlink(os.path.abspath("art/bench-%s/weights.bin" % d[5:]), "art/%s/weights.bin" % d)
PY
date
for m in ${MODELS-qwen3-0.6b-q4_0 qwen3-0.6b-f16 llama-110m-f16 llama-110m-q4_0 qwen3-0.6b-q8_0 llama-110m-q8_0}; do
  echo "== $m"; timeout ${BENCH_TIMEOUT:-45} $R bench art/bench-$m -p ${PP:-512} -n ${TG:-128} -r ${REPS:-2} --vs none --roofline -t 1
done
for m in ${PROFILES-qwen3-0.6b-q4_0 qwen3-0.6b-f16}; do
  echo "== profile $m"; timeout ${BENCH_TIMEOUT:-45} $R bench art/prof-$m -r 1 --vs none --profile -t 1 -p ${PPP:-512} -n ${TGP:-128}
done
date
