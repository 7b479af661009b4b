//===- AttnAttrs.h - attn attributes ----------------------------*- C++ -*-===//
#ifndef ATTN_DIALECT_ATTN_IR_ATTNATTRS_H
#define ATTN_DIALECT_ATTN_IR_ATTNATTRS_H

#include "attn/Dialect/Attn/IR/AttnDialect.h"
#include "attn/Dialect/Attn/IR/MaskTypes.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectImplementation.h"

namespace mlir {
/// Float attribute parameters (slopes, caps, spans) are written as plain
/// literals, `#attn.softcap<cap = 30.0>`, and held as f64 APFloats.
template <>
struct FieldParser<llvm::APFloat> {
  static FailureOr<llvm::APFloat> parse(AsmParser &parser) {
    double value;
    if (parser.parseFloat(value))
      return failure();
    return llvm::APFloat(value);
  }
};
} // namespace mlir

#include "attn/Dialect/Attn/IR/AttnEnums.h.inc"
#include "attn/Dialect/Attn/IR/AttnInterfaces.h.inc"

#define GET_ATTRDEF_CLASSES
#include "attn/Dialect/Attn/IR/AttnAttrs.h.inc"

#endif // ATTN_DIALECT_ATTN_IR_ATTNATTRS_H
