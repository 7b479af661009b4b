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
#include <cstdint>
#include <new>
#include <stdexcept>
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
/// Sets "<caller>: <what>" as the message, or a fixed one when even that
/// string cannot be allocated.
void setLastErrorNoThrow(const char *caller, const char *what) noexcept;

/// Runs the body of the C entry point `caller` so that no exception
/// crosses the C boundary: out of memory (std::bad_alloc, and
/// std::length_error from a size no allocation can have) and anything else
/// thrown become the error attn_last_error() reports, and `failed` is
/// returned.
template <typename T, typename Body>
T guarded(const char *caller, T failed, Body body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    setLastErrorNoThrow(caller, "out of memory");
  } catch (const std::length_error &) {
    setLastErrorNoThrow(caller, "out of memory");
  } catch (const std::exception &e) {
    setLastErrorNoThrow(caller, e.what());
  } catch (...) {
    setLastErrorNoThrow(caller, "an unexpected exception");
  }
  return failed;
}
/// attn_stack_load with `manifest` read in place of the artifact's own
/// (its kernels still come from `artifact`): how the C API fuzzer feeds
/// hostile manifests without building a library for each.
attn_stack *loadStackWithManifest(attn_artifact *artifact,
                                  const char *weightsPath,
                                  const std::string &manifest);
/// One more owner of `artifact`.
void retainArtifact(attn_artifact *artifact);
/// One owner less; the last frees it (the library stays loaded).
void releaseArtifact(attn_artifact *artifact);
} // namespace attnc

#endif // ATTN_RUNTIME_CAPIOBJECTS_H
