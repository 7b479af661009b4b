//===- AttnBase.td - attn dialect definition ---------------*- tablegen -*-===//
#ifndef ATTN_DIALECT_ATTN_IR_ATTNBASE_TD
#define ATTN_DIALECT_ATTN_IR_ATTNBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"

def Attn_Dialect : Dialect {
  let name = "attn";
  let cppNamespace = "::mlir::attn";
  let summary = "Dense, sparse-pattern, low-rank and kernelized attention";
  let description = [{
    The `attn` dialect describes attention mechanisms at the tensor level with
    value semantics. Every op uses the layout

      Q `[B, Hq, Lq, D]`, K `[B, Hkv, Lk, D]`, V `[B, Hkv, Lk, Dv]`,
      O `[B, Hq, Lq, Dv]`, with `Hq % Hkv == 0`

    (MHA when Hq == Hkv, GQA otherwise, MQA when Hkv == 1; query head `h`
    reads key/value head `h / (Hq / Hkv)`). Sizes may be static or dynamic.
    The exact math of every op and attribute is in `docs/Dialect.md`.
  }];
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
}

class Attn_Op<string mnemonic, list<Trait> traits = []>
    : Op<Attn_Dialect, mnemonic, traits>;

// Where query row i sits relative to the key sequence: position i + delta,
// delta = 0 (top_left) or Lk - Lq (bottom_right, the decoding convention).
def Attn_Alignment : I32EnumAttr<"Alignment", "query/key position alignment", [
    I32EnumAttrCase<"top_left", 0>,
    I32EnumAttrCase<"bottom_right", 1>]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}
def Attn_AlignmentAttr : EnumAttr<Attn_Dialect, Attn_Alignment, "alignment"> {
  // Standalone: #attn.<name><value>; in op syntax a bare keyword (AttnOps.cpp).
  let assemblyFormat = "`<` $value `>`";
}

// Feature maps of kernelized (linear) attention.
def Attn_FeatureMap : I32EnumAttr<"FeatureMap", "kernel feature map", [
    I32EnumAttrCase<"favor", 0>,
    I32EnumAttrCase<"rfa", 1>,
    I32EnumAttrCase<"elu_plus_one", 2>,
    I32EnumAttrCase<"relu", 3>]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}
def Attn_FeatureMapAttr : EnumAttr<Attn_Dialect, Attn_FeatureMap, "feature_map"> {
  // Standalone: #attn.<name><value>; in op syntax a bare keyword (AttnOps.cpp).
  let assemblyFormat = "`<` $value `>`";
}

// Rotary embedding pairing convention.
def Attn_RopeStyle : I32EnumAttr<"RopeStyle", "rotary pairing", [
    I32EnumAttrCase<"interleaved", 0>,
    I32EnumAttrCase<"half", 1>]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}
def Attn_RopeStyleAttr : EnumAttr<Attn_Dialect, Attn_RopeStyle, "rope_style"> {
  // Standalone: #attn.<name><value>; in op syntax a bare keyword (AttnOps.cpp).
  let assemblyFormat = "`<` $value `>`";
}

#endif // ATTN_DIALECT_ATTN_IR_ATTNBASE_TD
