//===- Transformer.cpp - layer stacks with kernels from the JIT -----------===//
//
// TransformerStack is the executor of LayerStack.h with a kernel provider
// that compiles attention in process: one kernel per block role and, for
// kinds that need static sizes, per sequence length; kind softmax (and
// every cross-attention) compiles once with dynamic sizes and serves full
// sequences, decoding steps and segments alike. With a GPU target the
// attention kernels run on that device (static sizes: one per length), the
// rest of the layer on the host. Projections and feed-forward run on
// attn's GEMM (CompiledLinearBackend: weights packed once, epilogues
// fused) unless TransformerOptions::compiledLinears asks for OpenBLAS.
//
//===----------------------------------------------------------------------===//
#include "attn/Compiler/Transformer.h"
#include "GpuLinear.h"
#include "GpuPagedAttention.h"
#include "Weights.h"
#include "attn/Compiler/BlockKernels.h"
#include "attn/Compiler/GpuCompiler.h"
#include "attn/Compiler/HostCompiler.h"
#include "attn/Compiler/LinearKernels.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Runtime/ContextParallel.h"
#include "attn/Runtime/HalfFloat.h"
#include "attn/Runtime/MemRefDescriptor.h"
#include "attn/Runtime/OpenBlasLinear.h"
#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/TargetParser/Host.h"
#include <tuple>

using namespace attnrt;
using attnspec::AttentionRole;
using attnspec::LayerSpec;

static llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

namespace {
struct CompiledAttention {
  std::unique_ptr<Kernel> compiled;               // a JitKernel, or a GpuKernel
  std::unique_ptr<CompiledBlockAttention> blocks; // context parallel
  std::shared_ptr<GpuPagedAttention> gpuPaged;    // the SelfPaged kernel
  AttentionKernel kernel;
};

/// A GPU stack's device copies of attention operands that name their
/// owner (KernelOperand: cross-attention's memory keys and values), by
/// owner, shared by its kernels (a prompt's and its decoding steps' read
/// the same memory): an operand whose owner, version and size are those of
/// its copy is read there instead of being copied in again.
class OperandMirrors {
public:
  /// Points `operand` at the device copy of `input` (made or refreshed
  /// first) when `input` names its owner; leaves it on the host otherwise.
  Status bind(GpuDevice &device, const KernelOperand &input,
              GpuOperand &operand) {
    if (!input.owner)
      return Status::ok();
    uint64_t bytes = sizeof(float);
    for (int64_t d : input.shape)
      bytes *= uint64_t(d);
    // Owners come and go with their caches: past a bound, start afresh.
    if (copies.size() >= kMaxCopies)
      copies.clear();
    Copy &copy = copies[input.owner];
    if (!copy.buffer || copy.version != input.version ||
        copy.buffer->bytes() != bytes) {
      std::string error;
      copy.buffer = device.allocate(bytes, error);
      if (!copy.buffer || !device.write(*copy.buffer, input.data, bytes, error))
        return Status::error("an attention operand on the GPU: " + error);
      GpuKernel::countHostBytes(bytes);
      copy.version = input.version;
    }
    operand.buffer = copy.buffer.get();
    return Status::ok();
  }
  /// The device copy of `input` when it is up to date, else null.
  GpuBuffer *find(const KernelOperand &input) const {
    auto it = copies.find(input.owner);
    uint64_t bytes = sizeof(float);
    for (int64_t d : input.shape)
      bytes *= uint64_t(d);
    return it != copies.end() && it->second.version == input.version &&
                   it->second.buffer->bytes() == bytes
               ? it->second.buffer.get()
               : nullptr;
  }

private:
  static constexpr size_t kMaxCopies = 256;
  struct Copy {
    std::shared_ptr<GpuBuffer> buffer;
    uint64_t version = 0;
  };
  std::map<const void *, Copy> copies;
};
} // namespace

struct TransformerStack::Impl {
  LayerSpec spec;
  TransformerOptions options;
  mlir::MLIRContext context;
  /// By block, batch, queries, keys and whether those are capacities
  /// (capacities()).
  std::map<std::tuple<int, int64_t, int64_t, int64_t, bool>, CompiledAttention>
      kernels;
  std::unique_ptr<LayerStack> stack;

  Impl() : context(mlir::MLIRContext::Threading::DISABLED) {
    mlir::DialectRegistry registry;
    attnspec::registerToolDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  Status kernelFor(AttentionBlock block, int64_t batch, int64_t lq, int64_t lk,
                   const AttentionKernel *&kernel);
  /// The SelfPaged kernel on a GPU (GpuPagedAttention.h): compiled per
  /// capacity, the pools kept on the device. `compiled` holds the operand
  /// names of the dynamic kernel. False when the GPU kernels cannot read
  /// this attention's cache in pages (GpuFlashKernel.cpp, matchPagedKeys).
  bool gpuPagedKernel(CompiledAttention &compiled);
  /// buildLayerAttention of `attention`, errors reported at the layer.
  mlir::OwningOpRef<mlir::ModuleOp>
  buildAttention(const attnspec::Spec &attention, bool &bf16,
                 std::vector<std::string> &operands) {
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBuffer(
                                     "attention:", "<layer " + spec.name + ">"),
                                 llvm::SMLoc());
    return buildLayerAttention(attention, bf16, sourceMgr, &context, operands);
  }
  bool gpuPagedUnsupported = false;
  /// The products on the GPU (TransformerOptions::gpuLinears), else null.
  std::shared_ptr<GpuLinearBackend> gpuLinear;
  /// Device copies of the GPU kernels' operands kept there.
  std::shared_ptr<OperandMirrors> operandMirrors =
      std::make_shared<OperandMirrors>();
  Status contextParallelKernel(int64_t batch, CompiledAttention &compiled);
  std::optional<std::pair<int64_t, int64_t>> capacities(AttentionBlock block,
                                                        int64_t lq, int64_t lk);
};

