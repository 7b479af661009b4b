#!/usr/bin/env bash
# The checks and timings for a machine lent with an NVIDIA GPU, which has
# the driver but no LLVM (issue 42). Two steps:
#
#   bench/gpu_lent_check.sh prepare   # here: PTX artifacts, LLVM-free
#                                     # runners and their libraries into
#                                     # build/gpu-lent (about 5 MiB)
#   bench/gpu_lent_check.sh run       # there: run with carry=build/gpu-lent
#
# `run` checks the C API's device buffers on CUDA against an f64 reference
# (test/e2e/gpu/Inputs/gpu-capi.c: two chained calls, split keys merged on
# the device, the error paths), then times the tensor-core kernel with
# attn-gpu-call-bench (the device's event timings, medians) for f16 / bf16,
# D = 64 / 128, N = 1k / 4k / 16k, causal and not, and prints TFLOP/s
# (4 B H N^2 D flops, half of it causal) and the call overhead.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/gpu-lent

prepare() {
  rm -rf "$out" && mkdir -p "$out/lib"
  cp build/bin/attn-gpu-call-bench "$out/"
  cp build/lib/libattn_c.so build/lib/libattn_gpu.so build/lib/libattn_layers.so "$out/lib/"
  cp /usr/lib/llvm-22/lib/libomp.so.5 "$out/lib/"
  /usr/lib/llvm-22/bin/clang -O2 -I runtime/include test/e2e/gpu/Inputs/gpu-capi.c \
    -o "$out/gpu-capi" -L build/lib -lattn_c -lm -Wl,-rpath,'$ORIGIN/lib'
  build/bin/attn-compile test/e2e/gpu/Inputs/capi-kernels.mlir --target=cuda-sm90 -o "$out/capi.ptx"
  # One function per shape: B = 1, H = 16 (4096 / N batches of 16 heads
  # would keep the work equal; one batch keeps the artifact small).
  {
    for type in f16 bf16; do for d in 64 128; do for n in 1024 4096 16384; do
      for causal in 0 1; do
        name="${type}_d${d}_n${n}" pattern=""
        if [ "$causal" = 1 ]; then
          name="${name}_causal" pattern=" pattern(#attn.causal)"
        fi
        t="tensor<1x16x${n}x${d}x${type}>"
        echo "func.func @$name(%q: $t, %k: $t, %v: $t) -> $t {"
        echo "  %o = attn.attention %q, %k, %v$pattern : ($t, $t, $t) -> $t"
        echo "  return %o : $t"
        echo "}"
      done
    done; done; done
  } > "$out/shapes.mlir"
  build/bin/attn-compile "$out/shapes.mlir" --target=cuda-sm90 -o "$out/shapes.ptx"
  ls -la "$out"
}

run() {
  export LD_LIBRARY_PATH="$out/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "== device buffers through the C API (f32, split keys, f64 reference)"
  "$out/gpu-capi" cuda "$out/capi.ptx"
  echo "== tensor-core kernel: kernel time (events), medians of 10 calls"
  printf "%-24s %10s %10s %12s\n" function "kernel ms" TFLOP/s "overhead ms"
  grep -o '^func.func @[a-z0-9_]*' "$out/shapes.mlir" | sed 's/func.func @//' |
  while read -r f; do
    n=$(echo "$f" | sed 's/.*_n\([0-9]*\).*/\1/')
    d=$(echo "$f" | sed 's/.*_d\([0-9]*\)_.*/\1/')
    line=$("$out/attn-gpu-call-bench" "$out/shapes.ptx" "$f" --calls=10 --rounds=1 | grep '^device ')
    ms=$(echo "$line" | awk '{print $3}')
    overhead=$(echo "$line" | awk '{print $4}')
    half=$(case "$f" in *_causal) echo 0.5;; *) echo 1;; esac)
    tflops=$(awk -v n="$n" -v d="$d" -v ms="$ms" -v h="$half" \
      'BEGIN { printf "%.1f", h * 4 * 16 * n * n * d / (ms * 1e-3) / 1e12 }')
    printf "%-24s %10s %10s %12s\n" "$f" "$ms" "$tflops" "$overhead"
  done
}

case "${1:-}" in
  prepare) prepare ;;
  run) run ;;
  *) echo "usage: bench/gpu_lent_check.sh prepare|run" >&2; exit 2 ;;
esac
