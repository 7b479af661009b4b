//===- EinsumBuilder.h - linalg.generic from index specs ---------*- C++ -*-===//
//
// The decompositions of the efficient-attention ops (Linformer, Nystrom,
// kernelized, ...) are chains of contractions, maps and reductions on f32
// tensors. EinsumBuilder writes each as one linalg.generic from a spec in
// einsum notation, so a decomposition reads like its formula:
//
//   eb.contract("tj,bhjd->bhtd", {e, k});         // K' = E K
//   eb.reduce("bhld->bhl", x, Reduction::Max);    // row maxima
//   eb.map("bhld,bhl->bhld", {x, m}, [](...){});  // broadcasting map
//
// Letters in the result are parallel loops; the others are reductions.
// Loops nest in the order of `loopOrder` (default: result letters, then the
// reduction letters as they appear), which is the order
// convert-linalg-to-loops emits: put the contiguous dimension innermost.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TRANSFORMS_EINSUMBUILDER_H
#define ATTN_TRANSFORMS_EINSUMBUILDER_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/StringRef.h"

namespace mlir::attn {

class EinsumBuilder {
public:
  /// The body of a map: the input elements, and a way to read the loop
  /// index of a letter (linalg.index).
  using IndexFn = function_ref<Value(char)>;
  using MapFn = function_ref<Value(OpBuilder &, Location, ValueRange, IndexFn)>;
  enum class Reduction { Sum, Max };

  EinsumBuilder(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  /// out = sum over the reduction letters of the product of the inputs.
  Value contract(StringRef spec, ValueRange inputs, StringRef loopOrder = "");
  /// out = fn(inputs) per result element (no reduction letters allowed);
  /// inputs broadcast along the letters they lack. `sizes` gives the extent
  /// of result letters no input has (letter -> size), e.g. for a matrix
  /// built from indices only ("->sl"). The result is f32 unless
  /// `elementType` says otherwise (e.g. i64 positions).
  Value map(StringRef spec, ValueRange inputs, MapFn fn,
            ArrayRef<std::pair<char, Value>> sizes = {},
            StringRef loopOrder = "", Type elementType = {});
  /// Sum or max of `input` over the letters missing from the result.
  Value reduce(StringRef spec, Value input, Reduction kind,
               StringRef loopOrder = "");

  /// x with -inf replaced by 0 (spec "bhs->bhs"): the shift of a softmax
  /// row whose maximum is -inf (nothing kept), so that exp(x - shift) is 0.
  Value negInfToZero(StringRef spec, Value x);
  /// exp(x - shift) broadcast per `spec` ("bhst,bhs->bhst").
  Value expDifference(StringRef spec, Value x, Value shift);
  /// num / den broadcast per `spec` ("bhsd,bhs->bhsd"), 0 where den is 0
  /// (a row that kept nothing).
  Value divideOrZero(StringRef spec, Value num, Value den);

  /// x [B, Hkv, ...] -> [B, heads, ...] (static sizes), query head h
  /// reading head h / (heads / Hkv) of x: key-side tensors for GQA.
  Value repeatHeads(Value x, int64_t heads);

  /// Scalar helpers for bodies.
  Value f32(double value);
  Value index(int64_t value);

private:
  Value build(StringRef spec, ValueRange inputs, StringRef loopOrder,
              ArrayRef<std::pair<char, Value>> sizes, Type elementType,
              double init, bool accumulate,
              function_ref<Value(OpBuilder &, Location, ValueRange, IndexFn)>
                  body);

  OpBuilder &b;
  Location loc;
};

/// Fails, with an error at `op` naming `pass`, unless its results are f32
/// and (when `needStatic`) all operands have static shapes.
LogicalResult checkDecomposable(Operation *op, StringRef pass,
                                bool needStatic = true);

/// attn.attention(q, k, v) with an optional scale and pattern, nothing
/// else: the softmax step the decompositions hand to the attention kernels.
Value createSoftmaxAttention(OpBuilder &b, Location loc, Type resultType,
                             Value query, Value key, Value value,
                             FloatAttr scale, Attribute pattern = {});

} // namespace mlir::attn

#endif // ATTN_TRANSFORMS_EINSUMBUILDER_H