/// The number of rows a GPU kernel is compiled for to serve `n`: 64, then
/// powers of two up to 1024, then multiples of 512 (past 2048 at most a
/// quarter more rows than asked for, and a kernel per 512 rows).
static int64_t capacityFor(int64_t n) {
  if (n <= 1024)
    return std::max<int64_t>(64, llvm::PowerOf2Ceil(n));
  return llvm::alignTo(n, 512);
}

/// The sizes a GPU kernel is compiled for to serve attention of `lq`
/// queries over `lk` keys: capacities of queries and keys (capacityFor;
/// one query row, a decoding step, stays one row), for cross-attention
/// (no positional terms) and for self-attention when the layer's softmax
/// attention has terms that see positions only relative to each other (causal,
/// windows, ALiBi, T5's buckets, soft-capping; RoPE rotates keys before they
/// are cached). Queries and keys then go at the end of their capacities behind
/// masked key rows (atEndOfCapacity), where every term sees them as before:
/// one kernel serves every size up to its capacities instead of a compile per
/// size (GPU kernels have static shapes). Nothing where that does not apply:
/// kernels of the exact sizes.
std::optional<std::pair<int64_t, int64_t>>
TransformerStack::Impl::capacities(AttentionBlock block, int64_t lq,
                                   int64_t lk) {
  const attnspec::AttentionShape &a = spec.layer.attention;
  bool decoder = spec.layer.isDecoder();
  if (options.gpuTarget.empty())
    return std::nullopt;
  int64_t keys = capacityFor(lk);
  if (block == AttentionBlock::Cross) // plain softmax over the memory
    return std::make_pair(lq == 1 ? lq : capacityFor(lq), keys);
  // An encoder's queries and keys align at their start: the same capacity
  // keeps them aligned.
  if (block != AttentionBlock::Self || a.kind != "softmax" || a.keyBias ||
      (!decoder && lq != lk))
    return std::nullopt;
  // Causal (a decoder's own) and windows mask by distance; ALiBi, T5's
  // buckets and soft-capping add by distance or by score. Everything else
  // (blocks, strides, global tokens, segments) sees absolute positions.
  mlir::MLIRContext *ctx = &context;
  if (!a.pattern.empty() && a.pattern != "none" && a.pattern != "causal") {
    mlir::Attribute pattern = mlir::parseAttribute(
        a.pattern[0] == '#' ? a.pattern : "#attn." + a.pattern, ctx);
    if (!mlir::isa_and_nonnull<mlir::attn::CausalAttr, mlir::attn::WindowAttr>(
            pattern))
      return std::nullopt;
  }
  if (!a.mods.empty()) {
    auto mods = mlir::dyn_cast_or_null<mlir::ArrayAttr>(
        mlir::parseAttribute(a.mods, ctx));
    if (!mods || !llvm::all_of(mods, [](mlir::Attribute mod) {
          return mlir::isa<mlir::attn::AlibiAttr, mlir::attn::SoftcapAttr,
                           mlir::attn::T5BiasAttr>(mod);
        }))
      return std::nullopt;
  }
  int64_t queries = !decoder ? keys : lq == 1 ? 1 : capacityFor(lq);
  return std::make_pair(queries, keys);
}

/// Rows [0, rows) of each [rows, dim] matrix of `from` ([.., rows, dim])
/// at the end of the matching matrix of `to` ([.., capacity, dim]), or
/// back (`toCapacity` false).
static void moveRows(const float *from, float *to, int64_t matrices,
                     int64_t rows, int64_t capacity, int64_t dim,
                     bool toCapacity) {
  for (int64_t m = 0; m < matrices; ++m) {
    int64_t small = m * rows * dim,
            large = (m * capacity + capacity - rows) * dim;
    if (toCapacity)
      std::copy_n(from + small, rows * dim, to + large);
    else
      std::copy_n(from + large, rows * dim, to + small);
  }
}

