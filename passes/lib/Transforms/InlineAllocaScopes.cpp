//===- InlineAllocaScopes.cpp - drop alloca scopes without allocas --------===//
#include "attn/Transforms/Passes.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNINLINEALLOCASCOPES
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

/// Whether `op` itself allocates on the stack of the enclosing scope.
static bool isStackAllocation(Operation *op) {
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return false; // calls and unknown ops: their own frames are released
  SmallVector<MemoryEffects::EffectInstance> instances;
  effects.getEffects(instances);
  return llvm::any_of(instances, [](const MemoryEffects::EffectInstance &e) {
    return isa<MemoryEffects::Allocate>(e.getEffect()) &&
           isa<SideEffects::AutomaticAllocationScopeResource>(e.getResource());
  });
}

namespace {
struct AttnInlineAllocaScopesPass
    : attn::impl::AttnInlineAllocaScopesBase<AttnInlineAllocaScopesPass> {
  void runOnOperation() override {
    SmallVector<memref::AllocaScopeOp> scopes;
    getOperation()->walk([&](memref::AllocaScopeOp scope) {
      bool allocates =
          scope->walk<WalkOrder::PreOrder>([&](Operation *op) {
                 if (op == scope.getOperation())
                   return WalkResult::advance();
                 if (op->hasTrait<OpTrait::AutomaticAllocationScope>())
                   return WalkResult::skip();
                 return isStackAllocation(op) ? WalkResult::interrupt()
                                              : WalkResult::advance();
               })
              .wasInterrupted();
      if (!allocates)
        scopes.push_back(scope);
    });
    for (memref::AllocaScopeOp scope : scopes) {
      Block &body = scope.getBodyRegion().front();
      Operation *terminator = body.getTerminator();
      scope->replaceAllUsesWith(terminator->getOperands());
      terminator->erase();
      scope->getBlock()->getOperations().splice(Block::iterator(scope),
                                                body.getOperations());
      scope->erase();
    }
  }
};
} // namespace
