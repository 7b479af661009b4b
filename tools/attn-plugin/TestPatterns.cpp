//===- TestPatterns.cpp - attn's lowerings from a foreign pipeline --------===//
//
// `test-attn-patterns`, registered by the plugin only: applies the patterns
// of populateAttnDecompositionPatterns, populateAttnToCpuKernelsPatterns
// and populateAttnToGpuKernelsPatterns with MLIR's greedy driver, as a
// compiler embedding attn would, without attn's pipeline builders
// (test/tools/plugin/patterns*.mlir). The module's #attn.target picks
// which lowering applies.
//
//===----------------------------------------------------------------------===//
#include "TestPatterns.h"
#include "attn/Conversion/Patterns.h"
#include "attn/Transforms/Patterns.h"
#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace {
struct TestAttnPatternsPass
    : PassWrapper<TestAttnPatternsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestAttnPatternsPass)

  StringRef getArgument() const final { return "test-attn-patterns"; }
  StringRef getDescription() const final {
    return "Apply attn's decomposition and kernel patterns greedily";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<amx::AMXDialect, arith::ArithDialect,
                    bufferization::BufferizationDialect, func::FuncDialect,
                    gpu::GPUDialect, linalg::LinalgDialect, LLVM::LLVMDialect,
                    math::MathDialect, memref::MemRefDialect, NVVM::NVVMDialect,
                    scf::SCFDialect, spirv::SPIRVDialect, tensor::TensorDialect,
                    vector::VectorDialect, x86vector::X86VectorDialect>();
  }
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    attn::populateAttnDecompositionPatterns(patterns);
    attn::populateAttnToCpuKernelsPatterns(patterns);
    attn::populateAttnToGpuKernelsPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

void attnplugin::registerTestPatternsPass() {
  PassRegistration<TestAttnPatternsPass>();
}
