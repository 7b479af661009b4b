//===- TargetDescription.cpp - the targets attn knows ---------------------===//
#include "attn/Analysis/TargetDescription.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::attn;

bool TargetDescription::supportsElementType(Type type) const {
  std::string name;
  llvm::raw_string_ostream os(name);
  type.print(os);
  return llvm::is_contained(elementTypes, name);
}

TargetDescription TargetDescription::cpuAvx2() {
  TargetDescription target;
  target.name = "cpu-avx2";
  target.vectorBits = 256;
  target.vectorRegisters = 16;
  return target;
}

TargetDescription TargetDescription::cpuAvx512() {
  TargetDescription target;
  target.name = "cpu-avx512";
  target.vectorBits = 512;
  target.vectorRegisters = 32;
  target.l1DataBytes = 48 << 10;
  target.l2Bytes = 2 << 20;
  return target;
}

std::optional<TargetDescription>
TargetDescription::cpuForVectorBits(int64_t bits) {
  if (bits == 256)
    return cpuAvx2();
  if (bits == 512)
    return cpuAvx512();
  return std::nullopt;
}

std::optional<TargetDescription>
TargetDescription::lookup(llvm::StringRef name) {
  if (name == "cpu" || name == "cpu-avx2")
    return cpuAvx2();
  if (name == "cpu-avx512")
    return cpuAvx512();
  return std::nullopt;
}
