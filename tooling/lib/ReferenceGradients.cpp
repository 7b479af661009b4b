//===- ReferenceGradients.cpp - plain double-precision attention backward -===//
//
// The gradients of attn.attention written from its definition
// (docs/Dialect.md, "Backward"), with no tiling and nothing shared with the
// compiler: per row, the probabilities P of the kept keys, then
//
//   dV[j] += P[i,j] dO[i]              dP[i,j] = dO[i] . V[j]
//   dX[i,j] = P[i,j] (dP[i,j] - sum_k P[i,k] dP[i,k])
//
// and dX (the gradient of a final logit) goes back through the score steps
// in reverse: each mod multiplies it by its derivative (1 for the additive
// ones, relu's step times the factor for distance_weight), a relative-
// position table and the bias operand take the gradient that reaches them,
// the soft-caps multiply by 1 - tanh^2, and dS = scale dX' gives
// dQ[i] += dS K[j], dK[j] += dS Q[i] (summed over the query heads of a KV
// head's group). Dropped keys contribute nothing, whatever their K and V.
// A score region (last on the way forward, first on the way back) is
// differentiated by central differences of its f64 evaluation: with
// respect to its input (dX on to the mods) and to each captured element it
// read (that tensor's gradient) — no derivative rules shared with the
// compiler's.
//
//===----------------------------------------------------------------------===//
#include "attn/Tooling/Reference.h"
#include <algorithm>
#include <cmath>
#include <limits>

