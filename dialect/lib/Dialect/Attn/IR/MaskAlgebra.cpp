//===- MaskAlgebra.cpp - per-element and per-tile mask queries ------------===//
//
// Each pattern answers isKept(i, j) and classifies tiles. Positional
// patterns work on r = j - p, p = i + delta: over a rectangular tile r takes
// every value of the contiguous range [rmin, rmax], which makes their tile
// classification exact with O(1) arithmetic.
//
//===----------------------------------------------------------------------===//
#include "attn/Dialect/Attn/IR/MaskAlgebra.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include <algorithm>
#include <numeric>

using namespace mlir;
using namespace mlir::attn;

StringRef mlir::attn::stringifyTileClass(TileClass cls) {
  switch (cls) {
  case TileClass::Empty:
    return "empty";
  case TileClass::Partial:
    return "partial";
  case TileClass::Full:
    return "full";
  }
  llvm_unreachable("unknown tile class");
}

int64_t mlir::attn::getAlignmentDelta(Alignment align, int64_t lq,
                                      int64_t lk) {
  return align == Alignment::bottom_right ? lk - lq : 0;
}

//===----------------------------------------------------------------------===//
// Arithmetic helpers
//===----------------------------------------------------------------------===//

static int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static int64_t floorMod(int64_t a, int64_t b) { return a - floorDiv(a, b) * b; }

/// Whether [lo, hi] holds a multiple of `step` (> 0).
static bool hasMultipleIn(int64_t lo, int64_t hi, int64_t step) {
  return lo <= hi && floorDiv(hi, step) > floorDiv(lo - 1, step);
}

/// The tile clipped to the score matrix; classification only speaks of
/// elements that exist.
static Tile clip(const Tile &t, const MaskQuery &q) {
  return {std::max<int64_t>(t.i0, 0), std::min(t.i1, q.lq),
          std::max<int64_t>(t.j0, 0), std::min(t.j1, q.lk)};
}

static bool isEmptyTile(const Tile &t) { return t.i0 >= t.i1 || t.j0 >= t.j1; }

namespace {
/// Range of r = j - (i + delta) over a (clipped, non-empty) tile.
struct DistanceRange {
  int64_t min, max;
  DistanceRange(const Tile &t, const MaskQuery &q)
      : min(t.j0 - (t.i1 - 1) - q.delta), max(t.j1 - 1 - t.i0 - q.delta) {}
};
} // namespace

/// Classification from "some kept" / "all kept" facts.
static TileClass classOf(bool anyKept, bool allKept) {
  if (allKept)
    return TileClass::Full;
  return anyKept ? TileClass::Partial : TileClass::Empty;
}

//===----------------------------------------------------------------------===//
// causal, window, dilated, strided
//===----------------------------------------------------------------------===//

bool CausalAttr::isKept(const MaskQuery &q, int64_t i, int64_t j) const {
  return j - i - q.delta <= 0;
}

TileClass CausalAttr::classifyTile(const MaskQuery &q, const Tile &tile) const {
  Tile t = clip(tile, q);
  if (isEmptyTile(t))
    return TileClass::Empty;
  DistanceRange r(t, q);
  return classOf(r.min <= 0, r.max <= 0);
}

bool WindowAttr::isKept(const MaskQuery &q, int64_t i, int64_t j) const {
  int64_t r = j - i - q.delta;
  return r >= -getLeft() && r <= getRight();
}

TileClass WindowAttr::classifyTile(const MaskQuery &q, const Tile &tile) const {
  Tile t = clip(tile, q);
  if (isEmptyTile(t))
    return TileClass::Empty;
  DistanceRange r(t, q);
  return classOf(r.max >= -getLeft() && r.min <= getRight(),
                 r.min >= -getLeft() && r.max <= getRight());
}

bool DilatedAttr::isKept(const MaskQuery &q, int64_t i, int64_t j) const {
  int64_t r = j - i - q.delta;
  return r >= -getLeft() && r <= getRight() &&
         floorMod(r, getDilation()) == 0;
}

TileClass DilatedAttr::classifyTile(const MaskQuery &q, const Tile &tile) const {
  Tile t = clip(tile, q);
  if (isEmptyTile(t))
    return TileClass::Empty;
  DistanceRange r(t, q);
  int64_t lo = std::max(r.min, -getLeft()), hi = std::min(r.max, getRight());
  bool inWindow = r.min >= -getLeft() && r.max <= getRight();
  // Several distances in the tile: all kept only without gaps.
  bool allOnGrid = getDilation() == 1 ||
                   (r.min == r.max && floorMod(r.min, getDilation()) == 0);
  return classOf(hasMultipleIn(lo, hi, getDilation()), inWindow && allOnGrid);
}

