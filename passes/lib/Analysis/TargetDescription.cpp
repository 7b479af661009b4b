//===- TargetDescription.cpp - the targets attn knows ---------------------===//
#include "attn/Analysis/TargetDescription.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"

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

TargetDescription TargetDescription::cpuAvx512Bf16() {
  TargetDescription target = cpuAvx512();
  target.name = "cpu-avx512-bf16";
  target.features = {"avx512bf16"};
  return target;
}

TargetDescription TargetDescription::cpuAmx() {
  TargetDescription target = cpuAvx512();
  target.name = "cpu-amx";
  target.features = {"avx512bf16", "amx-bf16"};
  return target;
}

TargetDescription
TargetDescription::forCpuFeatures(const llvm::StringMap<bool> &has) {
  TargetDescription target = cpuAvx2();
  if (has.lookup("avx512f") && has.lookup("amx-bf16") &&
      has.lookup("avx512bf16"))
    target = cpuAmx();
  else if (has.lookup("avx512f") && has.lookup("avx512bf16"))
    target = cpuAvx512Bf16();
  else if (has.lookup("avx512f"))
    target = cpuAvx512();
  if (has.lookup("avxneconvert"))
    target.features.push_back("avxneconvert");
  return target;
}

bool TargetDescription::hasFeature(llvm::StringRef feature) const {
  return llvm::is_contained(features, feature);
}

bool TargetDescription::bf16ProductsOnAmx() const {
  return isCpu() && vectorBits == 512 && hasFeature("amx-bf16");
}

bool TargetDescription::bf16ProductsByDot() const {
  return isCpu() && vectorBits == 512 && !bf16ProductsOnAmx() &&
         hasFeature("avx512bf16");
}

bool TargetDescription::hasNativeBf16Conversion() const {
  return hasFeature("avx512bf16") || hasFeature("avxneconvert");
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
  target.name = "cuda-sm" + chip.drop_front(3).str(); // sm_90: cuda-sm90
  target.chip = chip.str();
  target.subgroupSize = 32;
  // Static shared memory per block without opting in to more.
  target.workgroupMemoryBytes = 48 << 10;
  target.workgroupRows = 64;
  target.maxKeyTile = 32;
  target.matrixShapes = {{16, 8, 16}};
  // sm_90a's warpgroup mma (wgmma): 64 rows (4 warps), N up to 256. Two
  // warpgroups (128 query rows) share each staged K / V tile; key tiles of
  // up to 64 rows in dynamic shared memory, 112 KiB a workgroup (with the
  // 1 KiB of alignment slack and the 1 KiB a block reserves, two
  // workgroups share an SM's 228 KiB).
  if (chip == "sm_90a") {
    target.matrixShapes.push_back({64, 256, 16});
    target.workgroupRows = 128;
    target.workgroupMemoryBytes = 112 << 10;
    target.maxKeyTile = 64;
  }
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
  if (name == "cpu-avx512-bf16")
    return cpuAvx512Bf16();
  if (name == "cpu-amx")
    return cpuAmx();
  if (name == "host")
    return forCpuFeatures(llvm::sys::getHostCPUFeatures());
  if (name == "vulkan" || name == "vulkan-lavapipe")
    return vulkanLavapipe();
  if (name == "vulkan-generic")
    return vulkanGeneric();
  if (name == "cuda" || name == "cuda-sm80")
    return cuda("sm_80");
  if (name == "cuda-sm90")
    return cuda("sm_90");
  if (name == "cuda-sm90a")
    return cuda("sm_90a");
  return std::nullopt;
}

llvm::StringRef TargetDescription::knownNames() {
  return "cpu, cpu-avx2, cpu-avx512, cpu-avx512-bf16, cpu-amx, host, "
         "vulkan, vulkan-lavapipe, vulkan-generic, cuda, cuda-sm80, "
         "cuda-sm90, cuda-sm90a";
}