namespace attnrt::reference {

namespace {

/// Columns of the relative-position table the problem's mods read.
int64_t relTableColumns(const AttentionProblem &pb) {
  for (const ScoreMod &mod : pb.mods) {
    if (mod.kind == ScoreMod::Kind::ShawBias)
      return 2 * mod.n + 1;
    if (mod.kind == ScoreMod::Kind::T5Bias)
      return mod.n;
  }
  return 0;
}

/// One logit of (h, i, j) on the way forward: the scaled score s, the
/// logit after the soft-caps, and what backward needs of every mod.
struct Logit {
  double x = 0;           // the final logit
  double regionSlope = 1; // d(final logit) / d(logit before the region)
  /// The captured elements the region read and d(final logit) / d(each).
  std::vector<std::pair<ScoreFunction::Read, double>> reads;
  double capSlope = 1;     // d(soft-capped s) / ds
  double modSlope = 1;     // d(final logit) / d(logit after bias)
  int64_t tableIndex = -1; // the table entry a Shaw / T5 mod added
  double tableSlope = 1;   // d(final logit) / d(that entry)
};

/// The region at x, its slope and the slopes of its reads, by central
/// differences (step 1e-6 relative: truncation near 1e-12, rounding near
/// 1e-10 of the slope, far under the checks' 1e-4).
void applyRegion(const ScoreFunction &f, int64_t b, int64_t h, int64_t i,
                 int64_t j, Logit &out) {
  std::vector<ScoreFunction::Read> reads;
  double x = out.x;
  double y = f.evaluate(f, x, b, h, i, j, -1, 0, &reads);
  double step = 1e-6 * std::max(1.0, std::abs(x));
  out.regionSlope = (f.evaluate(f, x + step, b, h, i, j, -1, 0, nullptr) -
                     f.evaluate(f, x - step, b, h, i, j, -1, 0, nullptr)) /
                    (2 * step);
  for (size_t n = 0; n < reads.size(); ++n) {
    double value = f.data(reads[n].first)[reads[n].second];
    double e = 1e-6 * std::max(1.0, std::abs(value));
    double slope = (f.evaluate(f, x, b, h, i, j, n, e, nullptr) -
                    f.evaluate(f, x, b, h, i, j, n, -e, nullptr)) /
                   (2 * e);
    out.reads.push_back({reads[n], slope});
  }
  out.x = y;
}

Logit forwardLogit(const AttentionProblem &pb, double s, double bias, int64_t b,
                   int64_t h, int64_t i, int64_t j, int64_t r) {
  Logit out;
  double x = s;
  for (const ScoreMod &mod : pb.mods)
    if (mod.kind == ScoreMod::Kind::Softcap) {
      double t = std::tanh(x / mod.x);
      out.capSlope *= 1 - t * t;
      x = mod.x * t;
    }
  x += bias;
  // Each mod in order; slopes of the mods after a table entry multiply
  // into its gradient, so they are tracked from where the entry was added.
  int64_t columns = relTableColumns(pb);
  for (const ScoreMod &mod : pb.mods) {
    double slope = 1;
    double before = x;
    x = applyMod(pb, mod, x, h, r);
    switch (mod.kind) {
    case ScoreMod::Kind::DistanceWeight:
      slope = before > 0 ? x / before : 0;
      break;
    case ScoreMod::Kind::ShawBias: {
      int64_t k = mod.n;
      out.tableIndex = h * columns + std::clamp<int64_t>(r, -k, k) + k;
      out.tableSlope = 1;
      break;
    }
    case ScoreMod::Kind::T5Bias:
      out.tableIndex = h * columns + t5Bucket(r, mod.n, mod.m, mod.flag);
      out.tableSlope = 1;
      break;
    default:
      break;
    }
    out.modSlope *= slope;
    if (out.tableIndex >= 0 && mod.kind != ScoreMod::Kind::ShawBias &&
        mod.kind != ScoreMod::Kind::T5Bias)
      out.tableSlope *= slope;
  }
  out.x = x;
  if (pb.score)
    applyRegion(*pb.score, b, h, i, j, out);
  return out;
}

} // namespace

Gradients attentionGradients(const AttentionProblem &pb, const float *dOut) {
  const int64_t B = pb.batch, Hq = pb.queryHeads, Hkv = pb.keyHeads;
  const int64_t Lq = pb.queryLen, Lk = pb.keyLen, D = pb.headDim,
                Dv = pb.valueDim;
  const int64_t delta =
      (pb.bottomRight ? Lk - Lq : 0) + pb.queryOffset - pb.keyOffset;
  const double negInf = -std::numeric_limits<double>::infinity();
  Gradients g;
  g.query.assign(B * Hq * Lq * D, 0.0);
  g.key.assign(B * Hkv * Lk * D, 0.0);
  g.value.assign(B * Hkv * Lk * Dv, 0.0);
  int64_t biasRows = pb.biasPerKey ? 1 : Lq;
  if (pb.bias)
    g.bias.assign(pb.biasBatch * pb.biasHeads * biasRows * Lk, 0.0);
  if (pb.relTable)
    g.relTable.assign(Hq * relTableColumns(pb), 0.0);
  if (pb.score)
    for (int64_t size : pb.score->capturedSizes)
      g.captured.emplace_back(size, 0.0);
  std::vector<Logit> logits(Lk);
  std::vector<uint8_t> kept(Lk);
  std::vector<double> p(Lk), dp(Lk);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      int64_t hk = h / (Hq / Hkv);
      const int64_t *qSeg = pb.qSegments ? pb.qSegments + b * Lq : nullptr;
      const int64_t *kSeg = pb.kvSegments ? pb.kvSegments + b * Lk : nullptr;
      for (int64_t i = 0; i < Lq; ++i) {
        const float *q = pb.query + ((b * Hq + h) * Lq + i) * D;
        const float *dO = dOut + ((b * Hq + h) * Lq + i) * Dv;
        int64_t biasAt = -1;
        double maxLogit = negInf;
        for (int64_t j = 0; j < Lk; ++j) {
          bool keep = !pb.pattern ||
                      isKept(*pb.pattern, i, j, Lq, Lk, delta, h, qSeg, kSeg);
          keep = keep && pb.maskKeeps(b, h, i, j);
          kept[j] = 0;
          if (!keep)
            continue;
          const float *k = pb.key + ((b * Hkv + hk) * Lk + j) * D;
          double dot = 0;
          for (int64_t c = 0; c < D; ++c)
            dot += double(q[c]) * double(k[c]);
          double bias = 0;
          if (pb.bias) {
            int64_t bb = pb.biasBatch == 1 ? 0 : b,
                    bh = pb.biasHeads == 1 ? 0 : h;
            biasAt = ((bb * pb.biasHeads + bh) * biasRows +
                      (pb.biasPerKey ? 0 : i)) *
                     Lk;
            bias = pb.bias[biasAt + j];
          }
          logits[j] = forwardLogit(pb, pb.scale * dot, bias, b, h, i, j,
                                   j - (i + delta));
          // A logit of -inf (an adaptive span's end) drops the key too.
          kept[j] = logits[j].x != negInf;
          if (kept[j])
            maxLogit = std::max(maxLogit, logits[j].x);
        }
        if (maxLogit == negInf)
          continue; // an empty row: output 0, no gradient
        double sum = 0;
        for (int64_t j = 0; j < Lk; ++j)
          if (kept[j])
            sum += p[j] = std::exp(logits[j].x - maxLogit);
        double rowDot = 0; // sum_j P dP = dO . O
        for (int64_t j = 0; j < Lk; ++j) {
          if (!kept[j])
            continue;
          p[j] /= sum;
          const float *v = pb.value + ((b * Hkv + hk) * Lk + j) * Dv;
          double d = 0;
          for (int64_t c = 0; c < Dv; ++c)
            d += double(dO[c]) * double(v[c]);
          dp[j] = d;
          rowDot += p[j] * d;
        }
        double *dq = g.query.data() + ((b * Hq + h) * Lq + i) * D;
        for (int64_t j = 0; j < Lk; ++j) {
          if (!kept[j])
            continue;
          double *dv = g.value.data() + ((b * Hkv + hk) * Lk + j) * Dv;
          for (int64_t c = 0; c < Dv; ++c)
            dv[c] += p[j] * double(dO[c]);
          double dFinal = p[j] * (dp[j] - rowDot);
          const Logit &lg = logits[j];
          for (const auto &[read, slope] : lg.reads)
            g.captured[read.first][read.second] += dFinal * slope;
          double dx = dFinal * lg.regionSlope; // before the region
          if (lg.tableIndex >= 0)
            g.relTable[lg.tableIndex] += dx * lg.tableSlope;
          double dBiased = dx * lg.modSlope; // the logit after the bias
          if (pb.bias)
            g.bias[biasAt + j] += dBiased;
          double ds = dBiased * lg.capSlope * pb.scale;
          const float *k = pb.key + ((b * Hkv + hk) * Lk + j) * D;
          double *dk = g.key.data() + ((b * Hkv + hk) * Lk + j) * D;
          for (int64_t c = 0; c < D; ++c) {
            dq[c] += ds * double(k[c]);
            dk[c] += ds * double(q[c]);
          }
        }
      }
    }
  return g;
}

} // namespace attnrt::reference
