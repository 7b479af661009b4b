//===- FuzzCApi.cpp - libFuzzer target: the C API (libattn_c)
//---------------===//
//
// The input is read as a script of C API calls with fuzzed arguments:
// tensor creation (ranks, sizes, dtypes), queries on tensors and NULLs,
// artifact loading (bad paths), layer stacks refused (NULLs, no manifest)
// and, when ATTN_FUZZ_ARTIFACT names a library
// from attn-compile --emit=so whose function is ATTN_FUZZ_FUNCTION, calls
// with fuzzed input and output lists and result ranks. When
// ATTN_FUZZ_STACK names a layer artifact (attn-compile LAYER.yaml
// --emit=so) and ATTN_FUZZ_WEIGHTS its weights, also sequences of stack
// calls (load, forward with varying batch, length and memory, reset,
// release of stacks and of the artifact, in any order) and stacks loaded
// from the artifact's manifest with fuzzed edits (hostile manifests). Every
// call must return an error or a result, never crash.
//
//===----------------------------------------------------------------------===//
#include "CApiObjects.h"
#include "attn-c/Runtime.h"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>
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

/// The layer artifact under test (ATTN_FUZZ_STACK, ATTN_FUZZ_WEIGHTS): its
/// path, weights, width and manifest; reloaded after the script releases
/// it.
struct StackTarget {
  const char *path = std::getenv("ATTN_FUZZ_STACK");
  const char *weights = std::getenv("ATTN_FUZZ_WEIGHTS");
  attn_artifact *artifact = nullptr;
  std::string manifest;
  int64_t width = 0;

  StackTarget() {
    if (!path || !weights)
      return;
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    const char *text =
        handle
            ? static_cast<const char *>(dlsym(handle, "_attn_layer_manifest"))
            : nullptr;
    if (!text)
      std::abort(); // a setup error: not an artifact of a layer stack
    manifest = text;
    size_t at = manifest.find("d_model=");
    width = std::atoll(manifest.c_str() + at + 8);
  }
  bool enabled() const { return width > 0; }
  attn_artifact *get() {
    if (!artifact)
      artifact = attn_artifact_load(path);
    return artifact;
  }
  void release() {
    attn_artifact_release(artifact);
    artifact = nullptr;
  }
};

/// The manifest with fuzzed edits: a line's value replaced by a fuzzed
/// number or bytes, a line dropped or repeated, bytes inserted.
std::string hostileManifest(const std::string &manifest, Script &script) {
  std::vector<std::string> lines;
  for (size_t from = 0; from < manifest.size();) {
    size_t end = manifest.find('\n', from);
    if (end == std::string::npos)
      end = manifest.size();
    lines.push_back(manifest.substr(from, end - from));
    from = end + 1;
  }
  for (int edits = 1 + script.byte() % 3; edits-- && !lines.empty();) {
    std::string &line = lines[script.byte() % lines.size()];
    size_t cut = line.find_first_of("= ", script.byte() % (line.size() + 1));
    cut = cut == std::string::npos ? line.size() : cut + 1;
    switch (script.byte() % 6) {
    case 0: { // a number of any size or sign, or a special value
      static const char *specials[] = {
          "nan", "inf", "-inf", "-1", "0", "1e308", "2000000000000000000"};
      uint8_t pick = script.byte();
      line = line.substr(0, cut) +
             (pick < 64 ? specials[pick % 7] : std::to_string(script.word()));
      break;
    }
    case 1: { // fuzzed bytes
      std::string bytes;
      for (int n = script.byte() % 12; n--;)
        bytes += char(script.byte());
      line = line.substr(0, cut) + bytes;
      break;
    }
    case 2:
      line.clear();
      break;
    case 3:
      lines.push_back(line);
      break;
    case 4: // a small size in place of the value
      line = line.substr(0, cut) + std::to_string(script.size64());
      break;
    default: // truncated
      line.resize(cut);
      break;
    }
  }
  std::string text;
  for (const std::string &line : lines)
    text += line + "\n";
  return text;
}

/// ATTN_FUZZ_TRACE=1 prints what each stack call answered (to see what a
/// saved input exercises).
void trace(const char *what, bool ok) {
  static const bool enabled = std::getenv("ATTN_FUZZ_TRACE");
  if (enabled)
    std::fprintf(stderr, "%s: %s\n", what, ok ? "ok" : attn_last_error());
}

