//===- MaskCodegen.cpp - mask patterns as run-time arithmetic -------------===//
//
// The IR counterpart of MaskAlgebra.cpp's isKept / classifyTile for the
// patterns that lowerings evaluate at run time. Positional patterns work on
// r = j - (i + delta); `r mod s == 0` is tested as `remsi(r, s) == 0`, which
// does not depend on the sign convention of the remainder.
//
//===----------------------------------------------------------------------===//
#include "attn/Transforms/MaskCodegen.h"
#include "attn/Dialect/Attn/IR/MaskAlgebra.h"
#include "attn/Dialect/Attn/IR/TileSchedule.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::attn;

bool mlir::attn::isMaskCodegenSupported(MaskAttrInterface pattern,
                                        const MaskShape &shape,
                                        bool withTensors,
                                        std::string &reason) {
  if (isa<OrAttr, AndAttr>(pattern)) {
    ArrayAttr members = isa<OrAttr>(pattern)
                            ? cast<OrAttr>(pattern).getMembers()
                            : cast<AndAttr>(pattern).getMembers();
    return llvm::all_of(members, [&](Attribute m) {
      return isMaskCodegenSupported(cast<MaskAttrInterface>(m), shape,
                                    withTensors, reason);
    });
  }
  if (isa<CausalAttr, WindowAttr, DilatedAttr, StridedAttr, FixedAttr,
          GlobalAttr>(pattern))
    return true;
  bool staticShape = !ShapedType::isDynamic(shape.lq) &&
                     !ShapedType::isDynamic(shape.lk) &&
                     !ShapedType::isDynamic(shape.numHeads);
  if (withTensors && (isa<SegmentsAttr, BlockLayoutAttr>(pattern) ||
                      (isa<RandomBlocksAttr>(pattern) && staticShape)))
    return true;
  llvm::raw_string_ostream os(reason);
  os << "pattern " << pattern << " is not supported by this lowering yet";
  if (isa<RandomBlocksAttr>(pattern) && withTensors)
    os << " (random blocks need static lengths and head count)";
  return false;
}

bool mlir::attn::positionsFitInI32(MaskAttrInterface pattern,
                                   const MaskShape &shape) {
  constexpr int64_t kLimit = int64_t(1) << 30;
  auto fits = [&](int64_t v) { return v > -kLimit && v < kLimit; };
  if (ShapedType::isDynamic(shape.lq) || ShapedType::isDynamic(shape.lk) ||
      !fits(shape.lq) || !fits(shape.lk) || !fits(shape.shift))
    return false;
  if (!pattern)
    return true;
  bool all = true;
  walkMask(pattern, [&](MaskAttrInterface m) {
    if (auto w = dyn_cast<WindowAttr>(m))
      all &= fits(w.getLeft()) && fits(w.getRight());
    else if (auto d = dyn_cast<DilatedAttr>(m))
      all &= fits(d.getLeft()) && fits(d.getRight()) && fits(d.getDilation());
    else if (auto s = dyn_cast<StridedAttr>(m))
      all &= fits(s.getStride());
    else if (auto f = dyn_cast<FixedAttr>(m))
      all &= fits(f.getStride()) && fits(f.getSummary());
    else if (auto g = dyn_cast<GlobalAttr>(m))
      all &= llvm::all_of(g.getIndices(), fits);
  });
  return all;
}

/// `table[indices]` of a constant i1 tensor holding `bits`.
static Value lookupBits(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                        ArrayRef<bool> bits, ValueRange indices) {
  auto type = RankedTensorType::get(shape, b.getI1Type());
  Value table = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, bits));
  return tensor::ExtractOp::create(b, loc, table, indices);
}

namespace {
/// Small arithmetic vocabulary on `index` values, or on vectors of
/// integers (`lanes` > 0, elements `element`: index or i32) so that kernels
/// can evaluate a pattern for many queries at once.
struct IndexMath {
  OpBuilder &b;
  Location loc;
  int64_t lanes = 0;
  Type element = b.getIndexType();

