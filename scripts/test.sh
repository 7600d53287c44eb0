#!/usr/bin/env bash
# Sets up and builds like demo.sh, then runs every test suite: lit (FileCheck),
# the runtime's C++ unit tests (ctest), the Python API tests and the Python
# end-to-end tests (pytest, against PyTorch and numpy oracles), then a short
# fuzzing run of the model-file readers. Ends with "N passed, N failed".
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh" || { echo "0 passed, 1 failed"; exit 1; }

REPORTS="$ROOT/build/test-reports"
rm -rf "$REPORTS" && mkdir -p "$REPORTS"
status=0

echo "== lit"
/usr/lib/llvm-22/bin/lit -sv "$ROOT/build/test" --xunit-xml-output "$REPORTS/lit.xml" || status=1

echo "== ctest (runtime unit tests)"
ctest --test-dir "$ROOT/build" --output-on-failure --output-junit "$REPORTS/ctest.xml" || status=1

# pytest exits 5 when it collected nothing: that is a failure here too.
echo "== pytest (Python API)"
(cd "$ROOT/test/python" && LLMC_REQUIRE_VULKAN=1 /usr/bin/python3 -m pytest -q \
  --junitxml="$REPORTS/pytest-python.xml" .) || status=1

# The npm oracles: llama.cpp (node-llama-cpp's prebuilt CPU build) and
# Qwen3's Hugging Face tokenizer, pinned by test/oracles/package-lock.json.
echo "== oracles (npm)"
if ! command -v npm >/dev/null; then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm >/dev/null
fi
ORACLES="$ROOT/test/oracles"
if [ ! -f "$ORACLES/node_modules/.package-lock.json" ] ||
   [ "$ORACLES/package-lock.json" -nt "$ORACLES/node_modules/.package-lock.json" ]; then
  # `npm install` with the committed lock (in sync, so left unchanged);
  # `npm ci` would insist on lock entries for every platform's optional
  # prebuilt binaries, which the registry mirror does not carry.
  (cd "$ORACLES" && npm install --omit=optional --no-audit --no-fund) || status=1
fi

echo "== pytest (end-to-end)"
# Vulkan runs on Mesa's lavapipe, which setup installs: its tests must not skip.
(cd "$ROOT/test/e2e" && LLMC_REQUIRE_BIN=1 LLMC_REQUIRE_ORACLES=1 LLMC_REQUIRE_VULKAN=1 /usr/bin/python3 -m pytest -q \
  --junitxml="$REPORTS/pytest-e2e.xml" .) || status=1

echo "== fuzzers (GGUF, safetensors and tokenizer readers, ${LLMC_FUZZ_SECONDS:-20} s each)"
CORPUS="$ROOT/build/fuzz-corpus"
rm -rf "$CORPUS" && /usr/bin/python3 "$ROOT/fuzz/make_corpus.py" "$CORPUS"
{
  echo '<testsuite name="fuzz">'
  for f in gguf safetensors tokenizer; do
    if [ ! -x "$ROOT/build/bin/$f-fuzzer" ]; then
      echo "  <testcase name=\"$f-fuzzer\"><skipped/></testcase>"
    elif "$ROOT/build/bin/$f-fuzzer" -max_total_time="${LLMC_FUZZ_SECONDS:-20}" \
        -rss_limit_mb=2048 -artifact_prefix="$REPORTS/$f-" "$CORPUS/$f" \
        >"$REPORTS/$f-fuzz.log" 2>&1; then
      echo "  <testcase name=\"$f-fuzzer\"/>"
    else
      echo "  <testcase name=\"$f-fuzzer\"><failure>see $f-fuzz.log</failure></testcase>"
      tail -30 "$REPORTS/$f-fuzz.log" >&2
      status=1
    fi
  done
  echo '</testsuite>'
} >"$REPORTS/fuzz.xml"

/usr/bin/python3 - "$REPORTS" <<'PY'
import sys, glob, xml.etree.ElementTree as ET
passed = failed = skipped = 0
for path in glob.glob(sys.argv[1] + "/*.xml"):
    for case in ET.parse(path).getroot().iter("testcase"):
        kinds = {child.tag for child in case}
        if kinds & {"failure", "error"}:
            failed += 1
        elif "skipped" in kinds:
            skipped += 1
        else:
            passed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
exit $status
