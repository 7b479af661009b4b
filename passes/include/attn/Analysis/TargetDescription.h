//===- TargetDescription.h - what a back end may assume ---------*- C++ -*-===//
//
// One description of the machine a lowering targets, so that planning and
// verification ask the target instead of hard-wiring x86 facts: the vector
// width and register file of a CPU; the subgroup size, workgroup memory and
// matrix-multiply shapes of a GPU; the element types its lowerings take.
// In the IR it is the module's `#attn.target` attribute (attn-set-target
// attaches it, every pass that needs a target fact reads it back with
// `TargetDescription::of`); this struct is its C++ view.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_ANALYSIS_TARGETDESCRIPTION_H
#define ATTN_ANALYSIS_TARGETDESCRIPTION_H

#include "attn/Dialect/Attn/IR/AttnAttrs.h"
#include "mlir/IR/Types.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include <array>
#include <optional>
#include <string>

namespace mlir::attn {

struct TargetDescription {
  enum class Kind { Cpu, Gpu };
  Kind kind = Kind::Cpu;
  std::string name;

  // CPU: f32 vector registers of `vectorBits` bits, `vectorRegisters` of
  // them, and the data caches a tile should stay inside.
  int64_t vectorBits = 256;
  int64_t vectorRegisters = 16;
  int64_t l1DataBytes = 32 << 10;
  int64_t l2Bytes = 1 << 20;
  /// CPU: the ISA extensions the code may use beyond the vector width:
  /// avx512bf16, amx-bf16, avxneconvert (#attn.target's `features`).
  llvm::SmallVector<std::string> features;

  // GPU: threads per subgroup, shared memory per workgroup, and the
  // matrix-multiply shapes (M, N, K) of its matrix units.
  int64_t subgroupSize = 0;
  int64_t workgroupMemoryBytes = 0;
  llvm::SmallVector<std::array<int64_t, 3>> matrixShapes;
  // GPU: the API its kernels are written for, the invocations of one
  // workgroup (one query row each) and the largest key tile staged in
  // workgroup memory (smaller when K and V rows are long).
  enum class Api { None, Vulkan, Cuda };
  Api api = Api::None;
  int64_t workgroupRows = 0;
  int64_t maxKeyTile = 0;
  /// GPU: the workgroups a launch needs to fill the device. Launches with
  /// fewer (decoding: one query tile per head) split each workgroup's key
  /// tiles over several workgroups and merge their partial softmax results
  /// by log-sum-exp in a second kernel.
  int64_t minWorkgroups = 0;
  /// GPU: stages of the K / V tiles in workgroup memory (2: the next tile
  /// is copied while this one is computed).
  int64_t pipelineDepth = 1;
  /// CUDA: the `sm_XX` chip its PTX is for.
  std::string chip;

  /// Element types of Q, K and V its lowerings take (softmax state is f32
  /// everywhere).
  llvm::SmallVector<std::string> elementTypes = {"f32"};

  bool isCpu() const { return kind == Kind::Cpu; }
  int64_t f32Lanes() const { return vectorBits / 32; }
  bool hasFeature(llvm::StringRef feature) const;
  /// How bf16 products run on the CPU kernels (docs/Pipeline.md): on AMX
  /// tiles, else by vdpbf16ps, else widened to f32. Both need the 512-bit
  /// register blocking.
  bool bf16ProductsOnAmx() const;
  bool bf16ProductsByDot() const;
  /// Whether f32 <-> bf16 conversions have an instruction (else they are
  /// expanded to integer arithmetic: LLVM would call __truncsfbf2, which
  /// neither the JIT nor artifacts link).
  bool hasNativeBf16Conversion() const;
  /// Whether the lowerings take Q, K and V of this element type.
  bool supportsElementType(Type type) const;

  /// x86-64 with AVX2 (16 ymm) or AVX-512 (32 zmm).
  static TargetDescription cpuAvx2();
  static TargetDescription cpuAvx512();
  /// AVX-512 with vdpbf16ps (Zen 4 / 5, Cooper Lake) and with AMX tiles
  /// too (Sapphire Rapids and later).
  static TargetDescription cpuAvx512Bf16();
  static TargetDescription cpuAmx();
  /// The one place a CPU's features (llvm::sys::getHostCPUFeatures, or a
  /// TargetMachine's for --mcpu) become a description.
  static TargetDescription forCpuFeatures(const llvm::StringMap<bool> &has);
  /// Vulkan on Mesa's lavapipe (a CPU: subgroups of 8, 32 KiB of
  /// workgroup memory), on any Vulkan 1.1 device (the limits the Vulkan
  /// specification guarantees), and CUDA for sm_80 / sm_90 / sm_90a (with
  /// warpgroup mma).
  static TargetDescription vulkanLavapipe();
  static TargetDescription vulkanGeneric();
  static TargetDescription cuda(llvm::StringRef chip);
  /// By name: cpu (= cpu-avx2), cpu-avx2, cpu-avx512, cpu-avx512-bf16,
  /// cpu-amx, host (this machine's CPU), vulkan (= vulkan-lavapipe),
  /// vulkan-lavapipe, vulkan-generic, cuda (= cuda-sm80), cuda-sm80,
  /// cuda-sm90, cuda-sm90a.
  static std::optional<TargetDescription> lookup(llvm::StringRef name);
  /// The names lookup takes, for diagnostics.
  static llvm::StringRef knownNames();

  /// The description as the `#attn.target` attribute, and back.
  TargetAttr toAttr(MLIRContext *context) const;
  static TargetDescription fromAttr(TargetAttr attr);
  /// The target of the module holding `op` (its `attn.target` attribute),
  /// or none when it has no target.
  static std::optional<TargetDescription> of(Operation *op);
  /// The CPU a CPU lowering of `op` is for: the module's target, cpu-avx2
  /// when it has none; nothing when the module is for a GPU (CPU passes
  /// leave it alone).
  static std::optional<TargetDescription> cpuOf(Operation *op);
};

} // namespace mlir::attn

#endif // ATTN_ANALYSIS_TARGETDESCRIPTION_H
