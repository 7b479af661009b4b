//===- CApiStack.cpp - layer stacks from ahead-of-time artifacts ----------===//
//
// attn_stack_*: the executor of LayerStack.h with kernels from an artifact
// of `attn-compile LAYER.yaml --emit=so` and weights the caller gives as
// tensors or as a safetensors file. The artifact's manifest
// (`_attn_layer_manifest`) holds the layer's LayerConfig, one line per
// attention kernel: "kernel=<function> <self|cross|self-one-kv-head>
// <batch> <lq> <lk> <operands> [bf16]" (self-one-kv-head: a decoder's
// per-KV-head kernel, LayerStack.h), -1 for sizes the kernel takes any of,
// bf16 for a kernel on bf16 operands and result (the stack rounds q, k and
// v into 16-bit copies and widens the result), and one line per
// product kernel (attn's GEMM with its epilogue fused): "linear=<function>
// <in> <out> <epilogue> <panel width> <f32|bf16|f16|bf16-pairs>", the last
// the type its packed weight is kept in (bf16-pairs: bf16 in k pairs, for
// products by vdpbf16ps). Kernels are called through
// attn_call, which checks every operand against the kernel's signature.
//
//===----------------------------------------------------------------------===//
#include "CApiObjects.h"
#include "attn/Runtime/InputLimits.h"
#include "attn/Runtime/LayerStack.h"
#include "attn/Runtime/PackedPanels.h"
#include "attn/Runtime/SafetensorsReader.h"
#include <dlfcn.h>
#include <map>
#include <new>
#include <sstream>

using namespace attnrt;

namespace {
/// One kernel of the manifest.
struct ManifestKernel {
  std::string function;
  AttentionBlock block;
  int64_t batch, lq, lk; ///< -1: any
  bool bf16 = false;      ///< operands and result in bf16
  AttentionKernel kernel;
};

/// Reads the kernel line after "kernel=".
bool parseKernelLine(const std::string &text, ManifestKernel &entry) {
  std::istringstream words(text);
  std::string role, operands;
  if (!(words >> entry.function >> role >> entry.batch >> entry.lq >>
        entry.lk >> operands) ||
      (role != "self" && role != "cross" && role != "self-one-kv-head" &&
       role != "self-paged"))
    return false;
  for (int64_t size : {entry.batch, entry.lq, entry.lk})
    if (size == 0 || size < -1 || size > kMaxSize)
      return false;
  entry.block = role == "self"         ? AttentionBlock::Self
                : role == "cross"      ? AttentionBlock::Cross
                : role == "self-paged" ? AttentionBlock::SelfPaged
                                       : AttentionBlock::SelfOneKvHead;
  std::string type;
  if (words >> type) {
    if (type != "bf16")
      return false;
    entry.bf16 = true;
  }
  std::stringstream names(operands);
  for (std::string name; std::getline(names, name, ',');)
    entry.kernel.argumentNames.push_back(name);
  return !entry.kernel.argumentNames.empty();
}

/// One product kernel of the manifest.
struct ManifestLinear {
  std::string function;
  int64_t in = 0, out = 0, width = 0;
  LinearEpilogue epilogue;
  FloatFormat weights = FloatFormat::F32;
  bool pairs = false; ///< bf16 weights in k pairs (PackedPanels.h)
};

/// Panels are a few vector registers wide (16 to 64 columns); a wider one
/// in a manifest is not attn-compile's.
constexpr int64_t kMaxPanelWidth = 1024;

/// Reads the product line after "linear=".
bool parseLinearLine(const std::string &text, ManifestLinear &entry) {
  std::istringstream words(text);
  std::string epilogue, weights;
  if (!(words >> entry.function >> entry.in >> entry.out >> epilogue >>
        entry.width >> weights) ||
      entry.in < 1 || entry.out < 1 || entry.width < 1 ||
      entry.width > kMaxPanelWidth ||
      (weights != "f32" && weights != "bf16" && weights != "f16" &&
       weights != "bf16-pairs"))
    return false;
  entry.pairs = weights == "bf16-pairs";
  entry.weights = floatFormatOf(entry.pairs ? "bf16" : weights);
  return parseLinearEpilogue(epilogue, entry.epilogue);
}

/// A tensor over memory the stack owns (released without freeing it).
attn_tensor borrowed(const KernelOperand &operand, attn_dtype dtype) {
  return attn_tensor{dtype, operand.shape, nullptr, operand.data};
}

/// Whether `t` is an f32 tensor of rank 3.
bool isActivations(const attn_tensor *t) {
  return t && t->dtype == ATTN_F32 && t->sizes.size() == 3;
}

Activations activationsOf(const attn_tensor *t) {
  Activations a(t->sizes[0], t->sizes[1], t->sizes[2]);
  const auto *data = static_cast<const float *>(t->data);
  a.data.assign(data, data + a.data.size());
  return a;
}
/// The stack's products on the artifact's GEMM kernels, each finished by
/// its epilogue in the same pass; weights packed once into the panels the
/// kernels were compiled for (PackedWeightPanels).
class ArtifactLinearBackend : public LinearBackend {
public:
  ArtifactLinearBackend(attn_artifact *artifact,
                        std::vector<ManifestLinear> kernels)
      : artifact(artifact), kernels(std::move(kernels)) {}

