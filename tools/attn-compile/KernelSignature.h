//===- KernelSignature.h - an artifact's entry points ----------*- C++ -*-===//
//
// Every entry point of an artifact is exported with its signature
// (`_attn_signature_<function>`), which the C API checks calls against
// (runtime/lib/CApi.cpp): a kernel reads and writes as many rows as its
// inputs say, so sizes that must be equal are written as such.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TOOLS_ATTN_COMPILE_KERNELSIGNATURE_H
#define ATTN_TOOLS_ATTN_COMPILE_KERNELSIGNATURE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include <string>

namespace attntools {

/// The operand and result types of `fn` as the C API reads them:
/// "f32[?,8,?,64] f32[$0.0,8,?,64] -> f32[$0.0,8,$0.2,64]", `?` for a
/// dynamic size, `$a.d` for a dynamic size that equals dimension d of
/// argument a. Sizes are related through attention ops (batch, heads,
/// lengths and head dims of q, k, v and the result), linalg ops (operands
/// indexed by one loop dimension; results the shape of their inits),
/// tensor.empty sized by tensor.dim, casts and attn.fourier_mix.
std::string signatureOf(mlir::func::FuncOp fn);

} // namespace attntools

#endif // ATTN_TOOLS_ATTN_COMPILE_KERNELSIGNATURE_H
