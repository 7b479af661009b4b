//===- ContextParallelTest.cpp - layouts and the exact merge --------------===//
//
// The pieces of context parallelism that need no second process: how the
// layouts split a sequence, and the merge of partial (O, lse) results,
// checked against the f64 reference of the whole attention (the partial
// results are the reference's own over key ranges, placed with key
// offsets, so a merge that is not exact shows up at 1e-6).
//
//===----------------------------------------------------------------------===//
#include "attn/Runtime/ContextParallel.h"
#include "attn/Tooling/Reference.h"
#include "gtest/gtest.h"
#include <cmath>
#include <random>

using namespace attnrt;

TEST(ContextParallel, LayoutsCoverEveryTokenOnce) {
  for (SequenceLayout layout :
       {SequenceLayout::Contiguous, SequenceLayout::Zigzag})
    for (int ranks : {1, 2, 3, 4, 7})
      for (int64_t tokens : {int64_t(ranks) * 2, int64_t(97), int64_t(1001)}) {
        std::vector<int> owner(tokens, -1);
        int64_t most = 0, least = tokens;
        for (int r = 0; r < ranks; ++r) {
          int64_t rows = 0;
          for (const TokenChunk &c : rankChunks(layout, tokens, ranks, r)) {
            for (int64_t t = c.start; t < c.end(); ++t) {
              ASSERT_EQ(owner[t], -1) << "token " << t << " owned twice";
              owner[t] = r;
            }
            rows += c.length;
          }
          most = std::max(most, rows);
          least = std::min(least, rows);
        }
        for (int64_t t = 0; t < tokens; ++t)
          ASSERT_NE(owner[t], -1) << "token " << t << " owned by nobody";
        // Near-equal shares: chunks differ by at most one token.
        EXPECT_LE(most - least, layout == SequenceLayout::Zigzag ? 2 : 1);
      }
  // Zigzag: rank r holds chunks r and 2P - 1 - r.
  std::vector<TokenChunk> chunks = rankChunks(SequenceLayout::Zigzag, 80, 4, 1);
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[0].start, 10);
  EXPECT_EQ(chunks[1].start, 60);
}

TEST(ContextParallel, MergeOfKeyRangesIsTheWholeAttention) {
  const int64_t Hq = 2, L = 37, D = 8, Dv = 5;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<float> q(Hq * L * D), k(Hq * L * D), v(Hq * L * Dv);
  for (auto *data : {&q, &k, &v})
    for (float &x : *data)
      x = 3 * normal(rng); // large logits: the weights differ a lot
  reference::AttentionProblem whole;
  whole.queryHeads = whole.keyHeads = Hq;
  whole.queryLen = whole.keyLen = L;
  whole.headDim = D;
  whole.valueDim = Dv;
  whole.scale = 1.0 / std::sqrt(double(D));
  whole.pattern = reference::Pattern{reference::Pattern::Kind::Causal};
  whole.query = q.data();
  whole.key = k.data();
  whole.value = v.data();
  std::vector<double> expected = reference::attention(whole);

  // Keys [0, 11), [11, 30), [30, 37) as three blocks at their offsets.
  std::vector<float> o(Hq * L * Dv, 0.0f),
      lse(Hq * L, -std::numeric_limits<float>::infinity());
  for (auto [start, end] :
       {std::pair<int64_t, int64_t>{11, 30}, {0, 11}, {30, 37}}) {
    reference::AttentionProblem part = whole;
    part.keyLen = end - start;
    part.keyOffset = start;
    std::vector<float> kPart, vPart;
    for (int64_t h = 0; h < Hq; ++h) {
      kPart.insert(kPart.end(), k.begin() + (h * L + start) * D,
                   k.begin() + (h * L + end) * D);
      vPart.insert(vPart.end(), v.begin() + (h * L + start) * Dv,
                   v.begin() + (h * L + end) * Dv);
    }
    part.key = kPart.data();
    part.value = vPart.data();
    std::vector<double> partLse;
    std::vector<double> partOut = reference::attention(part, &partLse);
    std::vector<float> oPart(partOut.begin(), partOut.end()),
        lsePart(partLse.begin(), partLse.end());
    mergeAttentionPartial(o.data(), lse.data(), oPart.data(), lsePart.data(),
                          Hq * L, Dv);
  }
  for (size_t e = 0; e < expected.size(); ++e)
    ASSERT_NEAR(o[e], expected[e], 1e-5) << "element " << e;
}
