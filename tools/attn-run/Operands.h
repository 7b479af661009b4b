//===- Operands.h - attn-run's kernel operands ------------------*- C++ -*-===//
//
// The arguments of the entry function attn-run calls: host buffers named by
// their role in the attention op, generated from a seed or read from .npy.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TOOLS_ATTN_RUN_OPERANDS_H
#define ATTN_TOOLS_ATTN_RUN_OPERANDS_H

#include "attn/Runtime/HalfFloat.h"
#include "attn/Tooling/HostTensor.h"
#include "attn/Tooling/Npy.h"
#include "mlir/IR/BuiltinTypes.h"
#include <list>
#include <map>
#include <string>
#include <vector>

namespace attnrt {

using mlir::RankedTensorType;
using mlir::Type;

/// One function argument: its role, type and aligned host buffer.
struct Operand {
  Operand(std::string role, RankedTensorType type, int64_t elementBytes)
      : role(std::move(role)), type(type),
        tensor(type.getShape(), elementBytes), descriptor(tensor.descriptor()) {
  }

  std::string role;
  RankedTensorType type;
  attnrt::HostTensor tensor;
  attnrt::MemRefDescriptor descriptor;

  int64_t numElements() const { return type.getNumElements(); }
  template <typename T> T *as() { return tensor.as<T>(); }

  /// The values of a floating-point operand as f32: the buffer itself, or
  /// for f16 / bf16 operands their widened copy (set by generate/copyNpy).
  const float *floats() {
    return widened.empty() ? as<float>() : widened.data();
  }
  std::vector<float> widened;
};

/// The 16-bit float format of `type` (f16, bf16), or F32 for others.
FloatFormat floatFormatOf(Type type);

/// Stores `values` (rounded to nearest even) into a 16-bit float operand
/// and keeps their widened values.
void setHalfValues(Operand &operand, const std::vector<float> &values);

/// Bytes per element of the operand types attn-run carries; 0 for others.
int64_t elementBytes(Type type);

/// Seeded inputs: N(0, 1) floats (N(0, 1 / Lk) for Linformer projections;
/// orthogonal random features for omega unless `gaussianOmega`), 80 % true
/// masks, and increasing segment ids.
void generate(Operand &operand, uint64_t streamSeed, bool gaussianOmega);

/// Element `e` of an integer operand of any width, sign-extended.
int64_t integerAt(Operand &operand, int64_t e);

/// The operand's integers as int64.
std::vector<int64_t> segmentIds(Operand &operand);

/// Copies an .npy array into an operand of the same shape; an error message
/// when the types do not go together ("" on success).
std::string copyNpy(const NpyArray &array, Operand &operand);

/// The operand feeding `role` (`roleArgs`: role -> entry argument number,
/// `operands` one per argument), or null when no argument does.
Operand *operandForRole(std::list<Operand> &operands,
                        const std::map<std::string, unsigned> &roleArgs,
                        const std::string &role);

} // namespace attnrt

#endif // ATTN_TOOLS_ATTN_RUN_OPERANDS_H
