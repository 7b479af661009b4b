//===- CInterfaceCall.h - call a _mlir_ciface_ function by address -*- C++ -*-===//
//
// MLIR's C interface passes one descriptor pointer per memref (attn's
// kernels: the inputs, then the caller-owned outputs). C and C++ cannot call with a run-time arity, so this dispatches
// on the count. Header-only, no LLVM dependency: the C API library uses it
// too.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_CINTERFACECALL_H
#define ATTN_RUNTIME_CINTERFACECALL_H

#include <cstddef>
#include <vector>

namespace attnrt {

/// The most arguments (outputs included) callCInterface handles.
constexpr std::size_t kMaxCInterfaceArguments = 9;

/// Calls `address` with the pointers in `p`; false (no call) when there are
/// more than kMaxCInterfaceArguments or none.
inline bool callCInterface(void *address, const std::vector<void *> &p) {
  using V = void *;
  switch (p.size()) {
  case 1: reinterpret_cast<void (*)(V)>(address)(p[0]); return true;
  case 2: reinterpret_cast<void (*)(V, V)>(address)(p[0], p[1]); return true;
  case 3:
    reinterpret_cast<void (*)(V, V, V)>(address)(p[0], p[1], p[2]);
    return true;
  case 4:
    reinterpret_cast<void (*)(V, V, V, V)>(address)(p[0], p[1], p[2], p[3]);
    return true;
  case 5:
    reinterpret_cast<void (*)(V, V, V, V, V)>(address)(p[0], p[1], p[2], p[3],
                                                        p[4]);
    return true;
  case 6:
    reinterpret_cast<void (*)(V, V, V, V, V, V)>(address)(p[0], p[1], p[2],
                                                           p[3], p[4], p[5]);
    return true;
  case 7:
    reinterpret_cast<void (*)(V, V, V, V, V, V, V)>(address)(
        p[0], p[1], p[2], p[3], p[4], p[5], p[6]);
    return true;
  case 8:
    reinterpret_cast<void (*)(V, V, V, V, V, V, V, V)>(address)(
        p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]);
    return true;
  case 9:
    reinterpret_cast<void (*)(V, V, V, V, V, V, V, V, V)>(address)(
        p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8]);
    return true;
  default:
    return false;
  }
}

} // namespace attnrt

#endif // ATTN_RUNTIME_CINTERFACECALL_H
