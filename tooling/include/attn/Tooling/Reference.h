//===- Reference.h - plain double-precision attention -----------*- C++ -*-===//
//
// The independent reference every test and `attn-run --check` compares
// against. Written directly from docs/Dialect.md, with no tiling and no code
// shared with the compiler: patterns and mods are plain data here.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TOOLING_REFERENCE_H
#define ATTN_TOOLING_REFERENCE_H

#include "attn/Runtime/HalfFloat.h"
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace attnrt::reference {

/// A mask pattern (docs/Dialect.md, "Mask patterns").
struct Pattern {
  enum class Kind {
    Causal,       // r <= 0
    Window,       // -a <= r <= b
    Dilated,      // window (a, b) and r mod c == 0
    Strided,      // r mod a == 0
    Fixed,        // same block of a, or j mod a >= a - b
    Global,       // p or j in indices
    RandomBlocks, // block a, count b, seed c
    BlockLayout,  // block a, layout[heads, rows, cols]
    Segments,     // q_segments[i] == kv_segments[j]
    Or,
    And
  };
  Kind kind = Kind::Causal;
  int64_t a = 0, b = 0, c = 0;
  std::vector<int64_t> indices;
  std::vector<uint8_t> layout;
  int64_t layoutHeads = 0, layoutRows = 0, layoutCols = 0;
  std::vector<Pattern> members;
};

/// A score mod (docs/Dialect.md, "Score mods").
struct ScoreMod {
  enum class Kind {
    Alibi,          // x: max_bias
    Softcap,        // x: cap
    ShawBias,       // n: max_distance
    T5Bias,         // n: buckets, m: max_distance, flag: bidirectional
    DistanceWeight, // perHead: weights, x: threshold
    AdaptiveSpan    // perHead: spans, x: ramp
  };
  Kind kind = Kind::Alibi;
  double x = 0;
  int64_t n = 0, m = 0;
  bool flag = false;
  std::vector<double> perHead;
};

/// One attn.attention, its sizes and operands (row-major f32 buffers).
/// A custom score region (attn.attention's `score`, docs/Dialect.md) as a
/// function of double precision, applied to the logit after the mods.
struct ScoreFunction {
  /// One read of a captured tensor's element: (tensor, flat index).
  using Read = std::pair<int64_t, int64_t>;
  /// Elements of each captured tensor (in order of first use).
  std::vector<int64_t> capturedSizes;
  /// Their data: set with the operands, or null for a constant's, whose
  /// values are in constantData.
  std::vector<const float *> captured;
  std::vector<std::vector<float>> constantData;
  /// The region's result on x at (b, h, i, j). With shiftRead >= 0 that
  /// read (in program order) sees its element plus `shift`; each read is
  /// appended to `reads` when given. NaN where it cannot be evaluated (an
  /// index out of bounds).
  std::function<double(const ScoreFunction &self, double x, int64_t b,
                       int64_t h, int64_t i, int64_t j, int64_t shiftRead,
                       double shift, std::vector<Read> *reads)>
      evaluate;
  double operator()(double x, int64_t b, int64_t h, int64_t i,
                    int64_t j) const {
    return evaluate(*this, x, b, h, i, j, -1, 0, nullptr);
  }
  const float *data(int64_t tensor) const {
    return captured[tensor] ? captured[tensor] : constantData[tensor].data();
  }
};

struct AttentionProblem {
  int64_t batch = 1, queryHeads = 1, keyHeads = 1;
  int64_t queryLen = 1, keyLen = 1, headDim = 1, valueDim = 1;
  double scale = 1.0;
  bool bottomRight = false;
  /// A block of a larger attention (query_offset / key_offset): query i and
  /// key j sit at positions queryOffset + i and keyOffset + j.
  int64_t queryOffset = 0, keyOffset = 0;
  std::optional<Pattern> pattern;
  std::vector<ScoreMod> mods;
  const float *query = nullptr; // [B, Hq, Lq, D]
  const float *key = nullptr;   // [B, Hkv, Lk, D]
  const float *value = nullptr; // [B, Hkv, Lk, Dv]
  /// Dense mask [maskBatch, maskHeads, Lq, Lk] (sizes 1 broadcast), or
  /// [maskBatch, maskHeads, 1, Lk] with maskPerKey.
  const uint8_t *mask = nullptr;
  int64_t maskBatch = 1, maskHeads = 1;
  bool maskPerKey = false;
  /// Whether the mask (if any) keeps key j for query i of (b, h).
  bool maskKeeps(int64_t b, int64_t h, int64_t i, int64_t j) const {
    if (!mask)
      return true;
    int64_t mb = maskBatch == 1 ? 0 : b, mh = maskHeads == 1 ? 0 : h;
    int64_t rows = maskPerKey ? 1 : queryLen, row = maskPerKey ? 0 : i;
    return mask[((mb * maskHeads + mh) * rows + row) * keyLen + j] != 0;
  }
  /// Dense bias [biasBatch, biasHeads, Lq, Lk] (sizes 1 broadcast), or
  /// [biasBatch, biasHeads, 1, Lk] with biasPerKey.
  const float *bias = nullptr;
  int64_t biasBatch = 1, biasHeads = 1;
  bool biasPerKey = false;
  /// Segment ids [B, Lq] and [B, Lk].
  const int64_t *qSegments = nullptr;
  const int64_t *kvSegments = nullptr;
  /// Relative-position table [Hq, columns].
  const float *relTable = nullptr;
  /// The score region, if any.
  std::optional<ScoreFunction> score;
  /// Set: the naive attention of a framework computing in that type, the
  /// yardstick of 16-bit kernels (docs/Gpu.md, "f16 and bf16"): the
  /// logits S, the probabilities P and the output O are each rounded to
  /// it (dot products and sums are exact, as with wide accumulators).
  std::optional<FloatFormat> computeIn;
};

/// Whether `pattern` keeps key j for query i of `head` (segment ids of the
/// batch row, or null).
bool isKept(const Pattern &pattern, int64_t i, int64_t j, int64_t lq,
            int64_t lk, int64_t delta, int64_t head, const int64_t *qSegments,
            const int64_t *kvSegments);

/// O [B, Hq, Lq, Dv] in double precision; with `lse`, also each row's
/// log-sum-exp of kept scores [B, Hq, Lq] (-inf for a row keeping none).
std::vector<double> attention(const AttentionProblem &problem,
                              std::vector<double> *lse = nullptr);

/// The soft-cap mods on a scaled score x (they come first, step 2 of
/// docs/Dialect.md), and the other mods in order on a logit x of head h at
/// signed distance r = j - p; applyMod applies one (a soft-cap: none).
double softcap(const AttentionProblem &problem, double x);
double applyMods(const AttentionProblem &problem, double x, int64_t h,
                 int64_t r);
double applyMod(const AttentionProblem &problem, const ScoreMod &mod, double x,
                int64_t h, int64_t r);

/// The gradients of attn.attention (ReferenceGradients.cpp): given the
/// output's gradient dO [B, Hq, Lq, Dv], those of Q, K and V, of the bias
/// operand (its own broadcast shape) and of the relative-position table.
struct Gradients {
  std::vector<double> query, key, value, bias, relTable;
  /// One per tensor the score region captures.
  std::vector<std::vector<double>> captured;
};
Gradients attentionGradients(const AttentionProblem &problem,
                             const float *outputGradient);

/// The key blocks BigBird random blocks keep (the documented recipe).
std::vector<int64_t> randomBlocks(int64_t seed, int64_t count, int64_t qb,
                                  int64_t head, int64_t numKeyBlocks);

/// ALiBi slope of head h of n heads.
double alibiSlope(double maxBias, int64_t head, int64_t numHeads);

/// T5 relative-position bucket of distance r = j - p.
int64_t t5Bucket(int64_t r, int64_t buckets, int64_t maxDistance,
                 bool bidirectional);

/// An output held against its reference, the judgement every --check
/// makes: errors scaled by max |ref|, and non-finite values never hidden.
struct Comparison {
  double maxError = 0;     // max |out - ref| where both are finite
  double scale = 0;        // max |ref| over finite ref values
  int64_t mismatches = 0;  // non-finite on one side only, or different
  int64_t finitePairs = 0; // values compared as numbers
  int64_t values = 0;
  double scaledError() const { return scale > 0 ? maxError / scale : maxError; }
  /// An output with no finite value is no pass, even where the reference
  /// is NaN at the same places (poisoned inputs on both sides).
  bool passes(double tolerance) const {
    return mismatches == 0 && scaledError() <= tolerance &&
           (finitePairs > 0 || values == 0);
  }
};

/// Compares out[0, n) with ref[0, n). Where the reference is NaN or
/// infinite the output must be the same (a NaN for a NaN, an infinity of the
/// same sign); a non-finite output against a finite reference counts as a
/// mismatch. (std::max drops NaN: comparing NaN errors would pass them.)
template <typename Out, typename Ref>
Comparison compare(const Out &out, const Ref &ref, size_t n) {
  Comparison c;
  c.values = int64_t(n);
  for (size_t e = 0; e < n; ++e) {
    double o = double(out[e]), r = double(ref[e]);
    if (!std::isfinite(o) || !std::isfinite(r)) {
      bool same = (std::isnan(o) && std::isnan(r)) || o == r;
      c.mismatches += same ? 0 : 1;
      continue;
    }
    c.maxError = std::max(c.maxError, std::abs(o - r));
    c.scale = std::max(c.scale, std::abs(r));
    ++c.finitePairs;
  }
  return c;
}

} // namespace attnrt::reference

#endif // ATTN_TOOLING_REFERENCE_H