/// `kernel` (over `queryCapacity` queries and `keyCapacity` keys, with a
/// per-key bias operand) as a kernel over up to that many without one:
/// each call places its queries, keys and values at the end of the
/// capacities, zero rows before them, masks the key rows before its keys
/// by a bias of -inf and takes its output rows from the end of the
/// kernel's (f32: GPU kernels take the layer's f32 activations).
static AttentionKernel atEndOfCapacity(AttentionKernel kernel,
                                       int64_t queryCapacity,
                                       int64_t keyCapacity) {
  AttentionKernel outer;
  // On the device the key bias is the chain's (LinearBackend::
  // selfAttention): the kernel is launched as it is.
  outer.deviceLaunches = kernel.deviceLaunches;
  outer.capacity = kernel.capacity;
  outer.keyCapacity = kernel.keyCapacity;
  outer.takesKeyBias = kernel.takesKeyBias;
  outer.deviceCopy = kernel.deviceCopy;
  for (size_t i = 0; i < kernel.argumentNames.size(); ++i)
    if (kernel.argumentNames[i] != "bias") {
      outer.argumentNames.push_back(kernel.argumentNames[i]);
      outer.argumentShapes.push_back(kernel.argumentShapes[i]);
    }
  outer.call = [inner = std::move(kernel), queryCapacity,
                keyCapacity](const std::vector<KernelOperand> &inputs,
                             const KernelOperand &output) -> Status {
    if (inputs.size() + 1 != inner.argumentNames.size())
      return Status::error(
          "attention at a capacity: " + std::to_string(inputs.size()) +
          " operands for " + std::to_string(inner.argumentNames.size() - 1));
    // q [B, H, lq, D], k and v [B, Hkv, lk, D] (inputs 0-2), the output
    // [B, H, lq, Dv].
    int64_t batch = output.shape[0], queries = output.shape[2],
            keys = inputs[1].shape[2];
    if (queries > queryCapacity || keys > keyCapacity)
      return Status::error(
          "attention at a capacity of " + std::to_string(queryCapacity) +
          " queries and " + std::to_string(keyCapacity) + " keys, given " +
          std::to_string(queries) + " and " + std::to_string(keys));
    std::vector<KernelOperand> operands;
    std::vector<std::vector<float>> padded;
    padded.reserve(4); // q, k, v and the bias: `operands` points into them
    auto atCapacity = [&](const KernelOperand &in, int64_t capacity) {
      int64_t matrices = in.shape[0] * in.shape[1], rows = in.shape[2],
              dim = in.shape[3];
      if (rows == capacity)
        return in;
      std::vector<float> &to = padded.emplace_back(matrices * capacity * dim);
      moveRows(static_cast<const float *>(in.data), to.data(), matrices, rows,
               capacity, dim, /*toCapacity=*/true);
      // The same rows, placed: the same owner and version.
      return KernelOperand{to.data(),
                           {in.shape[0], in.shape[1], capacity, dim},
                           in.owner,
                           in.version};
    };
    size_t next = 0;
    for (const std::string &name : inner.argumentNames) {
      if (name == "bias") {
        // [B, 1, 1, keyCapacity]: the key rows before the keys masked.
        std::vector<float> &bias =
            padded.emplace_back(batch * keyCapacity, -INFINITY);
        for (int64_t b = 0; b < batch; ++b)
          std::fill_n(bias.data() + (b + 1) * keyCapacity - keys, keys, 0.0f);
        operands.push_back({bias.data(), {batch, 1, 1, keyCapacity}});
        continue;
      }
      const KernelOperand &in = inputs[next++];
      if (name == "q" || name == "qk")
        operands.push_back(atCapacity(in, queryCapacity));
      else if (name == "k" || name == "v")
        operands.push_back(atCapacity(in, keyCapacity));
      else
        operands.push_back(in);
    }
    if (queries == queryCapacity)
      return inner.call(operands, output);
    int64_t matrices = batch * output.shape[1], dim = output.shape[3];
    std::vector<float> result(matrices * queryCapacity * dim);
    if (Status s = inner.call(
            operands,
            {result.data(), {batch, output.shape[1], queryCapacity, dim}});
        s.failed())
      return s;
    moveRows(result.data(), static_cast<float *>(output.data), matrices,
             queries, queryCapacity, dim, /*toCapacity=*/false);
    return Status::ok();
  };
  return outer;
}

/// Sets `kernel.deviceLaunches` (LayerStack.h) when the GPU kernel takes
/// q, k and v once each, the key bias of a kernel at a capacity
/// (atEndOfCapacity) when `atCapacity`, and variant operands: its launches
/// of `function` on device buffers, `rows` queries and `keyRows` keys.
static void setDeviceLaunches(AttentionKernel &kernel, GpuKernel *gpu,
                              const std::string &function, int64_t rows,
                              int64_t keyRows, bool atCapacity) {
  const std::vector<std::string> &names = kernel.argumentNames;
  auto count = [&](const char *name) {
    return std::count(names.begin(), names.end(), name);
  };
  bool bias = atCapacity && count("bias") == 1;
  if (count("q") != 1 || count("k") != 1 || count("v") != 1)
    return;
  kernel.capacity = rows;
  kernel.keyCapacity = keyRows;
  kernel.takesKeyBias = bias;
  kernel.deviceLaunches = [gpu, function, names,
                           bias](const AttentionKernel::DeviceOperands &on,
                                 std::vector<GpuLaunch> &launches) {
    std::vector<GpuOperand> operands;
    size_t extra = 0;
    for (const std::string &name : names) {
      operands.emplace_back();
      bool variant = name != "q" && name != "k" && name != "v" &&
                     !(bias && name == "bias");
      if (variant && extra == on.extras.size())
        return Status::error("the attention's operand '" + name +
                             "' is not on the device");
      operands.back().buffer = name == "q"   ? on.q
                               : name == "k" ? on.k
                               : name == "v" ? on.v
                               : variant     ? on.extras[extra++]
                                             : on.keyBias;
    }
    operands.emplace_back();
    operands.back().buffer = on.output;
    if (llvm::Error e = gpu->launchesOn(function, operands, launches))
      return Status::error(llvm::toString(std::move(e)));
    return Status::ok();
  };
}

