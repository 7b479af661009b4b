//===- RunLayers.cpp - attn-run on a layer spec ---------------------------===//
//
// attn-run LAYER.yaml --weights W.safetensors [--input x.npy] [--memory m.npy]
//   [--output y.npy] [--decode-steps N] [--check] [--repeat N] [--progress]
// attn-run LAYER.yaml --write-random-weights W.safetensors [--length L]
//
// Runs a layer stack (runtime/include/attn/Compiler/Transformer.h) and, with
// --check, compares it with the double-precision forward pass, whose
// attention is the attention reference bound to the same attention op.
//
//===----------------------------------------------------------------------===//
#include "RunLayers.h"
#include "EfficientOps.h"
#include "ProblemFromIR.h"
#include "RunContextParallel.h"
#include "attn/Compiler/Transformer.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Runtime/ContextParallel.h"
#include "attn/Runtime/InputLimits.h"
#include "attn/Runtime/RandomFeatures.h"
#include "attn/Tooling/Npy.h"
#include "attn/Tooling/Reference.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/WithColor.h"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

using namespace attnrt;
using attnspec::AttentionRole;
using attnspec::LayerSpec;

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "attn-run") << message << "\n";
  return EXIT_FAILURE;
}

/// Random weights in the ranges PyTorch initializes them in: linear maps
/// U(+-1/sqrt(fan_in)), norm gains near 1, small biases; the variant's
/// operands as their ops expect (orthogonal random features for omega).
static std::vector<NamedTensor> randomWeights(const LayerSpec &spec,
                                              int64_t length, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<NamedTensor> tensors;
  for (auto &[name, shape] : expectedWeights(spec, length)) {
    NamedTensor t{name, shape, {}};
    int64_t count = 1;
    for (int64_t d : shape)
      count *= d;
    llvm::StringRef n(name);
    auto uniform = [&](double bound) {
      std::uniform_real_distribution<float> dist(-bound, bound);
      for (int64_t i = 0; i < count; ++i)
        t.data.push_back(dist(rng));
    };
    if (n.ends_with("omega")) {
      t.data = orthogonalRandomFeatures(shape[0], shape[1], rng());
    } else if (n.ends_with("rotations") || n.ends_with("centroids") ||
               n.ends_with("rel_table") || n == "pos_embedding") {
      uniform(1.0);
    } else if (n.contains("norm") && n.ends_with(".weight")) {
      std::uniform_real_distribution<float> dist(0.8, 1.2);
      for (int64_t i = 0; i < count; ++i)
        t.data.push_back(dist(rng));
    } else if (n.ends_with(".bias")) {
      uniform(0.1);
    } else { // [out, in] linear maps and Linformer's [k, L] projections
      uniform(1.0 / std::sqrt(double(shape.back())));
    }
    tensors.push_back(std::move(t));
  }
  return tensors;
}

static std::optional<Activations>
randomActivations(int64_t batch, int64_t length, int64_t width, uint64_t seed) {
  Activations a(batch, length, width);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  for (float &v : a.data)
    v = normal(rng);
  return a;
}

static llvm::Expected<Activations> readActivations(llvm::StringRef path,
                                                   int64_t width) {
  auto array = readNpy(path);
  if (!array)
    return array.takeError();
  std::vector<int64_t> shape = array->shape;
  if (shape.size() == 2)
    shape.insert(shape.begin(), 1);
  if (shape.size() != 3 || shape[2] != width || shape[1] < 1)
    return llvm::createStringError(path + ": expected [batch, length, " +
                                   llvm::Twine(width) + "] or [length, " +
                                   llvm::Twine(width) + "]");
  Activations a(shape[0], shape[1], shape[2]);
  a.data = std::move(array->data);
  return a;
}

/// Tokens [from, from + count) of every batch row.
static Activations slice(const Activations &x, int64_t from, int64_t count) {
  Activations s(x.batch, count, x.width);
  for (int64_t b = 0; b < x.batch; ++b)
    std::copy_n(&x.data[(b * x.length + from) * x.width], count * x.width,
                &s.data[b * count * x.width]);
  return s;
}

static void place(Activations &into, const Activations &part, int64_t from) {
  for (int64_t b = 0; b < into.batch; ++b)
    std::copy_n(&part.data[b * part.length * part.width],
                part.length * part.width,
                &into.data[(b * into.length + from) * into.width]);
}

