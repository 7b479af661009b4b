//===- AttnTarget.cpp - #attn.target parameter checks ---------------------===//
//
// What a target attribute may say: the checks a lowering would otherwise
// make (or forget) when it reads a fact. The descriptions themselves are
// built in passes/lib/Analysis/TargetDescription.cpp.
//
//===----------------------------------------------------------------------===//
#include "attn/Dialect/Attn/IR/AttnAttrs.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::attn;

/// CPU features the lowerings know how to use.
static constexpr llvm::StringLiteral kCpuFeatures[] = {"avx512bf16", "amx-bf16",
                                                       "avxneconvert"};

LogicalResult TargetAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, StringRef name, StringRef api,
    int64_t vectorBits, int64_t vectorRegisters, int64_t l1Bytes,
    int64_t l2Bytes, ArrayAttr features, StringRef chip, int64_t subgroupSize,
    int64_t workgroupMemory, int64_t workgroupRows, int64_t maxKeyTile,
    int64_t minWorkgroups, int64_t pipelineDepth, ArrayRef<int64_t> mma,
    ArrayAttr elementTypes) {
  if (name.empty())
    return emitError() << "#attn.target needs a name";
  if (api != "cpu" && api != "vulkan" && api != "cuda")
    return emitError() << "#attn.target api must be cpu, vulkan or cuda, got '"
                       << api << "'";
  if (elementTypes && !llvm::all_of(elementTypes, [](Attribute type) {
        auto typeAttr = dyn_cast<TypeAttr>(type);
        return typeAttr && isa<FloatType>(typeAttr.getValue());
      }))
    return emitError() << "#attn.target element_types must be float types";
  if (api == "cpu") {
    if (vectorBits != 256 && vectorBits != 512)
      return emitError() << "#attn.target vector_bits must be 256 or 512, got "
                         << vectorBits;
    if (vectorRegisters < 16)
      return emitError() << "#attn.target vector_registers must be >= 16, got "
                         << vectorRegisters;
    if (l1Bytes < 4096 || l2Bytes < l1Bytes)
      return emitError() << "#attn.target caches must be l1_bytes >= 4096 and "
                            "l2_bytes >= l1_bytes";
    for (Attribute feature :
         features ? features.getValue() : ArrayRef<Attribute>()) {
      auto text = dyn_cast<StringAttr>(feature);
      if (!text || !llvm::is_contained(kCpuFeatures, text.getValue()))
        return emitError() << "#attn.target unknown CPU feature " << feature
                           << " (known: avx512bf16, amx-bf16, avxneconvert)";
    }
    return success();
  }
  // GPU targets.
  if (api == "cuda" && !chip.starts_with("sm_"))
    return emitError() << "#attn.target chip must be sm_XX for cuda, got '"
                       << chip << "'";
  if (subgroupSize < 1 || workgroupMemory < 1024 || workgroupRows < 1 ||
      maxKeyTile < 1 || minWorkgroups < 1 || pipelineDepth < 1)
    return emitError()
           << "#attn.target of a GPU needs subgroup_size, workgroup_rows, "
              "max_key_tile, min_workgroups and pipeline_depth >= 1 and "
              "workgroup_memory >= 1024";
  if (mma.size() % 3 != 0)
    return emitError() << "#attn.target mma lists M, N, K triples, got "
                       << mma.size() << " values";
  return success();
}