  Status prepare(int64_t out, int64_t in, const std::vector<float> &weight,
                 std::shared_ptr<const Weight> &prepared) override {
    // Every kernel of one (in, out) reads the same panels.
    const ManifestLinear *kernel = nullptr;
    for (const ManifestLinear &k : kernels)
      if (k.in == in && k.out == out)
        kernel = &k;
    if (!kernel)
      return Status::error(artifact->path + " has no product kernel for " +
                           std::to_string(in) + " -> " + std::to_string(out) +
                           " features (rebuild it with attn-compile)");
    PanelLayout layout;
    layout.in = in;
    layout.out = out;
    layout.width = kernel->width;
    layout.pairs = kernel->pairs;
    prepared =
        std::make_shared<PackedWeight>(layout, kernel->weights, weight.data());
    return Status::ok();
  }

  Status accumulate(const float *, int64_t, const Weight &, float *) override {
    return Status::error("an artifact's product kernels finish their "
                         "results (LinearBackend::apply)");
  }

  bool fusesEpilogues() const override { return true; }

  FloatFormat weightFormat() const override {
    return kernels.empty() ? FloatFormat::F32 : kernels.front().weights;
  }

  Status apply(const float *x, int64_t rows, const Weight &weight,
               const LinearEpilogue &epilogue, const float *bias,
               const float *other, float *y) override {
    const PackedWeightPanels &packed =
        static_cast<const PackedWeight &>(weight).panels;
    const PanelLayout &p = packed.layout;
    const ManifestLinear *kernel = nullptr;
    for (const ManifestLinear &k : kernels)
      if (k.in == p.in && k.out == p.out && k.epilogue == epilogue)
        kernel = &k;
    if (!kernel)
      return Status::error(artifact->path + " has no product kernel for " +
                           std::to_string(p.in) + " -> " +
                           std::to_string(p.out) + " features with " +
                           linearEpilogueName(epilogue) +
                           " (rebuild it with attn-compile)");
    // The kernel only reads x, the panels, the bias and `other`.
    auto borrow = [](const void *data, std::vector<int64_t> shape,
                     attn_dtype dtype = ATTN_F32) {
      return attn_tensor{dtype, std::move(shape), nullptr,
                         const_cast<void *>(data)};
    };
    attn_dtype panelType = packed.format == FloatFormat::F32    ? ATTN_F32
                           : packed.format == FloatFormat::BF16 ? ATTN_BF16
                                                                : ATTN_F16;
    std::vector<attn_tensor> tensors = {
        borrow(x, {rows, p.in}), borrow(packed.data(), p.shape(), panelType)};
    if (epilogue.bias)
      tensors.push_back(borrow(bias, {p.out}));
    if (epilogue.readsOther())
      tensors.push_back(borrow(other, {rows, p.out}));
    attn_tensor result = borrow(y, {rows, p.out});
    std::vector<attn_tensor *> inputs;
    for (attn_tensor &t : tensors)
      inputs.push_back(&t);
    attn_tensor *outputs[1] = {&result};
    if (attn_call(artifact, kernel->function.c_str(), inputs.data(),
                  int64_t(inputs.size()), outputs, 1) != 0)
      return Status::error(attn_last_error());
    return Status::ok();
  }

private:
  struct PackedWeight : Weight {
    PackedWeight(const PanelLayout &layout, FloatFormat format,
                 const float *outByIn)
        : panels(layout, format, outByIn) {}
    int64_t bytes() const override { return panels.bytes(); }
    PackedWeightPanels panels;
  };
  attn_artifact *artifact;
  std::vector<ManifestLinear> kernels;
};
} // namespace

