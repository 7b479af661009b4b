//===- OpenBlasLinear.h - layer products on OpenBLAS sgemm ------*- C++ -*-===//
//
// The baseline the layers' own GEMM is measured against (`attn-run
// --linear=openblas`, bench/layer_vs_pytorch.py): a LinearBackend on
// OpenBLAS's sgemm that keeps each weight as read ([out, in] f32) and
// leaves biases, activations and residuals to the stack's own passes. The
// layer executor itself does not link OpenBLAS.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_OPENBLASLINEAR_H
#define ATTN_RUNTIME_OPENBLASLINEAR_H

#include "attn/Runtime/LayerStack.h"

namespace attnrt {

class OpenBlasLinearBackend : public LinearBackend {
public:
  /// Asks libomp (before it starts) to put idle threads to sleep at once:
  /// threads spinning after each parallel region would take cores from
  /// sgemm (a user's KMP_BLOCKTIME wins).
  OpenBlasLinearBackend();
  Status prepare(int64_t out, int64_t in, const std::vector<float> &weight,
                 std::shared_ptr<const Weight> &prepared) override;
  /// Single-threaded sgemm on row blocks run on the OpenMP threads.
  Status accumulate(const float *x, int64_t rows, const Weight &weight,
                    float *y) override;
};

} // namespace attnrt

#endif // ATTN_RUNTIME_OPENBLASLINEAR_H
