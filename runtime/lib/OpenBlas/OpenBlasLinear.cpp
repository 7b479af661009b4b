//===- OpenBlasLinear.cpp - layer products on OpenBLAS sgemm --------------===//
#include "attn/Runtime/OpenBlasLinear.h"
#include <algorithm>
#include <cblas.h>
#include <cstdlib>
#include <omp.h>

using namespace attnrt;

namespace {
/// The weight as read: [out, in] f32.
struct RowMajorWeight : LinearBackend::Weight {
  int64_t in = 0, out = 0;
  std::vector<float> values;
  int64_t bytes() const override {
    return int64_t(values.size() * sizeof(float));
  }
};
} // namespace

OpenBlasLinearBackend::OpenBlasLinearBackend() {
  setenv("KMP_BLOCKTIME", "0", /*overwrite=*/0);
}

Status OpenBlasLinearBackend::prepare(int64_t out, int64_t in,
                                      const std::vector<float> &weight,
                                      std::shared_ptr<const Weight> &prepared) {
  auto w = std::make_shared<RowMajorWeight>();
  w->in = in;
  w->out = out;
  w->values = weight;
  prepared = std::move(w);
  return Status::ok();
}

Status OpenBlasLinearBackend::accumulate(const float *x, int64_t rows,
                                         const Weight &weight, float *y) {
  const auto &w = static_cast<const RowMajorWeight &>(weight);
  // Single-threaded sgemm on row blocks, run on OpenMP threads: OpenBLAS's
  // own worker threads spin (sched_yield) for ~0.1 s after each call and
  // would take cores from the compiled attention that runs next (measured
  // in bench/RESULTS.md, "Layers").
  static const bool singleThreaded = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)singleThreaded;
  int64_t blocks = std::clamp<int64_t>(rows / 64, 1, omp_get_max_threads());
  int64_t step = (rows + blocks - 1) / blocks;
#pragma omp parallel for schedule(static) if (blocks > 1)
  for (int64_t b = 0; b < blocks; ++b) {
    int64_t begin = b * step, count = std::min(rows, begin + step) - begin;
    if (count > 0)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, count, w.out, w.in,
                  1.0f, x + begin * w.in, w.in, w.values.data(), w.in, 1.0f,
                  y + begin * w.out, w.out);
  }
  return Status::ok();
}