/// Self-attention over this rank's share of the sequence: ring or Ulysses
/// over the ranks (ContextParallel.h), blocks compiled from the attention
/// of the whole sequence.
Status
TransformerStack::Impl::contextParallelKernel(int64_t batch,
                                              CompiledAttention &compiled) {
  const attnspec::LayerShape &l = spec.layer;
  if (l.attention.kind != "softmax")
    return Status::error("sequence parallelism needs attention kind softmax, "
                         "not " +
                         l.attention.kind);
  int64_t tokens = options.contextTokens;
  attnspec::Spec attentionSpec =
      attnspec::attentionSpec(spec, AttentionRole::Self, batch, tokens, tokens);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBuffer(
                                   "attention:", "<layer " + spec.name + ">"),
                               llvm::SMLoc());
  mlir::OwningOpRef<mlir::ModuleOp> module = attnspec::buildModule(
      attentionSpec, sourceMgr, &context, &compiled.kernel.argumentNames);
  if (!module)
    return Status::error("cannot build the self-attention of layer spec '" +
                         spec.name + "'");
  mlir::attn::AttentionOp attention;
  module->walk([&](mlir::attn::AttentionOp op) { attention = op; });
  for (const std::string &name : compiled.kernel.argumentNames)
    if (name != "q" && name != "k" && name != "v" && name != "rel_table")
      return Status::error("sequence parallelism does not take the "
                           "attention operand '" +
                           name + "'");
  // The rel_table is each layer's weight: set per call below.
  static const float noTable = 0;
  HostCompileOptions compileOptions;
  compileOptions.numThreads = options.numThreads;
  auto blocks = CompiledBlockAttention::create(
      attention, compileOptions, nullptr, nullptr,
      attention.getRelTable() ? &noTable : nullptr);
  if (!blocks)
    return Status::error(llvm::toString(blocks.takeError()));
  compiled.blocks = std::move(*blocks);
  auto fn = *module->getOps<mlir::func::FuncOp>().begin();
  for (mlir::Type type : fn.getArgumentTypes()) {
    llvm::ArrayRef<int64_t> shape =
        mlir::cast<mlir::ShapedType>(type).getShape();
    compiled.kernel.argumentShapes.emplace_back(shape.begin(), shape.end());
  }
  CompiledBlockAttention *raw = compiled.blocks.get();
  Communicator *ranks = options.contextRanks;
  std::string scheme = options.contextScheme;
  std::vector<std::string> names = compiled.kernel.argumentNames;
  compiled.kernel.call = [=](const std::vector<KernelOperand> &inputs,
                             const KernelOperand &output) {
    const float *q = nullptr, *k = nullptr, *v = nullptr;
    AttentionDims dims;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (names[i] == "q") {
        q = static_cast<const float *>(inputs[i].data);
        dims.batch = inputs[i].shape[0];
        dims.queryHeads = inputs[i].shape[1];
        dims.headDim = inputs[i].shape[3];
      } else if (names[i] == "k") {
        k = static_cast<const float *>(inputs[i].data);
        dims.keyHeads = inputs[i].shape[1];
      } else if (names[i] == "v") {
        v = static_cast<const float *>(inputs[i].data);
        dims.valueDim = inputs[i].shape[3];
      } else {
        raw->setRelTable(static_cast<const float *>(inputs[i].data));
      }
    }
    ContextParallelStats stats;
    std::string message;
    bool ok =
        scheme == "ulysses"
            ? ulyssesAttention(*ranks, SequenceLayout::Contiguous, tokens, dims,
                               *raw, q, k, v, static_cast<float *>(output.data),
                               stats, message)
            : ringAttention(*ranks, SequenceLayout::Contiguous, tokens, dims,
                            *raw, q, k, v, static_cast<float *>(output.data),
                            stats, message);
    return ok ? Status::ok() : Status::error(message);
  };
  return Status::ok();
}

