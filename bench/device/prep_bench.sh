#!/bin/bash
# Compiles the bench artifacts of a GPU machine's check (bench/device/run.sh,
# run_cuda.sh for a cuda:sm_NN TARGET) for TARGET, the device's `llmc devices` description: DEV/art/bench-NAME
# (and DEV/art/prof-NAME, --profile) for each model of MODELS_DIR
# (bench/make_models.py's GGUFs), and bench-NAME-nostage, the same target
# with device=cpu (the only difference: the GPU schedule's staging of the
# prompt matmuls' activations in workgroup memory is off), for an A/B of
# that rule (MODELS="qwen3-0.6b-q4_0 qwen3-0.6b-q4_0-nostage ..." in
# run.sh), and bench-NAME-allbar, bench-NAME with every binding of its
# dispatch program marked written (the runtime then puts a barrier between
# almost every two launches, as before the hazard tracking): an A/B of the
# barriers; for CUDA, bench-NAME-nomma of an f16 model (`-mma`: the
# prompt's products without the tensor cores), bench-NAME-nosplit
# (`cores=1`: decode's attention a workgroup per KV head, unsplit) and
# bench-NAME-nopdl (`-pdl`: no programmatic dependent launch) and
# bench-NAME-cublas (`+cublas`: the prompt's products by cuBLAS). Only the kernels and metadata.json are kept (run.sh fills the
# weights with random bytes of the recorded size).
#
#   bench/device/prep_bench.sh TARGET [MODELS_DIR] [DEV]
set -euo pipefail
T=${1:?usage: prep_bench.sh TARGET [MODELS_DIR] [DEV]}
M=${2:-/tmp/bm}
DEV=${3:-$(cd "$(dirname "$0")/../.." && pwd)/.dev}
LLMC=${LLMC:-$(cd "$(dirname "$0")/../.." && pwd)/build/bin/llmc}
mkdir -p "$DEV/art"
for g in "$M"/*.gguf; do
  n=$(basename "$g" .gguf)
  case "$n" in *-f32) continue ;; esac
  variants=("bench-$n|$T|" "prof-$n|$T|--profile")
  # The Vulkan rules' A/B variants (staging, barriers); a CUDA graph has
  # neither.
  # The tensor cores' A/B on CUDA (f16: the prompt's products through WMMA
  # or not).
  case "$T" in
    cuda*) case "$n" in
        *-f16) variants+=("bench-$n-nomma|$T,-mma|" "bench-$n-nosplit|$T,cores=1|"
                          "bench-$n-nopdl|$T,-pdl|" "bench-$n-cublas|$T,+cublas|") ;;
      esac ;;
    *) variants+=("bench-$n-nostage|$T,device=cpu|") ;;
  esac
  for v in "${variants[@]}"; do
    IFS="|" read -r out target extra <<<"$v"
    rm -rf "$DEV/art/$out"
    "$LLMC" compile "$g" --target "$target" --tokenizer none $extra \
      -o "$DEV/art/$out" >/tmp/prep_bench.log 2>&1 || { cat /tmp/prep_bench.log; exit 1; }
    rm -f "$DEV/art/$out/weights.bin"
    echo "$out: $target $extra"
  done
  case "$T" in cuda*) continue ;; esac
  rm -rf "$DEV/art/bench-$n-allbar"
  cp -r "$DEV/art/bench-$n" "$DEV/art/bench-$n-allbar"
  python3 - "$DEV/art/bench-$n-allbar/metadata.json" <<'PY'
import json, sys
meta = json.load(open(sys.argv[1]))
for phase in meta["device"]["phases"].values():
    for launch in phase:
        for a in launch.get("args", []):
            if "buffer" in a:
                a["writes"] = True
json.dump(meta, open(sys.argv[1], "w"))
PY
  echo "bench-$n-allbar: every binding written"
done
