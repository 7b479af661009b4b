//===- EinsumBuilder.cpp - linalg.generic from index specs ----------------===//
#include "attn/Transforms/EinsumBuilder.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"
#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::attn;

Value EinsumBuilder::f32(double value) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
}

Value EinsumBuilder::index(int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

Value EinsumBuilder::build(
    StringRef spec, ValueRange inputs, StringRef loopOrder,
    ArrayRef<std::pair<char, Value>> sizes, Type elementType, double init,
    bool accumulate,
    function_ref<Value(OpBuilder &, Location, ValueRange, IndexFn)> body) {
  auto [lhs, out] = spec.split("->");
  SmallVector<StringRef> inputSpecs;
  if (!lhs.empty())
    lhs.split(inputSpecs, ',');
  if (inputSpecs.size() != inputs.size())
    llvm::report_fatal_error("EinsumBuilder: spec and inputs disagree");

  // Loop letters, outermost first.
  std::string loops = loopOrder.str();
  if (loops.empty()) {
    loops = out.str();
    for (StringRef in : inputSpecs)
      for (char c : in)
        if (loops.find(c) == std::string::npos)
          loops.push_back(c);
  }
  auto dimOf = [&](char c) {
    size_t pos = loops.find(c);
    if (pos == std::string::npos)
      llvm::report_fatal_error("EinsumBuilder: letter missing from loops");
    return b.getAffineDimExpr(pos);
  };

  // Extent of each loop: from the first input that has its letter.
  auto sizeOf = [&](char c) -> OpFoldResult {
    for (auto [in, value] : llvm::zip(inputSpecs, inputs))
      if (size_t pos = in.find(c); pos != StringRef::npos)
        return tensor::getMixedSize(b, loc, value, pos);
    for (auto [letter, size] : sizes)
      if (letter == c)
        return getAsOpFoldResult(size);
    llvm::report_fatal_error("EinsumBuilder: no extent for a letter");
  };

  SmallVector<AffineMap> maps;
  auto mapOf = [&](StringRef letters) {
    SmallVector<AffineExpr> exprs;
    for (char c : letters)
      exprs.push_back(dimOf(c));
    return AffineMap::get(loops.size(), 0, exprs, b.getContext());
  };
  for (StringRef in : inputSpecs)
    maps.push_back(mapOf(in));
  maps.push_back(mapOf(out));

  SmallVector<utils::IteratorType> iterators;
  for (char c : loops)
    iterators.push_back(out.contains(c) ? utils::IteratorType::parallel
                                        : utils::IteratorType::reduction);

  SmallVector<OpFoldResult> outSizes;
  for (char c : out)
    outSizes.push_back(sizeOf(c));
  Value result = tensor::EmptyOp::create(
      b, loc, outSizes, elementType ? elementType : b.getF32Type());
  if (accumulate)
    result = linalg::FillOp::create(b, loc, f32(init), result).getResult(0);

  auto generic = linalg::GenericOp::create(
      b, loc, result.getType(), inputs, result, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        auto indexOf = [&](char c) -> Value {
          return linalg::IndexOp::create(nb, nloc, loops.find(c));
        };
        linalg::YieldOp::create(nb, nloc, body(nb, nloc, args, indexOf));
      });
  return generic.getResult(0);
}

/// Sums may be reassociated and fused with their products: without it LLVM
/// keeps a reduction along the innermost loop scalar and in order.
static arith::FastMathFlags sumFlags() {
  return arith::FastMathFlags::reassoc | arith::FastMathFlags::contract;
}

Value EinsumBuilder::contract(StringRef spec, ValueRange inputs,
                              StringRef loopOrder) {
  return build(spec, inputs, loopOrder, {}, {}, 0.0, /*accumulate=*/true,
               [&](OpBuilder &nb, Location nloc, ValueRange args, IndexFn) {
                 Value product = args[0];
                 for (Value factor : args.drop_front().drop_back())
                   product =
                       arith::MulFOp::create(nb, nloc, product, factor,
                                             arith::FastMathFlags::contract);
                 return arith::AddFOp::create(nb, nloc, args.back(), product,
                                              sumFlags())
                     .getResult();
               });
}

Value EinsumBuilder::map(StringRef spec, ValueRange inputs, MapFn fn,
                         ArrayRef<std::pair<char, Value>> sizes,
                         StringRef loopOrder, Type elementType) {
  return build(spec, inputs, loopOrder, sizes, elementType, 0.0,
               /*accumulate=*/false,
               [&](OpBuilder &nb, Location nloc, ValueRange args,
                   IndexFn indexOf) {
                 return fn(nb, nloc, args.drop_back(), indexOf);
               });
}