struct attn_stack {
  /// Retained for the stack's life: its kernels live in the artifact.
  explicit attn_stack(attn_artifact *artifact) : artifact(artifact) {
    attnc::retainArtifact(artifact);
  }
  ~attn_stack() {
    stack.reset(); // the executor and its kernels' closures first
    kernels.clear();
    attnc::releaseArtifact(artifact);
  }
  attn_stack(const attn_stack &) = delete;
  attn_stack &operator=(const attn_stack &) = delete;
  attn_artifact *artifact;
  std::vector<ManifestKernel> kernels;
  std::unique_ptr<LayerStack> stack;
};

namespace {

/// The stack of `artifact`'s manifest with weights from `read`; NULL and
/// the error message (prefixed with `caller`) on failure. Every name in
/// `available` (from `source`) must be a weight of the stack.
attn_stack *createStack(const char *caller, attn_artifact *artifact,
                        const WeightReader &read,
                        const std::vector<std::string> &available,
                        const std::string &source,
                        const char *manifest = nullptr) {
  auto fail = [caller](std::string message) -> attn_stack * {
    attnc::setLastError(std::string(caller) + ": " + std::move(message));
    return nullptr;
  };
  if (!manifest)
    manifest = static_cast<const char *>(
        dlsym(artifact->handle, "_attn_layer_manifest"));
  if (!manifest)
    return fail(artifact->path + " holds no layer stack (build it with "
                                 "attn-compile LAYER.yaml --emit=so)");
  // The manifest: the layer's description, then its kernels.
  auto stack =
      std::unique_ptr<attn_stack>(new (std::nothrow) attn_stack(artifact));
  if (!stack)
    return fail("out of memory");
  std::string configText;
  std::vector<ManifestLinear> linears;
  std::istringstream lines(manifest);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("linear=", 0) == 0) {
      ManifestLinear entry;
      if (!parseLinearLine(line.substr(7), entry))
        return fail(artifact->path + ": malformed layer manifest line '" +
                    line + "'");
      linears.push_back(std::move(entry));
      continue;
    }
    if (line.rfind("kernel=", 0) != 0) {
      configText += line + "\n";
      continue;
    }
    ManifestKernel entry;
    if (!parseKernelLine(line.substr(7), entry))
      return fail(artifact->path + ": malformed layer manifest line '" +
                  line + "'");
    stack->kernels.push_back(std::move(entry));
  }
  LayerConfig config;
  if (Status s = parseLayerConfig(configText, config); s.failed())
    return fail(artifact->path + ": " + s.message());
  // The packed weights are sized from the product lines: each must be a
  // product of this layer.
  std::vector<LinearUse> uses = fusedLinearUses(config);
  for (const ManifestLinear &k : linears) {
    bool used = false;
    for (const LinearUse &u : uses)
      used |= u.in == k.in && u.out == k.out && u.epilogue == k.epilogue;
    if (!used)
      return fail(artifact->path + ": layer manifest: product kernel '" +
                  k.function + "' (" + std::to_string(k.in) + " -> " +
                  std::to_string(k.out) + ", " +
                  linearEpilogueName(k.epilogue) +
                  ") is not a product of the layer it describes");
  }
  for (ManifestKernel &entry : stack->kernels) {
    std::string function = entry.function;
    // bf16 operands are rounded by the stack (LayerStack.h).
    bool bf16 = entry.kernel.bf16 = entry.bf16;
    // A paged kernel's table and length are i32; the rest f32, or bf16 in
    // a bf16 kernel.
    std::vector<attn_dtype> dtypes;
    for (const std::string &name : entry.kernel.argumentNames)
      dtypes.push_back(name == "page_table" || name == "kv_length" ? ATTN_I32
                       : bf16                                      ? ATTN_BF16
                                                                   : ATTN_F32);
    entry.kernel.call = [artifact, function, bf16,
                         dtypes](const std::vector<KernelOperand> &inputs,
                                 const KernelOperand &output) {
      std::vector<attn_tensor> tensors;
      for (size_t i = 0; i < inputs.size(); ++i)
        tensors.push_back(borrowed(
            inputs[i],
            i < dtypes.size() ? dtypes[i] : (bf16 ? ATTN_BF16 : ATTN_F32)));
      attn_tensor out = borrowed(output, bf16 ? ATTN_BF16 : ATTN_F32);
      std::vector<attn_tensor *> in;
      for (attn_tensor &t : tensors)
        in.push_back(&t);
      attn_tensor *outs[1] = {&out};
      if (attn_call(artifact, function.c_str(), in.data(), int64_t(in.size()),
                    outs, 1) != 0)
        return Status::error(attn_last_error());
      return Status::ok();
    };
  }
  attn_stack *raw = stack.get();
  KernelProvider kernels = [raw](AttentionBlock block, int64_t batch,
                                 int64_t lq, int64_t lk,
                                 const AttentionKernel *&kernel) {
    auto fits = [](int64_t want, int64_t have) {
      return want < 0 || want == have;
    };
    for (const ManifestKernel &entry : raw->kernels)
      if (entry.block == block && fits(entry.batch, batch) &&
          fits(entry.lq, lq) && fits(entry.lk, lk)) {
        kernel = &entry.kernel;
        return Status::ok();
      }
    // Without a per-KV-head kernel (layers whose attention depends on the
    // head; artifacts built before it) decode steps read the cache through
    // a dense copy.
    if (block == AttentionBlock::SelfOneKvHead ||
        block == AttentionBlock::SelfPaged ||
        block == AttentionBlock::SelfCacheRows) {
      kernel = nullptr;
      return Status::ok();
    }
    return Status::error(
        raw->artifact->path + " has no " +
        (block == AttentionBlock::Self ? "self" : "cross") +
        "-attention kernel for batch " + std::to_string(batch) + ", " +
        std::to_string(lq) + " queries and " + std::to_string(lk) +
        " keys (attn-compile --layer-shape=" + std::to_string(batch) + "x" +
        std::to_string(lq) + " adds one)");
  };
  if (linears.empty())
    return fail(artifact->path + " holds no product kernels (rebuild it with "
                                 "attn-compile LAYER.yaml --emit=so)");
  auto linear =
      std::make_shared<ArtifactLinearBackend>(artifact, std::move(linears));
  if (Status s =
          LayerStack::create(config, read, kernels, stack->stack, linear);
      s.failed())
    return fail(s.message());
  if (std::string unused = stack->stack->unusedWeights(available);
      !unused.empty())
    return fail(source + ": " + unused);
  return stack.release();
}
} // namespace

