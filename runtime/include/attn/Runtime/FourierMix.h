//===- FourierMix.h - the FFT behind attn.fourier_mix -----------*- C++ -*-===//
//
// attn-fourier-mix-to-call lowers attn.fourier_mix (FNet) to a call of this
// function through MLIR's C interface: y[b] = Re(DFT_L(DFT_Dm(x[b]))) for
// x, y [B, L, Dm] f32, by FFTW's two-dimensional real-to-complex transform
// (O(L Dm log(L Dm)), any sizes). FFTW is Debian's libfftw3: a well-kept
// library beats a hand-written FFT on every size, primes included.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_FOURIERMIX_H
#define ATTN_RUNTIME_FOURIERMIX_H

#include <cstdint>

extern "C" {
/// MLIR's descriptor of a rank-3 f32 memref.
struct AttnMemRef3F32 {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[3];
  int64_t strides[3];
};

/// y = Re(FFT over axes 1 and 2 of x); y may not alias x.
void _mlir_ciface_attn_fourier_mix_f32(AttnMemRef3F32 *x, AttnMemRef3F32 *y);
}

#endif // ATTN_RUNTIME_FOURIERMIX_H