  Value cst(int64_t v) {
    if (!lanes)
      return arith::ConstantIndexOp::create(b, loc, v);
    auto type = VectorType::get({lanes}, element);
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, b.getIntegerAttr(element, v)));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
  Value sle(Value x, Value y) { return cmp(arith::CmpIPredicate::sle, x, y); }
  Value sge(Value x, Value y) { return cmp(arith::CmpIPredicate::sge, x, y); }
  Value slt(Value x, Value y) { return cmp(arith::CmpIPredicate::slt, x, y); }
  Value sgt(Value x, Value y) { return cmp(arith::CmpIPredicate::sgt, x, y); }
  Value eq(Value x, Value y) { return cmp(arith::CmpIPredicate::eq, x, y); }
  Value both(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  Value either(Value x, Value y) { return arith::OrIOp::create(b, loc, x, y); }
  Value boolean(bool v) {
    if (!lanes)
      return arith::ConstantIntOp::create(b, loc, v ? 1 : 0, 1);
    auto type = VectorType::get({lanes}, b.getI1Type());
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, b.getBoolAttr(v)));
  }
  Value divisible(Value x, int64_t step) {
    return eq(arith::RemSIOp::create(b, loc, x, cst(step)), cst(0));
  }
  Value floorDiv(Value x, int64_t step) {
    return arith::FloorDivSIOp::create(b, loc, x, cst(step));
  }
  /// -left <= r <= right
  Value inWindow(Value r, int64_t left, int64_t right) {
    return both(sge(r, cst(-left)), sle(r, cst(right)));
  }
};
} // namespace

static ArrayAttr membersOf(MaskAttrInterface pattern) {
  if (auto orAttr = dyn_cast<OrAttr>(pattern))
    return orAttr.getMembers();
  return cast<AndAttr>(pattern).getMembers();
}

Value mlir::attn::emitElementMask(OpBuilder &b, Location loc,
                                  MaskAttrInterface pattern, Value i, Value j,
                                  const MaskContext &context) {
  if (context.evaluateMember)
    if (Value kept = context.evaluateMember(pattern))
      return kept;
  auto vectorType = dyn_cast<VectorType>(i.getType());
  IndexMath m{b, loc, vectorType ? vectorType.getDimSize(0) : 0,
              vectorType ? vectorType.getElementType() : b.getIndexType()};
  Value delta = context.delta;
  Value p = m.add(i, delta);
  Value r = m.sub(j, p);
  return llvm::TypeSwitch<Attribute, Value>(pattern)
      .Case([&](CausalAttr) { return m.sle(r, m.cst(0)); })
      .Case([&](WindowAttr w) {
        return m.inWindow(r, w.getLeft(), w.getRight());
      })
      .Case([&](DilatedAttr d) {
        return m.both(m.inWindow(r, d.getLeft(), d.getRight()),
                      m.divisible(r, d.getDilation()));
      })
      .Case([&](StridedAttr s) { return m.divisible(r, s.getStride()); })
      .Case([&](FixedAttr f) {
        int64_t s = f.getStride();
        Value sameBlock = m.eq(m.floorDiv(j, s), m.floorDiv(p, s));
        // j >= 0, so the remainder is the floor modulo.
        Value inBlock = arith::RemSIOp::create(b, loc, j, m.cst(s));
        Value summary = m.sge(inBlock, m.cst(s - f.getSummary()));
        return m.either(sameBlock, summary);
      })
      .Case([&](GlobalAttr g) {
        // Runs of consecutive indices (e.g. BigBird's first blocks) become
        // one range test each, not one comparison per index.
        SmallVector<int64_t> indices(g.getIndices());
        llvm::sort(indices);
        Value kept = m.boolean(false);
        for (size_t first = 0; first < indices.size();) {
          size_t last = first;
          while (last + 1 < indices.size() &&
                 indices[last + 1] <= indices[last] + 1)
            ++last;
          auto inRun = [&](Value x) {
            if (indices[first] == indices[last])
              return m.eq(x, m.cst(indices[first]));
            return m.both(m.sge(x, m.cst(indices[first])),
                          m.sle(x, m.cst(indices[last])));
          };
          kept = m.either(kept, m.either(inRun(p), inRun(j)));
          first = last + 1;
        }
        return kept;
      })
      .Case([&](SegmentsAttr) {
        auto id = [&](Value ids, Value position) -> Value {
          Value v = tensor::ExtractOp::create(
              b, loc, ids, ValueRange{context.batch, position});
          if (v.getType().isInteger(64))
            return v;
          return arith::ExtSIOp::create(b, loc, b.getI64Type(), v);
        };
        return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                     id(context.qSegments, i),
                                     id(context.kvSegments, j))
            .getResult();
      })
      .Case([&](BlockLayoutAttr layout) {
        // Blocks past the layout are dropped (docs/Dialect.md).
        ArrayRef<int64_t> dims = layout.getLayout().getType().getShape();
        SmallVector<bool> bits;
        for (const APInt &v : layout.getLayout().getValues<APInt>())
          bits.push_back(!v.isZero());
        int64_t block = layout.getBlock();
        Value qb = arith::DivUIOp::create(b, loc, i, m.cst(block));
        Value kb = arith::DivUIOp::create(b, loc, j, m.cst(block));
        Value inside = m.both(m.slt(qb, m.cst(dims[1])),
                              m.slt(kb, m.cst(dims[2])));
        Value h = dims[0] == 1 ? m.cst(0) : context.head;
        // Clamp so that the lookup stays in bounds; `inside` decides.
        Value qbIn = arith::MinSIOp::create(b, loc, qb, m.cst(dims[1] - 1));
        Value kbIn = arith::MinSIOp::create(b, loc, kb, m.cst(dims[2] - 1));
        return m.both(inside, lookupBits(b, loc, dims, bits, {h, qbIn, kbIn}));
      })
      .Case([&](RandomBlocksAttr random) {
        // The documented draw, evaluated once here for every head and
        // query block of the static shape: a table of the kept key blocks,
        // [heads, query blocks, count].
        const MaskShape &shape = context.shape;
        int64_t block = random.getBlock();
        int64_t rows = llvm::divideCeilSigned(shape.lq, block);
        int64_t cols = llvm::divideCeilSigned(shape.lk, block);
        int64_t count = std::min(random.getCount(), cols);
        SmallVector<int32_t> table;
        for (int64_t h = 0; h < shape.numHeads; ++h)
          for (int64_t qb = 0; qb < rows; ++qb)
            for (int64_t kb : getRandomBlocks(random.getSeed(), count, qb, h,
                                              cols))
              table.push_back(kb);
        Value kept = m.boolean(false);
        if (table.empty())
          return kept;
        auto type = RankedTensorType::get({shape.numHeads, rows, count},
                                          b.getI32Type());
        Value blocks = arith::ConstantOp::create(
            b, loc, DenseElementsAttr::get(type, ArrayRef<int32_t>(table)));
        Value qb = arith::DivUIOp::create(b, loc, i, m.cst(block));
        Value kb = arith::IndexCastOp::create(
            b, loc, b.getI32Type(),
            arith::DivUIOp::create(b, loc, j, m.cst(block)));
        for (int64_t c = 0; c < count; ++c) {
          Value pick = tensor::ExtractOp::create(
              b, loc, blocks, ValueRange{context.head, qb, m.cst(c)});
          kept = m.either(kept, arith::CmpIOp::create(
                                    b, loc, arith::CmpIPredicate::eq, pick, kb));
        }
        return kept;
      })
      .Case<OrAttr, AndAttr>([&](Attribute) {
        bool isOr = isa<OrAttr>(pattern);
        Value result;
        for (Attribute member : membersOf(pattern)) {
          Value kept = emitElementMask(b, loc, cast<MaskAttrInterface>(member),
                                       i, j, context);
          result = !result ? kept : isOr ? m.either(result, kept)
                                         : m.both(result, kept);
        }
        return result;
      })
      .Default([&](Attribute) -> Value {
        llvm_unreachable("pattern not supported by mask codegen; callers "
                         "check isMaskCodegenSupported first");
      });
}

