// attn.fourier_mix (FNet) lowered to the runtime's FFT (FFTW, 2-D real to
// complex, real part mirrored from the Hermitian half) against the f64
// reference, which sums both DFTs directly. Tolerance 1e-5 of the output
// scale: an f32 FFT of N points has relative error ~1e-7 log2 N (N up to
// 65600 here, ~2e-6); observed below 1e-6.
// RUN: attn-run %s --entry=prime_length --check | FileCheck %s
// RUN: attn-run %s --entry=odd_hidden --check | FileCheck %s
// RUN: attn-run %s --entry=batched_1000 --check | FileCheck %s
// RUN: attn-run %s --entry=fnet_1025 --check | FileCheck %s
// A shared library from attn-compile links the FFT (libattn_support.so).
// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-compile %s --emit=so -o %t/libfnet.so
// RUN: attn-run %s --entry=odd_hidden --load=%t/libfnet.so --check | FileCheck %s
// CHECK: check: {{.*}}: PASS

// L = 97 (prime), Dm = 64.
func.func @prime_length(%x: tensor<1x97x64xf32>) -> tensor<1x97x64xf32> {
  %y = attn.fourier_mix %x : tensor<1x97x64xf32> -> tensor<1x97x64xf32>
  return %y : tensor<1x97x64xf32>
}

// Odd hidden size: the mirrored columns are k2 = 21..40 of Dm = 41.
func.func @odd_hidden(%x: tensor<1x100x41xf32>) -> tensor<1x100x41xf32> {
  %y = attn.fourier_mix %x : tensor<1x100x41xf32> -> tensor<1x100x41xf32>
  return %y : tensor<1x100x41xf32>
}

// Batch 2, L = 1000, Dm = 40.
func.func @batched_1000(%x: tensor<2x1000x40xf32>) -> tensor<2x1000x40xf32> {
  %y = attn.fourier_mix %x : tensor<2x1000x40xf32> -> tensor<2x1000x40xf32>
  return %y : tensor<2x1000x40xf32>
}

// L = 1025, Dm = 64.
func.func @fnet_1025(%x: tensor<1x1025x64xf32>) -> tensor<1x1025x64xf32> {
  %y = attn.fourier_mix %x : tensor<1x1025x64xf32> -> tensor<1x1025x64xf32>
  return %y : tensor<1x1025x64xf32>
}
