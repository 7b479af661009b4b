//===- attn-decode-bench.cpp - decoding attention vs. memory bandwidth ----===//
//
//   attn-decode-bench [--kv-lens=4096,32768] [--q-heads=32] [--kv-heads=8]
//                     [--dim=128] [--queries=1] [--repeat=7]
//                     [--num-threads=N] [--kv-tile=K]
//
// One decoding step (--queries new tokens, bottom-right causal, GQA) against
// a KV cache of each length, in one process: compiles attn.attention for
// this machine, times it (median of --repeat runs), times an unfused
// OpenBLAS baseline on the same inputs and threads (per query head: sgemv
// for the scores, softmax, sgemv for the output), checks the two agree, and
// reports ms, the rate at which the K and V bytes were read against the
// read bandwidth measured at start-up (decoding reads every key and value
// once: memory, not FLOPs, is its limit), and the speed-up.
//
//===----------------------------------------------------------------------===//
#include "../tools/ToolOptions.h"
#include "BandwidthProbe.h"
#include "Compare.h"
#include "Timing.h"
#include "attn/Compiler/HostCompiler.h"
#include "attn/Dialect/Attn/IR/AttnDialect.h"
#include "attn/Spec/Spec.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"
#include <cblas.h>
#include <cmath>
#include <random>
#include <thread>

namespace cl = llvm::cl;

static cl::OptionCategory benchCategory("attn-decode-bench options");
static cl::list<int64_t> kvLens("kv-lens", cl::desc("KV cache lengths"),
                                cl::CommaSeparated, cl::cat(benchCategory));
static cl::opt<int64_t> keyTile("kv-tile", cl::init(0),
                                cl::desc("key rows per tile (0: the plan's)"),
                                cl::cat(benchCategory));
static cl::opt<int64_t> queryHeads("q-heads", cl::init(32),
                                   cl::cat(benchCategory));
static cl::opt<int64_t> keyHeads("kv-heads", cl::init(8),
                                 cl::cat(benchCategory));
static cl::opt<int64_t> dim("dim", cl::desc("head dim"), cl::init(128),
                            cl::cat(benchCategory));
static cl::opt<int64_t> queries("queries", cl::desc("new tokens per step"),
                                cl::init(1), cl::cat(benchCategory));
static cl::opt<unsigned> repeat("repeat", cl::init(7), cl::cat(benchCategory));
static cl::opt<unsigned> threads("num-threads",
                                 cl::desc("threads (default: all cores)"),
                                 cl::init(0), cl::cat(benchCategory));

