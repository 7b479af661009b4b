//===- FuzzCApi.cpp - libFuzzer target: the C API (libattn_c)
//---------------===//
//
// The input is read as a script of C API calls with fuzzed arguments:
// tensor creation (ranks, sizes, dtypes), queries on tensors and NULLs,
// artifact loading (bad paths), layer stacks refused (NULLs, no manifest)
// and, when ATTN_FUZZ_ARTIFACT names a library
// from attn-compile --emit=so whose function is ATTN_FUZZ_FUNCTION, calls
// with fuzzed input and output lists and result ranks. Every call must
// return an error or a result, never crash.
//
//===----------------------------------------------------------------------===//
#include "attn-c/Runtime.h"
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {
/// Reads fuzzed values off the input, zeros once it is used up.
struct Script {
  const uint8_t *data;
  size_t size;
  uint8_t byte() { return size ? (--size, *data++) : 0; }
  int64_t word() {
    int64_t v = 0;
    for (int i = 0; i < 8; ++i)
      v = (v << 8) | byte();
    return v;
  }
  /// Mostly small sizes, sometimes any 64-bit value.
  int64_t size64() {
    uint8_t kind = byte();
    return kind < 200 ? int64_t(kind % 9) : word();
  }
};
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static attn_artifact *artifact = [] {
    const char *path = std::getenv("ATTN_FUZZ_ARTIFACT");
    return path ? attn_artifact_load(path) : nullptr;
  }();
  static const char *function = std::getenv("ATTN_FUZZ_FUNCTION");
  Script script{data, size};
  std::vector<attn_tensor *> tensors;
  while (script.size) {
    switch (script.byte() % 7) {
    case 0: {                            // create
      int64_t rank = script.byte() % 11; // 0 and 9, 10 are invalid
      std::vector<int64_t> sizes(rank);
      for (int64_t &s : sizes)
        s = script.size64();
      attn_dtype dtype = script.byte() % 5; // 4 is no dtype
      // Sizes the API accepts are allocated and zeroed: keep those small
      // (the fuzzer's memory limit); the ones it must refuse go through.
      // The byte count uses the dtype's own element size, as the API does
      // (with 4 for every dtype, a 1 TB f16 tensor slipped through).
      int64_t elementBytes = attn_dtype_size(dtype);
      __int128 bytes = elementBytes > 0 ? elementBytes : 1;
      for (int64_t s : sizes)
        bytes = s < 0 || bytes > (__int128(1) << 62) ? bytes : bytes * s;
      if (bytes > (64 << 20) && bytes <= (__int128(1) << 40))
        break;
      attn_tensor *t = attn_tensor_create(
          dtype, rank, script.byte() % 8 ? sizes.data() : nullptr);
      if (t)
        tensors.push_back(t);
      break;
    }
    case 1: { // queries, on a tensor or NULL
      attn_tensor *t = tensors.empty() || !(script.byte() % 4)
                           ? nullptr
                           : tensors[script.byte() % tensors.size()];
      (void)attn_tensor_rank(t);
      (void)attn_tensor_size(t, script.word());
      (void)attn_tensor_dtype(t);
      if (void *p = attn_tensor_data(t))
        std::memset(p, 0, 1);
      break;
    }
    case 2: // bad artifacts
      (void)attn_artifact_load(script.byte() % 2 ? nullptr
                                                 : "/nonexistent/lib.so");
      break;
    case 3: { // a call with fuzzed inputs and result rank
      if (!artifact || !function)
        break;
      int64_t count = script.byte() % 10;
      std::vector<attn_tensor *> inputs(count);
      for (attn_tensor *&t : inputs)
        t = tensors.empty() || !(script.byte() % 8)
                ? nullptr
                : tensors[script.byte() % tensors.size()];
      attn_tensor *const *given = script.byte() % 8 ? inputs.data() : nullptr;
      if (script.byte() % 2) {
        attn_tensor *out =
            attn_run(artifact, function, given, count,
                     int64_t(script.byte() % 10));
        attn_tensor_release(out);
        break;
      }
      // Destination-passing: fuzzed outputs from the same pool.
      int64_t outCount = script.byte() % 4;
      std::vector<attn_tensor *> outputs(outCount);
      for (attn_tensor *&t : outputs)
        t = tensors.empty() || !(script.byte() % 8)
                ? nullptr
                : tensors[script.byte() % tensors.size()];
      (void)attn_call(artifact, function, given, count,
                      script.byte() % 8 ? outputs.data() : nullptr, outCount);
      break;
    }
    case 4: { // random features with fuzzed sizes
      int64_t features = script.size64(), dim = script.size64();
      std::vector<float> out(64);
      int64_t product;
      if (features >= 0 && dim >= 0 &&
          !__builtin_mul_overflow(features, dim, &product) && product <= 64)
        (void)attn_orthogonal_random_features(features, dim, script.word(),
                                              out.data());
      else
        (void)attn_orthogonal_random_features(features, dim, 0, nullptr);
      break;
    }
    case 5: // release one
      if (!tensors.empty()) {
        attn_tensor_release(tensors.back());
        tensors.pop_back();
      }
      break;
    case 6: { // layer stacks: NULLs, fuzzed weight lists, no manifest
      int64_t count = int64_t(script.byte() % 5) - 1; // -1 is invalid
      std::vector<const char *> names(count > 0 ? count : 0);
      std::vector<attn_tensor *> weights(names.size());
      for (size_t i = 0; i < names.size(); ++i) {
        names[i] = script.byte() % 4 ? "layers.0.norm1.weight" : nullptr;
        weights[i] = tensors.empty() || !(script.byte() % 4)
                         ? nullptr
                         : tensors[script.byte() % tensors.size()];
      }
      // The artifact (when given) is a kernel library: no manifest.
      attn_stack *stack = attn_stack_create(
          script.byte() % 2 ? artifact : nullptr,
          script.byte() % 4 ? names.data() : nullptr,
          script.byte() % 4 ? weights.data() : nullptr, count);
      attn_tensor *x = tensors.empty() ? nullptr : tensors.front();
      (void)attn_stack_forward(stack, x, script.byte() % 2 ? x : nullptr, x);
      attn_stack_reset(stack);
      attn_stack_release(stack);
      break;
    }
    }
  }
  for (attn_tensor *t : tensors)
    attn_tensor_release(t);
  (void)attn_last_error();
  return 0;
}
