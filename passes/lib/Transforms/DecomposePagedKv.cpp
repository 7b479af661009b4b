//===- DecomposePagedKv.cpp - attn.paged_kv as a gather -------------------===//
//
//   result[b, h, j, d] = pool[clamp(table[b, j / P]), h, j mod P, d]
//
// one linalg.generic whose body reads the table and the pool with
// tensor.extract. What runs after the kernels that read a paged cache in
// place (AttnToCpuKernels): any attn.paged_kv left is one they could not
// take, and the rows are copied out of the pages.
//
//===----------------------------------------------------------------------===//
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Transforms/PagedKv.h"
#include "attn/Transforms/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNDECOMPOSEPAGEDKV
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

Value mlir::attn::emitPageOfRow(OpBuilder &b, Location loc, Value entry,
                                Value pages) {
  // Entries outside [0, pages) read the nearest page: never out of bounds.
  Value page = arith::IndexCastOp::create(b, loc, b.getIndexType(), entry);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value last = arith::SubIOp::create(b, loc, pages,
                                     arith::ConstantIndexOp::create(b, loc, 1));
  return arith::MaxSIOp::create(
      b, loc, arith::MinSIOp::create(b, loc, page, last), zero);
}

namespace {

Value decomposePagedKv(PagedKvOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto type = cast<RankedTensorType>(op.getResult().getType());
  Value pool = op.getPool(), table = op.getTable();
  // The result's sizes: B from the table, H and D from the pool.
  SmallVector<Value> sizes;
  std::pair<Value, int64_t> dims[4] = {
      {table, 0}, {pool, 1}, {nullptr, 0}, {pool, 3}};
  for (int64_t d = 0; d < 4; ++d)
    if (type.isDynamicDim(d))
      sizes.push_back(
          d == 2 ? op.getLength()
                 : tensor::DimOp::create(b, loc, dims[d].first, dims[d].second)
                       .getResult());
  Value empty = tensor::EmptyOp::create(b, loc, type, sizes);
  Value pages = tensor::DimOp::create(b, loc, pool, 0);
  Value pageRows = arith::ConstantIndexOp::create(b, loc, op.getPageRows());
  AffineMap id = b.getMultiDimIdentityMap(4);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{type}, ValueRange{}, ValueRange{empty}, {id},
      SmallVector<utils::IteratorType>(4, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location nl, ValueRange) {
        Value bIv = linalg::IndexOp::create(nb, nl, 0);
        Value hIv = linalg::IndexOp::create(nb, nl, 1);
        Value jIv = linalg::IndexOp::create(nb, nl, 2);
        Value dIv = linalg::IndexOp::create(nb, nl, 3);
        Value entry = tensor::ExtractOp::create(
            nb, nl, table,
            ValueRange{bIv, arith::DivUIOp::create(nb, nl, jIv, pageRows)});
        Value page = emitPageOfRow(nb, nl, entry, pages);
        Value row = arith::RemUIOp::create(nb, nl, jIv, pageRows);
        Value x = tensor::ExtractOp::create(nb, nl, pool,
                                            ValueRange{page, hIv, row, dIv});
        linalg::YieldOp::create(nb, nl, ValueRange{x});
      });
  return generic.getResult(0);
}

struct AttnDecomposePagedKvPass
    : attn::impl::AttnDecomposePagedKvBase<AttnDecomposePagedKvPass> {
  void runOnOperation() override {
    SmallVector<PagedKvOp> ops;
    getOperation()->walk([&](PagedKvOp op) { ops.push_back(op); });
    for (PagedKvOp op : ops) {
      if (op->use_empty()) { // read in place by every kernel that used it
        op.erase();
        continue;
      }
      op.replaceAllUsesWith(decomposePagedKv(op));
      op.erase();
    }
  }
};

} // namespace
