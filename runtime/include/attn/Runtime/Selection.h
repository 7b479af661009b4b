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

/// Stable counting sort of each row's columns by key (keys in [0, 2^31)),
/// O(M + max key) per row: order[n, s] is the column at sorted index s,
/// rank[n, m] the sorted index of column m, starts[n, x] the sorted index
/// of the first column with key >= x (keys below starts.sizes[1] - 1; the
/// last entry is M). An output with 0 columns is skipped.
void _mlir_ciface_attn_counting_sort(AttnMemRef2I64 *keys,
                                     AttnMemRef2I64 *order,
                                     AttnMemRef2I64 *rank,
                                     AttnMemRef2I64 *starts);

/// The k = indices.sizes[1] columns of each row's largest scores (ties to
/// the lower column; NaN below every number), written in increasing column
/// order. O(L + k log k) per row.
void _mlir_ciface_attn_top_k_f32(AttnMemRef2F32 *scores,
                                 AttnMemRef2I64 *indices);
}

#endif // ATTN_RUNTIME_SELECTION_H
