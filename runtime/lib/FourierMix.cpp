//===- FourierMix.cpp - the FFT behind attn.fourier_mix -------------------===//
#include "attn/Runtime/FourierMix.h"
#include <complex>
#include <fftw3.h>
#include <mutex>
#include <vector>

void _mlir_ciface_attn_fourier_mix_f32(AttnMemRef3F32 *x, AttnMemRef3F32 *y) {
  const int64_t batch = x->sizes[0], length = x->sizes[1],
                hidden = x->sizes[2];
  if (batch == 0 || length == 0 || hidden == 0)
    return;
  const int64_t half = hidden / 2 + 1; // r2c keeps columns 0..Dm/2
  // Contiguous copies: FFTW wants dense rows; x may be strided.
  std::vector<float> in(batch * length * hidden);
  const float *xData = x->aligned + x->offset;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t l = 0; l < length; ++l)
      for (int64_t d = 0; d < hidden; ++d)
        in[(b * length + l) * hidden + d] =
            xData[b * x->strides[0] + l * x->strides[1] + d * x->strides[2]];
  std::vector<std::complex<float>> spectrum(batch * length * half);
  auto *out = reinterpret_cast<fftwf_complex *>(spectrum.data());

  int dims[2] = {int(length), int(hidden)};
  // Only fftwf_execute is thread-safe; planning and destroying are not.
  static std::mutex planning;
  fftwf_plan plan;
  {
    std::lock_guard<std::mutex> lock(planning);
    plan = fftwf_plan_many_dft_r2c(2, dims, int(batch), in.data(), nullptr, 1,
                                   int(length * hidden), out, nullptr, 1,
                                   int(length * half), FFTW_ESTIMATE);
  }
  fftwf_execute(plan);
  {
    std::lock_guard<std::mutex> lock(planning);
    fftwf_destroy_plan(plan);
  }

  // The spectrum of real input is Hermitian: X[k1, k2] = conj(X[-k1, -k2]),
  // so the real parts of the columns r2c leaves out are mirrored ones.
  float *yData = y->aligned + y->offset;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t k1 = 0; k1 < length; ++k1)
      for (int64_t k2 = 0; k2 < hidden; ++k2) {
        int64_t row = k1, col = k2;
        if (k2 >= half) {
          row = (length - k1) % length;
          col = hidden - k2;
        }
        yData[b * y->strides[0] + k1 * y->strides[1] + k2 * y->strides[2]] =
            spectrum[(b * length + row) * half + col].real();
      }
}