/// How many values of `a` are NaN or infinite.
template <typename A> static int64_t nonFiniteCount(const A &a) {
  return std::count_if(a.begin(), a.end(),
                       [](double v) { return !std::isfinite(v); });
}

template <typename A, typename B>
static double scaledError(const A &a, const B &b) {
  reference::Comparison c = reference::compare(a, b, a.size());
  if (c.mismatches || nonFiniteCount(a) || nonFiniteCount(b))
    return INFINITY;
  return c.scaledError();
}
double attnrt::scaledLayerError(const std::vector<float> &a,
                                const std::vector<double> &b) {
  return scaledError(a, b);
}
double attnrt::scaledLayerError(const std::vector<float> &a,
                                const std::vector<float> &b) {
  return scaledError(a, b);
}

/// Moves the first element by `amount` times the largest magnitude (or makes
/// it NaN): what --perturb-output does so that tests can see --check fail.
static void perturbFirst(std::vector<float> &data, double amount) {
  if (data.empty())
    return;
  float scale = 0;
  for (float v : data)
    scale = std::max(scale, std::abs(v));
  data[0] = std::isnan(amount) ? NAN : data[0] + float(amount) * scale;
}

/// The attention reference of a layer's attention block. The variant the
/// user wrote (pattern, mods, kind) is read from its IR; what the layer adds
/// (a decoder's causality and bottom-right alignment, ALiBi and T5
/// positions) is derived here from the layer spec by this code alone, not
/// by attnspec::attentionSpec, which builds what the executor runs.
static ReferenceAttention bindReference(const LayerSpec &spec,
                                        mlir::MLIRContext &context,
                                        int64_t batch) {
  return [&spec, &context,
          batch](AttentionRole role, int64_t lq, int64_t lk,
                 const std::map<std::string, const float *> &operands)
             -> llvm::Expected<std::vector<double>> {
    const attnspec::LayerShape &l = spec.layer;
    bool self = role == AttentionRole::Self;
    bool causal = self && l.isDecoder();
    attnspec::Spec s;
    s.name = "reference";
    s.dtype = spec.dtype;
    attnspec::AttentionShape &a = s.attention;
    if (self)
      a = l.attention;
    a.batch = batch;
    a.queryHeads = l.heads;
    a.keyHeads = l.kvHeads;
    a.queryLen = lq;
    a.keyLen = lk;
    a.headDim = a.valueDim = l.headDim;
    if (causal && a.kind != "softmax")
      a.causal = true; // the kind's own causal form
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBuffer("attention:", "<reference>"),
        llvm::SMLoc());
    mlir::OwningOpRef<mlir::ModuleOp> module =
        attnspec::buildModule(s, sourceMgr, &context);
    if (!module)
      return llvm::createStringError("cannot build the reference attention");
    // The layer's own additions to a softmax problem.
    auto addLayerTerms = [&](reference::AttentionProblem &problem) {
      if (causal) {
        reference::Pattern triangle; // kind Causal
        if (problem.pattern) {
          reference::Pattern both;
          both.kind = reference::Pattern::Kind::And;
          both.members = {triangle, *problem.pattern};
          problem.pattern = both;
        } else {
          problem.pattern = triangle;
        }
        problem.bottomRight = true;
      }
      if (self && l.positions == "alibi") {
        reference::ScoreMod alibi;
        alibi.kind = reference::ScoreMod::Kind::Alibi;
        alibi.x = l.alibiMaxBias;
        problem.mods.push_back(alibi);
      }
      if (self && l.positions == "relative") {
        reference::ScoreMod t5;
        t5.kind = reference::ScoreMod::Kind::T5Bias;
        t5.n = l.relativeBuckets;
        t5.m = l.relativeMaxDistance;
        t5.flag = !l.isDecoder(); // encoders look both ways
        problem.mods.push_back(t5);
      }
    };
    auto lookup = [&](llvm::StringRef name) -> const float * {
      auto it = operands.find(name.str());
      return it == operands.end() ? nullptr : it->second;
    };
    std::optional<llvm::Expected<std::vector<double>>> result;
    module->walk([&](mlir::Operation *op) {
      if (result)
        return;
      if (auto attention = llvm::dyn_cast<mlir::attn::AttentionOp>(op)) {
        auto problem = problemFromAttention(attention);
        if (mlir::failed(problem)) {
          result = llvm::createStringError("no reference for this attention");
          return;
        }
        addLayerTerms(*problem);
        problem->query = lookup("q");
        problem->key = lookup("k");
        problem->value = lookup("v");
        problem->relTable = lookup("rel_table");
        result = reference::attention(*problem);
      } else if (auto check = describeEfficientOp(op)) {
        result = check->reference(lookup);
      }
    });
    if (!result)
      return llvm::createStringError("no reference for this attention kind");
    return std::move(*result);
  };
}