bool StridedAttr::isKept(const MaskQuery &q, int64_t i, int64_t j) const {
  return floorMod(j - i - q.delta, getStride()) == 0;
}

TileClass StridedAttr::classifyTile(const MaskQuery &q, const Tile &tile) const {
  Tile t = clip(tile, q);
  if (isEmptyTile(t))
    return TileClass::Empty;
  DistanceRange r(t, q);
  bool all = getStride() == 1 ||
             (r.min == r.max && floorMod(r.min, getStride()) == 0);
  return classOf(hasMultipleIn(r.min, r.max, getStride()), all);
}

//===----------------------------------------------------------------------===//
// fixed (Sparse Transformer)
//===----------------------------------------------------------------------===//

bool FixedAttr::isKept(const MaskQuery &q, int64_t i, int64_t j) const {
  int64_t s = getStride();
  return floorDiv(j, s) == floorDiv(i + q.delta, s) ||
         floorMod(j, s) >= s - getSummary();
}

TileClass FixedAttr::classifyTile(const MaskQuery &q, const Tile &tile) const {
  Tile t = clip(tile, q);
  if (isEmptyTile(t))
    return TileClass::Empty;
  int64_t s = getStride(), c = getSummary();
  int64_t firstSummaryPos = s - c; // within a block
  auto isSummary = [&](int64_t j) { return floorMod(j, s) >= firstSummaryPos; };

  // First and last non-summary columns of [j0, j1), if any.
  int64_t jLast = t.j1 - 1;
  bool hasNonSummary = c < s;
  int64_t firstNS = t.j0, lastNS = jLast;
  if (hasNonSummary) {
    if (isSummary(firstNS))
      firstNS = firstNS - floorMod(firstNS, s) + s;
    if (isSummary(lastNS))
      lastNS = lastNS - floorMod(lastNS, s) + firstSummaryPos - 1;
    hasNonSummary = firstNS <= jLast && lastNS >= t.j0;
  }
  // Whether some column of [j0, j1) is a summary column.
  bool hasSummary = false;
  if (c > 0) {
    int64_t m = floorMod(t.j0, s);
    int64_t firstS = m >= firstSummaryPos ? t.j0 : t.j0 - m + firstSummaryPos;
    hasSummary = firstS <= jLast;
  }

  int64_t pBlock0 = floorDiv(t.i0 + q.delta, s);
  int64_t pBlock1 = floorDiv(t.i1 - 1 + q.delta, s);
  int64_t jBlock0 = floorDiv(t.j0, s), jBlock1 = floorDiv(jLast, s);
  bool blocksOverlap = pBlock0 <= jBlock1 && jBlock0 <= pBlock1;
  bool all = !hasNonSummary ||
             (pBlock0 == pBlock1 && floorDiv(firstNS, s) == pBlock0 &&
              floorDiv(lastNS, s) == pBlock0);
  return classOf(hasSummary || blocksOverlap, all);
}

//===----------------------------------------------------------------------===//
// global
//===----------------------------------------------------------------------===//

static int64_t countInRange(ArrayRef<int64_t> sorted, int64_t lo, int64_t hi) {
  auto begin = std::lower_bound(sorted.begin(), sorted.end(), lo);
  auto end = std::upper_bound(sorted.begin(), sorted.end(), hi);
  return std::max<int64_t>(end - begin, 0);
}

bool GlobalAttr::isKept(const MaskQuery &q, int64_t i, int64_t j) const {
  ArrayRef<int64_t> g = getIndices();
  return std::binary_search(g.begin(), g.end(), i + q.delta) ||
         std::binary_search(g.begin(), g.end(), j);
}

TileClass GlobalAttr::classifyTile(const MaskQuery &q, const Tile &tile) const {
  Tile t = clip(tile, q);
  if (isEmptyTile(t))
    return TileClass::Empty;
  int64_t rows = countInRange(getIndices(), t.i0 + q.delta, t.i1 - 1 + q.delta);
  int64_t cols = countInRange(getIndices(), t.j0, t.j1 - 1);
  // A pair (p, j) is dropped iff neither is global, so the tile is full iff
  // every row or every column is global.
  return classOf(rows > 0 || cols > 0,
                 rows == t.i1 - t.i0 || cols == t.j1 - t.j0);
}

//===----------------------------------------------------------------------===//
// random blocks and block layouts
//===----------------------------------------------------------------------===//

static uint64_t splitmix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

