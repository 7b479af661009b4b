//===- attn-sparse-bench.cpp - sparse patterns: cost grows with kept work -===//
//
//   attn-sparse-bench [--sizes=4096,16384,65536] [--patterns=window,bigbird]
//                     [--heads=12] [--dim=64] [--repeat=3] [--num-threads=N]
//                     [--baseline-max-n=16384] [--csv=FILE]
//
// For each pattern and sequence length, in one process: compiles the
// attention with attn's CPU pipeline, times it (median of --repeat), counts
// the kept (i, j) entries exactly and reports GFLOP/s on kept entries
// (4 D per kept entry and head), that figure against the dense kernel's
// GFLOP/s (N = 4096, same run) and the FMA peak, the scaling exponent of the
// time between consecutive N, and the ratio against the masked OpenBLAS
// baseline (dense scores + mask), whose N x N score matrix limits it to
// --baseline-max-n.
//
// Patterns (H = 12, D = 64 by default):
//   window  - sliding window of 512 (256 keys each side), Longformer-style;
//   bigbird - BigBird with blocks of 64: a window of about three blocks
//             (96 keys each side), two global blocks (tokens 0..127) and
//             three random key blocks per query block (seed 2020).
//
//===----------------------------------------------------------------------===//
#include "../tools/ToolOptions.h"
#include "Baseline.h"
#include "Compare.h"
#include "PeakProbe.h"
#include "Timing.h"
#include "attn/Compiler/HostCompiler.h"
#include "attn/Spec/Spec.h"
#include "attn/Tooling/Reference.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"
#include <chrono>
#include <cmath>
#include <map>
#include <random>
#include <thread>

namespace cl = llvm::cl;

static cl::OptionCategory benchCategory("attn-sparse-bench options");
static cl::list<int64_t> sizes("sizes", cl::desc("sequence lengths"),
                               cl::CommaSeparated, cl::cat(benchCategory));
static cl::list<std::string> patterns("patterns",
                                      cl::desc("window and/or bigbird"),
                                      cl::CommaSeparated,
                                      cl::cat(benchCategory));
static cl::opt<int64_t> heads("heads", cl::init(12), cl::cat(benchCategory));
static cl::opt<int64_t> dim("dim", cl::desc("head dim"), cl::init(64),
                            cl::cat(benchCategory));
static cl::opt<unsigned> repeat("repeat", cl::init(3), cl::cat(benchCategory));
static cl::opt<unsigned> threads("num-threads",
                                 cl::desc("threads (default: all cores)"),
                                 cl::init(0), cl::cat(benchCategory));
static cl::opt<int64_t> keyTile("kv-tile",
                                cl::desc("key rows per tile of the kernel "
                                         "(0: the compiler's choice)"),
                                cl::init(0), cl::cat(benchCategory));
static cl::opt<int64_t> baselineMaxN(
    "baseline-max-n",
    cl::desc("largest N for the masked OpenBLAS baseline (N x N scores)"),
    cl::init(16384), cl::cat(benchCategory));
static cl::opt<std::string> csvFile("csv", cl::desc("write results as CSV"),
                                    cl::cat(benchCategory));

