//===- CApiObjects.h - the objects behind the C API's handles ---*- C++ -*-===//
//
// Private to libattn_c: what attn_artifact and attn_tensor are, shared by
// the files that implement attn-c/Runtime.h.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_CAPIOBJECTS_H
#define ATTN_RUNTIME_CAPIOBJECTS_H

#include "attn-c/Runtime.h"
#include <string>
#include <vector>

struct attn_artifact {
  void *handle;
  std::string path;
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
} // namespace attnc

#endif // ATTN_RUNTIME_CAPIOBJECTS_H