SmallVector<int64_t> mlir::attn::getRandomBlocks(int64_t seed, int64_t count,
                                                 int64_t qb, int64_t head,
                                                 int64_t numKeyBlocks) {
  if (count >= numKeyBlocks) {
    SmallVector<int64_t> blocks(numKeyBlocks);
    std::iota(blocks.begin(), blocks.end(), 0);
    return blocks;
  }
  // Partial Fisher-Yates driven by splitmix64; the exact recipe is part of
  // the dialect's documented semantics (docs/Dialect.md) so that any
  // implementation reproduces the same blocks. Only the swapped positions
  // of the virtual array [0, numKeyBlocks) are stored, so a draw costs
  // O(count) however long the sequence.
  llvm::SmallDenseMap<int64_t, int64_t, 8> swapped;
  auto at = [&](int64_t p) { return swapped.lookup_or(p, p); };
  const uint64_t golden = 0x9e3779b97f4a7c15ULL;
  uint64_t state = static_cast<uint64_t>(seed);
  state = splitmix64(state + golden * static_cast<uint64_t>(qb + 1));
  state = splitmix64(state + 0xd1b54a32d192ed03ULL *
                                 static_cast<uint64_t>(head + 1));
  SmallVector<int64_t> blocks;
  for (int64_t t = 0; t < count; ++t) {
    state = splitmix64(state + golden);
    int64_t pick = t + static_cast<int64_t>(
                           state % static_cast<uint64_t>(numKeyBlocks - t));
    int64_t picked = at(pick);
    swapped[pick] = at(t);
    blocks.push_back(picked);
  }
  llvm::sort(blocks);
  return blocks;
}

bool RandomBlocksAttr::isKept(const MaskQuery &q, int64_t i, int64_t j) const {
  int64_t b = getBlock();
  SmallVector<int64_t> blocks = getRandomBlocks(
      getSeed(), getCount(), i / b, q.head, llvm::divideCeilSigned(q.lk, b));
  return llvm::is_contained(blocks, j / b);
}

TileClass RandomBlocksAttr::classifyTile(const MaskQuery &q,
                                         const Tile &tile) const {
  Tile t = clip(tile, q);
  if (isEmptyTile(t))
    return TileClass::Empty;
  int64_t b = getBlock(), kb0 = t.j0 / b, kb1 = (t.j1 - 1) / b;
  bool any = false, all = true;
  for (int64_t qb = t.i0 / b; qb <= (t.i1 - 1) / b; ++qb) {
    SmallVector<int64_t> blocks = getRandomBlocks(
        getSeed(), getCount(), qb, q.head, llvm::divideCeilSigned(q.lk, b));
    int64_t n = countInRange(blocks, kb0, kb1);
    any |= n > 0;
    all &= n == kb1 - kb0 + 1;
  }
  return classOf(any, all);
}

bool BlockLayoutAttr::isKept(const MaskQuery &q, int64_t i, int64_t j) const {
  return isBlockKept(q.head, i / getBlock(), j / getBlock());
}

TileClass BlockLayoutAttr::classifyTile(const MaskQuery &q, const Tile &tile) const {
  Tile t = clip(tile, q);
  if (isEmptyTile(t))
    return TileClass::Empty;
  int64_t b = getBlock();
  bool any = false, all = true;
  for (int64_t qb = t.i0 / b; qb <= (t.i1 - 1) / b; ++qb)
    for (int64_t kb = t.j0 / b; kb <= (t.j1 - 1) / b; ++kb) {
      bool kept = isBlockKept(q.head, qb, kb);
      any |= kept;
      all &= kept;
    }
  return classOf(any, all);
}

//===----------------------------------------------------------------------===//
// segments
//===----------------------------------------------------------------------===//

bool SegmentsAttr::isKept(const MaskQuery &q, int64_t i, int64_t j) const {
  // Without ids (compile time) nothing can be excluded.
  if (q.qSegments.empty() || q.kvSegments.empty())
    return true;
  return q.qSegments[i] == q.kvSegments[j];
}

TileClass SegmentsAttr::classifyTile(const MaskQuery &q, const Tile &tile) const {
  Tile t = clip(tile, q);
  if (isEmptyTile(t))
    return TileClass::Empty;
  if (q.qSegments.empty() || q.kvSegments.empty())
    return TileClass::Partial;
  llvm::SmallSetVector<int64_t, 8> rowIds, colIds;
  for (int64_t i = t.i0; i < t.i1; ++i)
    rowIds.insert(q.qSegments[i]);
  for (int64_t j = t.j0; j < t.j1; ++j)
    colIds.insert(q.kvSegments[j]);
  bool any = llvm::any_of(rowIds, [&](int64_t id) { return colIds.contains(id); });
  bool all = rowIds.size() == 1 && colIds.size() == 1 &&
             rowIds.front() == colIds.front();
  return classOf(any, all);
}

//===----------------------------------------------------------------------===//
// or / and
//===----------------------------------------------------------------------===//

static auto membersOf(ArrayAttr members) {
  return llvm::map_range(members, [](Attribute a) {
    return cast<MaskAttrInterface>(a);
  });
}