Status TransformerStack::Impl::kernelFor(AttentionBlock block, int64_t batch,
                                         int64_t lq, int64_t lk,
                                         const AttentionKernel *&kernel) {
  AttentionRole role = block == AttentionBlock::Cross ? AttentionRole::Cross
                                                      : AttentionRole::Self;
  bool oneKvHead = block == AttentionBlock::SelfOneKvHead;
  // A decoder's cache read as pools (forward() with a cache): on a GPU, the
  // paged kernel, which takes pools of any page size (gpuPagedKernel).
  bool cacheRows = block == AttentionBlock::SelfCacheRows;
  if (cacheRows && (options.gpuTarget.empty() || gpuPagedUnsupported)) {
    kernel = nullptr;
    return Status::ok();
  }
  if (cacheRows)
    block = AttentionBlock::SelfPaged;
  bool paged = block == AttentionBlock::SelfPaged;
  // The per-KV-head kernel is compiled for the CPU, where the layer has it.
  if (oneKvHead && (options.contextRanks || !options.gpuTarget.empty() ||
                    !oneKvHeadAttentionSpec(spec, batch, lq, lk))) {
    kernel = nullptr;
    return Status::ok();
  }
  // The paged one (continuous batching) is there for decoders of kind
  // softmax: one kernel for any lengths (on a GPU, one per capacity, with
  // the pools kept on the device: gpuPagedKernel).
  if (paged &&
      ((!options.pagedKvCache && !cacheRows) || options.contextRanks ||
       !spec.layer.isDecoder() || spec.layer.attention.kind != "softmax")) {
    kernel = nullptr;
    return Status::ok();
  }
  if (paged) { // one sequence per call: batch 1, as attn.paged_kv reads it
    batch = 1;
    lq = lk = mlir::ShapedType::kDynamic;
  }
  // Sequence parallel: one kernel per batch size, whatever the rank's share.
  if (options.contextRanks && role == AttentionRole::Self) {
    if (lq != lk)
      return Status::error("sequence parallelism runs whole sequences: "
                           "no KV cache across calls (call reset() first)");
    auto key =
        std::make_tuple(int(role), batch, int64_t(-1), int64_t(-1), false);
    auto it = kernels.find(key);
    if (it == kernels.end()) {
      CompiledAttention compiled;
      if (Status s = contextParallelKernel(batch, compiled); s.failed())
        return s;
      it = kernels.emplace(key, std::move(compiled)).first;
    }
    kernel = &it->second.kernel;
    return Status::ok();
  }
  // GPU kernels take static shapes: one per size there, or per capacity.
  if (attentionTakesAnyLength(spec, role) && options.gpuTarget.empty() &&
      !paged)
    batch = lq = lk = mlir::ShapedType::kDynamic;
  std::optional<std::pair<int64_t, int64_t>> capacity =
      capacities(block, lq, lk);
  if (capacity)
    std::tie(lq, lk) = *capacity;
  auto key = std::make_tuple(int(block), batch, lq, lk, capacity.has_value());
  auto it = kernels.find(key);
  if (it != kernels.end()) {
    kernel = &it->second.kernel;
    return Status::ok();
  }
  attnspec::Spec attentionSpec =
      oneKvHead ? *oneKvHeadAttentionSpec(spec, batch, lq, lk)
                : attnspec::attentionSpec(spec, role, batch, lq, lk);
  attentionSpec.attention.keyBias = capacity.has_value();
  // A bf16 layer's softmax attention runs in bf16 where its products run
  // on AMX tiles or by vdpbf16ps (q, k and v rounded as they are handed
  // over, the output widened back): 3x the f32 kernel on AMX, 1.7-1.8x by
  // vdpbf16ps on Zen 4. Elsewhere, and for operands beyond q, k and v, it
  // stays f32.
  HostCompileOptions hostOptions;
  hostOptions.bf16Products = options.bf16Products;
  llvm::Expected<mlir::attn::TargetDescription> target =
      hostTarget(hostOptions);
  if (!target)
    return Status::error(llvm::toString(target.takeError()));
  bool bf16Attention =
      spec.dtype == "bf16" && options.gpuTarget.empty() &&
      (target->bf16ProductsOnAmx() || target->bf16ProductsByDot());
  CompiledAttention compiled;
  mlir::OwningOpRef<mlir::ModuleOp> module = buildAttention(
      attentionSpec, bf16Attention, compiled.kernel.argumentNames);
  if (module && paged &&
      !pageKeysAndValues(*module, compiled.kernel.argumentNames)) {
    kernel = nullptr; // no k and v to page: rows kept per sequence
    return Status::ok();
  }
  if (!module)
    return Status::error(llvm::formatv("cannot build the {0} of layer spec "
                                       "'{1}' for {2} queries and {3} keys",
                                       attentionSpec.name, spec.name, lq, lk));
  if (paged && !options.gpuTarget.empty()) {
    if (!gpuPagedKernel(compiled)) {
      gpuPagedUnsupported = true; // the GPU kernels cannot read it: rows
      kernel = nullptr;           // per sequence, copied per call
      return Status::ok();
    }
    kernel = &(kernels[key] = std::move(compiled)).kernel;
    return Status::ok();
  }
  auto fn = *module->getOps<mlir::func::FuncOp>().begin();
  for (mlir::Type type : fn.getArgumentTypes()) {
    llvm::ArrayRef<int64_t> shape =
        mlir::cast<mlir::ShapedType>(type).getShape();
    std::vector<int64_t> &s =
        compiled.kernel.argumentShapes.emplace_back(shape.begin(), shape.end());
    for (int64_t &size : s)
      size = mlir::ShapedType::isDynamic(size) ? -1 : size;
  }
  // Read before lowering: compiling rewrites the function.
  std::string function = fn.getSymName().str();
  if (options.gpuTarget.empty()) {
    HostCompileOptions compileOptions;
    compileOptions.numThreads = options.numThreads;
    auto jit = compileForHost(*module, compileOptions);
    if (!jit)
      return Status::error(llvm::toString(jit.takeError()));
    compiled.compiled = std::move(*jit);
  } else {
    GpuCompileOptions compileOptions = options.gpuCompile;
    compileOptions.target = options.gpuTarget;
    auto artifact = compileForGpu(*module, compileOptions);
    if (!artifact)
      return Status::error(llvm::toString(artifact.takeError()));
    auto gpu = GpuKernel::create(std::move(*artifact));
    if (!gpu)
      return Status::error(llvm::toString(gpu.takeError()));
    compiled.compiled = std::move(*gpu);
  }
  Kernel *raw = compiled.compiled.get();
  // bf16 operands are rounded by the stack (LayerStack.h).
  compiled.kernel.bf16 = bf16Attention;
  if (!options.gpuTarget.empty())
    compiled.kernel.call = [gpu = static_cast<GpuKernel *>(raw), function,
                            mirrors =
                                options.gpuChains ? operandMirrors : nullptr](
                               const std::vector<KernelOperand> &inputs,
                               const KernelOperand &output) {
      std::vector<GpuOperand> operands;
      for (size_t i = 0; i < inputs.size(); ++i) {
        operands.push_back({inputs[i].data, /*bytes=*/0});
        if (Status s = mirrors ? mirrors->bind(gpu->gpuDevice(), inputs[i],
                                               operands.back())
                               : Status::ok();
            s.failed())
          return s;
      }
      operands.push_back({output.data, /*bytes=*/0});
      if (llvm::Error e = gpu->call(function, operands))
        return Status::error(llvm::toString(std::move(e)));
      return Status::ok();
    };
  else
    compiled.kernel.call = [raw,
                            function](const std::vector<KernelOperand> &inputs,
                                      const KernelOperand &output) {
      std::vector<MemRefDescriptor> descriptors;
      descriptors.reserve(inputs.size() + 1);
      for (const KernelOperand &operand : inputs)
        descriptors.emplace_back(operand.data, operand.shape);
      descriptors.emplace_back(output.data, output.shape);
      std::vector<MemRefDescriptor *> args;
      for (MemRefDescriptor &d : descriptors)
        args.push_back(&d);
      if (llvm::Error e = raw->call(function, args))
        return Status::error(llvm::toString(std::move(e)));
      return Status::ok();
    };
  if (!options.gpuTarget.empty() && block == AttentionBlock::Self && lq == lk)
    setDeviceLaunches(compiled.kernel, static_cast<GpuKernel *>(raw), function,
                      lq, lk, capacity.has_value());
  // Cross-attention at capacities reads the memory's keys and values from
  // the copies the kernel's calls share (OperandMirrors).
  if (!options.gpuTarget.empty() && block == AttentionBlock::Cross &&
      capacity && options.gpuChains) {
    setDeviceLaunches(compiled.kernel, static_cast<GpuKernel *>(raw), function,
                      lq, lk, /*atCapacity=*/true);
    if (compiled.kernel.deviceLaunches)
      compiled.kernel.deviceCopy =
          [gpu = static_cast<GpuKernel *>(raw), mirrors = operandMirrors,
           keyRows = lk](const KernelOperand &in, GpuBuffer *&copy) -> Status {
        if (in.shape.size() != 4 || !in.owner || in.shape[2] > keyRows)
          return Status::error("internal error: a cross-attention operand "
                               "without an owner or past the capacity");
        int64_t matrices = in.shape[0] * in.shape[1], rows = in.shape[2],
                dim = in.shape[3];
        // The rows at the end of the capacity, as atEndOfCapacity places
        // them: the same copy its calls bind.
        KernelOperand placed{in.data,
                             {in.shape[0], in.shape[1], keyRows, dim},
                             in.owner,
                             in.version};
        if ((copy = mirrors->find(placed)))
          return Status::ok();
        std::vector<float> padded(matrices * keyRows * dim);
        moveRows(static_cast<const float *>(in.data), padded.data(), matrices,
                 rows, keyRows, dim, /*toCapacity=*/true);
        placed.data = padded.data();
        GpuOperand operand;
        if (Status s = mirrors->bind(gpu->gpuDevice(), placed, operand);
            s.failed())
          return s;
        copy = operand.buffer;
        return Status::ok();
      };
  }
  if (capacity)
    compiled.kernel = atEndOfCapacity(std::move(compiled.kernel), lq, lk);
  kernel = &(kernels[key] = std::move(compiled)).kernel;
  return Status::ok();
}

