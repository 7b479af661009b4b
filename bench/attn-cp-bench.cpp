//===- attn-cp-bench.cpp - context-parallel attention: time, bytes, model -===//
//
//   mpirun -np P attn-cp-bench [--tokens=8192] [--heads=8] [--kv-heads=8]
//       [--dim=64] [--pattern=dense|causal|window:W] [--scheme=ring|zigzag|
//       ulysses] [--repeat=5] [--num-threads=1] [--single-gflops=G]
//
// Each rank generates only its own share of Q, K and V (so its memory is
// what a real rank holds), runs ring or Ulysses attention (ContextParallel.h)
// with blocks compiled by attn, and rank 0 prints one line per rank: median
// time of --repeat calls (after one call that compiles the kernels), bytes
// sent, K/V bytes held at once, peak RSS, and the prediction of the model
// of docs/Distributed.md. The model's inputs are measured here: the link's
// bandwidth and latency by a ping-pong between ranks 0 and 1, and the
// attention rate of one rank alone (--single-gflops, the P = 1 run's
// GFLOP/s as bench/distributed.sh passes it; ranks sharing cores get their
// share of it).
//
//===----------------------------------------------------------------------===//
#include "../tools/ToolOptions.h"
#include "attn/Compiler/BlockKernels.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Runtime/ContextParallel.h"
#include "attn/Spec/Spec.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <sys/resource.h>
#include <thread>

namespace cl = llvm::cl;
using namespace attnrt;
using Clock = std::chrono::steady_clock;

static cl::OptionCategory benchCategory("attn-cp-bench options");
static cl::opt<int64_t>
    tokens("tokens", cl::cat(benchCategory),
           cl::desc("sequence length (tokens over all ranks)"), cl::init(8192));
static cl::opt<int64_t> heads("heads", cl::cat(benchCategory),
                              cl::desc("query heads"), cl::init(8));
static cl::opt<int64_t> kvHeads("kv-heads", cl::cat(benchCategory), cl::init(0),
                                cl::desc("default: --heads"));
static cl::opt<int64_t> dim("dim", cl::cat(benchCategory), cl::desc("head dim"),
                            cl::init(64));
static cl::opt<std::string> patternName("pattern", cl::cat(benchCategory),
                                        cl::init("dense"),
                                        cl::desc("dense, causal or window:W"));
static cl::opt<std::string> scheme("scheme", cl::cat(benchCategory),
                                   cl::init("ring"),
                                   cl::desc("ring, zigzag or ulysses"));
static cl::opt<unsigned> repeat("repeat", cl::cat(benchCategory),
                                cl::desc("timed runs (the median is printed)"),
                                cl::init(5));
static cl::opt<unsigned> threads("num-threads", cl::cat(benchCategory),
                                 cl::desc("threads per rank"), cl::init(1));
static cl::opt<double> singleGflops(
    "single-gflops", cl::cat(benchCategory), cl::init(0),
    cl::desc("attention GFLOP/s of one rank alone (0: no time model)"));

static double seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// FLOPs of (query chunk, key chunk) at global positions: 4 per query, key
/// and head dim (QK^T and PV) over the 128 x 128 tiles the mask keeps,
/// partial tiles counted half (the single-process figures' convention for
/// causal attention).
static double pairFlops(BlockAttention &blocks, TokenChunk a, TokenChunk b) {
  constexpr int64_t kTile = 128;
  double flops = 0;
  for (int64_t i = a.start; i < a.end(); i += kTile)
    for (int64_t j = b.start; j < b.end(); j += kTile) {
      TokenChunk rows{i, std::min(kTile, a.end() - i)},
          cols{j, std::min(kTile, b.end() - j)};
      BlockClass cls = blocks.classify(rows, cols);
      double share = cls == BlockClass::Empty  ? 0
                     : cls == BlockClass::Full ? 1
                                               : 0.5;
      flops += 4.0 * rows.length * cols.length * heads * dim * share;
    }
  return flops;
}

/// The link between ranks 0 and 1: latency (s) from 8-byte and bandwidth
/// (bytes/s) from 4 MiB round trips.
static void measureLink(Communicator &comm, double &latency,
                        double &bandwidth) {
  int rank = comm.rank();
  std::string error;
  auto pingPong = [&](size_t bytes, int trips) {
    std::vector<char> send(bytes, 1), receive(bytes);
    comm.barrier(error);
    auto start = Clock::now();
    for (int t = 0; t < trips && rank < 2; ++t) {
      int peer = 1 - rank;
      for (int leg = 0; leg < 2; ++leg) {
        bool sends = (leg == 0) == (rank == 0);
        auto ex = comm.startExchange(
            send.data(), sends ? bytes : 0, sends ? peer : -1, receive.data(),
            sends ? 0 : bytes, sends ? -1 : peer, error);
        ex->wait(error);
      }
    }
    return seconds(start) / (2.0 * trips);
  };
  latency = pingPong(8, 200);
  bandwidth = (4 << 20) / std::max(pingPong(4 << 20, 20) - latency, 1e-9);
}

