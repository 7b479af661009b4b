//===- Passes.td - attn transformation passes --------------*- tablegen -*-===//
#ifndef ATTN_TRANSFORMS_PASSES_TD
#define ATTN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttnTile : Pass<"attn-tile", "ModuleOp"> {
  let summary = "Tile attn.attention into the flash form with online softmax";
  let description = [{
    Rewrites each `attn.attention` into the target-independent flash form:
    an `scf.forall` over (batch, query head, query tile) whose body runs an
    `scf.for` over key tiles carrying the online-softmax state (running max
    m, running sum l, accumulator acc) as iter_args. Tile products and the
    softmax update are `linalg.generic` ops on tensor slices, so the L x L
    score matrix is never materialized. Remainder tiles take the sizes that
    are left (any L works). Using the mask algebra, tiles that the pattern
    keeps entirely carry no mask code and tiles it drops entirely are
    skipped at run time.

    Supported today: f32; patterns built from causal, window, dilated,
    strided, fixed and global with or/and; the dense mask and bias
    operands. Anything else is reported as an error.
  }];
  let options = [
    Option<"queryTile", "q-tile", "int64_t", /*default=*/"64",
           "rows of queries per tile">,
    Option<"keyTile", "kv-tile", "int64_t", /*default=*/"128",
           "rows of keys/values per tile">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

#endif // ATTN_TRANSFORMS_PASSES_TD