bool TransformerStack::Impl::gpuPagedKernel(CompiledAttention &compiled) {
  auto compile =
      [this](
          const GpuPagedAttention::Sizes &sizes,
          std::string &function) -> llvm::Expected<std::unique_ptr<GpuKernel>> {
    attnspec::Spec attention =
        attnspec::attentionSpec(spec, AttentionRole::Self, sizes.batch,
                                sizes.queries, mlir::ShapedType::kDynamic);
    bool bf16 = false;
    std::vector<std::string> names;
    mlir::OwningOpRef<mlir::ModuleOp> module =
        buildAttention(attention, bf16, names);
    if (!module ||
        !pageKeysAndValues(*module, names, sizes.poolPages, sizes.tablePages,
                           sizes.pageRows, sizes.batch))
      return error("cannot build the paged attention of layer spec '" +
                   spec.name + "' for " + llvm::Twine(sizes.queries) +
                   " queries");
    function =
        (*module->getOps<mlir::func::FuncOp>().begin()).getSymName().str();
    GpuCompileOptions compileOptions = options.gpuCompile;
    compileOptions.target = options.gpuTarget;
    auto artifact = compileForGpu(*module, compileOptions);
    if (!artifact)
      return artifact.takeError();
    return GpuKernel::create(std::move(*artifact));
  };
  // One decoding step's kernel for the pool's first 16 pages, compiled
  // now: whether the GPU kernels take this attention in pages at all.
  std::string function;
  GpuPagedAttention::Sizes first{1, 1, 16, kKvPageRows, 1};
  auto kernel = compile(first, function);
  if (!kernel) {
    llvm::consumeError(kernel.takeError());
    return false;
  }
  auto paged = std::make_shared<GpuPagedAttention>(
      compiled.kernel.argumentNames, capacityFor, compile);
  paged->adopt(first, std::move(*kernel), function);
  compiled.gpuPaged = paged;
  compiled.kernel.readsAnyPages = true;
  compiled.kernel.call = [paged](const std::vector<KernelOperand> &inputs,
                                 const KernelOperand &output) {
    return paged->call(inputs, output);
  };
  // In a chain on the device (LinearBackend::selfAttention): f32 kernels
  // of q, the pools and variant operands.
  const std::vector<std::string> &names = compiled.kernel.argumentNames;
  if (!compiled.kernel.bf16 &&
      llvm::all_of(std::initializer_list<const char *>{"q", "k_pages",
                                                       "v_pages", "page_table",
                                                       "kv_length"},
                   [&](const char *name) {
                     return std::count(names.begin(), names.end(), name) == 1;
                   })) {
    compiled.kernel.pagedDeviceLaunches =
        [paged](const AttentionKernel::PagedDeviceOperands &on,
                GpuBuffer *pools[2], std::vector<GpuLaunch> &launches) {
          return paged->deviceLaunches(on, pools, launches);
        };
    compiled.kernel.queryRows = [paged](int64_t lq) {
      return paged->queryRows(lq);
    };
  }
  return true;
}

/// Rank `rank` of `ranks`'s slice of weight `name` (Transformer.h,
/// TransformerOptions::tensorRanks), read whole and cut: q/k/v_proj,
/// linear1 and linear_gate by output rows, o_proj and linear2 by input
/// columns (their bias once, on rank 0: the block sums the ranks' parts).
static Status readTensorSlice(const WeightReader &readWhole, int rank,
                              int ranks, const std::string &name,
                              const std::vector<int64_t> *required,
                              std::vector<int64_t> &shape,
                              std::vector<float> &data) {
  llvm::StringRef n(name);
  auto endsWithAny = [&](std::initializer_list<llvm::StringRef> suffixes) {
    return llvm::any_of(suffixes,
                        [&](llvm::StringRef s) { return n.ends_with(s); });
  };
  bool byRows = endsWithAny({"q_proj.weight", "q_proj.bias", "k_proj.weight",
                             "k_proj.bias", "v_proj.weight", "v_proj.bias",
                             "linear1.weight", "linear1.bias",
                             "linear_gate.weight", "linear_gate.bias"});
  bool byColumns = endsWithAny({"o_proj.weight", "linear2.weight"});
  bool onceBias = endsWithAny({"o_proj.bias", "linear2.bias"});
  if (!required || !(byRows || byColumns || onceBias))
    return readWhole(name, required, shape, data);
  std::vector<int64_t> whole = *required;
  if (byRows)
    whole[0] *= ranks;
  else if (byColumns)
    whole[1] *= ranks;
  std::vector<float> all;
  std::vector<int64_t> ignored;
  if (Status s = readWhole(name, &whole, ignored, all); s.failed())
    return s;
  shape = *required;
  if (onceBias) {
    data = rank == 0 ? std::move(all) : std::vector<float>(all.size(), 0.0f);
    return Status::ok();
  }
  int64_t rows = (*required)[0],
          cols = required->size() > 1 ? (*required)[1] : 1;
  data.resize(rows * cols);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      data[i * cols + j] = byRows ? all[(rank * rows + i) * cols + j]
                                  : all[i * whole[1] + rank * cols + j];
  return Status::ok();
}