/// One attention of the benchmark's shape, parsed.
static mlir::OwningOpRef<mlir::ModuleOp>
parseAttention(mlir::MLIRContext &context, int64_t hkv,
               const std::string &pattern) {
  std::string q =
      llvm::formatv("tensor<1x{0}x{1}x{2}xf32>", heads, tokens.getValue(), dim);
  std::string kv =
      llvm::formatv("tensor<1x{0}x{1}x{2}xf32>", hkv, tokens.getValue(), dim);
  std::string text = llvm::formatv(
      "func.func @a(%q: {0}, %k: {1}, %v: {1}) -> {0} {\n"
      "  %o = attn.attention %q, %k, %v {2} : ({0}, {1}, {1}) -> {0}\n"
      "  return %o : {0}\n}\n",
      q, kv, pattern);
  return mlir::parseSourceString<mlir::ModuleOp>(text, &context);
}

/// The rows (tokens) rank r holds.
static int64_t rankRows(SequenceLayout layout, int P, int r) {
  int64_t n = 0;
  for (const TokenChunk &c : rankChunks(layout, tokens, P, r))
    n += c.length;
  return n;
}

/// The model (docs/Distributed.md, "Which scheme wins"): per step the
/// larger of a rank's compute (at --single-gflops shared by the ranks'
/// threads) and the transfer of the block it gets.
struct Prediction {
  double flopsTotal = 0, seconds = 0, bytes = 0;
};
static Prediction predict(BlockAttention &blocks, SequenceLayout layout, int P,
                          int rank, int64_t hkv, double latency,
                          double bandwidth) {
  auto chunksOf = [&](int r) { return rankChunks(layout, tokens, P, r); };
  auto rowsOf = [&](int r) { return rankRows(layout, P, r); };
  double flopsTotal = 0;
  for (int r = 0; r < P; ++r)
    for (const TokenChunk &a : chunksOf(r))
      for (int s = 0; s < P; ++s)
        for (const TokenChunk &b : chunksOf(s))
          flopsTotal += pairFlops(blocks, a, b);
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  double rate =
      singleGflops * 1e9 / std::max(1.0, double(P) * threads / double(cores));
  auto computeOf = [&](int s) {
    double f = 0;
    for (const TokenChunk &a : chunksOf(rank))
      for (const TokenChunk &b : chunksOf(s))
        f += pairFlops(blocks, a, b);
    return rate > 0 ? f / rate : 0.0;
  };
  double predictedBytes = 0, predicted = 0;
  auto blockBytes = [&](int s) {
    return double(sizeof(float)) * hkv * rowsOf(s) * 2 * dim;
  };
  auto needs = [&](int x, int y) {
    for (const TokenChunk &a : chunksOf(x))
      for (const TokenChunk &b : chunksOf(y))
        if (a.length && b.length && blocks.classify(a, b) != BlockClass::Empty)
          return true;
    return false;
  };
  if (scheme == "ulysses") {
    int64_t longest = (tokens + P - 1) / P;
    predictedBytes = double(sizeof(float)) * (2 * heads + 2 * hkv) * longest *
                     dim * (P - 1) / P;
    predicted = (rate > 0 ? flopsTotal / P / rate : 0) +
                (bandwidth > 0 ? predictedBytes / bandwidth : 0) +
                2 * latency * (P - 1);
  } else {
    predicted = computeOf(rank);
    for (int t = 1; t < P; ++t) {
      int destination = (rank + t) % P, source = (rank - t + P) % P;
      if (needs(destination, rank))
        predictedBytes += blockBytes(rank);
      double transfer = needs(rank, source) && bandwidth > 0
                            ? blockBytes(source) / bandwidth + latency
                            : 0;
      predicted +=
          std::max(needs(rank, source) ? computeOf(source) : 0.0, transfer);
    }
  }
  return {flopsTotal, predicted, predictedBytes};
}

