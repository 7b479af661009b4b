//===- CpuPipeline.cpp - attn IR to LLVM for the host CPU -----------------===//
#include "attn/Pipelines/Pipelines.h"
#include "attn/Transforms/Passes.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FormatVariadic.h"
#include <mutex>

using namespace mlir;
using namespace mlir::attn;

void mlir::attn::buildCpuPipeline(OpPassManager &pm,
                                  const CpuPipelineOptions &options) {
  // The text below names passes: make sure they are registered, also when
  // a library user (not attn-opt) builds the pipeline. Registering a pass
  // twice is harmless.
  static std::once_flag registered;
  std::call_once(registered, [] {
    registerAllPasses();
    registerAttnPasses();
  });
  // Written as pass-pipeline text so that it reads like the mlir-opt command
  // it is equivalent to. A bare list: the manager is already on the module.
  std::string pipeline = llvm::formatv(
      // What this target cannot lower yet is refused, at its location.
      "attn-verify-target{{target=cpu},"
      // The efficient-attention ops become linalg + attn.attention.
      "attn-decompose-linformer,attn-decompose-nystrom,"
      "attn-decompose-kernelized,attn-decompose-lsh,attn-decompose-routing,"
      "attn-fourier-mix-to-call,canonicalize,cse,"
      // The vectorized fast path first; attn-tile lowers what it leaves.
      "{5}"
      "attn-tile{{q-tile={0} kv-tile={1}},canonicalize,cse,"
      // linalg.softmax left outside attention has no loop lowering.
      "attn-decompose-aggregated-ops,"
      "attn-approximate-math,"
      // The decompositions' linalg ops: (batch, head) loops on all cores.
      "attn-parallelize-linalg,canonicalize,"
      // Loop-carried tile state is re-allocated per step for now; the
      // deallocation pipeline frees it.
      "one-shot-bufferize{{bufferize-function-boundaries "
      "function-boundary-type-conversion=identity-layout-map "
      "allow-return-allocs-from-loops},"
      "buffer-deallocation-pipeline,"
      // Tiles of (batch, head, query block) run on all cores via OpenMP;
      // the alloca scopes scf-to-openmp adds would block scf-to-cf.
      "convert-linalg-to-loops,scf-forall-to-parallel,"
      "convert-scf-to-openmp{{num-threads={4}},attn-inline-alloca-scopes,"
      "canonicalize,convert-scf-to-cf,"
      "expand-strided-metadata,lower-affine,finalize-memref-to-llvm,"
      "convert-vector-to-llvm,convert-math-to-llvm,convert-arith-to-llvm,"
      "convert-index-to-llvm,convert-openmp-to-llvm,"
      "convert-func-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts",
      options.queryTile.getValue(), options.keyTile.getValue(),
      options.cpuKeyTile.getValue(), options.vectorBits.getValue(),
      options.numThreads.getValue(),
      options.cpuKernels
          ? llvm::formatv("attn-to-cpu-kernels{{kv-tile={0} vector-bits={1} "
                          "count-tiles={2} report-tiles={3}},",
                          options.cpuKeyTile.getValue(),
                          options.vectorBits.getValue(),
                          options.countTiles.getValue(),
                          options.reportTiles.getValue())
                .str()
          : std::string());
  std::string error;
  llvm::raw_string_ostream os(error);
  if (failed(parsePassPipeline(pipeline, pm, os)))
    llvm::report_fatal_error(llvm::Twine("attn-cpu-pipeline is malformed: ") +
                             error);
}

void mlir::attn::registerAttnPipelines() {
  PassPipelineRegistration<CpuPipelineOptions>(
      "attn-cpu-pipeline",
      "Lower attn IR to the LLVM dialect for the host CPU",
      buildCpuPipeline);
}
