//===- CApi.cpp - C API of the attn runtime (libattn_c.so) ----------------===//
//
// Kept free of LLVM and MLIR: the library a C host links is this file, libc
// and libdl. Artifacts are opened with dlopen and called through their C
// interface (CInterfaceCall.h), destination-passing style: the caller owns
// every output, the kernel allocates none.
//
//===----------------------------------------------------------------------===//
#include "CApiObjects.h"
#include "attn/Runtime/CInterfaceCall.h"
#include "attn/Runtime/ElfCheck.h"
#include "attn/Runtime/InputLimits.h"
#include "attn/Runtime/RandomFeatures.h"
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <new>
#include <optional>
#include <string>
#include <vector>

namespace {
thread_local std::string lastError;
/// Set instead of lastError when no string could be allocated for it.
thread_local const char *fixedError = nullptr;
} // namespace

void attnc::setLastError(std::string message) {
  lastError = std::move(message);
  fixedError = nullptr;
}

void attnc::setLastErrorNoThrow(const char *caller, const char *what) noexcept {
  try {
    setLastError(std::string(caller) + ": " + what);
  } catch (...) {
    lastError.clear();
    fixedError = "out of memory";
  }
}

void attnc::retainArtifact(attn_artifact *artifact) {
  artifact->references.fetch_add(1, std::memory_order_relaxed);
}

void attnc::releaseArtifact(attn_artifact *artifact) {
  if (artifact &&
      artifact->references.fetch_sub(1, std::memory_order_acq_rel) == 1)
    delete artifact;
}