Value EinsumBuilder::reduce(StringRef spec, Value input, Reduction kind,
                            StringRef loopOrder) {
  double init = kind == Reduction::Sum
                    ? 0.0
                    : -std::numeric_limits<double>::infinity();
  return build(spec, input, loopOrder, {}, {}, init, /*accumulate=*/true,
               [&](OpBuilder &nb, Location nloc, ValueRange args, IndexFn) {
                 if (kind == Reduction::Sum)
                   return arith::AddFOp::create(nb, nloc, args[1], args[0],
                                                sumFlags())
                       .getResult();
                 return arith::MaximumFOp::create(nb, nloc, args[1], args[0])
                     .getResult();
               });
}

Value EinsumBuilder::negInfToZero(StringRef spec, Value x) {
  return map(spec, x, [&](OpBuilder &nb, Location l, ValueRange a, IndexFn) {
    Value isNegInf = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ,
                                           a[0], f32(-INFINITY));
    return arith::SelectOp::create(nb, l, isNegInf, f32(0), a[0]).getResult();
  });
}

Value EinsumBuilder::expDifference(StringRef spec, Value x, Value shift) {
  return map(spec, {x, shift},
             [](OpBuilder &nb, Location l, ValueRange a, IndexFn) {
               return math::ExpOp::create(
                          nb, l, arith::SubFOp::create(nb, l, a[0], a[1]))
                   .getResult();
             });
}

Value EinsumBuilder::divideOrZero(StringRef spec, Value num, Value den) {
  return map(spec, {num, den},
             [&](OpBuilder &nb, Location l, ValueRange a, IndexFn) {
               Value zero = arith::CmpFOp::create(
                   nb, l, arith::CmpFPredicate::OEQ, a[1], f32(0));
               Value quotient = arith::DivFOp::create(nb, l, a[0], a[1]);
               return arith::SelectOp::create(nb, l, zero, f32(0), quotient)
                   .getResult();
             });
}

LogicalResult mlir::attn::checkDecomposable(Operation *op, StringRef pass,
                                            bool needStatic) {
  for (Type type : op->getResultTypes()) {
    Type element = cast<ShapedType>(type).getElementType();
    if (!element.isF32())
      return op->emitOpError() << pass << " handles f32 only for now, got "
                               << element;
  }
  if (needStatic)
    for (Value operand : op->getOperands())
      if (!cast<ShapedType>(operand.getType()).hasStaticShape())
        return op->emitOpError() << pass << " needs static shapes";
  return success();
}

/// x [B, Hkv, ...] -> [B, heads, ...], query head h reading x's head
/// h / (heads / Hkv).
Value EinsumBuilder::repeatHeads(Value x, int64_t heads) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t group = heads / type.getDimSize(1);
  if (group == 1)
    return x;
  SmallVector<int64_t> shape(type.getShape());
  shape[1] = heads;
  unsigned rank = type.getRank();
  SmallVector<AffineExpr> in;
  for (unsigned d = 0; d < rank; ++d)
    in.push_back(d == 1 ? b.getAffineDimExpr(1).floorDiv(group)
                        : b.getAffineDimExpr(d));
  SmallVector<AffineMap> maps = {
      AffineMap::get(rank, 0, in, b.getContext()),
      b.getMultiDimIdentityMap(rank)};
  Value init = tensor::EmptyOp::create(b, loc, shape, b.getF32Type());
  return linalg::GenericOp::create(b, loc, init.getType(), x, init, maps,
                                   SmallVector<utils::IteratorType>(
                                       rank, utils::IteratorType::parallel),
                                   [](OpBuilder &nb, Location l, ValueRange a) {
                                     linalg::YieldOp::create(nb, l, a[0]);
                                   })
      .getResult(0);
}

Value mlir::attn::createSoftmaxAttention(OpBuilder &b, Location loc,
                                         Type resultType, Value query,
                                         Value key, Value value,
                                         FloatAttr scale, Attribute pattern) {
  return AttentionOp::create(b, loc, resultType, /*lse=*/Type(), query, key,
                             value, Value(), Value(), Value(), Value(), Value(),
                             cast_or_null<MaskAttrInterface>(pattern), scale,
                             AlignmentAttr(), ArrayAttr(), IntegerAttr(),
                             IntegerAttr())
      .getOutput();
}
