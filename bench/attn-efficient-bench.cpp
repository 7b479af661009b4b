//===- attn-efficient-bench.cpp - low-rank and kernelized attention -------===//
//
//   attn-efficient-bench [--sizes=1024,4096,16384,65536]
//                        [--ops=linformer,nystrom,favor,favor_causal,elu,
//                               elu_causal,rfa,rfa_causal,fnet,lsh,routing]
//                        [--heads=12] [--dim=64] [--repeat=3]
//                        [--num-threads=N] [--dense-max-n=16384] [--csv=FILE]
//
// For each op and sequence length, in one process: compiles it with attn's
// CPU pipeline (decomposition, then the attention kernels for the softmax
// steps), times it (median of --repeat), and reports GFLOP/s on the op's
// documented FLOP count (the formula attn-run uses), % of the FMA peak, the
// time's scaling exponent between consecutive N, and the ratio against the
// dense softmax kernel at the same N (timed up to --dense-max-n, beyond
// that extrapolated as N^2 from the largest timed N, and marked so). The
// crossover N where the op gets faster than dense attention is interpolated
// in log-log between the sizes that bracket it.
//
// Ops (H = 12, D = 64 by default): linformer (k = 256, shared E, F);
// nystrom (64 landmarks, 6 pseudo-inverse steps); favor (FAVOR+, 256
// features) and favor_causal; elu (elu + 1) and elu_causal; rfa (RFA, 128
// projections: 256 features) and rfa_causal; fnet (FNet token
// mixing of [1, N, H D] hidden states, against dense attention of H heads);
// lsh (Reformer: 64 buckets, 2 rounds, chunks of 64); routing (clusters =
// top_k = sqrt(N) rounded, the O(N^1.5) setting of the paper).
//
//===----------------------------------------------------------------------===//
#include "../tools/ToolOptions.h"
#include "EfficientOps.h"
#include "PeakProbe.h"
#include "Timing.h"
#include "attn/Compiler/HostCompiler.h"
#include "attn/Spec/Spec.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"
#include <chrono>
#include <cmath>
#include <random>
#include <thread>

namespace cl = llvm::cl;

static cl::OptionCategory benchCategory("attn-efficient-bench options");
static cl::list<int64_t> sizes("sizes", cl::desc("sequence lengths"),
                               cl::CommaSeparated, cl::cat(benchCategory));
static cl::list<std::string>
    ops("ops",
        cl::desc("linformer, nystrom, favor, favor_causal, elu, elu_causal, "
                 "rfa, rfa_causal, fnet, "
                 "lsh, routing"),
        cl::CommaSeparated, cl::cat(benchCategory));
static cl::opt<int64_t> heads("heads", cl::init(12), cl::cat(benchCategory));
static cl::opt<int64_t> dim("dim", cl::desc("head dim"), cl::init(64),
                            cl::cat(benchCategory));
static cl::opt<unsigned> repeat("repeat", cl::init(3), cl::cat(benchCategory));
static cl::opt<unsigned> threads("num-threads",
                                 cl::desc("threads (default: all cores)"),
                                 cl::init(0), cl::cat(benchCategory));
static cl::opt<int64_t>
    denseMaxN("dense-max-n",
              cl::desc("largest N the dense kernel is timed at (beyond: "
                       "extrapolated as N^2)"),
              cl::init(16384), cl::cat(benchCategory));
static cl::opt<std::string> csvFile("csv", cl::desc("write results as CSV"),
                                    cl::cat(benchCategory));

