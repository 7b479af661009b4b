//===- ContractionMatch.cpp - C[batch, m, n] += A B as a linalg.generic ---===//
#include "attn/Transforms/ContractionMatch.h"
#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::attn;

std::optional<std::pair<Value, Value>>
mlir::attn::multiplyAddFactors(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  if (body.getNumArguments() != 3)
    return std::nullopt;
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto sum = yield.getValues()[0].getDefiningOp<arith::AddFOp>();
  Value acc = body.getArgument(2);
  if (!sum || (sum.getLhs() != acc && sum.getRhs() != acc))
    return std::nullopt;
  auto product = (sum.getLhs() == acc ? sum.getRhs() : sum.getLhs())
                     .getDefiningOp<arith::MulFOp>();
  if (!product)
    return std::nullopt;
  return std::make_pair(product.getLhs(), product.getRhs());
}

bool mlir::attn::hasMultiplyAddBody(linalg::GenericOp op) {
  auto factors = multiplyAddFactors(op);
  if (!factors || op.getRegion().front().getOperations().size() != 3)
    return false;
  Value x = op.getRegion().getArgument(0), w = op.getRegion().getArgument(1);
  return (factors->first == x && factors->second == w) ||
         (factors->first == w && factors->second == x);
}

bool mlir::attn::isWidenedToF32(Value v, Value source) {
  auto ext = v.getDefiningOp<arith::ExtFOp>();
  return ext && ext.getIn() == source && ext.getType().isF32();
}

bool mlir::attn::isProductGeneric(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      op.getNumLoops() != 3)
    return false;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  return iterators[0] == utils::IteratorType::parallel &&
         iterators[1] == utils::IteratorType::parallel &&
         iterators[2] == utils::IteratorType::reduction;
}

bool mlir::attn::isBufferProductGeneric(linalg::GenericOp op) {
  return op.hasPureBufferSemantics() && isProductGeneric(op);
}

std::optional<bool> mlir::attn::matmulTransposesB(linalg::MatmulOp op) {
  MLIRContext *ctx = op.getContext();
  AffineExpr m, n, k;
  bindDims(ctx, m, n, k);
  auto map = [&](AffineExpr a, AffineExpr b) {
    return AffineMap::get(3, 0, {a, b}, ctx);
  };
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (maps[0] != map(m, k) || maps[2] != map(m, n))
    return std::nullopt;
  if (maps[1] == map(k, n))
    return false;
  if (maps[1] == map(n, k))
    return true;
  return std::nullopt;
}

AffineMap mlir::attn::packedWeightMap(linalg::GenericOp op) {
  if (!isProductGeneric(op))
    return {};
  MLIRContext *ctx = op.getContext();
  AffineExpr m, n, k;
  bindDims(ctx, m, n, k);
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (maps[0] != AffineMap::get(3, 0, {m, k}, ctx) ||
      maps[2] != AffineMap::get(3, 0, {m, n}, ctx))
    return {};
  return maps[1];
}

/// The positions of `map`'s results as loop dims (it is a projected
/// permutation).
static SmallVector<unsigned> resultDims(AffineMap map) {
  SmallVector<unsigned> dims;
  for (AffineExpr e : map.getResults())
    dims.push_back(cast<AffineDimExpr>(e).getPosition());
  return dims;
}

static int position(ArrayRef<unsigned> dims, unsigned dim) {
  auto it = llvm::find(dims, dim);
  return it == dims.end() ? -1 : int(it - dims.begin());
}

std::optional<ContractionMatch>
mlir::attn::matchContraction(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1)
    return std::nullopt;
  for (Value operand : op->getOperands()) {
    auto type = dyn_cast<ShapedType>(operand.getType());
    if (!type || !type.getElementType().isF32())
      return std::nullopt;
  }
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (!llvm::all_of(maps, [](AffineMap map) {
        return map.isProjectedPermutation(/*allowZeroInResults=*/false);
      }))
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  if (llvm::count(iterators, utils::IteratorType::reduction) != 1)
    return std::nullopt;
  ContractionMatch match;
  match.k = llvm::find(iterators, utils::IteratorType::reduction) -
            iterators.begin();
  SmallVector<unsigned> a = resultDims(maps[0]), b = resultDims(maps[1]),
                        c = resultDims(maps[2]);
  // C indexes every parallel loop, n innermost, m next.
  if (c.size() < 2 || c.size() + 1 != iterators.size())
    return std::nullopt;
  match.n = c.back();
  match.m = c[c.size() - 2];
  match.batchDims.assign(c.begin(), c.end() - 2);
  auto isBatch = [&](unsigned d) {
    return llvm::is_contained(match.batchDims, d);
  };
  // A holds m and k (not n), B holds k and n (not m), plus batch dims.
  auto holds = [&](ArrayRef<unsigned> dims, unsigned x, unsigned y,
                   unsigned absent) {
    return position(dims, x) >= 0 && position(dims, y) >= 0 &&
           position(dims, absent) < 0 &&
           llvm::all_of(dims, [&](unsigned d) {
             return d == x || d == y || isBatch(d);
           });
  };
  // The product commutes: A is whichever input holds m.
  if (!holds(a, match.m, match.k, match.n)) {
    std::swap(a, b);
    match.swapped = true;
  }
  if (!holds(a, match.m, match.k, match.n) ||
      !holds(b, match.k, match.n, match.m))
    return std::nullopt;
  match.aTransposed = position(a, match.k) < position(a, match.m);
  match.bTransposed = position(b, match.n) < position(b, match.k);
  // B's innermost dim is n or k (the packing reads along it).
  if (b.back() != match.n && b.back() != match.k)
    return std::nullopt;
  if (!hasMultiplyAddBody(op))
    return std::nullopt;
  return match;
}