bool OrAttr::isKept(const MaskQuery &q, int64_t i, int64_t j) const {
  return llvm::any_of(membersOf(getMembers()), [&](MaskAttrInterface m) {
    return m.isKept(q, i, j);
  });
}

TileClass OrAttr::classifyTile(const MaskQuery &q, const Tile &tile) const {
  bool anyNonEmpty = false;
  for (MaskAttrInterface m : membersOf(getMembers())) {
    TileClass cls = m.classifyTile(q, tile);
    if (cls == TileClass::Full)
      return TileClass::Full;
    anyNonEmpty |= cls != TileClass::Empty;
  }
  return anyNonEmpty ? TileClass::Partial : TileClass::Empty;
}

bool AndAttr::isKept(const MaskQuery &q, int64_t i, int64_t j) const {
  return llvm::all_of(membersOf(getMembers()), [&](MaskAttrInterface m) {
    return m.isKept(q, i, j);
  });
}

TileClass AndAttr::classifyTile(const MaskQuery &q, const Tile &tile) const {
  bool allFull = true;
  for (MaskAttrInterface m : membersOf(getMembers())) {
    TileClass cls = m.classifyTile(q, tile);
    if (cls == TileClass::Empty)
      return TileClass::Empty;
    allFull &= cls == TileClass::Full;
  }
  return allFull ? TileClass::Full : TileClass::Partial;
}

//===----------------------------------------------------------------------===//
// Simplification
//===----------------------------------------------------------------------===//

/// Whether `mask` keeps every element of every head for fully static shapes.
static bool keepsEverything(MaskAttrInterface mask, const MaskShape &shape,
                            Alignment align) {
  if (ShapedType::isDynamic(shape.lq) || ShapedType::isDynamic(shape.lk) ||
      ShapedType::isDynamic(shape.numHeads) || mask.usesSegments())
    return false;
  if (shape.lq == 0 || shape.lk == 0)
    return false;
  MaskQuery q;
  q.lq = shape.lq;
  q.lk = shape.lk;
  q.delta = getAlignmentDelta(align, shape.lq, shape.lk) + shape.shift;
  for (int64_t h = 0; h < shape.numHeads; ++h) {
    q.head = h;
    if (mask.classifyTile(q, Tile{0, shape.lq, 0, shape.lk}) !=
        TileClass::Full)
      return false;
  }
  return true;
}

MaskAttrInterface mlir::attn::simplifyMask(MaskAttrInterface mask,
                                           const MaskShape &shape,
                                           Alignment align) {
  if (!mask)
    return mask;
  bool isOr = isa<OrAttr>(mask), isAnd = isa<AndAttr>(mask);
  if (!isOr && !isAnd)
    return keepsEverything(mask, shape, align) ? MaskAttrInterface() : mask;

  ArrayAttr members = isOr ? cast<OrAttr>(mask).getMembers()
                           : cast<AndAttr>(mask).getMembers();
  llvm::SetVector<Attribute> flat;
  for (MaskAttrInterface member : membersOf(members)) {
    MaskAttrInterface simple = simplifyMask(member, shape, align);
    if (!simple) {
      if (isOr)
        return {}; // one member keeps everything: so does the union
      continue;    // neutral element of the intersection
    }
    // Same-kind nesting is associative: splice the members in.
    if (isOr && isa<OrAttr>(simple))
      flat.insert_range(cast<OrAttr>(simple).getMembers());
    else if (isAnd && isa<AndAttr>(simple))
      flat.insert_range(cast<AndAttr>(simple).getMembers());
    else
      flat.insert(simple);
  }
  if (flat.empty())
    return {};
  if (flat.size() == 1)
    return cast<MaskAttrInterface>(flat.front());
  MLIRContext *ctx = mask.getContext();
  ArrayAttr newMembers = ArrayAttr::get(ctx, flat.getArrayRef());
  MaskAttrInterface result =
      isOr ? MaskAttrInterface(OrAttr::get(ctx, newMembers))
           : MaskAttrInterface(AndAttr::get(ctx, newMembers));
  return keepsEverything(result, shape, align) ? MaskAttrInterface() : result;
}

bool mlir::attn::dependsOnDistanceOnly(Attribute pattern) {
  if (auto orAttr = dyn_cast<OrAttr>(pattern))
    return llvm::all_of(orAttr.getMembers(), dependsOnDistanceOnly);
  if (auto andAttr = dyn_cast<AndAttr>(pattern))
    return llvm::all_of(andAttr.getMembers(), dependsOnDistanceOnly);
  return isa<CausalAttr, WindowAttr, DilatedAttr, StridedAttr, SegmentsAttr>(
      pattern);
}
