//===- MaskAlgebraTest.cpp - mask algebra vs. brute force -----------------===//
//
// Every tile classification is checked against per-element evaluation of
// isKept over the same tile. Primitive patterns must classify exactly;
// or/and must be sound (Full => all kept, Empty => none kept) and exact on
// the side the algebra promises (or: Empty, and: Full). isKept itself is
// checked against formulas written here from docs/Dialect.md.
//
//===----------------------------------------------------------------------===//
#include "attn/Dialect/Attn/IR/AttnDialect.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Dialect/Attn/IR/MaskAlgebra.h"
#include "attn/Dialect/Attn/IR/TileSchedule.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/AsmParser/AsmParser.h"
#include "gtest/gtest.h"
#include <random>

using namespace mlir;
using namespace mlir::attn;

namespace {

class MaskAlgebraTest : public ::testing::Test {
protected:
  MaskAlgebraTest() { ctx.loadDialect<AttnDialect>(); }

  MaskAttrInterface parse(StringRef text) {
    Attribute attr = parseAttribute(text, &ctx);
    EXPECT_TRUE(attr) << "cannot parse " << text.str();
    auto mask = dyn_cast_or_null<MaskAttrInterface>(attr);
    EXPECT_TRUE(mask) << text.str() << " is not a mask";
    return mask;
  }