namespace {
/// The layers' products on attn's GEMM: one kernel per (in, out, epilogue),
/// compiled on first use; weights kept packed, in the layer's dtype (bf16 /
/// f16 panels widened by the micro-kernel, bf16 on AMX tiles where the host
/// allows them). Biases, activations, SwiGLU's gate and residual sums are
/// fused into the products.
class CompiledLinearBackend : public LinearBackend {
public:
  CompiledLinearBackend(HostCompileOptions options, FloatFormat format)
      : options(options), format(format) {}

  Status prepare(int64_t out, int64_t in, const std::vector<float> &weight,
                 std::shared_ptr<const Weight> &prepared) override {
    LinearPanels panels(in, out, options, format);
    prepared =
        std::make_shared<PackedWeight>(panels.layout(), format, weight.data());
    return Status::ok();
  }

  Status accumulate(const float *x, int64_t rows, const Weight &weight,
                    float *y) override {
    return apply(x, rows, weight, LinearEpilogue(), nullptr, nullptr, y);
  }

  bool fusesEpilogues() const override { return true; }

  FloatFormat weightFormat() const override { return format; }

  Status apply(const float *x, int64_t rows, const Weight &weight,
               const LinearEpilogue &epilogue, const float *bias,
               const float *other, float *y) override {
    const PackedWeightPanels &packed =
        static_cast<const PackedWeight &>(weight).panels;
    auto kernel = kernelFor(packed.layout.in, packed.layout.out, epilogue);
    if (!kernel)
      return Status::error(llvm::toString(kernel.takeError()));
    if (llvm::Error e = (*kernel)->run(x, rows, packed.data(), bias, other, y))
      return Status::error(llvm::toString(std::move(e)));
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

  llvm::Expected<CompiledLinear *> kernelFor(int64_t in, int64_t out,
                                             const LinearEpilogue &epilogue) {
    std::unique_ptr<CompiledLinear> &kernel = kernels[{in, out, epilogue}];
    if (!kernel) {
      auto compiled = CompiledLinear::create(in, out, WeightLayout::Packed,
                                             options, format, epilogue);
      if (!compiled)
        return compiled.takeError();
      kernel = std::move(*compiled);
    }
    return kernel.get();
  }

  HostCompileOptions options;
  FloatFormat format;
  std::map<std::tuple<int64_t, int64_t, LinearEpilogue>,
           std::unique_ptr<CompiledLinear>>
      kernels;
};
} // namespace

TransformerStack::TransformerStack(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}
TransformerStack::~TransformerStack() = default;

llvm::Expected<std::unique_ptr<TransformerStack>>
TransformerStack::create(const LayerSpec &spec, const SafetensorsFile &weights,
                         TransformerOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->spec = spec;
  impl->options = std::move(options);
  Communicator *tensorRanks = impl->options.tensorRanks;
  if (tensorRanks) {
    LayerConfig config = layerConfig(spec);
    int64_t ranks = tensorRanks->size();
    if (config.heads % ranks || config.kvHeads % ranks ||
        config.ffnHidden % ranks)
      return error(llvm::formatv(
          "tensor parallelism over {0} ranks needs them to divide the heads "
          "({1}), key/value heads ({2}) and ffn_hidden ({3})",
          ranks, config.heads, config.kvHeads, config.ffnHidden));
    const attnspec::LayerShape &l = spec.layer;
    if (l.attention.kind != "softmax" || !l.attention.mods.empty() ||
        l.positions == "alibi" || l.positions == "relative" ||
        !config.variantOperands.empty())
      return error("tensor parallelism splits heads: it takes softmax "
                   "attention without per-head score mods (alibi, relative "
                   "positions) or variant operands");
    if (!impl->options.gpuTarget.empty() || impl->options.contextRanks)
      return error("tensor parallelism runs on the CPU, without sequence "
                   "parallelism");
    // The stack of one rank is the stack of its slice.
    impl->spec.layer.heads = config.heads / ranks;
    impl->spec.layer.kvHeads = config.kvHeads / ranks;
    impl->spec.layer.headDim = config.headDim;
    impl->spec.layer.ffnHidden = config.ffnHidden / ranks;
  }
  Impl *raw = impl.get();
  WeightReader readWhole =
      [&weights](const std::string &name, const std::vector<int64_t> *required,
                 std::vector<int64_t> &shape, std::vector<float> &data) {
        if (required) {
          shape = *required;
        } else if (std::optional<std::vector<int64_t>> actual =
                       weights.shape(name)) {
          shape = *actual;
        } else {
          return Status::error((weights.getPath() + ": no tensor '" + name +
                                "' (the attention variant's operand)")
                                   .str());
        }
        auto tensor = weights.read(name, shape);
        if (!tensor)
          return Status::error(llvm::toString(tensor.takeError()));
        data = std::move(*tensor);
        return Status::ok();
      };
  WeightReader read = readWhole;
  if (tensorRanks)
    read = [readWhole, tensorRanks](
               const std::string &name, const std::vector<int64_t> *required,
               std::vector<int64_t> &shape, std::vector<float> &data) {
      return readTensorSlice(readWhole, tensorRanks->rank(),
                             tensorRanks->size(), name, required, shape, data);
    };
  KernelProvider kernels = [raw](AttentionBlock block, int64_t batch,
                                 int64_t lq, int64_t lk,
                                 const AttentionKernel *&kernel) {
    return raw->kernelFor(block, batch, lq, lk, kernel);
  };
  std::shared_ptr<LinearBackend> linear;
  FloatFormat weightFormat = floatFormatOf(spec.dtype);
  if (!impl->options.gpuTarget.empty() && impl->options.gpuLinears) {
    GpuCompileOptions gpuOptions;
    gpuOptions.target = impl->options.gpuTarget;
    std::string message;
    impl->gpuLinear =
        GpuLinearBackend::create(gpuOptions, weightFormat, message);
    if (!impl->gpuLinear)
      return error(message);
    impl->gpuLinear->chainAttention = impl->options.gpuChains;
    linear = impl->gpuLinear;
  } else if (impl->options.compiledLinears ||
             weightFormat != FloatFormat::F32) {
    HostCompileOptions compileOptions;
    compileOptions.numThreads = impl->options.numThreads;
    compileOptions.bf16Products = impl->options.bf16Products;
    linear =
        std::make_shared<CompiledLinearBackend>(compileOptions, weightFormat);
  } else {
    linear = std::make_shared<OpenBlasLinearBackend>();
  }
  if (Status s = LayerStack::create(layerConfig(impl->spec), read, kernels,
                                    impl->stack, linear,
                                    impl->options.allowNonFiniteWeights);
      s.failed())
    return error(s.message());
  if (std::string unused = impl->stack->unusedWeights(weights.names());
      !unused.empty()) {
    std::string message = weights.getPath().str() + ": " + unused;
    if (!impl->options.allowUnusedWeights)
      return error(message + " (attn-run --allow-unused-weights loads it)");
    if (impl->options.warn)
      impl->options.warn(message);
  }
  impl->stack->onLayer = impl->options.onLayer;
  if (tensorRanks)
    impl->stack->setSumAcrossRanks([tensorRanks](std::vector<float> &partial) {
      std::string message;
      if (!tensorRanks->allReduceSum(partial.data(), partial.size(), message))
        return Status::error(message);
      return Status::ok();
    });
  return std::unique_ptr<TransformerStack>(
      new TransformerStack(std::move(impl)));
}

llvm::Expected<Activations>
TransformerStack::forward(const Activations &x, const Activations *memory) {
  Activations result;
  if (Status s = impl->stack->forward(x, memory, result); s.failed())
    return error(s.message());
  return result;
}

llvm::Expected<Activations>
TransformerStack::forwardPacked(const Activations &x,
                                const std::vector<int64_t> &lengths) {
  Activations result;
  if (Status s = impl->stack->forwardPacked(x, lengths, result); s.failed())
    return error(s.message());
  return result;
}

llvm::Expected<Activations>
TransformerStack::forwardPadded(const Activations &x,
                                const std::vector<int64_t> &lengths) {
  Activations result;
  if (Status s = impl->stack->forwardPadded(x, lengths, result); s.failed())
    return error(s.message());
  return result;
}

llvm::Expected<int64_t> TransformerStack::addSequence() {
  int64_t id = -1;
  if (Status s = impl->stack->addSequence(id); s.failed())
    return error(s.message());
  return id;
}

llvm::Error TransformerStack::removeSequence(int64_t id) {
  if (Status s = impl->stack->removeSequence(id); s.failed())
    return error(s.message());
  return llvm::Error::success();
}

llvm::Expected<Activations>
TransformerStack::step(const std::vector<int64_t> &ids, const Activations &x,
                       const std::vector<int64_t> &lengths) {
  Activations result;
  if (Status s = impl->stack->step(ids, x, lengths, result); s.failed())
    return error(s.message());
  return result;
}

LayerStack &TransformerStack::layerStack() { return *impl->stack; }

void TransformerStack::reset(int64_t firstPosition) {
  impl->stack->reset(firstPosition);
}
int64_t TransformerStack::position() const { return impl->stack->position(); }
const LayerSpec &TransformerStack::getSpec() const { return impl->spec; }
int64_t TransformerStack::weightBytes() const {
  return impl->stack->weightBytes();
}
double TransformerStack::attentionSeconds() const {
  return impl->stack->attentionSeconds();
}

int64_t TransformerStack::attentionKernels() const {
  int64_t count = 0;
  for (auto &[key, compiled] : impl->kernels)
    count += compiled.gpuPaged ? compiled.gpuPaged->variants() : 1;
  return count;
}

std::optional<TransformerStack::DevicePoolCopies>
TransformerStack::devicePoolCopies() const {
  for (auto &[key, compiled] : impl->kernels)
    if (compiled.gpuPaged) {
      const GpuPagedAttention::Copies &c = compiled.gpuPaged->copies();
      return DevicePoolCopies{c.wholePools, c.rows, c.wholeBytes, c.rowBytes};
    }
  return std::nullopt;
}

std::optional<TransformerStack::DeviceProducts>
TransformerStack::deviceProducts() const {
  if (!impl->gpuLinear)
    return std::nullopt;
  const GpuLinearBackend::Stats &s = impl->gpuLinear->stats();
  return DeviceProducts{
      s.products,    s.kernels,       s.submissions, s.weightBytes,
      s.inputBytes,  s.outputBytes,   s.keptBytes,   s.attentionBlocks,
      s.crossBlocks, s.layoutKernels, s.norms};
}
