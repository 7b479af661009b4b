//===- ContextParallel.h - one attention over several processes -*- C++ -*-===//
//
// Context parallelism (docs/Distributed.md): the tokens of one sequence are
// split over the ranks of a Communicator; each rank holds its queries, keys
// and values, and gets the attention output of its queries.
//
//   ring      each rank sends its K/V block to the ranks whose queries need
//             it (one shift per step, non-blocking, overlapped with the
//             compute of the block before) and merges partial (O, lse)
//             results exactly; blocks no query of a rank keeps are never
//             sent to it;
//   ulysses   all-to-all from sequence-sharded to head-sharded, attention
//             over the whole sequence for Hq / P heads, all-to-all back.
//
// What computes a block is the caller's (BlockAttention): attn compiles
// one kernel per block shape and class (BlockKernels.h). No LLVM or MPI
// here: the communicator is an interface.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_CONTEXTPARALLEL_H
#define ATTN_RUNTIME_CONTEXTPARALLEL_H

#include "attn/Runtime/Communicator.h"
#include <cstdint>
#include <string>
#include <vector>

namespace attnrt {

/// Global token rows [start, start + length).
struct TokenChunk {
  int64_t start = 0, length = 0;
  int64_t end() const { return start + length; }
};

/// How N tokens are split over P ranks. Contiguous: P near-equal ranges
/// in order (the first N mod P one token longer). Zigzag: 2P near-equal
/// chunks, rank r holding chunks r and 2P - 1 - r, so that under a causal
/// mask every rank's queries see about as many keys.
enum class SequenceLayout { Contiguous, Zigzag };

/// The chunks of `rank`, in the order its local rows hold them.
std::vector<TokenChunk> rankChunks(SequenceLayout layout, int64_t tokens,
                                   int ranks, int rank);

/// Sizes of the attention (Q [B, Hq, n, D], K [B, Hkv, n, D], V [B, Hkv, n,
/// Dv], O [B, Hq, n, Dv]; n a rank's or a block's rows).
struct AttentionDims {
  int64_t batch = 1, queryHeads = 1, keyHeads = 1, headDim = 1, valueDim = 1;
};

/// Merges a partial result over other keys into (o, lse), exactly:
///   lse' = log(exp(lse) + exp(lsePart)),
///   o'   = exp(lse - lse') o + exp(lsePart - lse') oPart,
/// rows with lse = -inf (nothing kept) weigh 0. o and oPart [rows, dv],
/// lse and lsePart [rows].
void mergeAttentionPartial(float *o, float *lse, const float *oPart,
                           const float *lsePart, int64_t rows, int64_t dv);

/// What the mask keeps of a block of queries against a block of keys.
enum class BlockClass { Empty, Full, Partial };

/// Computes attention blocks at global positions.
class BlockAttention {
public:
  virtual ~BlockAttention() = default;
  /// The class of (queries, keys) in the whole attention of `tokens`
  /// tokens; must be the same on every rank (the ranks decide from it
  /// what to send).
  virtual BlockClass classify(TokenChunk queries, TokenChunk keys) = 0;
  /// o [B, heads, queries.length, Dv] and lse [B, heads, queries.length]
  /// of q [B, heads, queries.length, D] over k / v [B, keyHeads,
  /// keys.length, D / Dv], with queries and keys at their global
  /// positions; `cls` from classify (Full may skip the mask).
  /// `queryHeads` / `keyHeads` are the heads present (Ulysses gives each
  /// rank a slice of them).
  virtual bool run(TokenChunk queries, TokenChunk keys, BlockClass cls,
                   int64_t queryHeads, int64_t keyHeads, const float *q,
                   const float *k, const float *v, float *o, float *lse,
                   std::string &error) = 0;
};

/// What one call did on this rank, for tests and benchmarks.
struct ContextParallelStats {
  std::vector<int> blocksFrom;     ///< ranks whose K/V block arrived
  size_t bytesSent = 0;            ///< by this rank in this call
  size_t peakKeyValueBytes = 0;    ///< K/V held at once (own + arriving)
  int64_t blocksComputed = 0;      ///< (query chunk, key chunk) pairs run
  int64_t blocksSkipped = 0;       ///< pairs the mask empties
  double computeSeconds = 0, waitSeconds = 0;
};

/// Ring attention of this rank's rows (layout's chunks of `tokens`):
/// q [B, Hq, n, D], k / v [B, Hkv, n, D / Dv] in, o [B, Hq, n, Dv] out.
bool ringAttention(Communicator &comm, SequenceLayout layout, int64_t tokens,
                   const AttentionDims &dims, BlockAttention &blocks,
                   const float *q, const float *k, const float *v, float *o,
                   ContextParallelStats &stats, std::string &error);

/// DeepSpeed-Ulysses on the same operands; P must divide Hq and Hkv.
bool ulyssesAttention(Communicator &comm, SequenceLayout layout,
                      int64_t tokens, const AttentionDims &dims,
                      BlockAttention &blocks, const float *q, const float *k,
                      const float *v, float *o, ContextParallelStats &stats,
                      std::string &error);

} // namespace attnrt

#endif // ATTN_RUNTIME_CONTEXTPARALLEL_H