namespace {
constexpr int64_t kLinformerRank = 256;
constexpr int64_t kLandmarks = 64;
constexpr int64_t kFeatures = 256;
/// RFA's projections: [sin, cos] of each gives as many features as FAVOR+.
constexpr int64_t kRfaProjections = 128;
constexpr int64_t kBuckets = 64, kRounds = 2, kChunk = 64;

/// The module of `op` at length n: @bench(q, k, v, extra operands...).
std::string opModule(const std::string &op, int64_t n) {
  std::string t = llvm::formatv("tensor<1x{0}x{1}x{2}xf32>", heads.getValue(),
                                n, dim.getValue());
  std::string extraArgs, extraTypes, body;
  if (op == "dense") {
    body = "attn.attention %q, %k, %v";
  } else if (op == "linformer") {
    std::string p = llvm::formatv("tensor<{0}x{1}xf32>", kLinformerRank, n);
    extraArgs = ", %e: " + p + ", %f: " + p;
    extraTypes = ", " + p + ", " + p;
    body = "attn.linformer %q, %k, %v proj(%e, %f)";
  } else if (op == "nystrom") {
    body = llvm::formatv("attn.nystrom %q, %k, %v landmarks = {0}", kLandmarks);
  } else if (llvm::is_contained({"favor", "favor_causal", "elu", "elu_causal",
                                 "rfa", "rfa_causal"},
                                op)) {
    // Kernelized: the map, its omega's rows (none for elu + 1), causal.
    llvm::StringRef map = llvm::StringRef(op).split('_').first;
    int64_t rows = map == "favor" ? kFeatures
                   : map == "rfa" ? kRfaProjections
                                  : 0;
    std::string omega;
    if (rows) {
      std::string w =
          llvm::formatv("tensor<{0}x{1}xf32>", rows, dim.getValue());
      extraArgs = ", %w: " + w;
      extraTypes = ", " + w;
      omega = " omega(%w)";
    }
    body = llvm::formatv("attn.kernelized %q, %k, %v{0} feature_map = {1}",
                         omega, map == "elu" ? "elu_plus_one" : map.str());
    if (llvm::StringRef(op).ends_with("_causal"))
      body += " causal";
  } else if (op == "routing") {
    int64_t clusters = std::llround(std::sqrt(double(n)));
    std::string c =
        llvm::formatv("tensor<{0}x{1}xf32>", clusters, dim.getValue());
    extraArgs = ", %c: " + c;
    extraTypes = ", " + c;
    body = llvm::formatv("attn.routing %q, %k, %v centroids(%c) top_k = {0}",
                         std::min(clusters, n));
  } else if (op == "lsh") {
    // Shared queries and keys: @bench(qk, v, rotations).
    std::string r = llvm::formatv("tensor<{0}x{1}x{2}xf32>", kRounds,
                                  dim.getValue(), kBuckets / 2);
    return llvm::formatv(
        "func.func @bench(%qk: {0}, %v: {0}, %r: {1}) -> {0} {{\n"
        "  %o = attn.lsh %qk, %v rotations(%r) buckets = {2} rounds = {3} "
        "chunk = {4} : ({0}, {0}, {1}) -> {0}\n"
        "  return %o : {0}\n}\n",
        t, r, kBuckets, kRounds, kChunk);
  } else if (op == "fnet") {
    // Token mixing of hidden states [1, N, H D].
    std::string x =
        llvm::formatv("tensor<1x{0}x{1}xf32>", n, heads * dim.getValue());
    return llvm::formatv("func.func @bench(%x: {0}) -> {0} {{\n"
                         "  %y = attn.fourier_mix %x : {0} -> {0}\n"
                         "  return %y : {0}\n}\n",
                         x);
  } else {
    return "";
  }
  return llvm::formatv("func.func @bench(%q: {0}, %k: {0}, %v: {0}{1}) -> {0} "
                       "{{\n  %o = {3} : ({0}, {0}, {0}{2}) -> {0}\n"
                       "  return %o : {0}\n}\n",
                       t, extraArgs, extraTypes, body);
}

struct Measurement {
  double seconds = 0, flops = 0, compileSeconds = 0;
};

/// Compiles and times `op` at length n on seeded N(0, 1) inputs (Linformer's
/// E, F scaled by 1 / sqrt(k), as its paper initialises them).
Measurement measure(mlir::DialectRegistry &registry, const std::string &op,
                    int64_t n, unsigned numThreads) {
  Measurement m;
  mlir::MLIRContext context(registry);
  auto start = std::chrono::steady_clock::now();
  auto module =
      mlir::parseSourceString<mlir::ModuleOp>(opModule(op, n), &context);
  mlir::func::FuncOp entry = *module->getOps<mlir::func::FuncOp>().begin();
  mlir::Operation *attnOp = &entry.front().front();
  m.flops = 4.0 * heads * double(n) * n * dim; // dense
  if (auto described = attnrt::describeEfficientOp(attnOp))
    m.flops = described->flops;

  std::vector<std::vector<float>> buffers;
  std::vector<std::vector<int64_t>> shapes;
  std::mt19937_64 rng(n);
  std::normal_distribution<float> normal;
  for (mlir::Type type : entry.getArgumentTypes()) {
    auto tensor = mlir::cast<mlir::RankedTensorType>(type);
    shapes.emplace_back(tensor.getShape());
    buffers.emplace_back(tensor.getNumElements());
    float scale = tensor.getRank() == 2 && op == "linformer"
                      ? 1.0f / std::sqrt(float(kLinformerRank))
                      : 1.0f;
    for (float &x : buffers.back())
      x = scale * normal(rng);
  }
  // Lowering replaces the function: read what the call needs first.
  auto resultType =
      mlir::cast<mlir::RankedTensorType>(entry.getResultTypes()[0]);
  std::vector<int64_t> resultShape = resultType.getShape().vec();
  int64_t resultElements = resultType.getNumElements();
  attnrt::HostCompileOptions options;
  options.numThreads = numThreads;
  auto kernel = attnrt::compileForHost(*module, options);
  if (!kernel) {
    llvm::errs() << llvm::toString(kernel.takeError()) << "\n";
    std::exit(1);
  }
  m.compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::vector<attnrt::MemRefDescriptor> descriptors;
  for (size_t a = 0; a < buffers.size(); ++a)
    descriptors.emplace_back(buffers[a].data(), shapes[a]);
  std::vector<float> result(resultElements);
  attnrt::MemRefDescriptor out(result.data(), resultShape);
  std::vector<attnrt::MemRefDescriptor *> args;
  for (auto &d : descriptors)
    args.push_back(&d);
  args.push_back(&out);
  auto run = [&] { llvm::cantFail((*kernel)->call("bench", args)); };
  run(); // warm-up
  m.seconds = medianSeconds(repeat, run);
  return m;
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  // --help shows the benchmark's own options; --help-hidden adds LLVM's.
  attntools::hideForeignOptions({&benchCategory});
  cl::ParseCommandLineOptions(argc, argv, "attn-efficient-bench\n");
  if (sizes.empty())
    for (int64_t n : {1024, 4096, 16384, 65536})
      sizes.push_back(n);
  if (ops.empty())
    for (const char *name : {"linformer", "nystrom", "favor", "favor_causal",
                             "elu", "fnet", "lsh", "routing"})
      ops.push_back(name);
  for (const std::string &op : ops)
    if (opModule(op, 64).empty()) {
      llvm::errs() << "unknown op '" << op << "'\n";
      return 1;
    }
  unsigned numThreads =
      threads ? threads.getValue() : std::thread::hardware_concurrency();
  double peak = measurePeakGflops(numThreads);
  mlir::DialectRegistry registry;
  attnspec::registerToolDialects(registry);

  // The dense kernel at every N (up to --dense-max-n).
  std::vector<double> denseSeconds;
  int64_t lastTimedN = 0;
  double lastTimedSeconds = 0;
  for (int64_t n : sizes) {
    if (n <= denseMaxN) {
      lastTimedSeconds = measure(registry, "dense", n, numThreads).seconds;
      lastTimedN = n;
      denseSeconds.push_back(lastTimedSeconds);
    } else {
      double ratio = double(n) / double(lastTimedN);
      denseSeconds.push_back(lastTimedSeconds * ratio * ratio);
    }
  }
  llvm::outs() << llvm::formatv(
      "threads {0}, H {1}, D {2}, measured FP32 FMA peak {3:f1} GFLOP/s; "
      "dense = attn's softmax kernel at the same N (* = extrapolated as N^2 "
      "beyond N = {4})\n",
      numThreads, heads.getValue(), dim.getValue(), peak, lastTimedN);
  llvm::outs() << llvm::formatv(
      "{0,13} {1,6} | {2,10} {3,8} {4,7} {5,6} | {6,11} {7,9} | {8,7}\n", "op",
      "N", "ms", "GFLOP/s", "% peak", "exp", "dense ms", "vs dense", "compile");
  std::string csv = "op,n,heads,dim,threads,ms,gflops,percent_of_peak,"
                    "scaling_exponent,dense_ms,dense_extrapolated,"
                    "speedup_vs_dense,compile_s\n";
  std::string crossovers;
  for (const std::string &op : ops) {
    double previousSeconds = 0;
    int64_t previousN = 0;
    double previousRatio = 0;
    std::string crossover = "not reached";
    for (size_t s = 0; s < sizes.size(); ++s) {
      int64_t n = sizes[s];
      Measurement m = measure(registry, op, n, numThreads);
      double gflops = m.flops / m.seconds * 1e-9;
      double exponent = previousN ? std::log(m.seconds / previousSeconds) /
                                        std::log(double(n) / previousN)
                                  : NAN;
      bool extrapolated = n > denseMaxN;
      double ratio = denseSeconds[s] / m.seconds; // > 1: faster than dense
      if (crossover == "not reached" && ratio >= 1) {
        if (!previousN)
          crossover = llvm::formatv("<= {0}", n);
        else // log-log interpolation of the ratio between the two sizes
          crossover = llvm::formatv(
              "~{0}",
              int64_t(std::exp(
                  std::log(double(previousN)) +
                  std::log(double(n) / previousN) * (-std::log(previousRatio)) /
                      (std::log(ratio) - std::log(previousRatio)))));
      }
      llvm::outs() << llvm::formatv(
          "{0,13} {1,6} | {2,10:f2} {3,8:f1} {4,6:f1}% {5,6:f2} | {6,10:f1}{7} "
          "{8,8:f2}x | {9,6:f1}s\n",
          op, n, m.seconds * 1e3, gflops, gflops / peak * 100, exponent,
          denseSeconds[s] * 1e3, extrapolated ? "*" : " ", ratio,
          m.compileSeconds);
      llvm::outs().flush();
      csv += llvm::formatv("{0},{1},{2},{3},{4},{5:f3},{6:f2},{7:f1},{8:f3},"
                           "{9:f3},{10},{11:f3},{12:f2}\n",
                           op, n, heads.getValue(), dim.getValue(), numThreads,
                           m.seconds * 1e3, gflops, gflops / peak * 100,
                           exponent, denseSeconds[s] * 1e3,
                           extrapolated ? 1 : 0, ratio, m.compileSeconds);
      previousSeconds = m.seconds;
      previousN = n;
      previousRatio = ratio;
    }
    crossovers += llvm::formatv("  {0}: {1}\n", op, crossover);
  }
  llvm::outs() << "crossover N (faster than the dense kernel from):\n"
               << crossovers;
  if (!csvFile.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream os(csvFile, ec);
    os << csv;
  }
  return 0;
}
