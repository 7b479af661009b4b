//===- Passes.h - attn transformation passes --------------------*- C++ -*-===//
#ifndef ATTN_TRANSFORMS_PASSES_H
#define ATTN_TRANSFORMS_PASSES_H

#include "attn/Dialect/Attn/IR/AttnAttrs.h"
#include "attn/Dialect/Attn/IR/TileSchedule.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::attn {

#define GEN_PASS_DECL
#include "attn/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "attn/Transforms/Passes.h.inc"

/// The tiles attn-to-cpu-kernels uses (with static sizes): its query tiles
/// for a vector width (256 or 512 bits), and its key tile for `pattern` from the kv-tile
/// option (0: chosen per pattern; shrunk to fit the blocks of random-block
/// and block-layout patterns).
QueryTiling getCpuKernelQueryTiling(MaskAttrInterface pattern,
                                    int64_t vectorBits);
int64_t getCpuKernelKeyTile(MaskAttrInterface pattern, int64_t keyTile);

} // namespace mlir::attn

#endif // ATTN_TRANSFORMS_PASSES_H
