#!/usr/bin/env bash
# The checks and timings for a machine lent with an NVIDIA GPU, which has
# the driver but no LLVM (issue 42). Two steps:
#
#   bench/gpu_lent_check.sh prepare   # here: PTX artifacts, LLVM-free
#                                     # runners and their libraries into
#                                     # build/gpu-lent (about 31 MiB)
#   bench/gpu_lent_check.sh run       # there: run with carry=build/gpu-lent
#
# `run`, in order:
# - the C API's device buffers on CUDA against an f64 reference
#   (test/e2e/gpu/Inputs/gpu-capi.c: two chained calls, split keys merged
#   on the device, the error paths), the order of their writes and
#   reads (Inputs/gpu-buffer-order.c), and an insertion kernel updating a
#   KV cache in place (Inputs/gpu-capi-insert.c);
# - the tensor-core kernels (sm_90's mma.sync; sm_90a's wgmma at 128 and at
#   64 query rows per workgroup) against an f64 reference
#   (Inputs/gpu-check16.c), f16 / bf16, D = 64 / 128, causal and not;
# - f32 on sm_90's tensor cores with 3xTF32 (--gpu-3xtf32) against the same
#   reference at f32's bar, D = 64 / 128, and its time next to the exact
#   scalar kernel's;
# - their TFLOP/s side by side (attn-gpu-call-bench: the device's event
#   timings, medians; 4 B H N^2 D flops, half of it causal) at N = 1k / 4k
#   / 16k, and the call overhead;
# - decoding's bandwidth (GQA 32:8, D = 128, 4k-64k keys), also through a
#   page table (attn.paged_kv read in place), and a sliding window's time
#   as a fraction of dense (it keeps about 1/16).
# - a layer's products (GpuLinearKernel.cpp's f32 GEMM, Y = X W^T):
#   checked against an f64 reference (gpu-check16), then TFLOP/s at
#   4096^3 and 512 rows, and W's bandwidth at 8 rows (a decoding step's
#   capacity).
# The wgmma kernel needs a Hopper GPU (compute capability 9.x): elsewhere
# its PTX does not load, and the run says so.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/gpu-lent
# The kernels compared: sm_90's mma.sync kernel, sm_90a's wgmma kernel with
# its two warpgroups (128 query rows) and with one (64 rows).
variants="cuda-sm90 cuda-sm90a cuda-sm90a-64rows"
compile() { # compile INPUT VARIANT OUTPUT
  case "$2" in
    *-64rows) build/bin/attn-compile "$1" --target="${2%-64rows}" --gpu-workgroup-rows=64 -o "$3" ;;
    *) build/bin/attn-compile "$1" --target="$2" -o "$3" ;;
  esac
}

# attention_functions HEADS "N..." [TYPES] prints TYPE_dD_nN[_causal]
# functions on [1, HEADS, N, D] for TYPES (default f16 and bf16), D = 64 /
# 128, causal and not.
attention_functions() {
  for type in ${3:-f16 bf16}; do for d in 64 128; do for n in $2; do
    for causal in 0 1; do
      name="${type}_d${d}_n${n}" pattern=""
      if [ "$causal" = 1 ]; then
        name="${name}_causal" pattern=" pattern(#attn.causal)"
      fi
      t="tensor<1x$1x${n}x${d}x${type}>"
      echo "func.func @$name(%q: $t, %k: $t, %v: $t) -> $t {"
      echo "  %o = attn.attention %q, %k, %v$pattern : ($t, $t, $t) -> $t"
      echo "  return %o : $t"
      echo "}"
    done
  done; done; done
}

# Decoding (one query row, GQA 32:8, D = 128, N keys: bandwidth-bound) and
# a sliding window at N = 16k (about 1/16 of the dense tiles kept).
other_functions() {
  for type in f16 bf16; do for n in 4096 16384 65536; do
    q="tensor<1x32x1x128x${type}>" kv="tensor<1x8x${n}x128x${type}>"
    echo "func.func @${type}_decode_kv${n}(%q: $q, %k: $kv, %v: $kv) -> $q {"
    echo "  %o = attn.attention %q, %k, %v : ($q, $kv, $kv) -> $q"
    echo "  return %o : $q"
    echo "}"
  done; done
  # The same read through a page table (pools of 64-row pages, the
  # length a constant): attn-gpu-call-bench --iota=3 lists the pages once.
  for n in 4096 16384 65536; do
    q="tensor<1x32x1x128xf16>" pool="tensor<$((n / 64))x8x64x128xf16>"
    table="tensor<1x$((n / 64))xi32>" rows="tensor<1x8x?x128xf16>"
    echo "func.func @f16_paged_decode_kv${n}(%q: $q, %kp: $pool, %vp: $pool, %t: $table) -> $q {"
    echo "  %n = arith.constant $n : index"
    echo "  %k = attn.paged_kv %kp[%t] length %n : $pool, $table -> $rows"
    echo "  %v = attn.paged_kv %vp[%t] length %n : $pool, $table -> $rows"
    echo "  %o = attn.attention %q, %k, %v align = bottom_right : ($q, $rows, $rows) -> $q"
    echo "  return %o : $q"
    echo "}"
  done
  t="tensor<1x16x16384x128xf16>"
  echo "func.func @f16_d128_n16384_window(%q: $t, %k: $t, %v: $t) -> $t {"
  echo "  %o = attn.attention %q, %k, %v pattern(#attn.window<left = 1023, right = 0>) : ($t, $t, $t) -> $t"
  echo "  return %o : $t"
  echo "}"
}

