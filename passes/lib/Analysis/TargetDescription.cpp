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
  target.elementTypes = {"f32", "f16", "bf16"};
  return target;
}

TargetDescription TargetDescription::cpuAvx512() {
  TargetDescription target;
  target.name = "cpu-avx512";
  target.vectorBits = 512;
  target.vectorRegisters = 32;
  target.l1DataBytes = 48 << 10;
  target.l2Bytes = 2 << 20;
  target.elementTypes = {"f32", "f16", "bf16"};
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

TargetDescription TargetDescription::vulkanLavapipe() {
  TargetDescription target;
  target.kind = Kind::Gpu;
  target.api = Api::Vulkan;
  target.name = "vulkan-lavapipe";
  target.subgroupSize = 8;
  target.workgroupMemoryBytes = 32 << 10;
  target.workgroupRows = 64;
  target.maxKeyTile = 32;
  // lavapipe's threads (one per core) are few; the suite's decoding shapes
  // (16 workgroups) are split in 2 to 4.
  target.minWorkgroups = 32;
  target.pipelineDepth = 2;
  // 16-bit inputs are widened to f32 as they are loaded.
  target.elementTypes = {"f32", "f16", "bf16"};
  return target;
}

TargetDescription TargetDescription::vulkanGeneric() {
  TargetDescription target = vulkanLavapipe();
  target.name = "vulkan-generic";
  // maxComputeSharedMemorySize is at least 16 KiB on every Vulkan device.
  target.subgroupSize = 32;
  target.workgroupMemoryBytes = 16 << 10;
  target.minWorkgroups = 128;
  return target;
}

TargetDescription TargetDescription::cuda(llvm::StringRef chip) {
  TargetDescription target;
  target.kind = Kind::Gpu;
  target.api = Api::Cuda;
  target.name = ("cuda-" + chip).str();
  target.chip = chip.str();
  target.subgroupSize = 32;
  // Static shared memory per block without opting in to more.
  target.workgroupMemoryBytes = 48 << 10;
  target.workgroupRows = 64;
  target.maxKeyTile = 32;
  target.matrixShapes = {{16, 8, 16}};
  // Two workgroups per SM of an H100 (132 SMs) or A100 (108).
  target.minWorkgroups = 256;
  target.pipelineDepth = 2;
  target.elementTypes = {"f32", "f16", "bf16"};
  return target;
}

std::optional<TargetDescription>
TargetDescription::lookup(llvm::StringRef name) {
  if (name == "cpu" || name == "cpu-avx2")
    return cpuAvx2();
  if (name == "cpu-avx512")
    return cpuAvx512();
  if (name == "vulkan" || name == "vulkan-lavapipe")
    return vulkanLavapipe();
  if (name == "vulkan-generic")
    return vulkanGeneric();
  if (name == "cuda" || name == "cuda-sm80")
    return cuda("sm_80");
  if (name == "cuda-sm90")
    return cuda("sm_90");
  return std::nullopt;
}

llvm::StringRef TargetDescription::knownNames() {
  return "cpu, cpu-avx2, cpu-avx512, vulkan, vulkan-lavapipe, "
         "vulkan-generic, cuda, cuda-sm80, cuda-sm90";
}