/// --lengths: the sequences packed in `x` [1, total, d_model] in one call
/// (TransformerStack::forwardPacked), against each sequence run alone
/// through the same stack and, with --check, against the f64 reference of
/// each sequence alone.
static int runPacked(const LayerSpec &spec, const SafetensorsFile &weights,
                     TransformerStack &stack, const Activations &x,
                     const LayerRunOptions &options,
                     mlir::MLIRContext &context) {
  if (options.decodeSteps || options.tensorParallel ||
      !options.contextParallel.empty() || !options.memory.empty() ||
      options.repeat)
    return fail("--lengths runs one packed pass: no --decode-steps, "
                "--tensor-parallel, --context-parallel, --memory or "
                "--repeat");
  if (spec.dtype != "f32" && options.check && !options.toleranceGiven)
    return fail("--check with --lengths on a " + spec.dtype +
                " layer needs --tolerance (the reference is f32's)");
  auto packed = stack.forwardPacked(x, options.lengths);
  if (!packed)
    return fail(llvm::toString(packed.takeError()));
  int64_t sequences = options.lengths.size();
  int64_t longest =
      *std::max_element(options.lengths.begin(), options.lengths.end());
  if (options.padded) {
    // The same tokens padded to [B, longest, d], NaN in every padding row:
    // none may reach an output, and the padding's output rows must be 0.
    Activations padded(sequences, longest, x.width);
    std::fill(padded.data.begin(), padded.data.end(), NAN);
    for (int64_t b = 0, first = 0; b < sequences; first += options.lengths[b++])
      std::copy_n(&x.data[first * x.width], options.lengths[b] * x.width,
                  &padded.data[b * longest * x.width]);
    auto out = stack.forwardPadded(padded, options.lengths);
    if (!out)
      return fail(llvm::toString(out.takeError()));
    int64_t paddingRows = 0, nonZero = 0;
    for (int64_t b = 0, first = 0; b < sequences;
         first += options.lengths[b++]) {
      const float *rows = &out->data[b * longest * x.width];
      std::copy_n(rows, options.lengths[b] * x.width,
                  &packed->data[first * x.width]);
      for (int64_t i = options.lengths[b] * x.width; i < longest * x.width; ++i)
        nonZero += rows[i] != 0;
      paddingRows += longest - options.lengths[b];
    }
    llvm::outs() << llvm::formatv(
        "padded: [{0}, {1}, {2}] with NaN in its {3} padding rows: {4} "
        "nonzero output values there ({5})\n",
        sequences, longest, x.width, paddingRows, nonZero,
        nonZero ? "LEAKED" : "CLEAN");
    if (nonZero)
      return EXIT_FAILURE;
  }
  std::vector<float> alone;
  std::vector<double> expected;
  std::string lengthList;
  int64_t first = 0;
  for (int64_t n : options.lengths) {
    Activations one = slice(x, first, n);
    stack.reset();
    auto out = stack.forward(one);
    if (!out)
      return fail(llvm::toString(out.takeError()));
    alone.insert(alone.end(), out->data.begin(), out->data.end());
    if (options.check) {
      auto ref = referenceForward(spec, weights, one, nullptr,
                                  bindReference(spec, context, 1));
      if (!ref)
        return fail(llvm::toString(ref.takeError()));
      expected.insert(expected.end(), ref->begin(), ref->end());
    }
    lengthList += (first ? ", " : "") + std::to_string(n);
    first += n;
  }
  stack.reset();
  if (options.perturb)
    perturbFirst(packed->data, *options.perturb);
  // Packing changes which rows share a product, not any sum: the same
  // f32 bound as --check.
  double difference = scaledError(packed->data, alone);
  bool ok = difference <= options.tolerance;
  llvm::outs() << llvm::formatv(
      "packed: {0} sequences [{1}] ({2} tokens) vs each alone: max |diff| / "
      "max |alone| = {3:e2} ({4})\n",
      options.lengths.size(), lengthList, x.length, difference,
      ok ? "SAME" : "DIFFERENT");
  if (options.check) {
    double error = scaledError(packed->data, expected);
    bool pass = error <= options.tolerance;
    llvm::outs() << llvm::formatv(
        "check: packed {0} {1} layer(s), each sequence against its f64 "
        "reference alone: max |out - ref| / max |ref| = {2:e2} (tolerance "
        "{3:e1}): {4}\n",
        spec.layer.layers, spec.layer.type, error, options.tolerance,
        pass ? "PASS" : "FAIL");
    ok &= pass;
  }
  if (!options.output.empty())
    if (llvm::Error e =
            writeNpy(options.output, {1, x.length, x.width}, packed->data))
      return fail(llvm::toString(std::move(e)));
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}

