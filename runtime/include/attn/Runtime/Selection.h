//===- Selection.h - sorting and top-k behind attn.lsh / attn.routing -*- C++ -*-===//
//
// The content-based attention ops need a data-dependent order of the
// sequence, which has no good expression as linalg: attn-decompose-lsh and
// attn-decompose-routing call these functions (MLIR's C interface, rank-2
// memrefs, one problem per row) from libattn_support.so.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_SELECTION_H
#define ATTN_RUNTIME_SELECTION_H

#include <cstdint>

extern "C" {
/// MLIR's descriptors of rank-2 memrefs.
struct AttnMemRef2I64 {
  int64_t *allocated;
  int64_t *aligned;
  int64_t offset;
  int64_t sizes[2];
  int64_t strides[2];
};
struct AttnMemRef2F32 {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[2];
  int64_t strides[2];
};

/// Stable sort of each row's positions by bucket (a counting sort, O(L +
/// buckets)): order[n, s] is the position at sorted index s, rank[n, p] the
/// sorted index of position p. Buckets are in [0, 2^31).
void _mlir_ciface_attn_bucket_sort(AttnMemRef2I64 *buckets,
                                   AttnMemRef2I64 *order,
                                   AttnMemRef2I64 *rank);

/// The k = indices.sizes[1] positions of each row's largest scores (ties to
/// the lower position), written in increasing position order; slot[n, p]
/// is the index in that list of position p, -1 when p is not selected
/// (written only when `slot` has L columns: pass 0 columns to skip it).
/// O(L + k log k) per row on average (nth_element).
void _mlir_ciface_attn_top_k_f32(AttnMemRef2F32 *scores,
                                 AttnMemRef2I64 *indices,
                                 AttnMemRef2I64 *slot);
}

#endif // ATTN_RUNTIME_SELECTION_H
