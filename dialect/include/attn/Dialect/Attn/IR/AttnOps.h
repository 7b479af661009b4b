//===- AttnOps.h - attn operations ------------------------------*- C++ -*-===//
#ifndef ATTN_DIALECT_ATTN_IR_ATTNOPS_H
#define ATTN_DIALECT_ATTN_IR_ATTNOPS_H

#include "attn/Dialect/Attn/IR/AttnAttrs.h"
#include "attn/Dialect/Attn/IR/AttnDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "attn/Dialect/Attn/IR/AttnOps.h.inc"

namespace mlir::attn {
/// The float tensors defined outside a score region that it reads, in
/// order of first use: what the region captures (its parameters, whose
/// gradients attn.attention_grad can return).
SmallVector<Value> capturedFloatTensors(Region &score);
} // namespace mlir::attn

#endif // ATTN_DIALECT_ATTN_IR_ATTNOPS_H