namespace {
std::string decodeModule(int64_t lk) {
  std::string q =
      llvm::formatv("tensor<1x{0}x{1}x{2}xf32>", queryHeads.getValue(),
                    queries.getValue(), dim.getValue());
  std::string kv = llvm::formatv("tensor<1x{0}x{1}x{2}xf32>",
                                 keyHeads.getValue(), lk, dim.getValue());
  return llvm::formatv(
      "func.func @decode(%q: {0}, %k: {1}, %v: {1}) -> {0} {{\n"
      "  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = "
      "bottom_right : ({0}, {1}, {1}) -> {0}\n  return %o : {0}\n}\n",
      q, kv);
}

/// The unfused baseline: per query head and query, scores = K q / sqrt(D)
/// (sgemv), a causal softmax, out = V^T p (sgemv); query heads in parallel.
void unfusedDecode(const float *q, const float *k, const float *v, float *o,
                   int64_t lk, unsigned numThreads) {
  int64_t hq = queryHeads, lq = queries, d = dim;
  int64_t group = hq / keyHeads;
  std::vector<std::vector<float>> scores(numThreads, std::vector<float>(lk));
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < numThreads; ++t)
    workers.emplace_back([&, t] {
      std::vector<float> &s = scores[t];
      for (int64_t h = t; h < hq; h += numThreads) {
        const float *kh = k + (h / group) * lk * d;
        const float *vh = v + (h / group) * lk * d;
        for (int64_t i = 0; i < lq; ++i) {
          int64_t keys = lk - lq + i + 1; // bottom-right causal
          cblas_sgemv(CblasRowMajor, CblasNoTrans, keys, d,
                      1.0f / std::sqrt(float(d)), kh, d, q + (h * lq + i) * d,
                      1, 0.0f, s.data(), 1);
          float top = *std::max_element(s.begin(), s.begin() + keys);
          float sum = 0;
          for (int64_t j = 0; j < keys; ++j)
            sum += s[j] = std::exp(s[j] - top);
          cblas_sgemv(CblasRowMajor, CblasTrans, keys, d, 1.0f / sum, vh, d,
                      s.data(), 1, 0.0f, o + (h * lq + i) * d, 1);
        }
      }
    });
  for (auto &w : workers)
    w.join();
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  attntools::hideForeignOptions({&benchCategory});
  cl::ParseCommandLineOptions(argc, argv, "attn-decode-bench\n");
  if (kvLens.empty())
    for (int64_t n : {4096, 32768})
      kvLens.push_back(n);
  if (queryHeads < 1 || keyHeads < 1 || queryHeads % keyHeads || dim < 1 ||
      queries < 1) {
    llvm::errs() << "attn-decode-bench: need q-heads a multiple of "
                    "kv-heads, dim and queries >= 1\n";
    return 1;
  }
  unsigned numThreads =
      threads ? threads.getValue() : std::thread::hardware_concurrency();
  // The baseline's threads are its own: one sgemv per head and thread.
  openblas_set_num_threads(1);
  double bandwidth = measureReadBandwidth(numThreads);
  llvm::outs() << llvm::formatv(
      "threads {0}, measured read bandwidth {1:f1} GB/s; Hq {2}, Hkv {3}, "
      "D {4}, {5} new token(s)\n",
      numThreads, bandwidth, queryHeads.getValue(), keyHeads.getValue(),
      dim.getValue(), queries.getValue());
  llvm::outs() << llvm::formatv("{0,7} | {1,9} {2,7} {3,8} | {4,9} {5,7} | "
                                "{6,7} {7,9}\n",
                                "Lk", "attn ms", "GB/s", "% bw", "BLAS ms",
                                "GB/s", "speedup", "max diff");
  mlir::DialectRegistry registry;
  attnspec::registerToolDialects(registry);
  for (int64_t lk : kvLens) {
    int64_t qCount = queryHeads * queries * dim, kvCount = keyHeads * lk * dim;
    std::vector<float> q(qCount), k(kvCount), v(kvCount), result(qCount),
        expected(qCount);
    std::mt19937_64 rng(lk);
    std::normal_distribution<float> normal;
    for (auto *buffer : {&q, &k, &v})
      for (float &x : *buffer)
        x = normal(rng);
    mlir::MLIRContext context(registry);
    auto module =
        mlir::parseSourceString<mlir::ModuleOp>(decodeModule(lk), &context);
    attnrt::HostCompileOptions options;
    options.numThreads = numThreads;
    options.cpuKeyTile = keyTile;
    auto kernel = attnrt::compileForHost(*module, options);
    if (!kernel) {
      llvm::errs() << llvm::toString(kernel.takeError()) << "\n";
      return 1;
    }
    attnrt::MemRefDescriptor dq(q.data(), {1, queryHeads, queries, dim}),
        dk(k.data(), {1, keyHeads, lk, dim}),
        dv(v.data(), {1, keyHeads, lk, dim}),
        out(result.data(), {1, queryHeads, queries, dim});
    auto runOurs = [&] {
      llvm::cantFail((*kernel)->call("decode", {&dq, &dk, &dv, &out}));
    };
    auto runBaseline = [&] {
      unfusedDecode(q.data(), k.data(), v.data(), expected.data(), lk,
                    numThreads);
    };
    runOurs();
    runBaseline();
    double ours = medianSeconds(repeat, runOurs);
    double baseline = medianSeconds(repeat, runBaseline);
    double maxDiff = maxAbsDifference(result, expected);
    double bytes = 2.0 * kvCount * sizeof(float);
    llvm::outs() << llvm::formatv(
        "{0,7} | {1,9:f2} {2,7:f1} {3,7:f1}% | {4,9:f2} {5,7:f1} | "
        "{6,6:f2}x {7,9:e1}\n",
        lk, ours * 1e3, bytes / ours * 1e-9,
        bytes / ours * 1e-9 / bandwidth * 100, baseline * 1e3,
        bytes / baseline * 1e-9, baseline / ours, maxDiff);
    llvm::outs().flush();
  }
  return 0;
}