void attnrt::printDeviceProducts(const TransformerStack &stack) {
  if (auto p = stack.deviceProducts())
    llvm::outs() << llvm::formatv(
        "products on the device: {0} runs of {1} kernels in {6} "
        "submissions, {2:f2} MiB of weights kept there, {3:f2} MiB of "
        "operands in and {4:f2} MiB of results out, {5:f2} MiB of "
        "results kept there for the next kernel\n",
        p->products, p->kernels, p->weightBytes / double(1 << 20),
        p->inputBytes / double(1 << 20), p->outputBytes / double(1 << 20),
        p->keptBytes / double(1 << 20), p->submissions);
  if (auto p = stack.deviceProducts(); p && p->attentionBlocks)
    llvm::outs() << llvm::formatv(
        "self-attention in one chain on the device: {0} runs, q, k and v "
        "kept there ({1} split, merge, RoPE and insertion kernels)\n",
        p->attentionBlocks, p->layoutKernels);
  if (auto p = stack.deviceProducts(); p && p->crossBlocks)
    llvm::outs() << llvm::formatv(
        "cross-attention in one chain on the device: {0} runs, q kept "
        "there, the memory's keys and values copied once\n",
        p->crossBlocks);
  if (auto p = stack.deviceProducts(); p && p->norms)
    llvm::outs() << llvm::formatv(
        "norms in the chains on the device: {0} runs, each block's residual "
        "added there\n",
        p->norms);
  // Attention kernels called on host operands (not in a chain) copy them.
  if (stack.deviceProducts())
    llvm::outs() << llvm::formatv(
        "attention kernels' operands and results: {0:f2} MiB between host "
        "and device\n",
        GpuKernel::hostBytesTransferred() / double(1 << 20));
}

