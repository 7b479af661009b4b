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
#include <utility>
#include <vector>

namespace attnrt {

/// The most arguments (outputs included) callCInterface handles: enough
/// for a backward with every optional operand (q, k, v, mask, bias, two
/// segment id tensors, a table, o, dO, lse and three gradients).
constexpr std::size_t kMaxCInterfaceArguments = 16;

namespace detail {
template <std::size_t... I>
void callWithPointers(void *address, const std::vector<void *> &p,
                      std::index_sequence<I...>) {
  using Function = void (*)(decltype((void)I, static_cast<void *>(nullptr))...);
  reinterpret_cast<Function>(address)(p[I]...);
}

template <std::size_t N>
bool callWithArity(void *address, const std::vector<void *> &p) {
  if constexpr (N > kMaxCInterfaceArguments) {
    return false;
  } else {
    if (p.size() != N)
      return callWithArity<N + 1>(address, p);
    callWithPointers(address, p, std::make_index_sequence<N>());
    return true;
  }
}
} // namespace detail

/// Calls `address` with the pointers in `p`; false (no call) when there are
/// more than kMaxCInterfaceArguments or none.
inline bool callCInterface(void *address, const std::vector<void *> &p) {
  return detail::callWithArity<1>(address, p);
}

} // namespace attnrt

#endif // ATTN_RUNTIME_CINTERFACECALL_H