namespace {

constexpr int64_t kMaxRank = 8;

template <typename T> T *fail(std::string message) {
  attnc::setLastError(std::move(message));
  return nullptr;
}

/// The dtype of a signature's element type name; -1 when the C API does
/// not carry it.
attn_dtype dtypeNamed(const std::string &name) {
  return name == "f32"    ? ATTN_F32
         : name == "i32"  ? ATTN_I32
         : name == "f16"  ? ATTN_F16
         : name == "bf16" ? ATTN_BF16
         : name == "i1"   ? ATTN_BOOL
                          : attn_dtype(-1);
}

/// One operand type of an artifact's signature: "f32[1,8,?,64]", or for a
/// result "f32[1,8,$0.2,64]" (dimension 2 is input 0's dimension 2).
struct OperandType {
  std::string element;        // f32, f16, bf16, i32, i1 or other
  std::vector<int64_t> sizes; // -1: dynamic
  /// Per dimension: the (input, dimension) a dynamic size equals, or
  /// (-1, -1) when the signature does not say.
  std::vector<std::pair<int64_t, int64_t>> sources;
};

/// Reads "$a.d" into (a, d); false when `text` is not of that form (up to
/// 4 digits each).
bool parseSource(const std::string &text, std::pair<int64_t, int64_t> &source) {
  size_t dot = text.find('.');
  auto digits = [&](size_t from, size_t to) {
    if (to <= from || to - from > 4)
      return false;
    for (size_t i = from; i < to; ++i)
      if (text[i] < '0' || text[i] > '9')
        return false;
    return true;
  };
  if (text.empty() || text[0] != '$' || dot == std::string::npos ||
      !digits(1, dot) || !digits(dot + 1, text.size()))
    return false;
  source = {std::atoll(text.c_str() + 1), std::atoll(text.c_str() + dot + 1)};
  return true;
}

/// Parses `_attn_signature_<function>` (attn-compile's signatureOf):
/// "T T ... -> T", false when malformed.
bool parseSignature(const char *text, std::vector<OperandType> &inputs,
                    std::vector<OperandType> &results) {
  std::vector<OperandType> *into = &inputs;
  std::string word;
  std::string all = std::string(text) + " ";
  for (char c : all) {
    if (c != ' ') {
      word += c;
      continue;
    }
    if (word.empty())
      continue;
    if (word == "->") {
      into = &results;
    } else {
      size_t open = word.find('[');
      if (open == std::string::npos || word.back() != ']')
        return false;
      OperandType type{word.substr(0, open), {}, {}};
      std::string dims = word.substr(open + 1, word.size() - open - 2);
      size_t start = 0;
      while (!dims.empty() && start <= dims.size()) {
        size_t comma = dims.find(',', start);
        std::string dim = dims.substr(start, comma - start);
        std::pair<int64_t, int64_t> source(-1, -1);
        if (!dim.empty() && dim[0] == '$' && !parseSource(dim, source))
          return false;
        type.sources.push_back(source);
        type.sizes.push_back(dim == "?" || source.first >= 0
                                 ? -1
                                 : std::atoll(dim.c_str()));
        if (comma == std::string::npos)
          break;
        start = comma + 1;
      }
      into->push_back(type);
    }
    word.clear();
  }
  return into == &results;
}

/// "" when `tensors` (inputs or outputs of `function`) match the operand
/// types `expected` of its signature, else why not. Static sizes must
/// match; a dynamic size must equal the input dimension the signature names
/// for it (`inputs`, already checked): a kernel reads and writes as many
/// rows as its inputs say. An output size the signature does not give is
/// refused; an input one is any size.
std::string checkOperands(const std::string &function, const char *what,
                          const std::vector<OperandType> &expected,
                          attn_tensor *const *tensors, int64_t count,
                          attn_tensor *const *inputs, int64_t numInputs,
                          bool areOutputs) {
  if (int64_t(expected.size()) != count)
    return "'" + function + "' takes " + std::to_string(expected.size()) +
           " " + what + "s, got " + std::to_string(count);
  for (int64_t i = 0; i < count; ++i) {
    const OperandType &type = expected[i];
    attn_tensor *t = tensors[i];
    std::string which =
        std::string(what) + " " + std::to_string(i) + " of '" + function + "'";
    attn_dtype dtype = dtypeNamed(type.element);
    if (dtype == attn_dtype(-1))
      return which + " has an element type the C API does not carry";
    if (t->dtype != dtype)
      return which + " must be " + type.element;
    if (t->sizes.size() != type.sizes.size())
      return which + " must have rank " + std::to_string(type.sizes.size()) +
             ", got " + std::to_string(t->sizes.size());
    for (size_t d = 0; d < type.sizes.size(); ++d) {
      int64_t size = type.sizes[d];
      auto [input, inputDim] = type.sources[d];
      if (size < 0 && (input >= 0 || areOutputs)) {
        // Inputs name earlier inputs only.
        if (input < 0 || input >= (areOutputs ? numInputs : int64_t(i)) ||
            inputDim >= int64_t(inputs[input]->sizes.size()))
          return which + " dimension " + std::to_string(d) +
                 " has a size the signature does not give: call the "
                 "kernel through its generated header";
        size = inputs[input]->sizes[inputDim];
      }
      if (size >= 0 && size != t->sizes[d])
        return which + " dimension " + std::to_string(d) + " must be " +
               std::to_string(size) + ", got " + std::to_string(t->sizes[d]);
    }
  }
  return "";
}

/// The `_attn_signature_<function>` string of `artifact`, or NULL.
const char *signatureText(attn_artifact *artifact, const std::string &function) {
  return static_cast<const char *>(
      dlsym(artifact->handle, ("_attn_signature_" + function).c_str()));
}

/// The signature `artifact` exports for `function`; false when it exports
/// none, an error message in `error` when it is malformed.
bool signatureOf(attn_artifact *artifact, const std::string &function,
                 std::vector<OperandType> &inputs,
                 std::vector<OperandType> &results, std::string &error) {
  const char *text = signatureText(artifact, function);
  if (!text)
    return false;
  if (!parseSignature(text, inputs, results) || results.empty())
    error = "'" + function + "' has a malformed signature";
  return true;
}

/// The C-interface descriptor words of a contiguous memref:
/// {allocated, aligned, offset, sizes[rank], strides[rank]}.
std::vector<int64_t> descriptorOf(attn_tensor *t) {
  int64_t rank = int64_t(t->sizes.size());
  std::vector<int64_t> words(3 + 2 * rank);
  words[0] = reinterpret_cast<int64_t>(t->data);
  words[1] = reinterpret_cast<int64_t>(t->data);
  int64_t stride = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    words[3 + d] = t->sizes[d];
    words[3 + rank + d] = stride;
    stride *= t->sizes[d];
  }
  return words;
}

} // namespace

