//===- LinearEpilogue.h - what a layer product does with its result -*- C++ -*-===//
//
// A layer's product is followed by a bias, an activation, SwiGLU's gate or
// the residual sum. attn's GEMM applies these to its accumulators before it
// stores them (the pass's epilogue fusion, GemmEpilogue.h), so the result
// is written once, finished. Free of LLVM: the layer executor names them.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_LINEAREPILOGUE_H
#define ATTN_RUNTIME_LINEAREPILOGUE_H

#include <sstream>
#include <string>
#include <tuple>

namespace attnrt {

/// y = act(x W^T + bias) (+ other with `residual`), or y += x W^T + bias
/// with `accumulate`. The default is the plain accumulating product
/// y += x W^T.
struct LinearEpilogue {
  enum class Activation {
    None,
    Relu,     ///< max(v, 0), NaN propagating (PyTorch's relu)
    Gelu,     ///< v / 2 (1 + erf(v / sqrt 2))
    GeluTanh, ///< v / 2 (1 + tanh(sqrt(2 / pi) (v + 0.044715 v^3)))
    /// silu(v) * other[m, n] (SwiGLU: v the gate, `other` the up product)
    SiluTimesOther,
  };
  bool accumulate = true;
  bool bias = false;
  Activation activation = Activation::None; ///< not with accumulate
  /// + other[m, n] last: a residual block's output added to the stream. The
  /// sum starts from zero and the stream is added once, at the end (summed
  /// into the stream, every one of K rounding errors would be relative to
  /// the stream's larger magnitude: a BERT layer's error 4e-7 -> 3e-6).
  /// Not with accumulate or SiluTimesOther.
  bool residual = false;

  /// Whether the kernel reads `other`.
  bool readsOther() const {
    return residual || activation == Activation::SiluTimesOther;
  }
  bool operator<(const LinearEpilogue &o) const {
    return std::tie(accumulate, bias, activation, residual) <
           std::tie(o.accumulate, o.bias, o.activation, o.residual);
  }
  bool operator==(const LinearEpilogue &o) const {
    return std::tie(accumulate, bias, activation, residual) ==
           std::tie(o.accumulate, o.bias, o.activation, o.residual);
  }
};

/// `e` as one word, e.g. "bias+gelu+residual": "accumulate", "bias", an
/// activation (relu, gelu, gelu_tanh, silu_times_other) and "residual"
/// joined by '+', "plain" for none of them (y = x W^T). Ahead-of-time
/// artifacts name their products' epilogues so.
inline std::string linearEpilogueName(const LinearEpilogue &e) {
  using A = LinearEpilogue::Activation;
  std::string name;
  auto add = [&](const char *part) {
    name += (name.empty() ? "" : "+") + std::string(part);
  };
  if (e.accumulate)
    add("accumulate");
  if (e.bias)
    add("bias");
  switch (e.activation) {
  case A::None:
    break;
  case A::Relu:
    add("relu");
    break;
  case A::Gelu:
    add("gelu");
    break;
  case A::GeluTanh:
    add("gelu_tanh");
    break;
  case A::SiluTimesOther:
    add("silu_times_other");
    break;
  }
  if (e.residual)
    add("residual");
  return name.empty() ? "plain" : name;
}

/// linearEpilogueName's inverse; false for anything else.
inline bool parseLinearEpilogue(const std::string &name, LinearEpilogue &e) {
  using A = LinearEpilogue::Activation;
  e = LinearEpilogue();
  e.accumulate = false;
  if (name == "plain")
    return true;
  std::istringstream parts(name);
  bool activation = false;
  for (std::string part; std::getline(parts, part, '+');) {
    A a = part == "relu"               ? A::Relu
          : part == "gelu"             ? A::Gelu
          : part == "gelu_tanh"        ? A::GeluTanh
          : part == "silu_times_other" ? A::SiluTimesOther
                                       : A::None;
    if (part == "accumulate" && !e.accumulate)
      e.accumulate = true;
    else if (part == "bias" && !e.bias)
      e.bias = true;
    else if (a != A::None && !activation)
      e.activation = a, activation = true;
    else if (part == "residual" && !e.residual)
      e.residual = true;
    else
      return false;
  }
  return linearEpilogueName(e) == name; // the canonical order only
}

/// The activation a layer spec names (relu, gelu, gelu_tanh); None for
/// swiglu (two products) and anything else.
inline LinearEpilogue::Activation activationNamed(const std::string &name) {
  using A = LinearEpilogue::Activation;
  return name == "relu"        ? A::Relu
         : name == "gelu"      ? A::Gelu
         : name == "gelu_tanh" ? A::GeluTanh
                               : A::None;
}

} // namespace attnrt

#endif // ATTN_RUNTIME_LINEAREPILOGUE_H