  MLIRContext ctx;
};

/// Brute-force class of a tile from isKept.
TileClass bruteForce(MaskAttrInterface mask, const MaskQuery &q,
                     const Tile &t) {
  int64_t kept = 0, total = 0;
  for (int64_t i = std::max<int64_t>(t.i0, 0); i < std::min(t.i1, q.lq); ++i)
    for (int64_t j = std::max<int64_t>(t.j0, 0); j < std::min(t.j1, q.lk);
         ++j) {
      ++total;
      kept += mask.isKept(q, i, j);
    }
  if (total == 0 || kept == 0)
    return TileClass::Empty;
  return kept == total ? TileClass::Full : TileClass::Partial;
}

enum class Exactness { Exact, OrLike, AndLike, Sound };

/// Compares classifyTile with brute force over random tiles (and the tile
/// grid of several tile sizes) for the given sizes and both alignments.
void checkAgainstBruteForce(MaskAttrInterface mask, int64_t lq, int64_t lk,
                            Exactness exactness, int64_t numHeads = 1,
                            ArrayRef<int64_t> qSeg = {},
                            ArrayRef<int64_t> kvSeg = {}) {
  std::mt19937_64 rng(lq * 7919 + lk);
  for (Alignment align : {Alignment::top_left, Alignment::bottom_right}) {
    for (int64_t head = 0; head < numHeads; ++head) {
      MaskQuery q;
      q.lq = lq;
      q.lk = lk;
      q.delta = getAlignmentDelta(align, lq, lk);
      q.head = head;
      q.qSegments = qSeg;
      q.kvSegments = kvSeg;
      SmallVector<Tile> tiles;
      // The full tile grid at small sizes; at large ones the 64-grid (the
      // seams a tiling pass uses) plus random tiles keep the test fast.
      for (int64_t size : {1, 7, 16, 64})
        if (lq * lk <= 10000 || size == 64)
        for (int64_t i0 = 0; i0 < lq; i0 += size)
          for (int64_t j0 = 0; j0 < lk; j0 += size)
            tiles.push_back({i0, i0 + size, j0, j0 + size});
      for (int n = 0; n < 200; ++n) {
        int64_t i0 = rng() % lq, j0 = rng() % lk;
        tiles.push_back({i0, i0 + 1 + int64_t(rng() % 50), j0,
                         j0 + 1 + int64_t(rng() % 50)});
      }
      tiles.push_back({0, lq, 0, lk});
      for (const Tile &t : tiles) {
        TileClass expected = bruteForce(mask, q, t);
        TileClass actual = mask.classifyTile(q, t);
        std::string where;
        llvm::raw_string_ostream os(where);
        os << mask << " lq=" << lq << " lk=" << lk << " delta=" << q.delta
           << " head=" << head << " tile=[" << t.i0 << "," << t.i1 << ")x["
           << t.j0 << "," << t.j1 << ") expected "
           << stringifyTileClass(expected) << " got "
           << stringifyTileClass(actual);
        // Soundness holds for every pattern.
        if (actual == TileClass::Full)
          ASSERT_EQ(expected, TileClass::Full) << where;
        if (actual == TileClass::Empty)
          ASSERT_EQ(expected, TileClass::Empty) << where;
        switch (exactness) {
        case Exactness::Exact:
          ASSERT_EQ(expected, actual) << where;
          break;
        case Exactness::OrLike:
          if (expected == TileClass::Empty)
            ASSERT_EQ(actual, TileClass::Empty) << where;
          break;
        case Exactness::AndLike:
          if (expected == TileClass::Full)
            ASSERT_EQ(actual, TileClass::Full) << where;
          break;
        case Exactness::Sound:
          break;
        }
      }
    }
  }
}

const int64_t kSizes[][2] = {{1, 1}, {1, 97}, {97, 97}, {97, 40}, {33, 130},
                             {1025, 1025}};

TEST_F(MaskAlgebraTest, PrimitivesClassifyExactly) {
  const char *patterns[] = {
      "#attn.causal",
      "#attn.window<left = 0, right = 0>",
      "#attn.window<left = 5, right = 3>",
      "#attn.window<left = 100, right = 0>",
      "#attn.dilated<left = 12, right = 9, dilation = 3>",
      "#attn.dilated<left = 4, right = 4, dilation = 1>",
      "#attn.strided<stride = 1>",
      "#attn.strided<stride = 7>",
      "#attn.fixed<stride = 16, summary = 3>",
      "#attn.fixed<stride = 10, summary = 0>",
      "#attn.fixed<stride = 5, summary = 5>",
      "#attn.fixed<stride = 1, summary = 0>",
      "#attn.global<[0]>",
      "#attn.global<[0, 3, 4, 5, 30, 96]>",
      "#attn.random_blocks<block = 8, count = 2, seed = 7>",
      "#attn.random_blocks<block = 16, count = 100, seed = 1>",
      "#attn.random_blocks<block = 3, count = 0, seed = 1>",
  };
  for (const char *text : patterns) {
    MaskAttrInterface mask = parse(text);
    ASSERT_TRUE(mask);
    for (auto [lq, lk] : kSizes) {
      if (lq * lk > 40000 && llvm::StringRef(text).contains("random"))
        continue; // brute force over random blocks is slow; 97x97 covers it
      checkAgainstBruteForce(mask, lq, lk, Exactness::Exact, /*numHeads=*/2);
      if (HasFatalFailure())
        return;
    }
  }
}

TEST_F(MaskAlgebraTest, BlockLayoutClassifiesExactly) {
  // 2 heads, 97 / 16 -> 7 query blocks, 40 / 16 -> 3 key blocks.
  MaskAttrInterface mask = parse(
      "#attn.block_layout<block = 16, layout = dense<[[[1,0,0],[1,1,0],"
      "[0,1,1],[0,0,1],[1,0,1],[0,0,0],[1,1,1]],[[0,0,1],[0,1,0],[1,0,0],"
      "[1,1,1],[0,0,0],[1,0,1],[0,1,1]]]> : tensor<2x7x3xi1>>");
  ASSERT_TRUE(mask);
  checkAgainstBruteForce(mask, 97, 40, Exactness::Exact, /*numHeads=*/2);
}

TEST_F(MaskAlgebraTest, SegmentsClassifyExactlyWithIds) {
  MaskAttrInterface mask = parse("#attn.segments");
  ASSERT_TRUE(mask);
  SmallVector<int64_t> qSeg, kvSeg;
  for (int64_t i = 0; i < 97; ++i)
    qSeg.push_back(i < 30 ? 0 : (i < 31 ? 1 : 2));
  for (int64_t j = 0; j < 97; ++j)
    kvSeg.push_back(j < 30 ? 0 : (j < 60 ? 2 : 3));
  checkAgainstBruteForce(mask, 97, 97, Exactness::Exact, 1, qSeg, kvSeg);
  // Without ids nothing is known at compile time.
  MaskQuery q{97, 97, 0, 0, {}, {}};
  EXPECT_EQ(mask.classifyTile(q, {0, 16, 0, 16}), TileClass::Partial);
}

TEST_F(MaskAlgebraTest, CompositionsAreSound) {
  // Longformer, BigBird and the Sparse Transformer's strided pattern.
  const char *unions[] = {
      "#attn.or<[#attn.window<left = 8, right = 8>, #attn.global<[0, 50]>]>",
      ("#attn.or<[#attn.window<left = 8, right = 8>, #attn.global<[0]>, "
       "#attn.random_blocks<block = 8, count = 2, seed = 3>]>"),
      ("#attn.or<[#attn.window<left = 3, right = 0>, "
       "#attn.window<left = 0, right = 3>]>"),
  };
  for (const char *text : unions)
    for (auto [lq, lk] : {std::pair<int64_t, int64_t>{97, 97}, {33, 130}})
      checkAgainstBruteForce(parse(text), lq, lk, Exactness::OrLike);
  // A nested union is not exact about Full, so neither is its intersection:
  // only soundness is promised.
  checkAgainstBruteForce(
      parse("#attn.and<[#attn.causal, #attn.or<[#attn.window<left = 6, right "
            "= 0>, #attn.strided<stride = 7>]>]>"),
      97, 97, Exactness::Sound);
  const char *intersections[] = {
      "#attn.and<[#attn.causal, #attn.window<left = 20, right = 20>]>",
      "#attn.and<[#attn.causal, #attn.fixed<stride = 16, summary = 2>]>",
  };
  for (const char *text : intersections)
    for (auto [lq, lk] : {std::pair<int64_t, int64_t>{97, 97}, {33, 130}})
      checkAgainstBruteForce(parse(text), lq, lk, Exactness::AndLike);
}

TEST_F(MaskAlgebraTest, IsKeptMatchesDocumentedFormulas) {
  // Formulas from docs/Dialect.md, written independently of MaskAlgebra.cpp.
  auto fdiv = [](int64_t a, int64_t b) {
    return static_cast<int64_t>(std::floor(double(a) / double(b)));
  };
  MaskAttrInterface causal = parse("#attn.causal");
  MaskAttrInterface window = parse("#attn.window<left = 4, right = 2>");
  MaskAttrInterface dilated =
      parse("#attn.dilated<left = 9, right = 6, dilation = 3>");
  MaskAttrInterface strided = parse("#attn.strided<stride = 5>");
  MaskAttrInterface fixed = parse("#attn.fixed<stride = 8, summary = 2>");
  MaskAttrInterface global = parse("#attn.global<[2, 9]>");
  for (int64_t lq : {13, 40}) {
    int64_t lk = 29;
    for (Alignment align : {Alignment::top_left, Alignment::bottom_right}) {
      int64_t delta = align == Alignment::bottom_right ? lk - lq : 0;
      MaskQuery q{lq, lk, delta, 0, {}, {}};
      for (int64_t i = 0; i < lq; ++i)
        for (int64_t j = 0; j < lk; ++j) {
          int64_t p = i + delta, r = j - p;
          EXPECT_EQ(causal.isKept(q, i, j), j <= p);
          EXPECT_EQ(window.isKept(q, i, j), r >= -4 && r <= 2);
          EXPECT_EQ(dilated.isKept(q, i, j),
                    r >= -9 && r <= 6 && ((r % 3) + 3) % 3 == 0);
          EXPECT_EQ(strided.isKept(q, i, j), ((r % 5) + 5) % 5 == 0);
          EXPECT_EQ(fixed.isKept(q, i, j),
                    fdiv(j, 8) == fdiv(p, 8) || j % 8 >= 6);
          EXPECT_EQ(global.isKept(q, i, j),
                    p == 2 || p == 9 || j == 2 || j == 9);
        }
    }
  }
}

TEST_F(MaskAlgebraTest, RandomBlocksAreReproducibleAndDistinct) {
  for (int64_t qb = 0; qb < 20; ++qb) {
    SmallVector<int64_t> a = getRandomBlocks(42, 3, qb, 1, 16);
    SmallVector<int64_t> b = getRandomBlocks(42, 3, qb, 1, 16);
    EXPECT_EQ(a, b);
    ASSERT_EQ(a.size(), 3u);
    EXPECT_TRUE(a[0] < a[1] && a[1] < a[2]);
    EXPECT_GE(a[0], 0);
    EXPECT_LT(a[2], 16);
  }
  // Different seeds and heads give different draws somewhere.
  bool seedDiffers = false, headDiffers = false;
  for (int64_t qb = 0; qb < 20; ++qb) {
    seedDiffers |= getRandomBlocks(42, 3, qb, 0, 64) !=
                   getRandomBlocks(43, 3, qb, 0, 64);
    headDiffers |= getRandomBlocks(42, 3, qb, 0, 64) !=
                   getRandomBlocks(42, 3, qb, 1, 64);
  }
  EXPECT_TRUE(seedDiffers);
  EXPECT_TRUE(headDiffers);
  // count >= blocks keeps every block.
  EXPECT_EQ(getRandomBlocks(1, 9, 0, 0, 4), (SmallVector<int64_t>{0, 1, 2, 3}));
}

TEST_F(MaskAlgebraTest, SimplifyFlattensAndDropsWhatKeepsEverything) {
  MaskShape shape{64, 64, 4};
  // Nested or flattens, duplicates go.
  MaskAttrInterface nested = parse(
      "#attn.or<[#attn.causal, #attn.or<[#attn.strided<stride = 4>, "
      "#attn.causal]>]>");
  EXPECT_EQ(simplifyMask(nested, shape, Alignment::top_left),
            parse("#attn.or<[#attn.causal, #attn.strided<stride = 4>]>"));
  // A window wider than the sequence keeps everything.
  EXPECT_FALSE(simplifyMask(parse("#attn.window<left = 63, right = 63>"),
                            shape, Alignment::top_left));
  EXPECT_TRUE(simplifyMask(parse("#attn.window<left = 62, right = 63>"),
                           shape, Alignment::top_left));
  // ... but not when the shape is unknown.
  EXPECT_TRUE(simplifyMask(parse("#attn.window<left = 63, right = 63>"),
                           MaskShape{}, Alignment::top_left));
  // In an intersection the neutral member disappears; a singleton unwraps.
  EXPECT_EQ(simplifyMask(parse("#attn.and<[#attn.causal, #attn.window<left = "
                               "100, right = 100>]>"),
                         shape, Alignment::top_left),
            parse("#attn.causal"));
  // In a union it swallows everything.
  EXPECT_FALSE(simplifyMask(parse("#attn.or<[#attn.causal, #attn.strided<"
                                  "stride = 1>]>"),
                            shape, Alignment::top_left));
}

/// The schedule lists exactly the tiles that keep something, in key order,
/// and a tile listed Full keeps everything.
void checkSchedule(MaskAttrInterface mask, int64_t lq, int64_t lk,
                   QueryTiling tiling, int64_t keyTile, int64_t numHeads = 1) {
  for (Alignment align : {Alignment::top_left, Alignment::bottom_right}) {
    for (int64_t head = 0; head < numHeads; ++head) {
      MaskQuery q;
      q.lq = lq;
      q.lk = lk;
      q.delta = getAlignmentDelta(align, lq, lk);
      q.head = head;
      TileSchedule s = buildTileSchedule(mask, q, tiling, keyTile);
      ASSERT_EQ(s.rowStart.size(), size_t(s.numQueryTiles + 1));
      // The query tiles cover every row once.
      int64_t covered = 0;
      for (int64_t qt = 0; qt < s.numQueryTiles; ++qt) {
        auto [i0, i1] = tiling.rows(qt, lq);
        ASSERT_EQ(i0, std::min(covered, lq));
        ASSERT_LE(i1 - i0, tiling.tile);
        if (tiling.period && i1 > i0)
          ASSERT_EQ(i0 / tiling.period, (i1 - 1) / tiling.period);
        covered = std::max(covered, i1);
        SmallVector<int64_t> expected;
        for (int64_t kt = 0; kt < s.numKeyTiles && i0 < i1; ++kt)
          if (bruteForce(mask, q,
                         {i0, i1, kt * keyTile, (kt + 1) * keyTile}) !=
              TileClass::Empty)
            expected.push_back(kt);
        ArrayRef<int64_t> listed(s.keyTiles.begin() + s.rowStart[qt],
                                 s.keyTiles.begin() + s.rowStart[qt + 1]);
        std::string where;
        llvm::raw_string_ostream os(where);
        os << mask << " lq=" << lq << " lk=" << lk << " delta=" << q.delta
           << " head=" << head << " query tile " << qt;
        ASSERT_EQ(listed, ArrayRef<int64_t>(expected)) << where;
        for (int64_t e = s.rowStart[qt]; e < s.rowStart[qt + 1]; ++e)
          if (s.classes[e] == TileClass::Full) {
            int64_t kt = s.keyTiles[e];
            ASSERT_EQ(bruteForce(mask, q,
                                 {i0, i1, kt * keyTile, (kt + 1) * keyTile}),
                      TileClass::Full)
                << where << " key tile " << kt;
          }
      }
      ASSERT_EQ(covered, lq);
    }
  }
}

TEST_F(MaskAlgebraTest, SchedulesListExactlyTheNonEmptyTiles) {
  const char *patterns[] = {
      "#attn.causal",
      "#attn.window<left = 100, right = 37>",
      "#attn.dilated<left = 40, right = 40, dilation = 3>",
      "#attn.and<[#attn.causal, #attn.or<[#attn.window<left = 31, right = "
      "0>, #attn.strided<stride = 32>]>]>",
      "#attn.and<[#attn.causal, #attn.fixed<stride = 50, summary = 5>]>",
      "#attn.or<[#attn.window<left = 16, right = 16>, #attn.global<[0, 1, "
      "200]>]>",
      "#attn.or<[#attn.window<left = 8, right = 8>, #attn.random_blocks<block "
      "= 16, count = 2, seed = 3>]>",
      "#attn.and<[#attn.window<left = 40, right = 40>, #attn.strided<stride "
      "= 30>]>",
  };
  for (const char *text : patterns) {
    MaskAttrInterface mask = parse(text);
    for (auto [lq, lk] : {std::pair<int64_t, int64_t>{97, 97}, {300, 300},
                          {37, 250}})
      for (auto [tiling, tk] :
           {std::pair<QueryTiling, int64_t>{{24, 0}, 128}, {{64, 0}, 64},
            {{24, 0}, 16}, {{24, 64}, 64}, {{24, 40}, 16}})
        checkSchedule(mask, lq, lk, tiling, tk, /*numHeads=*/2);
  }
  // Without a pattern every tile is listed, full.
  MaskQuery q;
  q.lq = 100;
  q.lk = 70;
  TileSchedule all = buildTileSchedule({}, q, QueryTiling{24, 0}, 32);
  EXPECT_EQ(all.numVisited(), all.numTotal());
  EXPECT_EQ(all.numFull(), all.numTotal());
}

TEST_F(MaskAlgebraTest, SchedulesDecideIntersectionsElementWise) {
  // classifyTile cannot tell that a window corner holds no multiple of the
  // stride; the schedule must (else such tiles would run for nothing).
  MaskAttrInterface mask = parse("#attn.and<[#attn.window<left = 40, right = "
                                 "40>, #attn.strided<stride = 30>]>");
  MaskQuery q;
  q.lq = q.lk = 300;
  bool undecided = false;
  for (int64_t i0 = 0; i0 < 300; i0 += 24)
    for (int64_t j0 = 0; j0 < 300; j0 += 16) {
      Tile t{i0, i0 + 24, j0, j0 + 16};
      undecided |= mask.classifyTile(q, t) == TileClass::Partial &&
                   bruteForce(mask, q, t) == TileClass::Empty;
    }
  EXPECT_TRUE(undecided) << "the case this test is about does not occur";
  checkSchedule(mask, 300, 300, QueryTiling{24, 0}, 16);
}

} // namespace
