//===- SegmentIds.h - document masks in the CPU kernels ----------*- C++
//-*-===//
//
// What the forward and backward CPU kernels share of segment ids
// (#attn.segments, document masks): an id as i64, the id range of a run of
// positions, and the class of a tile from the ranges of its queries and
// keys.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_ATTNTOCPU_SEGMENTIDS_H
#define ATTN_CONVERSION_ATTNTOCPU_SEGMENTIDS_H

#include "LoopBuilder.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include <limits>

namespace mlir::attn {

/// ids[batch, position] of an [B, L] i32 or i64 buffer, as i64.
inline Value buildSegmentId(ImplicitLocOpBuilder &b, Value ids, Value batch,
                            Value position) {
  Value id = memref::LoadOp::create(b, ids, ValueRange{batch, position});
  if (id.getType().isInteger(64))
    return id;
  return arith::ExtSIOp::create(b, b.getI64Type(), id);
}

/// (min, max) of ids[batch, first .. first + count).
inline std::pair<Value, Value> buildIdRange(ImplicitLocOpBuilder &b, Value ids,
                                            Value batch, Value first,
                                            Value count) {
  auto index = [&](int64_t v) { return arith::ConstantIndexOp::create(b, v); };
  Value init[] = {
      arith::ConstantIntOp::create(b, std::numeric_limits<int64_t>::max(), 64),
      arith::ConstantIntOp::create(b, std::numeric_limits<int64_t>::min(), 64)};
  scf::ForOp range = buildLoop(
      b, index(0), count, index(1), init, [&](Value n, ValueRange acc) {
        Value id =
            buildSegmentId(b, ids, batch, arith::AddIOp::create(b, first, n));
        return SmallVector<Value>{arith::MinSIOp::create(b, acc[0], id),
                                  arith::MaxSIOp::create(b, acc[1], id)};
      });
  return {range.getResult(0), range.getResult(1)};
}

/// (isEmpty, isFull) of a tile from its queries' and keys' id ranges:
/// disjoint ranges share no id; one id on both sides keeps all. For packed
/// documents (sorted, consecutive ids) this is exact.
inline std::pair<Value, Value>
buildSegmentTileClass(ImplicitLocOpBuilder &b, std::pair<Value, Value> queryIds,
                      std::pair<Value, Value> keyIds) {
  using P = arith::CmpIPredicate;
  auto cmp = [&](P p, Value x, Value y) -> Value {
    return arith::CmpIOp::create(b, p, x, y);
  };
  auto [queryMin, queryMax] = queryIds;
  auto [keyMin, keyMax] = keyIds;
  Value isEmpty = arith::OrIOp::create(b, cmp(P::slt, keyMax, queryMin),
                                       cmp(P::sgt, keyMin, queryMax));
  Value isFull = arith::AndIOp::create(
      b,
      arith::AndIOp::create(b, cmp(P::eq, queryMin, queryMax),
                            cmp(P::eq, keyMin, keyMax)),
      cmp(P::eq, queryMin, keyMin));
  return {isEmpty, isFull};
}

} // namespace mlir::attn

#endif // ATTN_CONVERSION_ATTNTOCPU_SEGMENTIDS_H