extern "C" {

/// attn_artifact_load's work; the entry point runs it guarded.
static attn_artifact *loadArtifact(const char *path) {
  if (!path)
    return fail<attn_artifact>("attn_artifact_load: path is NULL");
  // A truncated file would fault inside dlopen (SIGBUS), not fail.
  if (std::string problem = attnrt::elfProblem(path); !problem.empty())
    return fail<attn_artifact>(problem);
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return fail<attn_artifact>(dlerror());
  auto *artifact = new (std::nothrow) attn_artifact{handle, path, {1}};
  if (!artifact)
    return fail<attn_artifact>("attn_artifact_load: out of memory");
  return artifact;
}

attn_artifact *attn_artifact_load(const char *path) {
  return attnc::guarded<attn_artifact *>("attn_artifact_load", nullptr,
                                         [&] { return loadArtifact(path); });
}

void attn_artifact_release(attn_artifact *artifact) {
  attnc::releaseArtifact(artifact);
}

/// attn_artifact_signature's work; the entry point runs it guarded.
static const char *artifactSignature(attn_artifact *artifact,
                                     const char *function) {
  if (!artifact || !function)
    return fail<const char>("attn_artifact_signature: artifact or function "
                            "is NULL");
  const char *text = signatureText(artifact, function);
  if (!text)
    return fail<const char>(artifact->path + ": no signature for '" +
                            function + "'");
  return text;
}

const char *attn_artifact_signature(attn_artifact *artifact,
                                    const char *function) {
  return attnc::guarded<const char *>("attn_artifact_signature", nullptr, [&] {
    return artifactSignature(artifact, function);
  });
}

int64_t attn_dtype_size(attn_dtype dtype) {
  switch (dtype) {
  case ATTN_F32:
  case ATTN_I32:
    return 4;
  case ATTN_F16:
  case ATTN_BF16:
    return 2;
  case ATTN_BOOL:
    return 1;
  default:
    return -1;
  }
}

} // extern "C"

namespace {
/// The bytes of a tensor of `dtype` and `sizes`, after the checks
/// attn_tensor_create and attn_tensor_wrap share; nullopt (and the error
/// message set, prefixed by `who`) when they fail.
std::optional<int64_t> checkedTensorBytes(const char *who, attn_dtype dtype,
                                          int64_t rank, const int64_t *sizes) {
  auto refuse = [&](const std::string &why) -> std::optional<int64_t> {
    attnc::setLastError(std::string(who) + ": " + why);
    return std::nullopt;
  };
  int64_t elementBytes = attn_dtype_size(dtype);
  if (elementBytes < 0)
    return refuse("unknown dtype");
  if (rank < 1 || rank > kMaxRank || !sizes)
    return refuse("rank must be 1 to 8");
  for (int64_t d = 0; d < rank; ++d)
    if (sizes[d] < 0)
      return refuse("negative size");
  // Strides multiply the sizes too: with a zero size the element count is
  // 0 whatever the others are, so they are bounded as if each were >= 1.
  int64_t atLeastOne[kMaxRank];
  for (int64_t d = 0; d < rank; ++d)
    atLeastOne[d] = sizes[d] ? sizes[d] : 1;
  std::optional<int64_t> bytes = attnrt::tensorBytes(sizes, rank, elementBytes);
  if (!bytes || !attnrt::tensorBytes(atLeastOne, rank, elementBytes))
    return refuse("the tensor would exceed " +
                  std::to_string(attnrt::kMaxTensorBytes) +
                  " bytes (or its size overflows)");
  return bytes;
}
} // namespace

