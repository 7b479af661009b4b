#!/usr/bin/env bash
# The sanitizer configuration: builds attn with AddressSanitizer and
# UndefinedBehaviorSanitizer (-DATTN_SANITIZE=ON) into build-sanitize/ and
# runs the whole lit suite on it. Any ASan or UBSan report aborts the
# process that made it, so it fails its test. Needs scripts/setup.sh first
# (packages). Ends with "attn sanitizer tests: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."

LLVM_BIN=/usr/lib/llvm-22/bin
cmake -G Ninja -S . -B build-sanitize \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER="$LLVM_BIN/clang" \
  -DCMAKE_CXX_COMPILER="$LLVM_BIN/clang++" \
  -DLLVM_USE_LINKER=lld \
  -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DLLVM_EXTERNAL_LIT="$LLVM_BIN/lit" \
  -DATTN_SANITIZE=ON > /dev/null || { echo "attn sanitizer tests: configure failed"; exit 1; }
cmake --build build-sanitize || { echo "attn sanitizer tests: build failed"; exit 1; }

# Leaks: LLVM's and MLIR's process-lifetime singletons are never freed and
# the tools exit without tearing their contexts down, so LeakSanitizer is
# off. User poisoning is off too: LLVM's BumpPtrAllocator poisons its slabs
# in code inlined into attn's instrumented objects, while libMLIR's
# uninstrumented copy hands out memory from them without unpoisoning it
# (false use-after-poison reports on MLIR's own attributes). Every other
# ASan check and all of UBSan stay on.
export ASAN_OPTIONS=detect_leaks=0:allow_user_poisoning=0:abort_on_error=1:symbolize=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
log=$(mktemp)
"$LLVM_BIN/lit" -sv --time-tests build-sanitize/test 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
passed=$(sed -n 's/^ *Passed *: *\([0-9]*\).*/\1/p' "$log" | tail -1)
failed=$(grep -cE '^(FAIL|XPASS|UNRESOLVED|TIMEOUT):' "$log")
reports=$(grep -cE 'ERROR: AddressSanitizer|runtime error:' "$log")
./scripts/failure-digest.sh "$log"
rm -f "$log"
echo "attn sanitizer tests: ${passed:-0} passed, ${failed} failed, ${reports} sanitizer reports"
exit "$status"
