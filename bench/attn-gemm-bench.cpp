//===- attn-gemm-bench.cpp - attn's GEMM against OpenBLAS sgemm -----------===//
//
// The products of a Transformer layer, y[M, N] += x[M, K] W, through
// attn-matmul-to-cpu-gemm (CompiledLinear: W packed once into panels, as
// the layer runtime holds weights; W stored [N, K] as nn.Linear keeps it;
// [K, N]) and through OpenBLAS sgemm with its own threads,
// in one process: medians, GFLOP/s (2 M N K) and % of the FMA peak the
// probe measures at the start. Each attn result is compared with OpenBLAS.
//
//   attn-gemm-bench [--shapes M:N:K,...] [--repeat 9] [--gemm-threads T]
//                   [--bf16]
//
// With --bf16 the packed product also runs on bf16 weights as a bf16 layer
// holds them (AMX tiles, else vdpbf16ps, else widened: HostCompiler.h).
//
//===----------------------------------------------------------------------===//
#include "../tools/ToolOptions.h"
#include "PeakProbe.h"
#include "Timing.h"
#include "attn/Compiler/LinearKernels.h"
#include "attn/Runtime/HugePages.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"
#include <cblas.h>
#include <cmath>
#include <random>
#include <thread>

using namespace attnrt;

static llvm::cl::OptionCategory benchCategory("attn-gemm-bench options");
static llvm::cl::opt<std::string>
    shapesOption("shapes", llvm::cl::desc("M:N:K,... (default: BERT-base)"),
                 llvm::cl::cat(benchCategory),
                 llvm::cl::init("512:768:768,512:3072:768,512:768:3072,"
                                "2048:768:768,2048:3072:768,2048:768:3072,"
                                "1:768:768,1:3072:768"));
static llvm::cl::opt<unsigned> repeat("repeat", llvm::cl::init(9),
                                      llvm::cl::desc("timed runs per shape"),
                                      llvm::cl::cat(benchCategory));
static llvm::cl::opt<bool>
    cold("cold", llvm::cl::cat(benchCategory),
         llvm::cl::desc("evict the caches before each run, as a "
                        "layer's weights are evicted between uses"));
static llvm::cl::opt<unsigned>
    threadsOption("gemm-threads", llvm::cl::init(0),
                  llvm::cl::desc("threads (0: every core)"),
                  llvm::cl::cat(benchCategory));
static llvm::cl::opt<bool>
    bf16("bf16", llvm::cl::cat(benchCategory),
         llvm::cl::desc("also time bf16 weights (AMX, else "
                        "vdpbf16ps, else widened)"));