std::pair<Value, Value>
mlir::attn::emitTileClass(OpBuilder &b, Location loc,
                          MaskAttrInterface pattern, Value i0, Value i1,
                          Value j0, Value j1, Value delta) {
  IndexMath m{b, loc};
  Value one = m.cst(1);
  // Range of r over the tile.
  Value rMin = m.sub(m.sub(j0, m.sub(i1, one)), delta);
  Value rMax = m.sub(m.sub(m.sub(j1, one), i0), delta);
  if (isa<CausalAttr>(pattern))
    return {m.sgt(rMin, m.cst(0)), m.sle(rMax, m.cst(0))};
  if (auto w = dyn_cast<WindowAttr>(pattern)) {
    Value left = m.cst(-w.getLeft()), right = m.cst(w.getRight());
    return {m.either(m.slt(rMax, left), m.sgt(rMin, right)),
            m.both(m.sge(rMin, left), m.sle(rMax, right))};
  }
  if (isa<OrAttr, AndAttr>(pattern)) {
    bool isOr = isa<OrAttr>(pattern);
    Value empty, full;
    for (Attribute member : membersOf(pattern)) {
      auto [memberEmpty, memberFull] =
          emitTileClass(b, loc, cast<MaskAttrInterface>(member), i0, i1, j0,
                        j1, delta);
      if (!empty) {
        empty = memberEmpty;
        full = memberFull;
        continue;
      }
      // or: empty iff all empty, full if any full; and: the dual.
      empty = isOr ? m.both(empty, memberEmpty) : m.either(empty, memberEmpty);
      full = isOr ? m.either(full, memberFull) : m.both(full, memberFull);
    }
    return {empty, full};
  }
  // Other patterns: nothing is claimed, every tile takes the masked path.
  return {m.boolean(false), m.boolean(false)};
}
