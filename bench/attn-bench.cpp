//===- attn-bench.cpp - fused attn kernels vs. unfused OpenBLAS -----------===//
//
//   attn-bench [--sizes=512,1024,...] [--heads=12] [--dim=64] [--repeat=5]
//              [--num-threads=N] [--csv=FILE] [--svg=FILE] [--bf16]
//
// For each sequence length and causal/non-causal, in one process: compiles
// attn.attention for this machine, times it (median of --repeat runs), times
// the unfused OpenBLAS baseline on the same inputs and threads, checks the
// two agree, and reports ms, GFLOP/s (4 H N^2 D, halved when causal), % of
// the FMA peak measured at start-up, and the speed-up over the baseline.
// With --bf16, the same attention on the inputs rounded to bf16 is timed
// too (AMX tiles where the CPU has them), with its speed over attn's f32
// and its max |difference| from the f32 result.
//
//===----------------------------------------------------------------------===//
#include "../tools/ToolOptions.h"
#include "Baseline.h"
#include "Compare.h"
#include "PeakProbe.h"
#include "Timing.h"
#include "attn/Compiler/HostCompiler.h"
#include "attn/Dialect/Attn/IR/AttnDialect.h"
#include "attn/Runtime/HalfFloat.h"
#include "attn/Spec/Spec.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <thread>

namespace cl = llvm::cl;

static cl::OptionCategory benchCategory("attn-bench options");
static cl::list<int64_t> sizes("sizes", cl::desc("sequence lengths"),
                               cl::CommaSeparated, cl::cat(benchCategory));
static cl::opt<int64_t> heads("heads", cl::init(12), cl::cat(benchCategory));
static cl::opt<int64_t> dim("dim", cl::desc("head dim"), cl::init(64),
                            cl::cat(benchCategory));
static cl::opt<unsigned> repeat("repeat", cl::init(5), cl::cat(benchCategory));
static cl::opt<unsigned> threads("num-threads",
                                 cl::desc("threads (default: all cores)"),
                                 cl::init(0), cl::cat(benchCategory));
static cl::opt<int64_t> keyTile("kv-tile",
                                cl::desc("key rows per tile of the kernel"),
                                cl::init(128), cl::cat(benchCategory));
static cl::opt<std::string> csvFile("csv", cl::desc("write results as CSV"),
                                    cl::cat(benchCategory));
static cl::opt<std::string> svgFile("svg", cl::desc("plot GFLOP/s as SVG"),
                                    cl::cat(benchCategory));
static cl::opt<bool> bf16("bf16",
                          cl::desc("also time bf16 inputs (AMX where the CPU "
                                   "has it)"),
                          cl::init(false), cl::cat(benchCategory));
static cl::opt<attnrt::Bf16Products> bf16Products(
    "bf16-products", cl::desc("how bf16 products run (with --bf16)"),
    cl::values(clEnumValN(attnrt::Bf16Products::Auto, "auto",
                          "AMX, else vdpbf16ps, else widened (default)"),
               clEnumValN(attnrt::Bf16Products::Amx, "amx", "AMX tiles"),
               clEnumValN(attnrt::Bf16Products::Dot, "dot", "vdpbf16ps"),
               clEnumValN(attnrt::Bf16Products::Widen, "widen",
                          "widened to f32 vectors")),
    cl::init(attnrt::Bf16Products::Auto), cl::cat(benchCategory));

