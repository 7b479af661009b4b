#!/usr/bin/env bash
# Long fuzzing runs: every libFuzzer target (tools/fuzz) for RUNS inputs
# (default 1,000,000) in the sanitizer build (build-sanitize/, made by
# scripts/sanitize.sh or here), where all of attn has coverage
# instrumentation, ASan and UBSan. Corpora grow in fuzz-work/<target>/,
# seeded from test/fuzz/; crashes land in fuzz-work/ as crash-* files: turn
# each into a regression test (test/tools/hostile/) before fixing it.
#
#   scripts/fuzz.sh [RUNS] [TARGET ...]     TARGET: spec ir npy safetensors capi
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-1000000}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(spec npy safetensors capi ir)

LLVM_BIN=/usr/lib/llvm-22/bin
if [ ! -f build-sanitize/build.ninja ]; then
  cmake -G Ninja -S . -B build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER="$LLVM_BIN/clang" -DCMAKE_CXX_COMPILER="$LLVM_BIN/clang++" \
    -DLLVM_USE_LINKER=lld -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT="$LLVM_BIN/lit" -DATTN_SANITIZE=ON > /dev/null
fi
cmake --build build-sanitize --target attn-fuzz-spec attn-fuzz-ir \
  attn-fuzz-npy attn-fuzz-safetensors attn-fuzz-capi attn-compile attn-run || exit 1

export ASAN_OPTIONS=detect_leaks=0:allow_user_poisoning=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
mkdir -p fuzz-work
build-sanitize/bin/attn-compile test/e2e/Inputs/aot-spec.yaml --emit=so \
  -o fuzz-work/libaot.so || exit 1
# A decoder layer artifact with cross-attention for the stack calls.
build-sanitize/bin/attn-compile test/layers/Inputs/gelu_tanh_cross.yaml \
  --emit=so -o fuzz-work/libcross.so || exit 1
build-sanitize/bin/attn-run test/layers/Inputs/gelu_tanh_cross.yaml \
  --write-random-weights=fuzz-work/cross.st > /dev/null || exit 1
status=0
for target in "${targets[@]}"; do
  mkdir -p "fuzz-work/$target"
  cp -rn "test/fuzz/$target/." "fuzz-work/$target/"
  extra=()
  case $target in
    ir) extra=(-max_len=8192 -timeout=60) ;;
    safetensors) extra=(-max_len=16384) ;;
    capi) export ATTN_FUZZ_ARTIFACT=$PWD/fuzz-work/libaot.so ATTN_FUZZ_FUNCTION=aot_causal \
            ATTN_FUZZ_STACK=$PWD/fuzz-work/libcross.so ATTN_FUZZ_WEIGHTS=$PWD/fuzz-work/cross.st ;;
  esac
  start=$(date +%s)
  "build-sanitize/bin/attn-fuzz-$target" -runs="$runs" -seed=1 -max_len=4096 \
    -timeout=30 -close_fd_mask=3 -artifact_prefix="fuzz-work/$target-" \
    "${extra[@]}" "fuzz-work/$target" > "fuzz-work/$target.log" 2>&1
  code=$?
  done_line=$(grep -E '^Done [0-9]+ runs' "fuzz-work/$target.log" | tail -1)
  echo "$target: exit $code, ${done_line:-no Done line (see fuzz-work/$target.log)}, $(( $(date +%s) - start )) s"
  [ "$code" -eq 0 ] || status=1
done
exit $status
