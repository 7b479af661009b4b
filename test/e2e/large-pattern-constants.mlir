// Pattern parameters past 32 bits: the vectorized kernels evaluate masks on
// i32 lanes only when every constant fits (positionsFitInI32), else on i64.
// Truncated to 32 bits these patterns would keep other keys: stride and
// dilation 2^32 + 1 become 1 (every key), a right reach of 2^31 becomes
// -2^31 (no key), a left reach of 2^32 becomes 0 (the diagonal only), with
// errors of order 0.3-1 of the output's scale. Tolerance 1e-5 as in
// patterns.mlir (f32 accumulation over <= 97 keys stays near 1e-6).
// RUN: attn-run %s --entry=strided --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=strided --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=strided --check --generic | FileCheck %s
// RUN: attn-run %s --entry=dilated --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=dilated --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=dilated --check --generic | FileCheck %s
// RUN: attn-run %s --entry=window_right --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=window_right --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=wide_window_in_and --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=wide_window_in_and --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=wide_window_in_and --check --generic | FileCheck %s
// CHECK: check: {{.*}}: PASS

func.func @strided(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x97x40xf32>, %v: tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.or<[#attn.strided<stride = 4294967297>, #attn.window<left = 3, right = 0>]>)
      : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}

func.func @dilated(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x97x40xf32>, %v: tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.dilated<left = 50, right = 50, dilation = 4294967297>)
      : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}

func.func @window_right(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x97x40xf32>, %v: tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.and<[#attn.window<left = 0, right = 2147483648>, #attn.strided<stride = 2>]>)
      : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}

func.func @wide_window_in_and(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x97x40xf32>, %v: tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.and<[#attn.window<left = 4294967296, right = 0>, #attn.strided<stride = 3>]>)
      : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}