# The products: Y [M, 4096] = X [M, 4096] W^T, W [4096, 4096] as read.
linear_functions() {
  for m in 8 512 4096; do
    x="tensor<${m}x4096xf32>" w="tensor<4096x4096xf32>" y="tensor<${m}x4096xf32>"
    echo "func.func @linear_m${m}(%x: $x, %w: $w) -> $y {"
    echo "  %zero = arith.constant 0.0 : f32"
    echo "  %e = tensor.empty() : $y"
    echo "  %f = linalg.fill ins(%zero : f32) outs(%e : $y) -> $y"
    echo "  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%x, %w : $x, $w) outs(%f : $y) -> $y"
    echo "  return %y : $y"
    echo "}"
  done
}

prepare() {
  rm -rf "$out" && mkdir -p "$out/lib"
  cp build/bin/attn-gpu-call-bench "$out/"
  cp build/lib/libattn_c.so build/lib/libattn_gpu.so build/lib/libattn_layers.so "$out/lib/"
  cp /usr/lib/llvm-22/lib/libomp.so.5 "$out/lib/"
  /usr/lib/llvm-22/bin/clang -O2 -I runtime/include test/e2e/gpu/Inputs/gpu-capi.c \
    -o "$out/gpu-capi" -L build/lib -lattn_c -lm -Wl,-rpath,'$ORIGIN/lib'
  /usr/lib/llvm-22/bin/clang -O2 -I runtime/include test/e2e/gpu/Inputs/gpu-check16.c \
    -o "$out/gpu-check16" -L build/lib -lattn_c -lm -Wl,-rpath,'$ORIGIN/lib'
  /usr/lib/llvm-22/bin/clang -O2 -I runtime/include test/e2e/gpu/Inputs/gpu-buffer-order.c \
    -o "$out/gpu-buffer-order" -L build/lib -lattn_c -Wl,-rpath,'$ORIGIN/lib'
  /usr/lib/llvm-22/bin/clang -O2 -I runtime/include test/e2e/gpu/Inputs/gpu-capi-insert.c \
    -o "$out/gpu-capi-insert" -L build/lib -lattn_c -Wl,-rpath,'$ORIGIN/lib'
  build/bin/attn-compile test/e2e/gpu/Inputs/insert-kernels.mlir --target=cuda-sm90 -o "$out/insert.ptx"
  # f32 on [1, 2, N, D]: 3xTF32 and the scalar kernel.
  attention_functions 2 "1024 4096" f32 > "$out/f32.mlir"
  build/bin/attn-compile "$out/f32.mlir" --target=cuda-sm90 --gpu-3xtf32 -o "$out/f32-3xtf32.ptx"
  build/bin/attn-compile "$out/f32.mlir" --target=cuda-sm90 -o "$out/f32-scalar.ptx"
  # Checked shapes: [1, 2, N, D] (gpu-check16's names), odd and even N.
  attention_functions 2 "257 1024" > "$out/check.mlir"
  for v in $variants; do compile "$out/check.mlir" "$v" "$out/check-$v.ptx"; done
  build/bin/attn-compile test/e2e/gpu/Inputs/capi-kernels.mlir --target=cuda-sm90 -o "$out/capi.ptx"
  # One function per shape: B = 1, H = 16 (4096 / N batches of 16 heads
  # would keep the work equal; one batch keeps the artifact small).
  attention_functions 16 "1024 4096 16384" > "$out/shapes.mlir"
  for v in $variants; do compile "$out/shapes.mlir" "$v" "$out/shapes-$v.ptx"; done
  other_functions > "$out/other.mlir"
  for v in $variants; do compile "$out/other.mlir" "$v" "$out/other-$v.ptx"; done
  build/bin/attn-compile test/e2e/gpu/Inputs/check16-kernels.mlir --target=cuda-sm90 -o "$out/check-linear.ptx"
  linear_functions > "$out/linear.mlir"
  build/bin/attn-compile "$out/linear.mlir" --target=cuda-sm90 -o "$out/linear.ptx"
  rm -f "$out"/*.cubin
  ls -la "$out"
}

run() {
  export LD_LIBRARY_PATH="$out/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "== device buffers through the C API (f32, split keys, f64 reference)"
  "$out/gpu-capi" cuda "$out/capi.ptx"
  "$out/gpu-buffer-order" cuda || true
  "$out/gpu-capi-insert" cuda "$out/insert.ptx" || true
  checks=$(grep -o '^func.func @[a-z0-9_]*' "$out/check.mlir" | sed 's/func.func @//')
  for v in $variants; do
    echo "== $v kernels against the f64 reference"
    # shellcheck disable=SC2086
    "$out/gpu-check16" cuda "$out/check-$v.ptx" $checks || true
  done
  echo "== f32: 3xTF32 against the f64 reference, then its time and the scalar kernel's"
  f32s=$(grep -o '^func.func @[a-z0-9_]*' "$out/f32.mlir" | sed 's/func.func @//')
  # shellcheck disable=SC2086
  "$out/gpu-check16" cuda "$out/f32-3xtf32.ptx" $f32s || true
  for f in $f32s; do
    for kind in 3xtf32 scalar; do
      ms=$("$out/attn-gpu-call-bench" "$out/f32-$kind.ptx" "$f" --calls=5 --rounds=1 | grep '^device ' | awk '{print $3}' || true)
      printf "%-10s %-24s %10s ms\n" "$kind" "$f" "${ms:--}"
    done
  done
  echo "== tensor-core kernels: kernel time (events), medians of 10 calls"
  printf "%-18s %-24s %10s %10s %12s\n" kernel function "kernel ms" TFLOP/s "overhead ms"
  grep -o '^func.func @[a-z0-9_]*' "$out/shapes.mlir" | sed 's/func.func @//' |
  while read -r f; do
    n=$(echo "$f" | sed 's/.*_n\([0-9]*\).*/\1/')
    d=$(echo "$f" | sed 's/.*_d\([0-9]*\)_.*/\1/')
    half=$(case "$f" in *_causal) echo 0.5;; *) echo 1;; esac)
    # Alternating the kernels shape by shape keeps clocks comparable.
    for v in $variants; do
      line=$("$out/attn-gpu-call-bench" "$out/shapes-$v.ptx" "$f" --calls=10 --rounds=1 | grep '^device ' || true)
      ms=$(echo "$line" | awk '{print $3}')
      overhead=$(echo "$line" | awk '{print $4}')
      tflops=$(awk -v n="$n" -v d="$d" -v ms="${ms:-0}" -v h="$half" \
        'BEGIN { if (ms > 0) printf "%.1f", h * 4 * 16 * n * n * d / (ms * 1e-3) / 1e12; else print "failed" }')
      printf "%-18s %-24s %10s %10s %12s\n" "$v" "$f" "${ms:--}" "$tflops" "${overhead:--}"
    done
  done
  echo "== decoding (GQA 32:8, D = 128): K and V read once, GB/s of them"
  echo "== and a window of 1024 keys at N = 16k against dense (kept ~1/16)"
  printf "%-18s %-26s %10s %16s\n" kernel function "kernel ms" "GB/s | of dense"
  grep -o '^func.func @[a-z0-9_]*' "$out/other.mlir" | sed 's/func.func @//' |
  while read -r f; do
    for v in $variants; do
      iota=$(case "$f" in *_paged_*) echo --iota=3;; esac)
      # shellcheck disable=SC2086
      ms=$("$out/attn-gpu-call-bench" "$out/other-$v.ptx" "$f" --calls=10 --rounds=1 $iota | grep '^device ' | awk '{print $3}' || true)
      case "$f" in
        *_decode_kv*)
          n=${f##*_kv}
          rate=$(awk -v n="$n" -v ms="${ms:-0}" \
            'BEGIN { if (ms > 0) printf "%.0f", 2 * 8 * n * 128 * 2 / (ms * 1e-3) / 1e9; else print "failed" }') ;;
        *)
          dense=$("$out/attn-gpu-call-bench" "$out/shapes-$v.ptx" f16_d128_n16384 --calls=10 --rounds=1 | grep '^device ' | awk '{print $3}' || true)
          rate=$(awk -v ms="${ms:-0}" -v dense="${dense:-0}" \
            'BEGIN { if (ms > 0 && dense > 0) printf "%.3f", ms / dense; else print "failed" }') ;;
      esac
      printf "%-18s %-26s %10s %16s\n" "$v" "$f" "${ms:--}" "$rate"
    done
  done
  echo "== products against the f64 reference (skinny and tiled kernels)"
  "$out/gpu-check16" cuda "$out/check-linear.ptx" linear_m5_k300_n70 linear_m70_k300_n70 || true
  echo "== products (f32 GEMM, K = N = 4096): TFLOP/s, and W's GB/s at 8 rows"
  printf "%-14s %10s %10s %10s\n" function "kernel ms" TFLOP/s "W GB/s"
  for m in 8 512 4096; do
    ms=$("$out/attn-gpu-call-bench" "$out/linear.ptx" "linear_m$m" --calls=10 --rounds=1 | grep '^device ' | awk '{print $3}' || true)
    awk -v m="$m" -v ms="${ms:-0}" 'BEGIN { if (ms > 0) printf "%-14s %10s %10.1f %10.0f\n", "linear_m" m, ms, 2 * m * 4096 * 4096 / (ms * 1e-3) / 1e12, 4096 * 4096 * 4 / (ms * 1e-3) / 1e9; else printf "%-14s failed\n", "linear_m" m }'
  done
}

case "${1:-}" in
  prepare) prepare ;;
  run) run ;;
  *) echo "usage: bench/gpu_lent_check.sh prepare|run" >&2; exit 2 ;;
esac
