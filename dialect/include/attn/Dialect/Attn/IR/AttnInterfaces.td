//===- AttnInterfaces.td - mask and score-mod interfaces ---*- tablegen -*-===//
#ifndef ATTN_DIALECT_ATTN_IR_ATTNINTERFACES_TD
#define ATTN_DIALECT_ATTN_IR_ATTNINTERFACES_TD

include "mlir/IR/OpBase.td"

def Attn_MaskAttrInterface : AttrInterface<"MaskAttrInterface"> {
  let cppNamespace = "::mlir::attn";
  let description = [{
    A sparsity pattern: the set S of (query i, key j) pairs that are kept.
    Patterns form an algebra (`#attn.or`, `#attn.and`) and can be queried per
    element and per tile, so that the compiler can skip empty tiles and drop
    mask code from full ones. See `docs/Dialect.md` for each pattern's set.
  }];
  let methods = [
    InterfaceMethod<"Returns true when key `j` is kept for query `i`.",
      "bool", "isKept",
      (ins "const ::mlir::attn::MaskQuery &":$query, "int64_t":$i,
           "int64_t":$j)>,
    InterfaceMethod<[{
        Classifies the tile [i0, i1) x [j0, j1). The answer is always sound
        (Full: every element kept; Empty: none kept). Primitive patterns
        answer exactly; `or` is exact about Empty, and `and` about Full when
        its members are exact about Full.
      }],
      "::mlir::attn::TileClass", "classifyTile",
      (ins "const ::mlir::attn::MaskQuery &":$query,
           "const ::mlir::attn::Tile &":$tile)>,
    InterfaceMethod<"Checks the pattern against the (possibly dynamic) shape.",
      "::llvm::LogicalResult", "verifyShape",
      (ins "::llvm::function_ref<::mlir::InFlightDiagnostic()>":$emitError,
           "const ::mlir::attn::MaskShape &":$shape),
      "", "return ::mlir::success();">,
    InterfaceMethod<"Returns true when the pattern reads run-time segment ids.",
      "bool", "usesSegments", (ins), "", "return false;">,
  ];
}

def Attn_ScoreModAttrInterface : AttrInterface<"ScoreModAttrInterface"> {
  let cppNamespace = "::mlir::attn";
  let description = [{
    A score modification applied to the scaled logit x = scale * q.k (plus
    any bias operand), in the order the `mods` list gives, before the
    softmax. See `docs/Dialect.md` for each formula.
  }];
  let methods = [
    InterfaceMethod<"Checks the mod against the number of query heads.",
      "::llvm::LogicalResult", "verifyHeads",
      (ins "::llvm::function_ref<::mlir::InFlightDiagnostic()>":$emitError,
           "int64_t":$numHeads),
      "", "return ::mlir::success();">,
    InterfaceMethod<[{
        Number of columns of the `[Hq, columns]` table operand this mod reads,
        or 0 when it reads none.
      }],
      "int64_t", "getTableColumns", (ins), "", "return 0;">,
  ];
}

#endif // ATTN_DIALECT_ATTN_IR_ATTNINTERFACES_TD