int attnrt::runLayerSpec(llvm::SourceMgr &sourceMgr,
                         const LayerRunOptions &options) {
  std::optional<LayerSpec> spec = attnspec::readLayerSpec(sourceMgr);
  if (!spec)
    return EXIT_FAILURE;
  if (spec->dtype != "f32" && options.openblasAsked)
    return fail("--linear=openblas takes f32 weights; a " + spec->dtype +
                " layer keeps its weights in " + spec->dtype +
                " and runs its products on attn's GEMM");
  const attnspec::LayerShape &l = spec->layer;
  // Generated activations are allocated from these sizes: check first.
  for (int64_t length : {options.length, options.memoryLength}) {
    int64_t shape[3] = {options.batch, length, l.dModel};
    std::optional<int64_t> bytes = tensorBytes(shape, 3, sizeof(float));
    int64_t memory = physicalMemoryBytes();
    if (!bytes || (memory && *bytes > memory))
      return fail(
          llvm::formatv("--batch {0} x --length / --memory-length {1} "
                        "x d_model {2} floats exceed 2^40 bytes or this "
                        "machine's memory",
                        options.batch, length, l.dModel)
              .str());
  }
  mlir::DialectRegistry registry;
  attnspec::registerToolDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // The attention block's pattern and mods are attribute text: check them
  // now, reported at their keys in the spec.
  if (!attnspec::buildModule(
          attnspec::attentionSpec(*spec, AttentionRole::Self, options.batch,
                                  options.length, options.length),
          sourceMgr, &context))
    return EXIT_FAILURE;

  if (!options.writeRandomWeights.empty()) {
    if (llvm::Error e = writeSafetensors(
            options.writeRandomWeights,
            randomWeights(*spec, options.length, options.seed)))
      return fail(llvm::toString(std::move(e)));
    llvm::outs() << "wrote " << options.writeRandomWeights << "\n";
    return EXIT_SUCCESS;
  }
  if (options.weights.empty())
    return fail("a layer spec needs --weights FILE.safetensors (or "
                "--write-random-weights FILE to make one)");
  auto weights = SafetensorsFile::open(options.weights);
  if (!weights)
    return fail(llvm::toString(weights.takeError()));

  // Inputs: read or generated from the seed.
  std::optional<Activations> x, memory;
  if (!options.input.empty()) {
    auto read = readActivations(options.input, l.dModel);
    if (!read)
      return fail(llvm::toString(read.takeError()));
    x = std::move(*read);
  } else {
    int64_t packedTotal = 0;
    for (int64_t n : options.lengths)
      packedTotal += n;
    x = options.lengths.empty()
            ? randomActivations(options.batch, options.length, l.dModel,
                                options.seed)
            : randomActivations(1, packedTotal, l.dModel, options.seed);
  }
  if (!options.memory.empty()) {
    auto read = readActivations(options.memory, l.dModel);
    if (!read)
      return fail(llvm::toString(read.takeError()));
    memory = std::move(*read);
  } else if (l.hasCrossAttention()) {
    memory = randomActivations(
        x->batch, options.memoryLength ? options.memoryLength : x->length,
        l.dModel, options.seed + 1);
  }
  if (memory && !l.hasCrossAttention())
    return fail("--memory is for decoder layers with cross_attention");
  // A NaN or infinity in an input spreads to every row that attends to it.
  for (auto [a, what] :
       {std::pair(&x, "--input"), std::pair(&memory, "--memory")}) {
    if (!*a || options.allowNonFinite)
      continue;
    const Activations &v = **a;
    auto bad = std::find_if(v.data.begin(), v.data.end(),
                            [](float f) { return !std::isfinite(f); });
    if (bad == v.data.end())
      continue;
    int64_t at = bad - v.data.begin();
    return fail(
        llvm::formatv("{0} has {1} at [{2}, {3}, {4}] (--allow-nonfinite "
                      "runs it anyway)",
                      what, std::isnan(*bad) ? "NaN" : "an infinity",
                      at / (v.length * v.width), at / v.width % v.length,
                      at % v.width)
            .str());
  }
  const Activations *mem = memory ? &*memory : nullptr;

  TransformerOptions stackOptions;
  stackOptions.numThreads = options.numThreads;
  stackOptions.gpuTarget = options.gpuTarget;
  stackOptions.gpuCompile = options.gpuCompile;
  stackOptions.compiledLinears = options.compiledLinears;
  stackOptions.gpuLinears = options.gpuLinears;
  stackOptions.gpuChains = options.gpuChains;
  stackOptions.bf16Products = options.bf16Products;
  stackOptions.allowNonFiniteWeights = options.allowNonFinite;
  stackOptions.allowUnusedWeights = options.allowUnusedWeights;
  stackOptions.pagedKvCache = options.serve.pagedCache;
  stackOptions.warn = [](const std::string &message) {
    llvm::WithColor::warning(llvm::errs(), "attn-run") << message << "\n";
  };
  if (options.progress)
    stackOptions.onLayer = [](int64_t i, int64_t n, double seconds) {
      llvm::errs() << llvm::formatv("attn-run: layer {0}/{1} {2:f2} ms\n",
                                    i + 1, n, seconds * 1e3);
    };
  auto stack = TransformerStack::create(*spec, *weights, stackOptions);
  if (!stack)
    return fail(llvm::toString(stack.takeError()));

  if (!options.lengths.empty())
    return runPacked(*spec, *weights, **stack, *x, options, context);
  if (options.serve.sequences)
    return runServing(*spec, *weights, **stack, options,
                      bindReference(*spec, context, 1));

  auto full = (*stack)->forward(*x, mem);
  if (!full)
    return fail(llvm::toString(full.takeError()));
  Activations y = std::move(*full);
  bool ok = true;

  if (options.tensorParallel) {
    // Tensor parallel: every rank runs every token on its slice of the
    // weights; the blocks' partial outputs are summed across the ranks, so
    // every rank ends with the whole output.
    if (!options.contextParallel.empty() || options.decodeSteps ||
        options.repeat || !options.gpuTarget.empty())
      return fail("--tensor-parallel runs one whole-sequence pass on the "
                  "CPU: no --context-parallel, --decode-steps, --repeat or "
                  "--device");
    std::string message;
    std::unique_ptr<Communicator> ranks = connectRanks(message);
    if (!ranks)
      return fail(message);
    TransformerOptions parallelOptions = stackOptions;
    parallelOptions.tensorRanks = ranks.get();
    auto parallel = TransformerStack::create(*spec, *weights, parallelOptions);
    if (!parallel)
      return fail(llvm::formatv("rank {0}: {1}", ranks->rank(),
                                llvm::toString(parallel.takeError())));
    auto out = (*parallel)->forward(*x, mem);
    if (!out)
      return fail(llvm::formatv("rank {0}: {1}", ranks->rank(),
                                llvm::toString(out.takeError())));
    std::string line = llvm::formatv(
        "rank {0}/{1} tensor parallel: {2:f2} MiB of weights (one process: "
        "{3:f2} MiB), {4} bytes sent",
        ranks->rank(), ranks->size(), (*parallel)->weightBytes() / 1048576.0,
        (*stack)->weightBytes() / 1048576.0, ranks->bytesSent());
    constexpr size_t kLine = 256;
    line.resize(kLine, '\0');
    std::vector<char> lines(kLine * ranks->size());
    if (!ranks->allGather(line.data(), lines.data(), kLine, message))
      return fail(message);
    if (ranks->rank() != 0)
      return EXIT_SUCCESS;
    for (int r = 0; r < ranks->size(); ++r)
      llvm::outs() << (lines.data() + r * kLine) << "\n";
    double difference = scaledError(out->data, y.data);
    bool same = difference <= options.tolerance;
    llvm::outs() << llvm::formatv(
        "tensor parallel ({0} ranks) vs one process: max |diff| / max |out| "
        "= {1:e2} ({2})\n",
        ranks->size(), difference, same ? "SAME" : "DIFFERENT");
    ok &= same;
    y = std::move(*out);
  }

  if (!options.contextParallel.empty()) {
    // Sequence parallel: this rank's tokens through a stack whose
    // self-attention spans the ranks; the shares are gathered and rank 0
    // holds them against the single-process run above.
    if (options.contextParallel != "ring" &&
        options.contextParallel != "ulysses")
      return fail("--context-parallel for layer specs must be ring or "
                  "ulysses (tokens stay contiguous: positions are)");
    if (options.decodeSteps || options.repeat || !options.gpuTarget.empty())
      return fail("--context-parallel runs one whole-sequence pass on the "
                  "CPU: no --decode-steps, --repeat or --device");
    std::string message;
    std::unique_ptr<Communicator> ranks = connectRanks(message);
    if (!ranks)
      return fail(message);
    if (x->length < ranks->size())
      return fail(llvm::formatv("{0} tokens cannot be split over {1} ranks",
                                x->length, ranks->size()));
    TokenChunk mine = rankChunks(SequenceLayout::Contiguous, x->length,
                                 ranks->size(), ranks->rank())[0];
    TransformerOptions parallelOptions = stackOptions;
    parallelOptions.contextRanks = ranks.get();
    parallelOptions.contextScheme = options.contextParallel;
    parallelOptions.contextTokens = x->length;
    auto parallel = TransformerStack::create(*spec, *weights, parallelOptions);
    if (!parallel)
      return fail(llvm::toString(parallel.takeError()));
    (*parallel)->reset(mine.start);
    auto share = (*parallel)->forward(slice(*x, mine.start, mine.length), mem);
    if (!share)
      return fail(llvm::formatv("rank {0}: {1}", ranks->rank(),
                                llvm::toString(share.takeError())));
    // Shares padded to the longest, gathered on every rank.
    int64_t longest = (x->length + ranks->size() - 1) / ranks->size();
    Activations padded(x->batch, longest, x->width), all;
    place(padded, *share, 0);
    all = Activations(x->batch, longest * ranks->size(), x->width);
    if (!ranks->allGather(padded.data.data(), all.data.data(),
                          sizeof(float) * padded.data.size(), message))
      return fail(message);
    if (ranks->rank() != 0)
      return EXIT_SUCCESS;
    Activations gathered(x->batch, x->length, x->width);
    for (int r = 0; r < ranks->size(); ++r) {
      TokenChunk c = rankChunks(SequenceLayout::Contiguous, x->length,
                                ranks->size(), r)[0];
      Activations part(x->batch, c.length, x->width);
      for (int64_t b = 0; b < x->batch; ++b)
        std::copy_n(all.data.data() + ((r * x->batch + b) * longest) * x->width,
                    c.length * x->width,
                    part.data.data() + b * c.length * x->width);
      place(gathered, part, c.start);
    }
    double difference = scaledError(gathered.data, y.data);
    bool same = difference <= options.tolerance;
    llvm::outs() << llvm::formatv(
        "sequence parallel ({0}, {1} ranks) vs one process: max |diff| / max "
        "|out| = {2:e2} ({3})\n",
        options.contextParallel, ranks->size(), difference,
        same ? "SAME" : "DIFFERENT");
    ok &= same;
    y = std::move(gathered);
  }

  if (options.decodeSteps) {
    if (!l.isDecoder())
      return fail("--decode-steps needs a decoder layer spec (an encoder has "
                  "no KV cache)");
    if (options.decodeSteps > x->length)
      return fail(llvm::formatv("--decode-steps {0} is more than the input's "
                                "{1} tokens",
                                options.decodeSteps, x->length));
    // The prompt in one call, then one token per call through the cache.
    (*stack)->reset();
    int64_t prompt = x->length - options.decodeSteps;
    Activations decoded(x->batch, x->length, x->width);
    if (prompt) {
      auto out = (*stack)->forward(slice(*x, 0, prompt), mem);
      if (!out)
        return fail(llvm::toString(out.takeError()));
      place(decoded, *out, 0);
    }
    auto decodeStart = std::chrono::steady_clock::now();
    uint64_t transferredBefore = GpuKernel::hostBytesTransferred();
    // Each step's time too: the median leaves out the steps that compile a
    // kernel (a new capacity, a grown cache).
    std::vector<double> stepTimes;
    for (int64_t t = prompt; t < x->length; ++t) {
      auto stepStart = std::chrono::steady_clock::now();
      auto out = (*stack)->forward(slice(*x, t, 1), t == 0 ? mem : nullptr);
      stepTimes.push_back(std::chrono::duration<double, std::milli>(
                              std::chrono::steady_clock::now() - stepStart)
                              .count());
      if (!out)
        return fail(llvm::toString(out.takeError()));
      place(decoded, *out, t);
      if (options.progress)
        llvm::errs() << llvm::formatv("attn-run: decoded step {0}/{1}\n",
                                      t - prompt + 1, options.decodeSteps);
    }
    double stepMs = std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - decodeStart)
                        .count() /
                    options.decodeSteps;
    std::nth_element(stepTimes.begin(),
                     stepTimes.begin() + stepTimes.size() / 2, stepTimes.end());
    double medianStepMs = stepTimes[stepTimes.size() / 2];
    double stepTransferKiB =
        (GpuKernel::hostBytesTransferred() - transferredBefore) / 1024.0 /
        options.decodeSteps;
    if (l.memoryLength) {
      // Transformer-XL memory forgets keys a whole-sequence pass still
      // sees; --check compares with the window it amounts to instead.
      llvm::outs() << llvm::formatv("decode: {0} steps after a {1}-token "
                                    "prompt, memory of {2} keys; {3:f3} ms "
                                    "per step, median {4:f3}\n",
                                    options.decodeSteps, prompt, l.memoryLength,
                                    stepMs, medianStepMs);
    } else {
      double error = scaledError(decoded.data, y.data);
      // Decoding changes only how the work is split (the same f32 kernels
      // on shorter key ranges), so the bound is the f32 one of --check. A
      // bf16 layer whose attention runs in bf16 rounds P in the whole
      // pass's pair products (AMX, vdpbf16ps) but not in a decode step's
      // packed-heads kernel: the two agree to bf16's precision (2^-8
      // relative; 2e-4 seen), still far below a cache error's O(1).
      double bound = options.tolerance;
      if (spec->dtype == "bf16" && !options.toleranceGiven)
        bound = std::max(bound, 1.0 / 256);
      bool same = error <= bound;
      llvm::outs() << llvm::formatv(
          "decode: {0} steps after a {1}-token prompt, max |decode - full| / "
          "max |full| = {2:e2} ({3}); {4:f3} ms per step, median {6:f3}; "
          "attention kernels: {5}\n",
          options.decodeSteps, prompt, error, same ? "SAME" : "DIFFERENT",
          stepMs, (*stack)->attentionKernels(), medianStepMs);
      // On a GPU the cache stays on the device (GpuPagedAttention.h).
      if (auto copies = (*stack)->devicePoolCopies())
        llvm::outs() << llvm::formatv(
            "device cache: {0} copied whole ({1:f2} MiB: new or grown), {2} "
            "key or value rows of a KV head appended ({3:f2} MiB)\n",
            copies->wholePools, copies->wholeBytes / double(1 << 20),
            copies->rows, copies->rowBytes / double(1 << 20));
      if (!options.gpuTarget.empty())
        llvm::outs() << llvm::formatv(
            "host-device copies per step: {0:f1} KiB of attention operands "
            "and results\n",
            stepTransferKiB);
      ok &= same;
    }
    y = std::move(decoded);
  }

  if (!options.output.empty())
    if (llvm::Error e =
            writeNpy(options.output, {y.batch, y.length, y.width}, y.data))
      return fail(llvm::toString(std::move(e)));

  if (options.check) {
    // Decoding token by token with memory_length M, each query sees itself
    // and the M keys before it: the whole-sequence pass with a causal
    // window of M. That holds while the prompt (seen at once) fits in it.
    LayerSpec referenceSpec = *spec;
    if (l.memoryLength) {
      int64_t prompt = x->length - options.decodeSteps;
      if (prompt > l.memoryLength + 1)
        return fail(llvm::formatv(
            "--check with memory_length {0} needs a prompt of at most {1} "
            "tokens (use --decode-steps >= {2}): a longer prompt sees keys "
            "the memory has dropped for later tokens",
            l.memoryLength, l.memoryLength + 1,
            x->length - l.memoryLength - 1));
      // The window comes on top of the variant's own pattern.
      std::string window =
          llvm::formatv("#attn.window<left = {0}, right = 0>", l.memoryLength);
      std::string own = l.attention.pattern;
      if (own.empty() || own == "none")
        referenceSpec.layer.attention.pattern = window;
      else
        referenceSpec.layer.attention.pattern =
            "#attn.and<[" + window + ", " +
            (own[0] == '#' ? own : "#attn." + own) + "]>";
      referenceSpec.layer.memoryLength = 0;
    }
    auto expected =
        referenceForward(referenceSpec, *weights, *x, mem,
                         bindReference(referenceSpec, context, x->batch));
    if (!expected)
      return fail(llvm::toString(expected.takeError()));
    // A 16-bit layer: the bar is twice the error of the same layer
    // computed in that type (every product's operands and result rounded).
    double bar = options.tolerance;
    std::string barSource;
    if (spec->dtype != "f32" && !options.toleranceGiven) {
      auto naive =
          referenceForward(referenceSpec, *weights, *x, mem,
                           bindReference(referenceSpec, context, x->batch),
                           /*naive=*/true);
      if (!naive)
        return fail(llvm::toString(naive.takeError()));
      std::vector<float> naiveFloats(naive->begin(), naive->end());
      double naiveError = scaledError(naiveFloats, *expected);
      bar = 2 * naiveError;
      barSource = llvm::formatv(" = 2 x the naive {0} layer's {1:e2}",
                                spec->dtype, naiveError)
                      .str();
    }
    if (options.perturb)
      perturbFirst(y.data, *options.perturb);
    double error = scaledError(y.data, *expected);
    bool pass = error <= bar;
    std::string nonFinite;
    if (int64_t n = nonFiniteCount(y.data))
      nonFinite =
          llvm::formatv(", {0} of {1} outputs not finite", n, y.data.size());
    llvm::outs() << llvm::formatv(
        "check: {0} {1} layer(s), [{2}, {3}, {4}], max |out - ref| / max "
        "|ref| = {5:e2} (tolerance {6:e1}{7}{8}): {9}\n",
        l.layers, l.type, y.batch, y.length, y.width, error, bar, barSource,
        nonFinite, pass ? "PASS" : "FAIL");
    ok &= pass;
  }

  if (options.repeat) {
    std::vector<double> seconds;
    double attentionBefore = (*stack)->attentionSeconds();
    for (unsigned r = 0; r < options.repeat; ++r) {
      (*stack)->reset();
      auto start = std::chrono::steady_clock::now();
      auto out = (*stack)->forward(*x, mem);
      if (!out)
        return fail(llvm::toString(out.takeError()));
      seconds.push_back(std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - start)
                            .count());
    }
    std::sort(seconds.begin(), seconds.end());
    double median = seconds[seconds.size() / 2];
    double flops = layerStackFlops(*spec, x->batch, x->length, x->length,
                                   mem ? mem->length : 0);
    double attention =
        ((*stack)->attentionSeconds() - attentionBefore) / options.repeat;
    llvm::outs() << llvm::formatv(
        "time: median of {0} runs {1:f3} ms, {2:f1} GFLOP/s (attention "
        "kernels {3:f3} ms per run on average); weights {4:f2} MiB ({5})\n",
        options.repeat, median * 1e3, flops / median * 1e-9, attention * 1e3,
        (*stack)->weightBytes() / 1048576.0, spec->dtype);
  }
  printDeviceProducts(**stack);
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