int main(int argc, char **argv) {
  std::string error;
  std::unique_ptr<Communicator> comm =
      createMpiCommunicator(&argc, &argv, error);
  if (!comm) {
    llvm::errs() << "attn-cp-bench: " << error << "\n";
    return 1;
  }
  // --help shows the benchmark's own options; --help-hidden adds LLVM's.
  attntools::hideForeignOptions({&benchCategory});
  cl::ParseCommandLineOptions(argc, argv, "attn context-parallel benchmark\n");
  const int P = comm->size(), rank = comm->rank();
  int64_t hkv = kvHeads ? kvHeads : heads;
  std::string pattern;
  llvm::StringRef name(patternName);
  if (name == "causal")
    pattern = "pattern(#attn.causal)";
  else if (name.consume_front("window:"))
    pattern = ("pattern(#attn.window<left = " + name + ", right = 0>)").str();
  else if (name != "dense") {
    llvm::errs() << "attn-cp-bench: unknown --pattern\n";
    return 1;
  }

  mlir::DialectRegistry registry;
  attnspec::registerToolDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  auto module = parseAttention(context, hkv, pattern);
  if (!module)
    return 1;
  mlir::attn::AttentionOp attention;
  module->walk([&](mlir::attn::AttentionOp op) { attention = op; });
  HostCompileOptions options;
  options.numThreads = threads;
  auto blocks = CompiledBlockAttention::create(attention, options);
  if (!blocks) {
    llvm::errs() << llvm::toString(blocks.takeError()) << "\n";
    return 1;
  }

  // This rank's share, generated here.
  SequenceLayout layout =
      scheme == "zigzag" ? SequenceLayout::Zigzag : SequenceLayout::Contiguous;
  auto rowsOf = [&](int r) { return rankRows(layout, P, r); };
  int64_t n = rowsOf(rank);
  std::mt19937 rng(1000 + rank);
  std::normal_distribution<float> normal;
  std::vector<float> qs(heads * n * dim), ks(hkv * n * dim), vs(hkv * n * dim),
      os(heads * n * dim);
  for (auto *data : {&qs, &ks, &vs})
    for (float &x : *data)
      x = normal(rng);
  AttentionDims dims{1, heads, hkv, dim, dim};

  // The link: latency from 8-byte and bandwidth from 4 MiB round trips
  // between ranks 0 and 1.
  double latency = 0, bandwidth = 0;
  if (P > 1)
    measureLink(*comm, latency, bandwidth);

  // One call to compile the kernels, then the timed ones.
  auto call = [&](ContextParallelStats &stats) {
    return scheme == "ulysses"
               ? ulyssesAttention(*comm, layout, tokens, dims, **blocks,
                                  qs.data(), ks.data(), vs.data(), os.data(),
                                  stats, error)
               : ringAttention(*comm, layout, tokens, dims, **blocks, qs.data(),
                               ks.data(), vs.data(), os.data(), stats, error);
  };
  ContextParallelStats warm;
  if (!call(warm)) {
    llvm::errs() << "rank " << rank << ": " << error << "\n";
    return 1;
  }
  std::vector<double> times;
  ContextParallelStats last;
  for (unsigned r = 0; r < repeat; ++r) {
    ContextParallelStats stats;
    comm->barrier(error);
    auto start = Clock::now();
    if (!call(stats))
      return 1;
    times.push_back(seconds(start));
    last = stats;
  }
  std::sort(times.begin(), times.end());
  double median = times[times.size() / 2];

  Prediction model =
      predict(**blocks, layout, P, rank, hkv, latency, bandwidth);
  double flopsTotal = model.flopsTotal, predicted = model.seconds,
         predictedBytes = model.bytes;
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  std::string line = llvm::formatv(
      "{0},{1},{2},{3},{4},{5},{6:f4},{7:f4},{8},{9:f0},{10},{11:f1},{12:f1},"
      "{13:f2}",
      scheme, patternName, tokens.getValue(), P, rank, rowsOf(rank), median,
      predicted, last.bytesSent, predictedBytes, last.peakKeyValueBytes,
      usage.ru_maxrss / 1024.0, last.waitSeconds * 1e3,
      median > 0 ? flopsTotal / P / median * 1e-9 : 0.0);
  constexpr size_t kLine = 256;
  line.resize(kLine, '\0');
  std::vector<char> lines(kLine * P);
  if (!comm->allGather(line.data(), lines.data(), kLine, error))
    return 1;
  if (rank == 0) {
    llvm::outs() << "# link: latency " << llvm::formatv("{0:f1}", latency * 1e6)
                 << " us, bandwidth "
                 << llvm::formatv("{0:f2}", bandwidth * 1e-9) << " GB/s; total "
                 << llvm::formatv("{0:f3}", flopsTotal * 1e-9) << " GFLOP\n";
    llvm::outs() << "scheme,pattern,tokens,ranks,rank,rows,median_s,model_s,"
                    "bytes_sent,model_bytes,kv_bytes_held,peak_rss_mib,"
                    "wait_ms,gflops_per_rank\n";
    for (int r = 0; r < P; ++r)
      llvm::outs() << (lines.data() + r * kLine) << "\n";
  }
  return 0;
}
