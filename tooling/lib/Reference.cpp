//===- Reference.cpp - plain double-precision attention -------------------===//
//
// Straight from docs/Dialect.md: for each (b, h, i) compute every logit,
// apply bias, mods, pattern and mask, then a two-pass softmax in double.
//
//===----------------------------------------------------------------------===//
#include "attn/Tooling/Reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace attnrt::reference {

static int64_t floorDiv(int64_t a, int64_t b) {
  return static_cast<int64_t>(std::floor(static_cast<double>(a) / b));
}
static int64_t floorMod(int64_t a, int64_t b) { return a - floorDiv(a, b) * b; }

std::vector<int64_t> randomBlocks(int64_t seed, int64_t count, int64_t qb,
                                  int64_t head, int64_t numKeyBlocks) {
  std::vector<int64_t> a(numKeyBlocks);
  std::iota(a.begin(), a.end(), 0);
  if (count >= numKeyBlocks)
    return a;
  auto mix = [](uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  const uint64_t g = 0x9e3779b97f4a7c15ULL;
  uint64_t state = mix(uint64_t(seed) + g * uint64_t(qb + 1));
  state = mix(state + 0xd1b54a32d192ed03ULL * uint64_t(head + 1));
  for (int64_t t = 0; t < count; ++t) {
    state = mix(state + g);
    int64_t k = t + int64_t(state % uint64_t(numKeyBlocks - t));
    std::swap(a[t], a[k]);
  }
  a.resize(count);
  std::sort(a.begin(), a.end());
  return a;
}

bool isKept(const Pattern &pt, int64_t i, int64_t j, int64_t lq, int64_t lk,
            int64_t delta, int64_t head, const int64_t *qSegments,
            const int64_t *kvSegments) {
  int64_t p = i + delta, r = j - p;
  using K = Pattern::Kind;
  switch (pt.kind) {
  case K::Causal:
    return r <= 0;
  case K::Window:
    return -pt.a <= r && r <= pt.b;
  case K::Dilated:
    return -pt.a <= r && r <= pt.b && floorMod(r, pt.c) == 0;
  case K::Strided:
    return floorMod(r, pt.a) == 0;
  case K::Fixed:
    return floorDiv(j, pt.a) == floorDiv(p, pt.a) ||
           floorMod(j, pt.a) >= pt.a - pt.b;
  case K::Global:
    return std::find(pt.indices.begin(), pt.indices.end(), p) !=
               pt.indices.end() ||
           std::find(pt.indices.begin(), pt.indices.end(), j) !=
               pt.indices.end();
  case K::RandomBlocks: {
    // Callers sweep j for a fixed i: keep the last draw instead of redoing
    // the O(key blocks) shuffle for every element.
    struct Draw {
      int64_t seed = -1, count = 0, qb = 0, head = 0, numKeyBlocks = 0;
      std::vector<int64_t> blocks;
    };
    static thread_local Draw last;
    int64_t qb = i / pt.a, numKeyBlocks = (lk + pt.a - 1) / pt.a;
    if (last.seed != pt.c || last.count != pt.b || last.qb != qb ||
        last.head != head || last.numKeyBlocks != numKeyBlocks)
      last = {pt.c,         pt.b,
              qb,           head,
              numKeyBlocks, randomBlocks(pt.c, pt.b, qb, head, numKeyBlocks)};
    return std::binary_search(last.blocks.begin(), last.blocks.end(), j / pt.a);
  }
  case K::BlockLayout: {
    int64_t h = pt.layoutHeads == 1 ? 0 : head, qb = i / pt.a, kb = j / pt.a;
    if (qb >= pt.layoutRows || kb >= pt.layoutCols)
      return false;
    return pt.layout[(h * pt.layoutRows + qb) * pt.layoutCols + kb] != 0;
  }
  case K::Segments:
    return qSegments[i] == kvSegments[j];
  case K::Or:
    for (const Pattern &m : pt.members)
      if (isKept(m, i, j, lq, lk, delta, head, qSegments, kvSegments))
        return true;
    return false;
  case K::And:
    for (const Pattern &m : pt.members)
      if (!isKept(m, i, j, lq, lk, delta, head, qSegments, kvSegments))
        return false;
    return true;
  }
  return false;
}

double alibiSlope(double maxBias, int64_t head, int64_t numHeads) {
  int64_t n = 1;
  while (n * 2 <= numHeads)
    n *= 2;
  if (head < n)
    return std::pow(2.0, -maxBias * double(head + 1) / double(n));
  int64_t k = head - n;
  return std::pow(2.0, -maxBias * double(2 * k + 1) / double(2 * n));
}

int64_t t5Bucket(int64_t r, int64_t buckets, int64_t maxDistance,
                 bool bidirectional) {
  int64_t bucket = 0, nb = buckets, d;
  if (bidirectional) {
    nb = buckets / 2;
    if (r > 0)
      bucket = nb;
    d = std::llabs(r);
  } else {
    d = std::max<int64_t>(-r, 0);
  }
  int64_t exact = nb / 2;
  if (d < exact)
    return bucket + d;
  int64_t large =
      exact + int64_t(std::floor(std::log(double(d) / exact) /
                                 std::log(double(maxDistance) / exact) *
                                 double(nb - exact)));
  return bucket + std::min(large, nb - 1);
}

static double perHead(const std::vector<double> &values, int64_t h) {
  return values.size() == 1 ? values[0] : values[h];
}

/// The soft-cap mods of the problem on the scaled score: they come before
/// the bias and every other mod (docs/Dialect.md, step 2).
double softcap(const AttentionProblem &pb, double x) {
  for (const ScoreMod &mod : pb.mods)
    if (mod.kind == ScoreMod::Kind::Softcap)
      x = mod.x * std::tanh(x / mod.x);
  return x;
}

double applyMod(const AttentionProblem &pb, const ScoreMod &mod, double x,
                int64_t h, int64_t r) {
  using K = ScoreMod::Kind;
  switch (mod.kind) {
  case K::Alibi:
    x -= alibiSlope(mod.x, h, pb.queryHeads) * double(std::llabs(r));
    break;
  case K::Softcap:
    break; // applied first, by softcap()
  case K::ShawBias: {
    int64_t k = mod.n, idx = std::clamp<int64_t>(r, -k, k) + k;
    x += pb.relTable[h * (2 * k + 1) + idx];
    break;
  }
  case K::T5Bias:
    x += pb.relTable[h * mod.n + t5Bucket(r, mod.n, mod.m, mod.flag)];
    break;
  case K::DistanceWeight: {
    double w = perHead(mod.perHead, h) * double(std::llabs(r));
    x = std::max(x, 0.0) * (1 + std::exp(mod.x)) / (1 + std::exp(mod.x - w));
    break;
  }
  case K::AdaptiveSpan: {
    double z = perHead(mod.perHead, h), ramp = mod.x;
    double weight =
        std::clamp((ramp + z - double(std::llabs(r))) / ramp, 0.0, 1.0);
    x += std::log(weight); // log(0) = -inf drops the key
    break;
  }
  }
  return x;
}

double applyMods(const AttentionProblem &pb, double x, int64_t h, int64_t r) {
  for (const ScoreMod &mod : pb.mods)
    x = applyMod(pb, mod, x, h, r);
  return x;
}

std::vector<double> attention(const AttentionProblem &pb,
                              std::vector<double> *lse) {
  const int64_t B = pb.batch, Hq = pb.queryHeads, Hkv = pb.keyHeads;
  const int64_t Lq = pb.queryLen, Lk = pb.keyLen, D = pb.headDim,
                Dv = pb.valueDim;
  const int64_t delta =
      (pb.bottomRight ? Lk - Lq : 0) + pb.queryOffset - pb.keyOffset;
  const double negInf = -std::numeric_limits<double>::infinity();
  std::vector<double> out(B * Hq * Lq * Dv, 0.0);
  if (lse)
    lse->assign(B * Hq * Lq, negInf);
  std::vector<double> logits(Lk);
  // Rounding to the type the naive reference computes in, if any.
  auto round = [&](double x) {
    return pb.computeIn ? roundTo(*pb.computeIn, x) : x;
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      int64_t hk = h / (Hq / Hkv);
      const int64_t *qSeg = pb.qSegments ? pb.qSegments + b * Lq : nullptr;
      const int64_t *kSeg = pb.kvSegments ? pb.kvSegments + b * Lk : nullptr;
      for (int64_t i = 0; i < Lq; ++i) {
        const float *q = pb.query + ((b * Hq + h) * Lq + i) * D;
        double maxLogit = negInf;
        bool rowIsNaN = false;
        for (int64_t j = 0; j < Lk; ++j) {
          const float *k = pb.key + ((b * Hkv + hk) * Lk + j) * D;
          double dot = 0;
          for (int64_t c = 0; c < D; ++c)
            dot += double(q[c]) * double(k[c]);
          double x = softcap(pb, pb.scale * round(dot));
          if (pb.bias) {
            int64_t bb = pb.biasBatch == 1 ? 0 : b,
                    bh = pb.biasHeads == 1 ? 0 : h;
            int64_t rows = pb.biasPerKey ? 1 : Lq, bi = pb.biasPerKey ? 0 : i;
            x += pb.bias[((bb * pb.biasHeads + bh) * rows + bi) * Lk + j];
          }
          x = applyMods(pb, x, h, j - (i + delta));
          bool kept = true;
          if (pb.pattern)
            kept = isKept(*pb.pattern, i, j, Lq, Lk, delta, h, qSeg, kSeg);
          kept = kept && pb.maskKeeps(b, h, i, j);
          // The score region, last (on kept logits only: a dropped one's
          // value does not matter, and the region may read out of bounds
          // there).
          if (kept && pb.score)
            x = (*pb.score)(x, b, h, i, j);
          logits[j] = kept ? round(x) : negInf;
          rowIsNaN |= std::isnan(logits[j]);
          maxLogit = std::max(maxLogit, logits[j]);
        }
        double *o = out.data() + ((b * Hq + h) * Lq + i) * Dv;
        if (rowIsNaN) { // a kept NaN score makes the softmax NaN
          std::fill(o, o + Dv, std::numeric_limits<double>::quiet_NaN());
          if (lse)
            (*lse)[(b * Hq + h) * Lq + i] =
                std::numeric_limits<double>::quiet_NaN();
          continue;
        }
        if (maxLogit == negInf)
          continue; // empty row: 0
        // Unnormalized weights in place of the logits (0 where dropped).
        double sum = 0;
        for (int64_t j = 0; j < Lk; ++j) {
          logits[j] = logits[j] == negInf ? 0 : std::exp(logits[j] - maxLogit);
          sum += logits[j];
        }
        if (lse)
          (*lse)[(b * Hq + h) * Lq + i] = maxLogit + std::log(sum);
        for (int64_t j = 0; j < Lk; ++j) {
          if (logits[j] == 0)
            continue;
          double p = round(logits[j] / sum);
          const float *v = pb.value + ((b * Hkv + hk) * Lk + j) * Dv;
          for (int64_t c = 0; c < Dv; ++c)
            o[c] += p * double(v[c]);
        }
        for (int64_t c = 0; c < Dv; ++c)
          o[c] = round(o[c]);
      }
    }
  return out;
}

} // namespace attnrt::reference
