//===- MaskSvg.cpp - draw the tile classification of a mask ---------------===//
//
// Rows are query tiles, columns key tiles. Runs of equal cells in a row are
// drawn as one rectangle, so the picture stays small for long sequences
// (its size grows with the visited tiles, like the kernel's work).
//
//===----------------------------------------------------------------------===//
#include "MaskSvg.h"
#include "attn/Dialect/Attn/IR/MaskAlgebra.h"
#include "llvm/Support/FormatVariadic.h"
#include <algorithm>

using namespace mlir;
using namespace mlir::attn;

static const char *colorOf(TileClass cls) {
  switch (cls) {
  case TileClass::Full:
    return "#1f4e79";
  case TileClass::Partial:
    return "#7fb3d5";
  case TileClass::Empty:
    return "#ffffff";
  }
  return "#ffffff";
}

/// XML-escapes `text`.
static std::string escape(StringRef text) {
  std::string out;
  for (char c : text) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

LogicalResult attnspec::writeMaskSvg(AttentionOp op, QueryTiling queryTiling,
                                     int64_t keyTile, int64_t head,
                                     llvm::raw_ostream &os) {
  MaskShape shape = op.getMaskShape();
  if (ShapedType::isDynamic(shape.lq) || ShapedType::isDynamic(shape.lk))
    return op.emitError("--emit=mask-svg needs static sequence lengths");
  if (!ShapedType::isDynamic(shape.numHeads) &&
      (head < 0 || head >= shape.numHeads))
    return op.emitError() << "--head=" << head << " is not a head of this op ("
                          << shape.numHeads << " heads)";
  MaskQuery q;
  q.lq = shape.lq;
  q.lk = shape.lk;
  q.delta =
      getAlignmentDelta(op.getAlignment(), shape.lq, shape.lk) + shape.shift;
  q.head = head;
  MaskAttrInterface pattern = op.getPatternAttr();
  // One SVG element per visited tile: beyond a million it is no picture.
  TileSchedule s =
      buildTileSchedule(pattern, q, queryTiling, keyTile, int64_t(1) << 20);
  if (!s.complete)
    return op.emitError() << "--emit=mask-svg: more than 2^20 key tiles to "
                             "draw; use shorter lengths";

  // Cells of at most 16 px, the whole grid within about 800 px.
  double cell = std::min(
      16.0, 800.0 / double(std::max<int64_t>(
                        {s.numQueryTiles, s.numKeyTiles, int64_t(1)})));
  double width = cell * s.numKeyTiles, height = cell * s.numQueryTiles;
  double top = 64, left = 8;
  std::string title;
  llvm::raw_string_ostream titleOs(title);
  if (pattern)
    titleOs << pattern;
  else
    titleOs << "dense";
  os << llvm::formatv(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" "
      "height=\"{1}\" font-family=\"sans-serif\" font-size=\"12\">\n",
      std::max(width + 2 * left, 420.0), height + top + 8);
  if (title.size() > 160)
    title = title.substr(0, 157) + "...";
  os << llvm::formatv("<text x=\"{0}\" y=\"16\">{1}</text>\n", left,
                      escape(title));
  os << llvm::formatv(
      "<text x=\"{0}\" y=\"34\">Lq {1}, Lk {2}, head {3}; tiles {4} x {5}: "
      "{6} of {7} visited ({8} full, {9} partial)</text>\n",
      left, shape.lq, shape.lk, head, queryTiling.tile, keyTile, s.numVisited(),
      s.numTotal(), s.numFull(), s.numVisited() - s.numFull());
  os << llvm::formatv(
      "<text x=\"{0}\" y=\"52\"><tspan fill=\"{1}\">&#9632; full</tspan>  "
      "<tspan fill=\"{2}\">&#9632; partial (masked per element{3})</tspan>  "
      "&#9633; skipped</text>\n",
      left, colorOf(TileClass::Full), colorOf(TileClass::Partial),
      pattern && pattern.usesSegments() ? "; segment ids are run-time" : "");
  os << llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" height=\"{3}\" "
                      "fill=\"#ffffff\" stroke=\"#888888\"/>\n",
                      left, top, width, height);
  for (int64_t qt = 0; qt < s.numQueryTiles; ++qt) {
    int64_t e = s.rowStart[qt], end = s.rowStart[qt + 1];
    while (e < end) {
      // A run of consecutive key tiles of one class.
      int64_t first = e;
      while (e + 1 < end && s.keyTiles[e + 1] == s.keyTiles[e] + 1 &&
             s.classes[e + 1] == s.classes[first])
        ++e;
      os << llvm::formatv(
          "<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" height=\"{3}\" "
          "fill=\"{4}\"/>\n",
          left + cell * s.keyTiles[first], top + cell * qt,
          cell * (s.keyTiles[e] - s.keyTiles[first] + 1), cell,
          colorOf(s.classes[first]));
      ++e;
    }
  }
  os << "</svg>\n";
  return success();
}