static StringRef apiName(TargetDescription::Api api) {
  switch (api) {
  case TargetDescription::Api::Vulkan:
    return "vulkan";
  case TargetDescription::Api::Cuda:
    return "cuda";
  case TargetDescription::Api::None:
    break;
  }
  return "cpu";
}

TargetAttr TargetDescription::toAttr(MLIRContext *context) const {
  // Tools attach targets to modules that may hold no attn op yet.
  context->getOrLoadDialect<AttnDialect>();
  Builder b(context);
  SmallVector<Attribute> featureAttrs, typeAttrs;
  for (const std::string &feature : features)
    featureAttrs.push_back(b.getStringAttr(feature));
  for (const std::string &type : elementTypes) {
    Type parsed = type == "f16"    ? Type(b.getF16Type())
                  : type == "bf16" ? Type(b.getBF16Type())
                  : type == "f64"  ? Type(b.getF64Type())
                                   : Type(b.getF32Type());
    typeAttrs.push_back(TypeAttr::get(parsed));
  }
  SmallVector<int64_t> mma;
  for (const std::array<int64_t, 3> &shape : matrixShapes)
    mma.append(shape.begin(), shape.end());
  return TargetAttr::get(
      context, name, apiName(api), vectorBits, vectorRegisters, l1DataBytes,
      l2Bytes,
      featureAttrs.empty() ? ArrayAttr() : b.getArrayAttr(featureAttrs), chip,
      subgroupSize, workgroupMemoryBytes, workgroupRows, maxKeyTile,
      minWorkgroups, pipelineDepth, mma,
      typeAttrs.empty() ? ArrayAttr() : b.getArrayAttr(typeAttrs));
}

TargetDescription TargetDescription::fromAttr(TargetAttr attr) {
  TargetDescription target;
  target.name = attr.getName().str();
  target.api = attr.getApi() == "vulkan" ? Api::Vulkan
               : attr.getApi() == "cuda" ? Api::Cuda
                                         : Api::None;
  target.kind = target.api == Api::None ? Kind::Cpu : Kind::Gpu;
  target.vectorBits = attr.getVectorBits();
  target.vectorRegisters = attr.getVectorRegisters();
  target.l1DataBytes = attr.getL1Bytes();
  target.l2Bytes = attr.getL2Bytes();
  target.features.clear();
  if (ArrayAttr features = attr.getFeatures())
    for (Attribute feature : features)
      target.features.push_back(cast<StringAttr>(feature).str());
  target.chip = attr.getChip().str();
  target.subgroupSize = attr.getSubgroupSize();
  target.workgroupMemoryBytes = attr.getWorkgroupMemory();
  target.workgroupRows = attr.getWorkgroupRows();
  target.maxKeyTile = attr.getMaxKeyTile();
  target.minWorkgroups = attr.getMinWorkgroups();
  target.pipelineDepth = attr.getPipelineDepth();
  for (size_t i = 0; i + 2 < attr.getMma().size(); i += 3)
    target.matrixShapes.push_back(
        {attr.getMma()[i], attr.getMma()[i + 1], attr.getMma()[i + 2]});
  if (ArrayAttr types = attr.getElementTypes()) {
    target.elementTypes.clear();
    for (Attribute type : types) {
      std::string text;
      llvm::raw_string_ostream os(text);
      cast<TypeAttr>(type).getValue().print(os);
      target.elementTypes.push_back(text);
    }
  }
  return target;
}

std::optional<TargetDescription> TargetDescription::cpuOf(Operation *op) {
  std::optional<TargetDescription> target = of(op);
  if (!target)
    return cpuAvx2();
  if (!target->isCpu())
    return std::nullopt;
  return target;
}

std::optional<TargetDescription> TargetDescription::of(Operation *op) {
  for (Operation *scope = op; scope; scope = scope->getParentOp())
    if (auto attr = scope->getAttrOfType<TargetAttr>(TargetAttr::getAttrName()))
      return fromAttr(attr);
  return std::nullopt;
}
