//===- InterchangeReductions.cpp - contiguous innermost loops for sums ----===//
//
// The decompositions write reductions such as a sum over keys of feature
// rows, out[b, h, r] = sum_n phi[b, h, n, r], with the reduction loop
// innermost: convert-linalg-to-loops then walks phi with stride R and LLVM
// vectorizes it with gathers (FAVOR+'s normalizer took most of its time).
// This pass moves the loop of the output's innermost dim innermost instead,
// when every input it reads contiguously is read along that dim, so the
// inner loop becomes a contiguous vector update of the output row.
//
//===----------------------------------------------------------------------===//
#include "attn/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNINTERCHANGEREDUCTIONS
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

/// The loop order that puts the output's innermost dim last, or nothing
/// when `op` is already well ordered or does not qualify.
std::optional<SmallVector<unsigned>> contiguousOrder(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1)
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  unsigned loops = iterators.size();
  if (loops < 2 || iterators.back() != utils::IteratorType::reduction)
    return std::nullopt;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (!llvm::all_of(maps, [](AffineMap map) {
        return map.isProjectedPermutation() && map.getNumResults() > 0;
      }))
    return std::nullopt;
  auto innermost = [](AffineMap map) {
    return cast<AffineDimExpr>(map.getResults().back()).getPosition();
  };
  unsigned d = innermost(maps.back());
  // An input read contiguously along the reduction keeps it innermost.
  for (AffineMap map : ArrayRef(maps).drop_back())
    if (innermost(map) == loops - 1)
      return std::nullopt;
  if (!llvm::any_of(ArrayRef(maps).drop_back(),
                    [&](AffineMap map) { return innermost(map) == d; }))
    return std::nullopt;
  SmallVector<unsigned> order;
  for (unsigned i = 0; i < loops; ++i)
    if (i != d)
      order.push_back(i);
  order.push_back(d);
  return order;
}

struct AttnInterchangeReductionsPass
    : attn::impl::AttnInterchangeReductionsBase<
          AttnInterchangeReductionsPass> {
  void runOnOperation() override {
    SmallVector<std::pair<linalg::GenericOp, SmallVector<unsigned>>> ops;
    getOperation()->walk([&](linalg::GenericOp op) {
      if (std::optional<SmallVector<unsigned>> order = contiguousOrder(op))
        ops.push_back({op, *order});
    });
    IRRewriter rewriter(&getContext());
    for (auto &[op, order] : ops) {
      rewriter.setInsertionPoint(op);
      (void)linalg::interchangeGenericOp(rewriter, op, order);
    }
  }
};

} // namespace
