#!/bin/sh
# The rows of docs/performance.md: `llmc bench` against llama.cpp's
# llama-bench on the same GGUF files, alternating run by run.
#
#   bench/side_by_side.sh MODELS_DIR LLAMA_BENCH [EXTRA llmc bench ARGS...]
#
# MODELS_DIR holds bench/make_models.py's files (llama-110m-{f32,q8_0,q4_k_m},
# qwen3-0.6b-q8_0); LLAMA_BENCH is a llama-bench (llama.cpp or ik_llama.cpp).
# Defaults: -p 512 -n 128 -t 1,2 -r 3, the peer at the better of -fa 0 and
# -fa 1; EXTRA (e.g. -p 64 -n 16) is passed to every llmc bench. f32 runs
# in the exact mode, the quantized models in the llama.cpp mode
# (docs/numerics.md).
# Set LLMC to the llmc binary (default: build/bin/llmc of this tree), ROWS to
# a subset ("llama-110m-q8_0 qwen3-0.6b-q8_0"), PEER2 to a second
# llama-bench (ik_llama.cpp's) for a column of its own.
set -eu
[ $# -ge 2 ] || { sed -n '2,15p' "$0"; exit 2; }
MODELS=$1 PEER=$2
shift 2
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LLMC=${LLMC:-$ROOT/build/bin/llmc}
ROWS=${ROWS:-"llama-110m-f32 llama-110m-q8_0 llama-110m-q4_k_m qwen3-0.6b-q8_0"}
for row in $ROWS; do
  case $row in
    *-f32|*-f16|*-bf16) mode=exact ;;
    *) mode=llama.cpp ;;
  esac
  echo "== $row ($mode)"
  "$LLMC" bench "$MODELS/$row.gguf" --act-quant "$mode" -p 512 -n 128 -t 1,2 -r 3 \
    --peer-args "-fa 0,1" \
    --vs "$PEER" ${PEER2:+--vs "$PEER2"} "$@"
done