namespace {
constexpr int64_t kWindow = 256;        // window: keys on each side
constexpr int64_t kBigBirdBlock = 64;   // bigbird: block size
constexpr int64_t kBigBirdWindow = 96;  //   keys on each side
constexpr int64_t kBigBirdGlobal = 128; //   tokens 0..127 are global
constexpr int64_t kBigBirdRandom = 3;   //   random key blocks per query block
constexpr int64_t kBigBirdSeed = 2020;

std::string patternAttr(const std::string &name) {
  if (name == "window")
    return llvm::formatv("#attn.window<left = {0}, right = {0}>", kWindow);
  std::string global;
  for (int64_t t = 0; t < kBigBirdGlobal; ++t)
    global += (t ? ", " : "") + std::to_string(t);
  return llvm::formatv(
      "#attn.or<[#attn.window<left = {0}, right = {0}>, #attn.global<[{1}]>, "
      "#attn.random_blocks<block = {2}, count = {3}, seed = {4}>]>",
      kBigBirdWindow, global, kBigBirdBlock, kBigBirdRandom, kBigBirdSeed);
}

std::string attentionModule(int64_t n, const std::string &pattern) {
  std::string t = llvm::formatv("tensor<1x{0}x{1}x{2}xf32>", heads.getValue(),
                                n, dim.getValue());
  return llvm::formatv(
      "func.func @attention(%q: {0}, %k: {0}, %v: {0}) -> {0} {{\n"
      "  %o = attn.attention %q, %k, %v{1} : ({0}, {0}, {0}) -> {0}\n"
      "  return %o : {0}\n}\n",
      t, pattern.empty() ? "" : " pattern(" + pattern + ")");
}

/// The kept keys of row i of head h as sorted disjoint intervals, written
/// from the pattern's definition (docs/Dialect.md) with the reference's
/// random-block draw, independently of the compiler.
void keptIntervals(const std::string &name, int64_t n, int64_t h, int64_t i,
                   std::vector<std::pair<int64_t, int64_t>> &out) {
  auto window = [&](int64_t side) {
    return std::pair<int64_t, int64_t>{std::max<int64_t>(0, i - side),
                                       std::min(n - 1, i + side)};
  };
  if (name == "window") {
    out.push_back(window(kWindow));
    return;
  }
  if (i < kBigBirdGlobal) { // a global query keeps every key
    out.push_back({0, n - 1});
    return;
  }
  std::vector<std::pair<int64_t, int64_t>> parts = {
      window(kBigBirdWindow), {0, std::min(n, kBigBirdGlobal) - 1}};
  int64_t blocks = (n + kBigBirdBlock - 1) / kBigBirdBlock;
  for (int64_t kb : attnrt::reference::randomBlocks(
           kBigBirdSeed, kBigBirdRandom, i / kBigBirdBlock, h, blocks))
    parts.push_back(
        {kb * kBigBirdBlock, std::min(n, (kb + 1) * kBigBirdBlock) - 1});
  std::sort(parts.begin(), parts.end());
  for (auto part : parts) {
    if (!out.empty() && part.first <= out.back().second + 1)
      out.back().second = std::max(out.back().second, part.second);
    else
      out.push_back(part);
  }
}

int64_t countKept(const std::string &name, int64_t n) {
  int64_t kept = 0;
  std::vector<std::pair<int64_t, int64_t>> intervals;
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < n; ++i) {
      intervals.clear();
      keptIntervals(name, n, h, i, intervals);
      for (auto [first, last] : intervals)
        kept += last - first + 1;
    }
  return kept;
}

struct Compiled {
  std::unique_ptr<mlir::MLIRContext> context;
  std::unique_ptr<attnrt::JitKernel> kernel;
  double compileSeconds;
};

Compiled compile(mlir::DialectRegistry &registry, int64_t n,
                 const std::string &pattern, unsigned numThreads) {
  Compiled c;
  c.context = std::make_unique<mlir::MLIRContext>(registry);
  auto start = std::chrono::steady_clock::now();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(
      attentionModule(n, pattern), c.context.get());
  attnrt::HostCompileOptions options;
  options.numThreads = numThreads;
  options.cpuKeyTile = keyTile;
  auto kernel = attnrt::compileForHost(*module, options);
  if (!kernel) {
    llvm::errs() << llvm::toString(kernel.takeError()) << "\n";
    std::exit(1);
  }
  c.kernel = std::move(*kernel);
  c.compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return c;
}

struct Inputs {
  std::vector<float> q, k, v;
  explicit Inputs(int64_t n) {
    int64_t count = heads * n * dim;
    std::mt19937_64 rng(n);
    std::normal_distribution<float> normal;
    for (auto *buffer : {&q, &k, &v}) {
      buffer->resize(count);
      for (float &x : *buffer)
        x = normal(rng);
    }
  }
};

