#!/usr/bin/env bash
# Runs the whole attn test suite (lit tests, which include the C++ unit
# tests) and ends with a one-line summary. Needs scripts/setup.sh first.
set -uo pipefail
cd "$(dirname "$0")/.."

cmake --build build || { echo "attn tests: build failed"; exit 1; }
log=$(mktemp)
/usr/lib/llvm-22/bin/lit -sv build/test 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
passed=$(sed -n 's/^ *Passed *: *\([0-9]*\).*/\1/p' "$log" | tail -1)
failed=$(grep -cE '^(FAIL|XPASS|UNRESOLVED|TIMEOUT):' "$log")
./scripts/failure-digest.sh "$log"
rm -f "$log"
echo "attn tests: ${passed:-0} passed, ${failed} failed"

# The Python package's tests (pytest; python/tests), against PyTorch.
pylog=$(mktemp)
if [ -x .venv/bin/python ]; then
  .venv/bin/python -m pytest python/tests -q -p no:cacheprovider 2>&1 | tee "$pylog"
  pystatus=${PIPESTATUS[0]}
else
  echo "python tests: .venv/bin/python not found (run scripts/setup.sh)"
  pystatus=1
fi
pypassed=$(grep -oE '[0-9]+ passed' "$pylog" | tail -1 | cut -d' ' -f1)
pyfailed=$(grep -oE '[0-9]+ (failed|errors?)' "$pylog" | awk '{n += $1} END {print n + 0}')
rm -f "$pylog"
if [ "$pystatus" -ne 0 ] && [ "$pyfailed" -eq 0 ]; then pyfailed=1; fi
echo "attn tests: ${passed:-0} passed, ${failed} failed"
echo "attn python tests: ${pypassed:-0} passed, ${pyfailed} failed"
if [ "$status" -ne 0 ]; then exit "$status"; fi
exit "$pystatus"
