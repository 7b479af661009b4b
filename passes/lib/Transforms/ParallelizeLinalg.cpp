//===- ParallelizeLinalg.cpp - scf.forall over leading parallel loops -----===//
//
// The decompositions of the efficient-attention ops leave linalg.generic
// ops on tensors that convert-linalg-to-loops turns into sequential loop
// nests. This pass tiles each of them, outside any scf.forall, by one along
// its leading parallel loops (typically batch and head) into an
// scf.forall, which the CPU pipeline runs on all cores through OpenMP, like
// the attention kernels. The inner loops stay as they were, so LLVM still
// vectorizes the contiguous innermost dimension.
//
//===----------------------------------------------------------------------===//
#include "attn/Transforms/ContractionMatch.h"
#include "attn/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNPARALLELIZELINALG
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Leading parallel loops are tiled by one until their trip counts
/// multiply to this many (dynamic extents count as enough): a few tiles per
/// core for balance, each still a large loop nest.
constexpr int64_t kMinTiles = 8;

/// Tile sizes: 1 for the leading parallel loops up to kMinTiles, 0 (not
/// tiled) for the rest; empty when there is nothing worth splitting.
SmallVector<OpFoldResult> leadingTileSizes(OpBuilder &b,
                                           linalg::GenericOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<OpFoldResult> sizes(ranges.size(), b.getIndexAttr(0));
  int64_t tiles = 1;
  for (size_t d = 0; d < ranges.size() && tiles < kMinTiles; ++d) {
    if (iterators[d] != utils::IteratorType::parallel)
      break;
    sizes[d] = b.getIndexAttr(1);
    tiles = ShapedType::isDynamic(ranges[d]) ? kMinTiles : tiles * ranges[d];
  }
  if (tiles < 2)
    return {};
  return sizes;
}

/// Whether `op` is a 2-D product on packed weights, as a layer's products
/// are built (LinearKernels.h): B read at anything but a permutation
/// (panels: n floordiv W, ...), a multiply-add body.
bool isPackedProduct(linalg::GenericOp op) {
  AffineMap weight = packedWeightMap(op);
  return weight && !weight.isProjectedPermutation() && multiplyAddFactors(op);
}

/// Whether `op` is element-wise on the result of a packed product (the
/// bias, activation or residual the GEMM fuses into it).
bool isPackedProductEpilogue(linalg::GenericOp op) {
  if (op.getNumDpsInits() != 1 ||
      op.getNumParallelLoops() != op.getNumLoops())
    return false;
  auto product = op.getDpsInits()[0].getDefiningOp<linalg::GenericOp>();
  return product && isPackedProduct(product);
}

struct AttnParallelizeLinalgPass
    : attn::impl::AttnParallelizeLinalgBase<AttnParallelizeLinalgPass> {
  using AttnParallelizeLinalgBase::AttnParallelizeLinalgBase;

  void runOnOperation() override {
    SmallVector<linalg::GenericOp> ops;
    getOperation()->walk([&](linalg::GenericOp op) {
      if (!op.hasPureTensorSemantics() || op->getParentOfType<scf::ForallOp>())
        return;
      // attn-matmul-to-cpu-gemm takes whole contractions and products on
      // packed weights with their epilogues (and splits them over the
      // cores itself).
      if (keepContractions && (matchContraction(op) || isPackedProduct(op) ||
                               isPackedProductEpilogue(op)))
        return;
      ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : ops) {
      rewriter.setInsertionPoint(op);
      SmallVector<OpFoldResult> sizes = leadingTileSizes(rewriter, op);
      if (sizes.empty())
        continue;
      scf::SCFTilingOptions options;
      options.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
      options.setTileSizes(sizes);
      FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
          rewriter, cast<TilingInterface>(op.getOperation()), options);
      if (failed(tiled))
        continue; // stays sequential, still correct
      rewriter.replaceOp(op, tiled->replacements);
    }
  }
};

} // namespace
