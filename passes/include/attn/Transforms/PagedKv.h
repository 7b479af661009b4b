//===- PagedKv.h - reading a paged KV cache ---------------------*- C++ -*-===//
//
// What the gather of attn.paged_kv (DecomposePagedKv.cpp) and the kernels
// that read the pool in place share.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TRANSFORMS_PAGEDKV_H
#define ATTN_TRANSFORMS_PAGEDKV_H

#include "mlir/IR/Builders.h"

namespace mlir::attn {

/// The pool page (an index) of page-table entry `entry` (i32 or i64) of a
/// pool of `pages` pages: clamped to [0, pages), so that a bad table reads
/// a wrong page, never outside the pool.
Value emitPageOfRow(OpBuilder &b, Location loc, Value entry, Value pages);

} // namespace mlir::attn

#endif // ATTN_TRANSFORMS_PAGEDKV_H