namespace {
struct Row {
  int64_t n;
  bool causal;
  double oursMs, baselineMs, oursGflops, baselineGflops, maxDiff;
  double bf16Ms = 0, bf16MaxDiff = 0;
};

std::string attentionModule(int64_t n, bool causal,
                            llvm::StringRef element = "f32") {
  std::string t = llvm::formatv("tensor<1x{0}x{1}x{2}x{3}>", heads.getValue(),
                                n, dim.getValue(), element);
  return llvm::formatv("func.func @attention(%q: {0}, %k: {0}, %v: {0}) -> {0} "
                       "{{\n  %o = attn.attention %q, %k, %v {1}: ({0}, {0}, "
                       "{0}) -> {0}\n  return %o : {0}\n}\n",
                       t, causal ? "pattern(#attn.causal) " : "");
}

void writeSvg(const std::vector<Row> &rows, double peak) {
  std::error_code ec;
  llvm::raw_fd_ostream os(svgFile, ec);
  if (ec) {
    llvm::errs() << "attn-bench: cannot write " << svgFile << "\n";
    return;
  }
  const double width = 640, height = 400, left = 60, bottom = 40, top = 30;
  double maxN = 0, maxY = peak;
  for (const Row &r : rows) {
    maxN = std::max(maxN, std::log2(double(r.n)));
    maxY = std::max({maxY, r.oursGflops, r.baselineGflops});
  }
  double minN = std::log2(double(rows.front().n));
  auto x = [&](int64_t n) {
    double span = std::max(maxN - minN, 1.0);
    return left + (std::log2(double(n)) - minN) / span * (width - left - 20);
  };
  auto y = [&](double g) {
    return height - bottom - g / maxY * (height - bottom - top);
  };
  os << llvm::formatv("<svg xmlns='http://www.w3.org/2000/svg' width='{0}' "
                      "height='{1}' font-family='sans-serif' font-size='12'>\n",
                      width, height);
  os << "<rect width='100%' height='100%' fill='white'/>\n";
  os << llvm::formatv("<text x='{0}' y='18'>attention GFLOP/s, H={1}, D={2} "
                      "(dashed: measured FMA peak {3:f0})</text>\n",
                      left, heads.getValue(), dim.getValue(), peak);
  os << llvm::formatv("<line x1='{0}' y1='{1}' x2='{2}' y2='{1}' stroke='gray' "
                      "stroke-dasharray='4'/>\n",
                      left, y(peak), width - 20);
  struct Series {
    const char *name, *color;
    bool causal, ours;
  } series[] = {{"attn", "#d62728", false, true},
                {"attn causal", "#ff9896", true, true},
                {"OpenBLAS unfused", "#1f77b4", false, false},
                {"OpenBLAS unfused causal", "#aec7e8", true, false}};
  int legend = 0;
  for (const Series &s : series) {
    os << "<polyline fill='none' stroke-width='2' stroke='" << s.color
       << "' points='";
    for (const Row &r : rows)
      if (r.causal == s.causal)
        os << llvm::formatv("{0:f1},{1:f1} ", x(r.n),
                            y(s.ours ? r.oursGflops : r.baselineGflops));
    os << "'/>\n";
    os << llvm::formatv("<text x='{0}' y='{1}' fill='{2}'>{3}</text>\n",
                        left + 10, top + 15 + 15 * legend++, s.color, s.name);
  }
  for (const Row &r : rows)
    if (!r.causal)
      os << llvm::formatv("<text x='{0:f1}' y='{1}' text-anchor='middle'>{2}"
                          "</text>\n",
                          x(r.n), height - bottom + 15, r.n);
  for (int g = 0; g <= 4; ++g)
    os << llvm::formatv("<text x='{0}' y='{1:f1}' text-anchor='end'>{2:f0}"
                        "</text>\n",
                        left - 5, y(maxY * g / 4), maxY * g / 4);
  os << llvm::formatv("<text x='{0}' y='{1}'>sequence length N</text>\n",
                      width / 2, height - 5);
  os << "</svg>\n";
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  // --help shows the benchmark's own options; --help-hidden adds LLVM's.
  attntools::hideForeignOptions({&benchCategory});
  cl::ParseCommandLineOptions(argc, argv, "attn-bench\n");
  if (sizes.empty())
    for (int64_t n : {512, 1024, 2048, 4096, 8192})
      sizes.push_back(n);
  unsigned numThreads =
      threads ? threads.getValue() : std::thread::hardware_concurrency();
  setBaselineThreads(numThreads);
  double peak = measurePeakGflops(numThreads);
  llvm::outs() << llvm::formatv(
      "threads {0}, measured FP32 FMA peak {1:f1} GFLOP/s\n", numThreads, peak);
  llvm::outs() << llvm::formatv("{0,6} {1,6} | {2,10} {3,9} {4,7} | {5,10} "
                                "{6,9} | {7,7} {8,9}",
                                "N", "causal", "attn ms", "GFLOP/s", "% peak",
                                "BLAS ms", "GFLOP/s", "speedup", "max diff");
  if (bf16)
    llvm::outs() << llvm::formatv(" | {0,10} {1,9} {2,7} {3,9}", "bf16 ms",
                                  "GFLOP/s", "vs f32", "diff f32");
  llvm::outs() << "\n";

  mlir::DialectRegistry registry;
  attnspec::registerToolDialects(registry);
  std::vector<Row> rows;
  for (int64_t n : sizes) {
    int64_t count = heads * n * dim;
    std::vector<float> q(count), k(count), v(count), expected(count);
    std::vector<float> scores(n * n);
    std::mt19937_64 rng(n);
    std::normal_distribution<float> normal;
    for (auto *buffer : {&q, &k, &v})
      for (float &x : *buffer)
        x = normal(rng);
    std::vector<uint16_t> q16, k16, v16;
    if (bf16)
      for (auto [from, to] : {std::pair{&q, &q16}, {&k, &k16}, {&v, &v16}})
        for (float x : *from)
          to->push_back(attnrt::floatToBFloat16Bits(x));
    for (bool causal : {false, true}) {
      mlir::MLIRContext context(registry);
      auto module = mlir::parseSourceString<mlir::ModuleOp>(
          attentionModule(n, causal), &context);
      attnrt::HostCompileOptions options;
      options.numThreads = numThreads;
      options.cpuKeyTile = keyTile;
      auto kernel = attnrt::compileForHost(*module, options);
      if (!kernel) {
        llvm::errs() << llvm::toString(kernel.takeError()) << "\n";
        return 1;
      }
      std::vector<int64_t> shape = {1, heads, n, dim};
      attnrt::MemRefDescriptor dq(q.data(), shape), dk(k.data(), shape),
          dv(v.data(), shape);
      std::vector<float> result(count);
      auto runOurs = [&] {
        attnrt::MemRefDescriptor out(result.data(), shape);
        llvm::cantFail((*kernel)->call("attention", {&dq, &dk, &dv, &out}));
      };
      auto runBaseline = [&] {
        unfusedAttention(q.data(), k.data(), v.data(), expected.data(),
                         scores.data(), heads, n, dim, causal);
      };
      runOurs();
      runBaseline();
      double ours = medianSeconds(repeat, runOurs);
      double baseline = medianSeconds(repeat, runBaseline);
      double maxDiff = maxAbsDifference(result, expected);
      double flops = 4.0 * heads * double(n) * n * dim / (causal ? 2 : 1);
      Row row{n,
              causal,
              ours * 1e3,
              baseline * 1e3,
              flops / ours * 1e-9,
              flops / baseline * 1e-9,
              maxDiff};
      if (bf16) {
        mlir::MLIRContext context16(registry);
        auto module16 = mlir::parseSourceString<mlir::ModuleOp>(
            attentionModule(n, causal, "bf16"), &context16);
        options.bf16Products = bf16Products;
        auto kernel16 = attnrt::compileForHost(*module16, options);
        if (!kernel16) {
          llvm::errs() << llvm::toString(kernel16.takeError()) << "\n";
          return 1;
        }
        attnrt::MemRefDescriptor dq16(q16.data(), shape),
            dk16(k16.data(), shape), dv16(v16.data(), shape);
        std::vector<uint16_t> result16(count);
        auto run16 = [&] {
          attnrt::MemRefDescriptor out(result16.data(), shape);
          llvm::cantFail(
              (*kernel16)->call("attention", {&dq16, &dk16, &dv16, &out}));
        };
        run16();
        row.bf16Ms = medianSeconds(repeat, run16) * 1e3;
        for (int64_t i = 0; i < count; ++i)
          row.bf16MaxDiff = std::max(
              row.bf16MaxDiff,
              double(std::fabs(attnrt::bfloat16BitsToFloat(result16[i]) -
                               result[i])));
      }
      rows.push_back(row);
      llvm::outs() << llvm::formatv(
          "{0,6} {1,6} | {2,10:f2} {3,9:f1} {4,6:f1}% | {5,10:f2} {6,9:f1} | "
          "{7,6:f2}x {8,9:e1}",
          n, causal ? "yes" : "no", row.oursMs, row.oursGflops,
          row.oursGflops / peak * 100, row.baselineMs, row.baselineGflops,
          baseline / ours, maxDiff);
      if (bf16)
        llvm::outs() << llvm::formatv(
            " | {0,10:f2} {1,9:f1} {2,6:f2}x {3,9:e1}", row.bf16Ms,
            flops / row.bf16Ms * 1e-6, row.oursMs / row.bf16Ms,
            row.bf16MaxDiff);
      llvm::outs() << "\n";
      llvm::outs().flush();
    }
  }
  if (!csvFile.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream os(csvFile, ec);
    os << "n,causal,heads,dim,threads,attn_ms,attn_gflops,peak_percent,"
          "blas_ms,blas_gflops,speedup,max_diff\n";
    for (const Row &r : rows)
      os << llvm::formatv("{0},{1},{2},{3},{4},{5:f3},{6:f2},{7:f1},{8:f3},"
                          "{9:f2},{10:f3},{11:e2}\n",
                          r.n, r.causal ? 1 : 0, heads.getValue(),
                          dim.getValue(), numThreads, r.oursMs, r.oursGflops,
                          r.oursGflops / peak * 100, r.baselineMs,
                          r.baselineGflops, r.baselineMs / r.oursMs, r.maxDiff);
  }
  if (!svgFile.empty() && !rows.empty())
    writeSvg(rows, peak);
  return 0;
}
