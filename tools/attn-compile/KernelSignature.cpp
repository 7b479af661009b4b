//===- KernelSignature.cpp - what an artifact says of its entry points ----===//
#include "KernelSignature.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"
#include <functional>
#include <map>
#include <optional>

using namespace mlir;

namespace {
/// (argument number, dimension) of the function's entry block.
using Dim = std::pair<unsigned, int64_t>;
} // namespace

/// The argument dimension of `fn` that dimension `dim` of `value` equals,
/// when the ops that compute it say so: attention results are [B, H, Lq] of
/// the queries and Dv of the values, attn.fourier_mix and casts keep their
/// input's shape, a linalg op's result has its init's, tensor.empty takes
/// the sizes it is given (tensor.dim of a value).
static std::optional<Dim> argumentDimension(func::FuncOp fn, Value value,
                                            int64_t dim) {
  while (true) {
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      if (arg.getOwner() != &fn.getBody().front())
        return std::nullopt;
      return Dim{arg.getArgNumber(), dim};
    }
    Operation *op = value.getDefiningOp();
    auto queryOrValue = [&](auto attention) -> Value {
      return dim < 3 ? attention.getQuery() : attention.getValue();
    };
    if (auto castOp = dyn_cast<tensor::CastOp>(op)) {
      value = castOp.getSource();
    } else if (auto a = dyn_cast<attn::AttentionOp>(op)) {
      value = queryOrValue(a);
    } else if (auto a = dyn_cast<attn::LinformerOp>(op)) {
      value = queryOrValue(a);
    } else if (auto a = dyn_cast<attn::NystromOp>(op)) {
      value = queryOrValue(a);
    } else if (auto a = dyn_cast<attn::KernelizedOp>(op)) {
      value = queryOrValue(a);
    } else if (auto a = dyn_cast<attn::RoutingOp>(op)) {
      value = queryOrValue(a);
    } else if (auto a = dyn_cast<attn::LshOp>(op)) {
      value = dim < 3 ? a.getQueryKey() : a.getValue();
    } else if (auto f = dyn_cast<attn::FourierMixOp>(op)) {
      value = f.getInput();
    } else if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
      value =
          linalgOp.getDpsInitOperand(cast<OpResult>(value).getResultNumber())
              ->get();
    } else if (auto empty = dyn_cast<tensor::EmptyOp>(op)) {
      if (!empty.getType().isDynamicDim(dim))
        return std::nullopt;
      auto size = empty.getDynamicSize(dim).getDefiningOp<tensor::DimOp>();
      std::optional<int64_t> index =
          size ? size.getConstantIndex() : std::nullopt;
      if (!index)
        return std::nullopt;
      value = size.getSource();
      dim = *index;
    } else {
      return std::nullopt;
    }
  }
}

/// Input dimensions of `fn` that its ops require equal, as a map from each
/// dynamic (argument, dimension) to the first one of its class: batch of q,
/// k, v; heads and length of k, v; head dim of q, k; the operands of a
/// linalg op indexed by the same loop dimension (a product's rows, an
/// epilogue's operand). A kernel given keys and values of different
/// lengths would read past the shorter one.
static std::map<Dim, Dim> inputDimensionSources(func::FuncOp fn) {
  std::map<Dim, Dim> parent;
  std::function<Dim(Dim)> find = [&](Dim d) {
    auto it = parent.find(d);
    return it == parent.end() || it->second == d ? d : find(it->second);
  };
  auto unite = [&](std::optional<Dim> a, std::optional<Dim> b) {
    if (!a || !b)
      return;
    Dim ra = find(*a), rb = find(*b);
    parent[std::max(ra, rb)] = std::min(ra, rb);
  };
  auto of = [&](Value v, int64_t d) { return argumentDimension(fn, v, d); };
  fn.walk([&](attn::AttentionOp op) {
    Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
    unite(of(q, 0), of(k, 0));
    unite(of(q, 0), of(v, 0));
    unite(of(k, 1), of(v, 1));
    unite(of(k, 2), of(v, 2));
    unite(of(q, 3), of(k, 3));
  });
  fn.walk([&](linalg::LinalgOp op) {
    // Operand dimensions read at one loop index must have its size.
    std::map<unsigned, std::optional<Dim>> loops;
    for (OpOperand &operand : op->getOpOperands()) {
      if (!isa<ShapedType>(operand.get().getType()))
        continue;
      AffineMap map = op.getMatchingIndexingMap(&operand);
      for (auto [d, expr] : llvm::enumerate(map.getResults())) {
        auto loop = dyn_cast<AffineDimExpr>(expr);
        if (!loop)
          continue;
        std::optional<Dim> here = of(operand.get(), d);
        auto [it, first] = loops.try_emplace(loop.getPosition(), here);
        if (!first) {
          unite(it->second, here);
          if (!it->second)
            it->second = here;
        }
      }
    }
  });
  std::map<Dim, Dim> sources;
  for (auto &[dim, ignored] : parent)
    if (find(dim) != dim)
      sources[dim] = find(dim);
  return sources;
}

std::string attntools::signatureOf(func::FuncOp fn) {
  auto typeText = [](Type type, auto dynamicText) {
    std::string text;
    llvm::raw_string_ostream os(text);
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor) {
      os << "other";
      return text;
    }
    Type element = tensor.getElementType();
    os << (element.isF32()         ? "f32"
           : element.isF16()       ? "f16"
           : element.isBF16()      ? "bf16"
           : element.isInteger(32) ? "i32"
           : element.isInteger(1)  ? "i1"
                                   : "other")
       << "[";
    for (auto [d, size] : llvm::enumerate(tensor.getShape())) {
      os << (d ? "," : "");
      if (ShapedType::isDynamic(size))
        os << dynamicText(d);
      else
        os << size;
    }
    os << "]";
    return text;
  };
  auto reference = [](std::optional<Dim> d) {
    return d ? llvm::formatv("${0}.{1}", d->first, d->second).str()
             : std::string("?");
  };
  std::string signature;
  std::map<Dim, Dim> inputSources = inputDimensionSources(fn);
  for (auto [a, input] : llvm::enumerate(fn.getArgumentTypes()))
    signature += typeText(input,
                          [&, a = unsigned(a)](int64_t d) {
                            auto it = inputSources.find({a, d});
                            return it == inputSources.end()
                                       ? std::string("?")
                                       : reference(it->second);
                          }) +
                 " ";
  signature += "->";
  auto ret = cast<func::ReturnOp>(fn.getBody().back().getTerminator());
  for (Value result : ret.getOperands())
    signature += " " + typeText(result.getType(), [&](int64_t d) {
                   std::optional<Dim> source = argumentDimension(fn, result, d);
                   // The first of its class, as the inputs name it.
                   if (source) {
                     auto it = inputSources.find(*source);
                     if (it != inputSources.end())
                       source = it->second;
                   }
                   return reference(source);
                 });
  return signature;
}