int main(int argc, char **argv) {
  // --help shows the benchmark's own options; --help-hidden adds LLVM's.
  attntools::hideForeignOptions({&benchCategory});
  llvm::cl::ParseCommandLineOptions(argc, argv, "attn GEMM benchmark\n");
  unsigned threads =
      threadsOption ? threadsOption : std::thread::hardware_concurrency();
  openblas_set_num_threads(threads);
  double peak = measurePeakGflops(threads);
  llvm::outs() << llvm::formatv(
      "threads {0}, measured FP32 FMA peak {1:F1} GFLOP/s\n", threads, peak);
  llvm::outs() << "|    M |    N |    K | attn packed GFLOP/s | % peak | "
                  "attn W[N,K] | attn W[K,N] | OpenBLAS W[N,K] | packed / "
                  "OpenBLAS |"
               << (bf16 ? " bf16 GFLOP/s | bf16 / f32 packed |" : "")
               << "\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
               << (bf16 ? "---:|---:|" : "") << "\n";
  HostCompileOptions options;
  options.numThreads = threads;
  llvm::SmallVector<llvm::StringRef> shapes;
  llvm::StringRef(shapesOption).split(shapes, ',');
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (llvm::StringRef shape : shapes) {
    llvm::SmallVector<llvm::StringRef> parts;
    shape.split(parts, ':');
    int64_t m, n, k;
    if (parts.size() != 3 || parts[0].getAsInteger(10, m) ||
        parts[1].getAsInteger(10, n) || parts[2].getAsInteger(10, k)) {
      llvm::errs() << "bad shape '" << shape << "' (M:N:K)\n";
      return 1;
    }
    std::vector<float> x(m * k), wNK(n * k), wKN(k * n);
    for (float &v : x)
      v = dist(rng);
    for (float &v : wNK)
      v = dist(rng);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < k; ++j)
        wKN[j * n + i] = wNK[i * k + j];
    auto nk = CompiledLinear::create(k, n, WeightLayout::OutByIn, options);
    auto kn = CompiledLinear::create(k, n, WeightLayout::InByOut, options);
    auto packed = CompiledLinear::create(k, n, WeightLayout::Packed, options);
    if (!nk || !kn || !packed) {
      llvm::errs() << "compiling failed: "
                   << llvm::toString(!nk   ? nk.takeError()
                                     : !kn ? kn.takeError()
                                           : packed.takeError())
                   << "\n";
      return 1;
    }
    // On huge pages, as the layer runtime holds packed weights.
    std::vector<float> panels = (*packed)->pack(wNK.data());
    std::vector<float, HugePageAllocator<float>> wPacked(panels.begin(),
                                                         panels.end());
    std::vector<float> yAttn(m * n), yKN(m * n), yPacked(m * n), yBlas(m * n);
    // Timed runs accumulate (y += x W); the check runs once from zeros.
    std::vector<char> evict(cold ? 256 << 20 : 0);
    auto evictCaches = [&] {
      for (size_t i = 0; i < evict.size(); i += 64)
        evict[i]++;
    };
    auto runAttn = [&](CompiledLinear &linear, const void *w,
                       std::vector<float> &y) {
      if (llvm::Error e = linear.accumulate(x.data(), m, w, y.data())) {
        llvm::errs() << llvm::toString(std::move(e)) << "\n";
        std::exit(1);
      }
    };
    auto runBlas = [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f,
                  x.data(), k, wNK.data(), k, 0.0f, yBlas.data(), n);
    };
    auto median = [&](auto run) {
      std::vector<double> times;
      for (unsigned r = 0; r < repeat; ++r) {
        evictCaches();
        times.push_back(medianSeconds(1, run));
      }
      std::sort(times.begin(), times.end());
      return times[times.size() / 2];
    };
    double tNK = median([&] { runAttn(**nk, wNK.data(), yAttn); });
    double tKN = median([&] { runAttn(**kn, wKN.data(), yKN); });
    double tPacked =
        median([&] { runAttn(**packed, wPacked.data(), yPacked); });
    double tBlas = median(runBlas);
    std::fill(yAttn.begin(), yAttn.end(), 0.0f);
    std::fill(yKN.begin(), yKN.end(), 0.0f);
    std::fill(yPacked.begin(), yPacked.end(), 0.0f);
    runAttn(**nk, wNK.data(), yAttn);
    runAttn(**kn, wKN.data(), yKN);
    runAttn(**packed, wPacked.data(), yPacked);
    double worst = 0;
    for (int64_t i = 0; i < m * n; ++i)
      worst = std::max({worst, double(std::fabs(yAttn[i] - yBlas[i])),
                        double(std::fabs(yKN[i] - yBlas[i])),
                        double(std::fabs(yPacked[i] - yBlas[i]))});
    // Sums of K products of numbers in [-1, 1]: f32 rounding grows like
    // sqrt(K) * 2^-24 * |terms|; 1e-3 is far above it for K <= 4096 and far
    // below any indexing error.
    if (worst > 1e-3) {
      llvm::errs() << llvm::formatv("{0}: attn differs from OpenBLAS by {1}\n",
                                    shape, worst);
      return 1;
    }
    double gflop = 2.0 * m * n * k * 1e-9;
    llvm::outs() << llvm::formatv(
        "| {0,4} | {1,4} | {2,4} | {3,8:F1} | {4,5:F1}% | {5,8:F1} | {6,8:F1} "
        "| {7,8:F1} | {8,5:F2}x |",
        m, n, k, gflop / tPacked, 100 * gflop / tPacked / peak, gflop / tNK,
        gflop / tKN, gflop / tBlas, tBlas / tPacked);
    if (bf16) {
      auto half = CompiledLinear::create(k, n, WeightLayout::Packed, options,
                                         FloatFormat::BF16);
      if (!half) {
        llvm::errs() << "compiling failed: " << llvm::toString(half.takeError())
                     << "\n";
        return 1;
      }
      std::vector<uint16_t> halves = (*half)->packHalf(wNK.data());
      std::vector<uint16_t, HugePageAllocator<uint16_t>> wHalf(halves.begin(),
                                                               halves.end());
      std::vector<float> yHalf(m * n);
      double tHalf = median([&] { runAttn(**half, wHalf.data(), yHalf); });
      std::fill(yHalf.begin(), yHalf.end(), 0.0f);
      runAttn(**half, wHalf.data(), yHalf);
      // W (and on AMX / vdpbf16ps x) rounded to bf16: each product is off
      // by up to 2^-8 of |x w| <= 1, with random signs; the sum's error
      // has a deviation near 5e-4 sqrt(K), and 4e-3 sqrt(K) is far above
      // it and far below an indexing error (O(sqrt(K)) itself).
      double worstHalf = 0;
      for (int64_t i = 0; i < m * n; ++i)
        worstHalf = std::max(worstHalf, double(std::fabs(yHalf[i] - yBlas[i])));
      if (worstHalf > 4e-3 * std::sqrt(double(k))) {
        llvm::errs() << llvm::formatv(
            "{0}: attn's bf16 product differs from OpenBLAS by {1}\n", shape,
            worstHalf);
        return 1;
      }
      llvm::outs() << llvm::formatv(" {0,8:F1} | {1,5:F2}x |", gflop / tHalf,
                                    tPacked / tHalf);
    }
    llvm::outs() << "\n";
  }
  return 0;
}
