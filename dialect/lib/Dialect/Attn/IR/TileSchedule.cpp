//===- TileSchedule.cpp - the non-empty tiles of a mask pattern -----------===//
//
// classifyTile is exact about emptiness for every primitive pattern and for
// unions; an intersection of partial members may still be empty, so those
// tiles are decided by isKept, stopping at the first kept element.
//
//===----------------------------------------------------------------------===//
#include "attn/Dialect/Attn/IR/TileSchedule.h"
#include <functional>

using namespace mlir;
using namespace mlir::attn;

void mlir::attn::walkMask(MaskAttrInterface pattern,
                          function_ref<void(MaskAttrInterface)> fn) {
  if (!pattern)
    return;
  fn(pattern);
  ArrayAttr members;
  if (auto orAttr = dyn_cast<OrAttr>(pattern))
    members = orAttr.getMembers();
  else if (auto andAttr = dyn_cast<AndAttr>(pattern))
    members = andAttr.getMembers();
  if (members)
    for (Attribute member : members)
      walkMask(cast<MaskAttrInterface>(member), fn);
}

bool mlir::attn::dependsOnHead(MaskAttrInterface pattern) {
  bool depends = false;
  walkMask(pattern, [&](MaskAttrInterface m) {
    if (isa<RandomBlocksAttr>(m))
      depends = true;
    if (auto layout = dyn_cast<BlockLayoutAttr>(m))
      depends |= layout.getLayout().getType().getDimSize(0) > 1;
  });
  return depends;
}

/// Whether some element of the (clipped) tile is kept.
static bool keepsSomething(MaskAttrInterface pattern, const MaskQuery &q,
                           const Tile &t) {
  for (int64_t i = t.i0; i < t.i1; ++i)
    for (int64_t j = t.j0; j < t.j1; ++j)
      if (pattern.isKept(q, i, j))
        return true;
  return false;
}

TileSchedule mlir::attn::buildTileSchedule(MaskAttrInterface pattern,
                                           const MaskQuery &q,
                                           QueryTiling queryTiling,
                                           int64_t keyTile,
                                           int64_t maxEntries) {
  TileSchedule s;
  s.queryTiling = queryTiling;
  s.keyTile = keyTile;
  s.numQueryTiles = queryTiling.numTiles(q.lq);
  s.numKeyTiles = llvm::divideCeil(q.lk, keyTile);
  bool hasIntersection = false;
  walkMask(pattern,
           [&](MaskAttrInterface m) { hasIntersection |= isa<AndAttr>(m); });
  s.rowStart.push_back(0);
  if (s.numQueryTiles > maxEntries) {
    s.complete = false;
    return s;
  }
  for (int64_t qt = 0; qt < s.numQueryTiles; ++qt) {
    std::pair<int64_t, int64_t> rows = queryTiling.rows(qt, q.lq);
    int64_t i0 = rows.first, i1 = rows.second;
    if (i0 < i1)
      s.totalTiles += s.numKeyTiles;
    // Bisects the key tiles [kt0, kt1): an empty span is skipped whole and
    // a full one listed whole, so building costs O(visited * log(tiles)),
    // not O(tiles), for long sequences.
    std::function<void(int64_t, int64_t)> visit = [&](int64_t kt0,
                                                      int64_t kt1) {
      Tile span{i0, i1, kt0 * keyTile, std::min(q.lk, kt1 * keyTile)};
      TileClass cls = pattern ? pattern.classifyTile(q, span) : TileClass::Full;
      if (cls == TileClass::Empty || !s.complete)
        return;
      if (int64_t(s.keyTiles.size()) + (kt1 - kt0) > maxEntries &&
          (cls == TileClass::Full || kt1 - kt0 == 1)) {
        s.complete = false;
        return;
      }
      if (cls == TileClass::Full || kt1 - kt0 == 1) {
        if (cls == TileClass::Partial && hasIntersection &&
            !keepsSomething(pattern, q, span))
          return;
        for (int64_t kt = kt0; kt < kt1; ++kt) {
          s.keyTiles.push_back(kt);
          s.classes.push_back(cls);
        }
        return;
      }
      int64_t mid = kt0 + (kt1 - kt0) / 2;
      visit(kt0, mid);
      visit(mid, kt1);
    };
    if (s.numKeyTiles > 0 && i0 < i1)
      visit(0, s.numKeyTiles);
    if (!s.complete)
      return s;
    s.rowStart.push_back(s.keyTiles.size());
  }
  return s;
}

std::vector<std::vector<int32_t>>
mlir::attn::scheduleLists(const TileSchedule &schedule, bool byKey) {
  std::vector<std::vector<int32_t>> lists(byKey ? schedule.numKeyTiles
                                                : schedule.numQueryTiles);
  for (int64_t t = 0; t < schedule.numQueryTiles; ++t)
    for (int64_t e = schedule.rowStart[t]; e < schedule.rowStart[t + 1]; ++e) {
      int32_t full = schedule.classes[e] == TileClass::Full ? 1 : 0;
      int64_t keyTile = schedule.keyTiles[e];
      if (byKey)
        lists[keyTile].push_back(int32_t(t * 2 + full));
      else
        lists[t].push_back(int32_t(keyTile * 2 + full));
    }
  return lists;
}
