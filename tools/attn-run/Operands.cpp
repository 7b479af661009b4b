//===- Operands.cpp - attn-run's kernel operands --------------------------===//
#include "Operands.h"
#include "attn/Runtime/RandomFeatures.h"
#include "llvm/Support/FormatVariadic.h"
#include <cmath>
#include <cstring>
#include <random>

using namespace attnrt;

int64_t attnrt::elementBytes(Type type) {
  if (type.isF32() || type.isInteger(32))
    return 4;
  if (type.isF16() || type.isBF16())
    return 2;
  if (type.isInteger(64))
    return 8;
  if (type.isInteger(1) || type.isInteger(8))
    return 1;
  return 0;
}

FloatFormat attnrt::floatFormatOf(Type type) {
  return type.isF16()    ? FloatFormat::F16
         : type.isBF16() ? FloatFormat::BF16
                         : FloatFormat::F32;
}

void attnrt::setHalfValues(Operand &operand, const std::vector<float> &values) {
  FloatFormat format = floatFormatOf(operand.type.getElementType());
  operand.widened.resize(values.size());
  for (size_t e = 0; e < values.size(); ++e) {
    uint16_t bits = toBits(format, values[e]);
    operand.as<uint16_t>()[e] = bits;
    operand.widened[e] = fromBits(format, bits);
  }
}

/// Seeded inputs: N(0, 1) floats (orthogonal random features for the
/// omega of attn.kernelized, as Performer draws them), 80 % true masks, and
/// increasing segment ids that change every 16 positions on average.
void attnrt::generate(Operand &operand, uint64_t streamSeed,
                      bool gaussianOmega) {
  std::mt19937_64 rng(streamSeed);
  Type element = operand.type.getElementType();
  int64_t n = operand.numElements();
  if (operand.role == "omega" && !gaussianOmega &&
      operand.type.getRank() == 2) {
    std::vector<float> omega = attnrt::orthogonalRandomFeatures(
        operand.type.getDimSize(0), operand.type.getDimSize(1), streamSeed);
    std::copy(omega.begin(), omega.end(), operand.as<float>());
  } else if (mlir::isa<mlir::FloatType>(element)) {
    // Linformer's projections sum over the key length: N(0, 1 / Lk) keeps
    // the projected keys at the scale of the keys (as its initialization
    // does); N(0, 1) would make logits of size sqrt(Lk) and a
    // needlessly ill-conditioned softmax.
    bool projection = operand.role == "e_proj" || operand.role == "f_proj";
    float stddev = projection
                       ? 1.0f / std::sqrt(float(operand.type.getShape().back()))
                       : 1.0f;
    std::normal_distribution<float> normal(0.0f, stddev);
    if (element.isF32()) {
      for (int64_t e = 0; e < n; ++e)
        operand.as<float>()[e] = normal(rng);
    } else {
      std::vector<float> values(n);
      for (float &x : values)
        x = normal(rng);
      setHalfValues(operand, values);
    }
  } else if (element.isInteger(1) || element.isInteger(8)) {
    std::bernoulli_distribution keep(0.8);
    for (int64_t e = 0; e < n; ++e)
      operand.as<uint8_t>()[e] = keep(rng) ? 1 : 0;
  } else {
    int64_t rowLength = operand.type.getShape().back();
    std::bernoulli_distribution next(1.0 / 16);
    int64_t id = 0;
    for (int64_t e = 0; e < n; ++e) {
      id = e % rowLength == 0 ? 0 : id + (next(rng) ? 1 : 0);
      if (element.isInteger(32))
        operand.as<int32_t>()[e] = int32_t(id);
      else
        operand.as<int64_t>()[e] = id;
    }
  }
}

/// Element `e` of an integer operand of any width, sign-extended.
int64_t attnrt::integerAt(Operand &operand, int64_t e) {
  switch (elementBytes(operand.type.getElementType())) {
  case 1:
    return operand.as<int8_t>()[e];
  case 4:
    return operand.as<int32_t>()[e];
  default:
    return operand.as<int64_t>()[e];
  }
}

std::vector<int64_t> attnrt::segmentIds(Operand &operand) {
  std::vector<int64_t> ids(operand.numElements());
  for (size_t e = 0; e < ids.size(); ++e)
    ids[e] = integerAt(operand, e);
  return ids;
}

/// Copies an .npy array into an operand of the same shape, converting
/// between integer widths (range-checked) and reading bool / uint8 masks;
/// an error message when the types do not go together.
std::string attnrt::copyNpy(const NpyArray &array, Operand &operand) {
  Type element = operand.type.getElementType();
  using attnrt::NpyDtype;
  int64_t n = operand.numElements();
  auto mismatch = [&] {
    return llvm::formatv("operand '{0}' has element type {1}, the file holds "
                         "{2}",
                         operand.role, element,
                         attnrt::npyDtypeName(array.dtype))
        .str();
  };
  if (element.isF32()) {
    if (array.dtype != NpyDtype::F32)
      return mismatch();
    std::memcpy(operand.as<float>(), array.data.data(), n * sizeof(float));
    return "";
  }
  if (element.isF16() || element.isBF16()) {
    // .npy has no bf16: 16-bit operands are read from f32 and rounded.
    if (array.dtype != NpyDtype::F32)
      return mismatch();
    std::vector<float> values(n);
    std::memcpy(values.data(), array.data.data(), n * sizeof(float));
    setHalfValues(operand, values);
    return "";
  }
  if (element.isInteger(1) || element.isInteger(8)) {
    bool isMask = element.isInteger(1);
    if (array.dtype == NpyDtype::Bool || array.dtype == NpyDtype::U8) {
      for (int64_t e = 0; e < n; ++e)
        operand.as<uint8_t>()[e] =
            isMask ? array.bytes[e] != 0 : uint8_t(array.bytes[e]);
      return "";
    }
    if (isMask)
      return mismatch();
  }
  if (array.dtype != NpyDtype::I32 && array.dtype != NpyDtype::I64 &&
      !(element.isInteger(8) && array.dtype == NpyDtype::U8))
    return mismatch();
  int64_t bits = element.getIntOrFloatBitWidth();
  int64_t lo = -(int64_t(1) << (bits - 1)), hi = (int64_t(1) << (bits - 1)) - 1;
  if (bits == 64)
    lo = INT64_MIN, hi = INT64_MAX;
  for (int64_t e = 0; e < n; ++e) {
    int64_t v;
    if (array.dtype == NpyDtype::I32) {
      int32_t x;
      std::memcpy(&x, array.bytes.data() + 4 * e, 4);
      v = x;
    } else {
      std::memcpy(&v, array.bytes.data() + 8 * e, 8);
    }
    if (v < lo || v > hi)
      return llvm::formatv("element {0} ({1}) does not fit operand '{2}' of "
                           "type {3}",
                           e, v, operand.role, element)
          .str();
    if (bits == 8)
      operand.as<int8_t>()[e] = int8_t(v);
    else if (bits == 32)
      operand.as<int32_t>()[e] = int32_t(v);
    else
      operand.as<int64_t>()[e] = v;
  }
  return "";
}

attnrt::Operand *
attnrt::operandForRole(std::list<Operand> &operands,
                       const std::map<std::string, unsigned> &roleArgs,
                       const std::string &role) {
  auto it = roleArgs.find(role);
  return it == roleArgs.end() ? nullptr
                              : &*std::next(operands.begin(), it->second);
}
