//===- CApiObjects.h - the objects behind the C API's handles ---*- C++ -*-===//
//
// Private to libattn_c: what attn_artifact and attn_tensor are, shared by
// the files that implement attn-c/Runtime.h.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_CAPIOBJECTS_H
#define ATTN_RUNTIME_CAPIOBJECTS_H

#include "attn-c/Runtime.h"
#include <atomic>
#include <string>
#include <vector>

/// Shared by the caller and every stack made from it: the last release
/// (attn_artifact_release or attn_stack_release) frees it, so a stack
/// outlives an artifact released first.
struct attn_artifact {
  void *handle;
  std::string path;
  std::atomic<int64_t> references{1};
};

struct attn_tensor {
  attn_dtype dtype;
  std::vector<int64_t> sizes;
  void *allocated; // what free() releases; NULL for a borrowed buffer
  void *data;      // 64-byte aligned when allocated here
};

namespace attnc {
/// Sets the message attn_last_error() returns on this thread.
void setLastError(std::string message);
/// One more owner of `artifact`.
void retainArtifact(attn_artifact *artifact);
/// One owner less; the last frees it (the library stays loaded).
void releaseArtifact(attn_artifact *artifact);
} // namespace attnc

#endif // ATTN_RUNTIME_CAPIOBJECTS_H
