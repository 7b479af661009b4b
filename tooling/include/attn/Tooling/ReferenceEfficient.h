//===- ReferenceEfficient.h - plain references of the efficient ops -*- C++
//-*-===//
//
// Double-precision references for attn.linformer, attn.nystrom,
// attn.kernelized, attn.lsh, attn.routing and attn.fourier_mix, written from
// docs/Dialect.md with no code shared with the compiler: each computes the
// documented formula directly (Linformer's projections, Nystrom's dense
// landmark kernels, the kernelized quotient in its quadratic form, causal or
// not), one (batch, head) at a time.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TOOLING_REFERENCEEFFICIENT_H
#define ATTN_TOOLING_REFERENCEEFFICIENT_H

#include <cstdint>
#include <vector>

namespace attnrt::reference {

/// Sizes and operands shared by the Q/K/V ops (row-major f32 buffers).
struct QkvProblem {
  int64_t batch = 1, queryHeads = 1, keyHeads = 1;
  int64_t queryLen = 1, keyLen = 1, headDim = 1, valueDim = 1;
  const float *query = nullptr; // [B, Hq, Lq, D]
  const float *key = nullptr;   // [B, Hkv, Lk, D]
  const float *value = nullptr; // [B, Hkv, Lk, Dv]
};

/// attn.linformer: E, F are [k, Lk] (perHead false) or [Hkv, k, Lk].
struct LinformerProblem : QkvProblem {
  double scale = 1.0;
  int64_t rank = 1;
  bool perHead = false;
  const float *e = nullptr, *f = nullptr;
};
std::vector<double> linformer(const LinformerProblem &problem);

/// attn.nystrom with `landmarks` segments and `iterations` pinv steps.
struct NystromProblem : QkvProblem {
  double scale = 1.0;
  int64_t landmarks = 1, iterations = 6;
};
std::vector<double> nystrom(const NystromProblem &problem);

/// attn.kernelized; omega [features, D] for favor and rfa.
struct KernelizedProblem : QkvProblem {
  enum class FeatureMap { Favor, Rfa, EluPlusOne, Relu };
  FeatureMap featureMap = FeatureMap::Relu;
  bool causal = false;
  int64_t features = 0;
  const float *omega = nullptr;
};
std::vector<double> kernelized(const KernelizedProblem &problem);

/// attn.lsh: query_key [B, H, L, D] (the `query` field; keys are its rows
/// at unit length), value [B, H, L, Dv], rotations [rounds, D, buckets / 2].
/// Hashing, a stable sort and the chunk windows of each round are evaluated
/// as sets of key positions per query, each round's softmax and
/// log-sum-exp directly.
struct LshProblem : QkvProblem {
  double scale = 1.0;
  int64_t buckets = 2, rounds = 1, chunk = 1;
  bool causal = false;
  const float *rotations = nullptr;
};
std::vector<double> lsh(const LshProblem &problem);

/// attn.routing with centroids [clusters, D]: memberships by a full sort of
/// the scores, then per query the mean over its clusters of the softmax
/// over the cluster's keys (j <= i when causal).
struct RoutingProblem : QkvProblem {
  double scale = 1.0;
  int64_t clusters = 1, topK = 1;
  bool causal = false;
  const float *centroids = nullptr;
};
std::vector<double> routing(const RoutingProblem &problem);

/// attn.fourier_mix on x [B, L, Dm]: Re(DFT_L(DFT_Dm(x))), both DFTs as
/// direct sums (O(L Dm (L + Dm)), no FFT).
struct FourierMixProblem {
  int64_t batch = 1, length = 1, hidden = 1;
  const float *input = nullptr;
};
std::vector<double> fourierMix(const FourierMixProblem &problem);

/// attn.rope on x [B, H, L, D]: positions [L] or [B, L] (or l when absent).
struct RopeProblem {
  int64_t batch = 1, heads = 1, length = 1, dim = 2;
  double base = 10000;
  bool interleaved = false;
  const float *input = nullptr;
  std::vector<int64_t> positions; ///< empty, L or B * L entries
};
std::vector<double> rope(const RopeProblem &problem);

} // namespace attnrt::reference

#endif // ATTN_TOOLING_REFERENCEEFFICIENT_H