extern "C" {

/// attn_stack_create's work; the entry point runs it guarded.
static attn_stack *createStackFromTensors(attn_artifact *artifact,
                                          const char *const *weight_names,
                                          attn_tensor *const *weights,
                                          int64_t num_weights) {
  const char *caller = "attn_stack_create";
  if (!artifact || num_weights < 0 ||
      (num_weights && (!weight_names || !weights))) {
    attnc::setLastError(std::string(caller) +
                        ": artifact, weight_names or weights is NULL (or "
                        "num_weights < 0)");
    return nullptr;
  }
  // Weights by name; f32 only.
  std::map<std::string, const attn_tensor *> byName;
  for (int64_t i = 0; i < num_weights; ++i) {
    if (!weight_names[i] || !weights[i]) {
      attnc::setLastError(std::string(caller) + ": weight " +
                          std::to_string(i) + " or its name is NULL");
      return nullptr;
    }
    byName[weight_names[i]] = weights[i];
  }
  WeightReader read = [&](const std::string &name,
                          const std::vector<int64_t> *required,
                          std::vector<int64_t> &shape,
                          std::vector<float> &data) {
    auto it = byName.find(name);
    if (it == byName.end())
      return Status::error("no weight '" + name + "'");
    const attn_tensor *t = it->second;
    if (t->dtype != ATTN_F32)
      return Status::error("weight '" + name + "' must be f32");
    if (required && *required != t->sizes)
      return Status::error("weight '" + name + "' must have shape " +
                           shapeText(*required));
    shape = t->sizes;
    int64_t count = 1;
    for (int64_t s : shape)
      count *= s;
    const auto *values = static_cast<const float *>(t->data);
    data.assign(values, values + count);
    return Status::ok();
  };
  std::vector<std::string> names;
  for (const auto &[name, tensor] : byName)
    names.push_back(name);
  return createStack(caller, artifact, read, names, "the weights given");
}

attn_stack *attn_stack_create(attn_artifact *artifact,
                              const char *const *weight_names,
                              attn_tensor *const *weights,
                              int64_t num_weights) {
  return attnc::guarded<attn_stack *>("attn_stack_create", nullptr, [&] {
    return createStackFromTensors(artifact, weight_names, weights, num_weights);
  });
}

/// attn_stack_load's work (with `manifest` in place of the artifact's
/// when not null); the entry point runs it guarded.
static attn_stack *loadStack(attn_artifact *artifact, const char *weights_path,
                             const char *manifest = nullptr) {
  const char *caller = "attn_stack_load";
  if (!artifact || !weights_path) {
    attnc::setLastError(std::string(caller) +
                        ": artifact or weights_path is NULL");
    return nullptr;
  }
  std::unique_ptr<SafetensorsReader> file;
  if (Status s = SafetensorsReader::open(weights_path, file); s.failed()) {
    attnc::setLastError(std::string(caller) + ": " + s.message());
    return nullptr;
  }
  WeightReader read = [&](const std::string &name,
                          const std::vector<int64_t> *required,
                          std::vector<int64_t> &shape,
                          std::vector<float> &data) {
    if (required)
      shape = *required;
    else if (const SafetensorsEntry *entry = file->find(name))
      shape = entry->shape;
    else
      return Status::error(file->getPath() + ": no tensor '" + name + "'");
    return file->read(name, shape, data);
  };
  return createStack(caller, artifact, read, file->names(), file->getPath(),
                     manifest);
}

attn_stack *attn_stack_load(attn_artifact *artifact, const char *weights_path) {
  return attnc::guarded<attn_stack *>("attn_stack_load", nullptr, [&] {
    return loadStack(artifact, weights_path);
  });
}

/// attn_stack_forward's work; the entry point runs it guarded.
static int stackForward(attn_stack *stack, attn_tensor *x, attn_tensor *memory,
                        attn_tensor *out) {
  auto fail = [](std::string message) {
    attnc::setLastError("attn_stack_forward: " + std::move(message));
    return -1;
  };
  if (!stack || !x || !out)
    return fail("stack, x or out is NULL");
  if (!isActivations(x) || !isActivations(out) ||
      (memory && !isActivations(memory)))
    return fail("x, memory and out must be f32 tensors [batch, length, "
                "d_model]");
  if (out->sizes != x->sizes)
    return fail("out must have the shape of x");
  Activations result;
  Activations mem;
  if (memory)
    mem = activationsOf(memory);
  if (Status s = stack->stack->forward(activationsOf(x),
                                       memory ? &mem : nullptr, result);
      s.failed())
    return fail(s.message());
  std::copy(result.data.begin(), result.data.end(),
            static_cast<float *>(out->data));
  return 0;
}

int attn_stack_forward(attn_stack *stack, attn_tensor *x, attn_tensor *memory,
                       attn_tensor *out) {
  return attnc::guarded<int>("attn_stack_forward", -1, [&] {
    return stackForward(stack, x, memory, out);
  });
}

/// `x` [total, d_model] as a packed input [1, total, d_model] for `count`
/// sequences, `out` of its shape: "" or what is wrong.
static std::string packedInput(const attn_tensor *x, const attn_tensor *out,
                               int64_t count, Activations &packed) {
  auto isPacked = [](const attn_tensor *t) {
    return t->dtype == ATTN_F32 && t->sizes.size() == 2;
  };
  if (!isPacked(x) || !isPacked(out) || out->sizes != x->sizes)
    return "x and out must be f32 tensors [total tokens, d_model] of one "
           "shape";
  if (count < 1 || count > x->sizes[0])
    return "count (" + std::to_string(count) + ") must be 1 to the input's " +
           std::to_string(x->sizes[0]) + " tokens";
  packed = Activations(1, x->sizes[0], x->sizes[1]);
  const auto *data = static_cast<const float *>(x->data);
  packed.data.assign(data, data + packed.data.size());
  return "";
}

/// attn_stack_forward_packed's work; the entry point runs it guarded.
static int stackForwardPacked(attn_stack *stack, attn_tensor *x,
                              const int64_t *lengths, int64_t count,
                              attn_tensor *out) {
  auto fail = [](std::string message) {
    attnc::setLastError("attn_stack_forward_packed: " + std::move(message));
    return -1;
  };
  if (!stack || !x || !out || !lengths)
    return fail("stack, x, lengths or out is NULL");
  Activations packed;
  if (std::string error = packedInput(x, out, count, packed); !error.empty())
    return fail(error);
  Activations result;
  if (Status s = stack->stack->forwardPacked(
          packed, std::vector<int64_t>(lengths, lengths + count), result);
      s.failed())
    return fail(s.message());
  std::copy(result.data.begin(), result.data.end(),
            static_cast<float *>(out->data));
  return 0;
}

int attn_stack_forward_packed(attn_stack *stack, attn_tensor *x,
                              const int64_t *lengths, int64_t count,
                              attn_tensor *out) {
  return attnc::guarded<int>("attn_stack_forward_packed", -1, [&] {
    return stackForwardPacked(stack, x, lengths, count, out);
  });
}

/// attn_stack_forward_padded's work; the entry point runs it guarded.
static int stackForwardPadded(attn_stack *stack, attn_tensor *x,
                              const int64_t *lengths, attn_tensor *out) {
  auto fail = [](std::string message) {
    attnc::setLastError("attn_stack_forward_padded: " + std::move(message));
    return -1;
  };
  if (!stack || !x || !out || !lengths)
    return fail("stack, x, lengths or out is NULL");
  auto isPadded = [](const attn_tensor *t) {
    return t->dtype == ATTN_F32 && t->sizes.size() == 3;
  };
  if (!isPadded(x) || !isPadded(out) || out->sizes != x->sizes)
    return fail("x and out must be f32 tensors [batch, length, d_model] of "
                "one shape");
  Activations padded(x->sizes[0], x->sizes[1], x->sizes[2]);
  const auto *data = static_cast<const float *>(x->data);
  padded.data.assign(data, data + padded.data.size());
  Activations result;
  if (Status s = stack->stack->forwardPadded(
          padded, std::vector<int64_t>(lengths, lengths + x->sizes[0]), result);
      s.failed())
    return fail(s.message());
  std::copy(result.data.begin(), result.data.end(),
            static_cast<float *>(out->data));
  return 0;
}

int attn_stack_forward_padded(attn_stack *stack, attn_tensor *x,
                              const int64_t *lengths, attn_tensor *out) {
  return attnc::guarded<int>("attn_stack_forward_padded", -1, [&] {
    return stackForwardPadded(stack, x, lengths, out);
  });
}

/// attn_stack_step's work; the entry point runs it guarded.
static int stackStep(attn_stack *stack, const int64_t *ids,
                     const int64_t *lengths, int64_t count, attn_tensor *x,
                     attn_tensor *out) {
  auto fail = [](std::string message) {
    attnc::setLastError("attn_stack_step: " + std::move(message));
    return -1;
  };
  if (!stack || !x || !out || !ids || !lengths)
    return fail("stack, ids, lengths, x or out is NULL");
  Activations packed;
  if (std::string error = packedInput(x, out, count, packed); !error.empty())
    return fail(error);
  Activations result;
  if (Status s = stack->stack->step(
          std::vector<int64_t>(ids, ids + count), packed,
          std::vector<int64_t>(lengths, lengths + count), result);
      s.failed())
    return fail(s.message());
  std::copy(result.data.begin(), result.data.end(),
            static_cast<float *>(out->data));
  return 0;
}

int attn_stack_step(attn_stack *stack, const int64_t *ids,
                    const int64_t *lengths, int64_t count, attn_tensor *x,
                    attn_tensor *out) {
  return attnc::guarded<int>("attn_stack_step", -1, [&] {
    return stackStep(stack, ids, lengths, count, x, out);
  });
}

int64_t attn_stack_add_sequence(attn_stack *stack) {
  return attnc::guarded<int64_t>("attn_stack_add_sequence", -1, [&] {
    if (!stack) {
      attnc::setLastError("attn_stack_add_sequence: stack is NULL");
      return int64_t(-1);
    }
    int64_t id = -1;
    if (Status s = stack->stack->addSequence(id); s.failed()) {
      attnc::setLastError("attn_stack_add_sequence: " + s.message());
      return int64_t(-1);
    }
    return id;
  });
}

int attn_stack_remove_sequence(attn_stack *stack, int64_t id) {
  return attnc::guarded<int>("attn_stack_remove_sequence", -1, [&] {
    Status s = stack ? stack->stack->removeSequence(id)
                     : Status::error("stack is NULL");
    if (s.failed()) {
      attnc::setLastError("attn_stack_remove_sequence: " + s.message());
      return -1;
    }
    return 0;
  });
}

int64_t attn_stack_sequence_length(attn_stack *stack, int64_t id) {
  return attnc::guarded<int64_t>("attn_stack_sequence_length", -1, [&] {
    int64_t length = stack ? stack->stack->sequenceLength(id) : -1;
    if (length < 0)
      attnc::setLastError(std::string("attn_stack_sequence_length: ") +
                          (stack ? "no live sequence " + std::to_string(id)
                                 : std::string("stack is NULL")));
    return length;
  });
}

int attn_stack_set_serving_limits(attn_stack *stack, int64_t max_sequences,
                                  int64_t max_sequence_tokens) {
  return attnc::guarded<int>("attn_stack_set_serving_limits", -1, [&] {
    if (!stack || max_sequences < 0 || max_sequence_tokens < 0) {
      attnc::setLastError(
          "attn_stack_set_serving_limits: " +
          std::string(stack ? "limits must be >= 0" : "stack is NULL"));
      return -1;
    }
    stack->stack->setServingLimits(max_sequences, max_sequence_tokens);
    return 0;
  });
}

} // extern "C"

attn_stack *attnc::loadStackWithManifest(attn_artifact *artifact,
                                         const char *weightsPath,
                                         const std::string &manifest) {
  return attnc::guarded<attn_stack *>("attn_stack_load", nullptr, [&] {
    return loadStack(artifact, weightsPath, manifest.c_str());
  });
}

extern "C" {

void attn_stack_reset(attn_stack *stack) {
  if (stack)
    stack->stack->reset();
}

void attn_stack_release(attn_stack *stack) { delete stack; }

} // extern "C"