extern "C" {

/// attn_tensor_create's work; the entry point runs it guarded.
static attn_tensor *createTensor(attn_dtype dtype, int64_t rank,
                                 const int64_t *sizes) {
  std::optional<int64_t> bytes =
      checkedTensorBytes("attn_tensor_create", dtype, rank, sizes);
  if (!bytes)
    return nullptr;
  // Rounded up to whole cache lines.
  size_t rounded = (size_t(*bytes) + 63) / 64 * 64;
  void *data = std::aligned_alloc(64, rounded ? rounded : 64);
  if (!data)
    return fail<attn_tensor>("attn_tensor_create: out of memory");
  std::memset(data, 0, rounded);
  auto *tensor =
      new (std::nothrow) attn_tensor{dtype, std::vector<int64_t>(), data, data};
  if (!tensor) {
    std::free(data);
    return fail<attn_tensor>("attn_tensor_create: out of memory");
  }
  tensor->sizes.assign(sizes, sizes + rank);
  return tensor;
}

attn_tensor *attn_tensor_create(attn_dtype dtype, int64_t rank,
                                const int64_t *sizes) {
  return attnc::guarded<attn_tensor *>("attn_tensor_create", nullptr, [&] {
    return createTensor(dtype, rank, sizes);
  });
}

/// attn_tensor_wrap's work; the entry point runs it guarded.
static attn_tensor *wrapTensor(attn_dtype dtype, int64_t rank,
                               const int64_t *sizes, void *data) {
  std::optional<int64_t> bytes =
      checkedTensorBytes("attn_tensor_wrap", dtype, rank, sizes);
  if (!bytes)
    return nullptr;
  if (!data && *bytes > 0)
    return fail<attn_tensor>("attn_tensor_wrap: data is NULL");
  auto *tensor = new (std::nothrow)
      attn_tensor{dtype, std::vector<int64_t>(), /*allocated=*/nullptr, data};
  if (!tensor)
    return fail<attn_tensor>("attn_tensor_wrap: out of memory");
  tensor->sizes.assign(sizes, sizes + rank);
  return tensor;
}

attn_tensor *attn_tensor_wrap(attn_dtype dtype, int64_t rank,
                              const int64_t *sizes, void *data) {
  return attnc::guarded<attn_tensor *>("attn_tensor_wrap", nullptr, [&] {
    return wrapTensor(dtype, rank, sizes, data);
  });
}

void attn_tensor_release(attn_tensor *tensor) {
  if (!tensor)
    return;
  std::free(tensor->allocated);
  delete tensor;
}

void *attn_tensor_data(attn_tensor *tensor) {
  return tensor ? tensor->data : nullptr;
}

attn_dtype attn_tensor_dtype(const attn_tensor *tensor) {
  return tensor ? tensor->dtype : ATTN_F32;
}

int64_t attn_tensor_rank(const attn_tensor *tensor) {
  return tensor ? int64_t(tensor->sizes.size()) : -1;
}

int64_t attn_tensor_size(const attn_tensor *tensor, int64_t dim) {
  if (!tensor || dim < 0 || dim >= int64_t(tensor->sizes.size()))
    return -1;
  return tensor->sizes[dim];
}

/// attn_call's work; the entry point runs it guarded.
static int callFunction(attn_artifact *artifact, const char *function,
                        attn_tensor *const *inputs, int64_t num_inputs,
                        attn_tensor *const *outputs, int64_t num_outputs) {
  auto failCall = [](std::string message) {
    attnc::setLastError("attn_call: " + std::move(message));
    return -1;
  };
  if (!artifact || !function)
    return failCall("artifact or function is NULL");
  if (num_inputs < 0 || num_outputs < 1 ||
      num_inputs + num_outputs > int64_t(attnrt::kMaxCInterfaceArguments))
    return failCall("need at least one output and at most " +
                    std::to_string(attnrt::kMaxCInterfaceArguments) +
                    " inputs and outputs together");
  if ((num_inputs > 0 && !inputs) || !outputs)
    return failCall(!outputs ? "outputs is NULL" : "inputs is NULL");
  for (int64_t i = 0; i < num_inputs + num_outputs; ++i) {
    bool isInput = i < num_inputs;
    if (!(isInput ? inputs[i] : outputs[i - num_inputs]))
      return failCall(std::string(isInput ? "input " : "output ") +
                      std::to_string(isInput ? i : i - num_inputs) +
                      " is NULL");
  }
  std::string symbol = std::string("_mlir_ciface_") + function;
  void *address = dlsym(artifact->handle, symbol.c_str());
  if (!address)
    return failCall(artifact->path + ": no function '" + function +
                    "' (symbol " + symbol + ")");
  // Artifacts of attn-compile export their signature: a call that does not
  // match it would make the kernel read or write out of bounds.
  std::vector<OperandType> expectedInputs, expectedResults;
  std::string error;
  if (signatureOf(artifact, function, expectedInputs, expectedResults,
                  error)) {
    if (error.empty())
      error = checkOperands(function, "input", expectedInputs, inputs,
                            num_inputs, inputs, num_inputs,
                            /*areOutputs=*/false);
    if (error.empty())
      error = checkOperands(function, "output", expectedResults, outputs,
                            num_outputs, inputs, num_inputs,
                            /*areOutputs=*/true);
    if (!error.empty())
      return failCall(error);
  }
  std::vector<std::vector<int64_t>> descriptors;
  for (int64_t i = 0; i < num_inputs; ++i)
    descriptors.push_back(descriptorOf(inputs[i]));
  for (int64_t i = 0; i < num_outputs; ++i)
    descriptors.push_back(descriptorOf(outputs[i]));
  std::vector<void *> pointers;
  for (std::vector<int64_t> &d : descriptors)
    pointers.push_back(d.data());
  attnrt::callCInterface(address, pointers);
  return 0;
}

int attn_call(attn_artifact *artifact, const char *function,
              attn_tensor *const *inputs, int64_t num_inputs,
              attn_tensor *const *outputs, int64_t num_outputs) {
  return attnc::guarded<int>("attn_call", -1, [&] {
    return callFunction(artifact, function, inputs, num_inputs, outputs,
                        num_outputs);
  });
}

/// attn_run's work; the entry point runs it guarded.
static attn_tensor *runFunction(attn_artifact *artifact, const char *function,
                                attn_tensor *const *inputs, int64_t num_inputs,
                                int64_t result_rank) {
  if (!artifact || !function)
    return fail<attn_tensor>("attn_run: artifact or function is NULL");
  if (result_rank < 1 || result_rank > kMaxRank)
    return fail<attn_tensor>("attn_run: result_rank must be 1 to 8");
  // The result's sizes come from the signature: a kernel writes into
  // memory its caller provides.
  std::vector<OperandType> expectedInputs, results;
  std::string error;
  if (!signatureOf(artifact, function, expectedInputs, results, error)) {
    if (!dlsym(artifact->handle,
               (std::string("_mlir_ciface_") + function).c_str()))
      return fail<attn_tensor>("attn_run: " + artifact->path +
                               ": no function '" + function + "' (symbol "
                               "_mlir_ciface_" + function + ")");
    return fail<attn_tensor>("attn_run: '" + std::string(function) +
                             "' exports no signature: create its output and "
                             "call attn_call");
  }
  if (!error.empty())
    return fail<attn_tensor>("attn_run: " + error);
  if (results.size() != 1)
    return fail<attn_tensor>("attn_run: '" + std::string(function) +
                             "' has " + std::to_string(results.size()) +
                             " results: call attn_call");
  const OperandType &result = results.front();
  if (int64_t(result.sizes.size()) != result_rank)
    return fail<attn_tensor>("attn_run: '" + std::string(function) +
                             "' returns a tensor of rank " +
                             std::to_string(result.sizes.size()) +
                             ", result_rank is " + std::to_string(result_rank));
  // Dynamic sizes are those of the input dimensions the signature names.
  std::vector<int64_t> sizes = result.sizes;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] >= 0)
      continue;
    auto [input, inputDim] = result.sources[d];
    if (input < 0)
      return fail<attn_tensor>("attn_run: '" + std::string(function) +
                               "' returns a tensor whose size its signature "
                               "does not give: call the kernel through its "
                               "generated header");
    if (input >= num_inputs || !inputs || !inputs[input] ||
        inputDim >= int64_t(inputs[input]->sizes.size()))
      break; // attn_call reports the inputs that do not match
    sizes[d] = inputs[input]->sizes[inputDim];
  }
  for (int64_t &size : sizes)
    size = std::max<int64_t>(size, 0);
  attn_dtype dtype = dtypeNamed(result.element);
  if (dtype == attn_dtype(-1))
    return fail<attn_tensor>("attn_run: '" + std::string(function) +
                             "' returns an element type the C API does not "
                             "carry");
  attn_tensor *output = attn_tensor_create(dtype, result_rank, sizes.data());
  if (!output)
    return nullptr;
  if (attn_call(artifact, function, inputs, num_inputs, &output, 1) != 0) {
    attn_tensor_release(output);
    lastError.replace(0, std::strlen("attn_call"), "attn_run");
    return nullptr;
  }
  return output;
}

