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
rm -f "$log"
echo "attn tests: ${passed:-0} passed, ${failed} failed"
exit "$status"