/// Median seconds of the compiled kernel on `in`; the output goes to
/// `result`.
double timeKernel(attnrt::JitKernel &kernel, Inputs &in, int64_t n,
                  std::vector<float> &result, unsigned runs) {
  std::vector<int64_t> shape = {1, heads, n, dim};
  attnrt::MemRefDescriptor dq(in.q.data(), shape), dk(in.k.data(), shape),
      dv(in.v.data(), shape);
  result.resize(in.q.size());
  // The kernel writes into `result` (destination-passing style), as a
  // deployed caller that reuses its output buffer would.
  attnrt::MemRefDescriptor out(result.data(), shape);
  auto run = [&] {
    llvm::cantFail(kernel.call("attention", {&dq, &dk, &dv, &out}));
  };
  run(); // warm-up
  return medianSeconds(runs, run);
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  // --help shows the benchmark's own options; --help-hidden adds LLVM's.
  attntools::hideForeignOptions({&benchCategory});
  cl::ParseCommandLineOptions(argc, argv, "attn-sparse-bench\n");
  if (sizes.empty())
    for (int64_t n : {4096, 16384, 65536})
      sizes.push_back(n);
  if (patterns.empty())
    for (const char *name : {"window", "bigbird"})
      patterns.push_back(name);
  unsigned numThreads =
      threads ? threads.getValue() : std::thread::hardware_concurrency();
  setBaselineThreads(numThreads);
  double peak = measurePeakGflops(numThreads);
  mlir::DialectRegistry registry;
  attnspec::registerToolDialects(registry);

  // The dense kernel's rate, the yardstick for kept-entry GFLOP/s.
  const int64_t denseN = 4096;
  Inputs denseInputs(denseN);
  std::vector<float> denseOut;
  Compiled dense = compile(registry, denseN, "", numThreads);
  double denseSeconds =
      timeKernel(*dense.kernel, denseInputs, denseN, denseOut, repeat);
  double denseGflops =
      4.0 * heads * double(denseN) * denseN * dim / denseSeconds * 1e-9;
  llvm::outs() << llvm::formatv(
      "threads {0}, H {1}, D {2}, measured FP32 FMA peak {3:f1} GFLOP/s; "
      "dense kernel at N = {4}: {5:f1} GFLOP/s ({6:f1}% of peak)\n",
      numThreads, heads.getValue(), dim.getValue(), peak, denseN, denseGflops,
      denseGflops / peak * 100);
  llvm::outs() << llvm::formatv(
      "{0,8} {1,6} | {2,7} {3,9} {4,9} {5,8} {6,7} {7,6} | {8,10} {9,8} "
      "{10,9} | {11,7}\n",
      "pattern", "N", "kept %", "attn ms", "GFLOP/s", "% dense", "% peak",
      "exp", "BLAS ms", "speedup", "max diff", "compile");

  std::string csv = "pattern,n,heads,dim,threads,kept,attn_ms,kept_gflops,"
                    "dense_gflops,percent_of_dense,percent_of_peak,"
                    "scaling_exponent,blas_ms,speedup_vs_blas,max_diff,"
                    "compile_s\n";
  for (const std::string &name : patterns) {
    if (name != "window" && name != "bigbird") {
      llvm::errs() << "unknown pattern '" << name << "'\n";
      return 1;
    }
    double previousMs = 0;
    int64_t previousN = 0;
    for (int64_t n : sizes) {
      Inputs in(n);
      Compiled c = compile(registry, n, patternAttr(name), numThreads);
      std::vector<float> result;
      double seconds = timeKernel(*c.kernel, in, n, result, repeat);
      int64_t kept = countKept(name, n);
      double gflops = 4.0 * dim * double(kept) / seconds * 1e-9;
      double exponent = previousN ? std::log(seconds * 1e3 / previousMs) /
                                        std::log(double(n) / double(previousN))
                                  : NAN;
      double blasMs = NAN, maxDiff = NAN;
      if (n <= baselineMaxN) {
        std::vector<float> expected(result.size()), scores(n * n);
        auto runBaseline = [&] {
          unfusedMaskedAttention(in.q.data(), in.k.data(), in.v.data(),
                                 expected.data(), scores.data(), heads, n, dim,
                                 [&](int64_t h, int64_t i, auto &out) {
                                   keptIntervals(name, n, h, i, out);
                                 });
        };
        // The baseline is slow at large N: one run there.
        blasMs = medianSeconds(n > 4096 ? 1 : repeat, runBaseline) * 1e3;
        maxDiff = maxAbsDifference(result, expected);
      }
      double keptPercent = 100.0 * kept / (double(heads) * n * n);
      llvm::outs() << llvm::formatv(
          "{0,8} {1,6} | {2,6:f2}% {3,9:f1} {4,9:f1} {5,7:f1}% {6,6:f1}% "
          "{7,6:f2} | {8,10:f1} {9,7:f2}x {10,9:e1} | {11,6:f1}s\n",
          name, n, keptPercent, seconds * 1e3, gflops,
          gflops / denseGflops * 100, gflops / peak * 100, exponent, blasMs,
          blasMs / (seconds * 1e3), maxDiff, c.compileSeconds);
      llvm::outs().flush();
      csv += llvm::formatv(
          "{0},{1},{2},{3},{4},{5},{6:f3},{7:f2},{8:f2},{9:f1},{10:f1},"
          "{11:f3},{12:f3},{13:f3},{14:e2},{15:f2}\n",
          name, n, heads.getValue(), dim.getValue(), numThreads, kept,
          seconds * 1e3, gflops, denseGflops, gflops / denseGflops * 100,
          gflops / peak * 100, exponent, blasMs, blasMs / (seconds * 1e3),
          maxDiff, c.compileSeconds);
      previousMs = seconds * 1e3;
      previousN = n;
    }
  }
  if (!csvFile.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream os(csvFile, ec);
    os << csv;
  }
  return 0;
}