/// A forward call of `stack` on a fuzzed [batch, length, width] input (and
/// memory): mostly the layer's width and small sizes, sometimes others.
void forwardFuzzed(attn_stack *stack, int64_t width, Script &script) {
  int64_t sizes[3] = {1 + script.byte() % 4, 1 + script.byte() % 9,
                      script.byte() % 16 == 15 ? script.size64() : width};
  // Sizes the API would accept are allocated: keep them within the
  // fuzzer's memory limit (sizes it refuses still go through).
  __int128 bytes =
      __int128(sizes[0]) * sizes[1] * 4 * (sizes[2] < 0 ? 1 : sizes[2]);
  if (bytes > (64 << 20) && bytes <= (__int128(1) << 40))
    sizes[2] = width;
  attn_tensor *x = attn_tensor_create(ATTN_F32, 3, sizes);
  attn_tensor *out = attn_tensor_create(ATTN_F32, 3, sizes);
  int64_t memorySizes[3] = {sizes[0], 1 + script.byte() % 5, width};
  // Zero bytes (a used-up script) pick the common case: the layer's width,
  // a memory (the artifact's decoder has cross-attention), out apart from x.
  attn_tensor *memory = script.byte() % 4 == 3
                            ? nullptr
                            : attn_tensor_create(ATTN_F32, 3, memorySizes);
  if (x) {
    float *values = static_cast<float *>(attn_tensor_data(x));
    for (int64_t i = 0, n = sizes[0] * sizes[1] * sizes[2]; i < n; ++i)
      values[i] = std::sin(0.37f * float(i + script.byte()));
  }
  trace("forward", attn_stack_forward(stack, x, memory,
                                      script.byte() % 16 == 15 ? x : out) == 0);
  attn_tensor_release(x);
  attn_tensor_release(out);
  attn_tensor_release(memory);
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static attn_artifact *artifact = [] {
    const char *path = std::getenv("ATTN_FUZZ_ARTIFACT");
    return path ? attn_artifact_load(path) : nullptr;
  }();
  static const char *function = std::getenv("ATTN_FUZZ_FUNCTION");
  static StackTarget target;
  Script script{data, size};
  std::vector<attn_tensor *> tensors;
  std::vector<attn_stack *> stacks;
  // Ids attn_stack_add_sequence gave, with their stack: a call on a stack
  // mostly names that stack's sequences (so that steps run), sometimes
  // another's or any number.
  std::vector<std::pair<attn_stack *, int64_t>> sequenceIds;
  auto fuzzedId = [&](Script &script, attn_stack *stack) -> int64_t {
    std::vector<int64_t> own;
    for (auto [owner, id] : sequenceIds)
      if (owner == stack)
        own.push_back(id);
    uint8_t pick = script.byte();
    if (!own.empty() && pick % 8 < 6)
      return own[script.byte() % own.size()];
    if (!sequenceIds.empty() && pick % 8 == 6)
      return sequenceIds[script.byte() % sequenceIds.size()].second;
    return script.size64() - 2;
  };
  // Forward calls are the slow step: a bounded number per input.
  int forwards = 0;
  while (script.size) {
    switch (script.byte() % (target.enabled() ? 9 : 7)) {
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
    case 7: { // a step of a stack call sequence
      switch (script.byte() % 8) {
      case 6: { // continuous batching: sequences come and go, limits change
        if (stacks.empty())
          break;
        attn_stack *stack = stacks[script.byte() % stacks.size()];
        switch (script.byte() % 4) {
        case 0:
        case 1: {
          int64_t id = attn_stack_add_sequence(stack);
          trace("add sequence", id >= 0);
          if (id >= 0)
            sequenceIds.push_back({stack, id});
          break;
        }
        case 2:
          trace("remove sequence", attn_stack_remove_sequence(
                                       stack, fuzzedId(script, stack)) == 0);
          break;
        default:
          trace("serving limits",
                attn_stack_set_serving_limits(
                    stack, int64_t(script.byte() % 6) - 1,
                    script.byte() % 4 ? int64_t(script.byte() % 48) - 1
                                      : script.size64()) == 0);
          (void)attn_stack_sequence_length(stack, fuzzedId(script, stack));
          break;
        }
        break;
      }
      case 7: { // a step over fuzzed ids and lengths
        if (stacks.empty() || forwards++ >= 6)
          break;
        attn_stack *stack = stacks[script.byte() % stacks.size()];
        std::vector<int64_t> ids(1 + script.byte() % 4), lengths(ids.size());
        int64_t total = 0;
        for (size_t i = 0; i < ids.size(); ++i) {
          ids[i] = fuzzedId(script, stack);
          int64_t &n = lengths[i];
          n = script.byte() % 32 == 31 ? script.size64() - 4
                                       : 1 + script.byte() % 9;
          if (__builtin_add_overflow(total, n, &total))
            total = 0;
        }
        int64_t sizes[2] = {
            script.byte() % 8 == 7 ? 1 + script.byte() % 40
                                   : std::clamp<int64_t>(total, 1, 40),
            script.byte() % 16 == 15 ? script.size64() : target.width};
        if (sizes[1] < 1 || sizes[1] > 4096)
          sizes[1] = target.width;
        attn_tensor *x = attn_tensor_create(ATTN_F32, 2, sizes);
        attn_tensor *out = attn_tensor_create(ATTN_F32, 2, sizes);
        trace("step",
              attn_stack_step(
                  stack, script.byte() % 16 == 15 ? nullptr : ids.data(),
                  lengths.data(), int64_t(ids.size()), x, out) == 0);
        attn_tensor_release(x);
        attn_tensor_release(out);
        break;
      }
      case 5: { // a packed call with fuzzed lengths (any sum, any sign)
        if (stacks.empty() || forwards++ >= 6)
          break;
        std::vector<int64_t> lengths(script.byte() % 5);
        int64_t total = 0;
        for (int64_t &n : lengths) {
          n = script.byte() % 32 == 31 ? script.size64() - 4
                                       : 1 + script.byte() % 9;
          if (__builtin_add_overflow(total, n, &total))
            total = 0; // a sum no input can match
        }
        int64_t sizes[2] = {script.byte() % 8 == 7
                                ? 1 + script.byte() % 40
                                : std::clamp<int64_t>(total, 1, 40),
                            target.width};
        attn_stack *stack = stacks[script.byte() % stacks.size()];
        if (script.byte() % 4 == 3 && !lengths.empty()) {
          // Padded: a row per length, as long as the rows the input has.
          int64_t padded[3] = {int64_t(lengths.size()), 1 + script.byte() % 12,
                               target.width};
          attn_tensor *x = attn_tensor_create(ATTN_F32, 3, padded);
          attn_tensor *out = attn_tensor_create(ATTN_F32, 3, padded);
          trace("padded", attn_stack_forward_padded(stack, x,
                                                    script.byte() % 16 == 15
                                                        ? nullptr
                                                        : lengths.data(),
                                                    out) == 0);
          attn_tensor_release(x);
          attn_tensor_release(out);
          break;
        }
        attn_tensor *x = attn_tensor_create(ATTN_F32, 2, sizes);
        attn_tensor *out = attn_tensor_create(ATTN_F32, 2, sizes);
        trace("packed",
              attn_stack_forward_packed(
                  stack, x, script.byte() % 16 == 15 ? nullptr : lengths.data(),
                  int64_t(lengths.size()), out) == 0);
        attn_tensor_release(x);
        attn_tensor_release(out);
        break;
      }
      case 0:
        if (stacks.size() < 3)
          if (attn_stack *s = attn_stack_load(target.get(), target.weights))
            stacks.push_back(s);
          else
            trace("load", false);
        break;
      case 1: // the stacks keep the artifact (reference-counted)
        target.release();
        break;
      case 2:
        if (!stacks.empty() && forwards++ < 6)
          forwardFuzzed(stacks[script.byte() % stacks.size()], target.width,
                        script);
        break;
      case 3:
        if (!stacks.empty())
          attn_stack_reset(stacks[script.byte() % stacks.size()]);
        break;
      default:
        if (!stacks.empty()) {
          size_t which = script.byte() % stacks.size();
          attn_stack_release(stacks[which]);
          stacks.erase(stacks.begin() + which);
        }
        break;
      }
      break;
    }
    case 8: { // a hostile manifest over the artifact's kernels
      attn_artifact *artifact = target.get();
      if (!artifact)
        break;
      attn_stack *stack = attnc::loadStackWithManifest(
          artifact, target.weights, hostileManifest(target.manifest, script));
      trace("hostile manifest", stack != nullptr);
      if (stack && forwards++ < 6)
        forwardFuzzed(stack, target.width, script);
      attn_stack_release(stack);
      break;
    }
    }
  }
  for (attn_stack *s : stacks)
    attn_stack_release(s);
  for (attn_tensor *t : tensors)
    attn_tensor_release(t);
  (void)attn_last_error();
  return 0;
}
