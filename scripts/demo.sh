#!/usr/bin/env bash
# The demo: set up, build, compile a model for this CPU and generate text.
#   scripts/demo.sh [MODEL] [PROMPT]     (or LLMC_MODEL=... scripts/demo.sh)
# Default model: ../shared/models/stories260K.bin with tok512.bin; without it,
# a small deterministic synthetic Llama with random weights.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh"

MODELS="${LLMC_MODELS_DIR:-$ROOT/../shared/models}"
MODEL="${1:-${LLMC_MODEL:-$MODELS/stories260K.bin}}"
PROMPT="${2:-Once upon a time}"
TOKENIZER="${LLMC_TOKENIZER:-}"
WORK="$ROOT/build/demo"
mkdir -p "$WORK"

if [ ! -e "$MODEL" ]; then
  echo "demo: $MODEL not found; using a synthetic Llama whose weights are RANDOM (its text is noise)"
  /usr/bin/python3 "$ROOT/scripts/make_synthetic_model.py" --out "$WORK/synthetic"
  MODEL="$WORK/synthetic/model.bin"
  TOKENIZER="$WORK/synthetic/tokenizer.bin"
elif [ -z "$TOKENIZER" ] && [ "$(basename "$MODEL")" = stories260K.bin ] && [ -f "$MODELS/tok512.bin" ]; then
  TOKENIZER="$MODELS/tok512.bin"
fi

ARGS=()
[ -n "$TOKENIZER" ] && ARGS+=(--tokenizer "$TOKENIZER")
echo "demo: compiling $MODEL for the host CPU"
"$ROOT/build/bin/llmc" compile "$MODEL" "${ARGS[@]}" --target cpu -o "$WORK/artifact"
echo "demo: prompt: $PROMPT"
echo "----"
"$ROOT/build/bin/llmc" run "$WORK/artifact" --prompt "$PROMPT" --max-tokens 200 --verbose
echo
echo "----"
"$ROOT/build/bin/llmc" bench "$WORK/artifact"