attn_tensor *attn_run(attn_artifact *artifact, const char *function,
                      attn_tensor *const *inputs, int64_t num_inputs,
                      int64_t result_rank) {
  return attnc::guarded<attn_tensor *>("attn_run", nullptr, [&] {
    return runFunction(artifact, function, inputs, num_inputs, result_rank);
  });
}

/// attn_orthogonal_random_features's work; the entry point runs it guarded.
static int randomFeatures(int64_t features, int64_t dim, uint64_t seed,
                          float *out) {
  if (features < 0 || dim < 1 || !out || !attnrt::mulSizes(features, dim) ||
      *attnrt::mulSizes(features, dim) > (int64_t(1) << 32)) {
    attnc::setLastError("attn_orthogonal_random_features: need features "
                        ">= 0, dim >= 1, features * dim <= 2^32 and an "
                        "output buffer");
    return -1;
  }
  // Written in place; the only allocation is the work buffer, refused (not
  // thrown) when it cannot be had: no exception crosses the C API.
  if (!attnrt::fillOrthogonalRandomFeatures(features, dim, seed, out)) {
    attnc::setLastError("attn_orthogonal_random_features: out of memory "
                        "for a " +
                        std::to_string(std::min(features, dim)) + " x " +
                        std::to_string(dim) + " work buffer");
    return -1;
  }
  return 0;
}

int attn_orthogonal_random_features(int64_t features, int64_t dim,
                                    uint64_t seed, float *out) {
  return attnc::guarded<int>("attn_orthogonal_random_features", -1, [&] {
    return randomFeatures(features, dim, seed, out);
  });
}

const char *attn_last_error(void) {
  return fixedError ? fixedError : lastError.c_str();
}

} // extern "C"
