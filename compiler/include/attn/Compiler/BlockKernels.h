//===- BlockKernels.h - compiled blocks of one attention --------*- C++ -*-===//
//
// The BlockAttention (ContextParallel.h) of an attn.attention op: each
// (query block, key block) pair runs a kernel compiled by attn for this
// CPU, an attn.attention with the block's query_offset / key_offset and an
// lse result (docs/Distributed.md). Kernels are cached by block shape,
// class and position shift, so a ring compiles a handful. Blocks are
// classified with the mask algebra at global positions, segment ids
// included.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_COMPILER_BLOCKKERNELS_H
#define ATTN_COMPILER_BLOCKKERNELS_H

#include "attn/Compiler/HostCompiler.h"
#include "attn/Runtime/ContextParallel.h"
#include "llvm/Support/Error.h"
#include <memory>

namespace mlir::attn {
class AttentionOp;
} // namespace mlir::attn

namespace attnrt {

class CompiledBlockAttention : public BlockAttention {
public:
  /// `attention` is the whole self-attention (Lq = Lk = the tokens), f32,
  /// with a pattern that depends on j - i alone (or segment ids) and no
  /// mask, bias or score region: anything else is an error saying why.
  /// `querySegments` / `keySegments` [B, tokens] (for a segments pattern)
  /// and `relTable` (for the mods that read one) are the whole attention's
  /// and must outlive this object.
  static llvm::Expected<std::unique_ptr<CompiledBlockAttention>>
  create(mlir::attn::AttentionOp attention, const HostCompileOptions &options,
         const int64_t *querySegments = nullptr,
         const int64_t *keySegments = nullptr, const float *relTable = nullptr);
  ~CompiledBlockAttention() override;

  BlockClass classify(TokenChunk queries, TokenChunk keys) override;
  bool run(TokenChunk queries, TokenChunk keys, BlockClass cls,
           int64_t queryHeads, int64_t keyHeads, const float *q, const float *k,
           const float *v, float *o, float *lse, std::string &error) override;

  /// The rel_table of the calls that follow (a layer's own weight).
  void setRelTable(const float *relTable);

  /// Kernels compiled so far.
  int64_t kernelsCompiled() const;

private:
  struct Impl;
  explicit CompiledBlockAttention(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace attnrt

#endif // ATTN_COMPILER_BLOCKKERNELS_H
