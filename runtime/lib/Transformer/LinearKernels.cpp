//===- LinearKernels.cpp - matrix products compiled by attn ---------------===//
#include "attn/Runtime/LinearKernels.h"
#include "attn/Conversion/CpuGemm.h"
#include "attn/Spec/Spec.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/TargetParser/Host.h"
#include <thread>

using namespace attnrt;

struct CompiledLinear::Impl {
  mlir::MLIRContext context{mlir::MLIRContext::Threading::DISABLED};
  std::unique_ptr<JitKernel> jit;
};

CompiledLinear::CompiledLinear(std::unique_ptr<Impl> impl, int64_t in,
                               int64_t out, WeightLayout layout, int64_t width,
                               FloatFormat format, bool amxPairs)
    : impl(std::move(impl)), inFeatures(in), outFeatures(out), width(width),
      weightLayout(layout), format(format), amxPairs(amxPairs) {}
CompiledLinear::~CompiledLinear() = default;

llvm::Expected<std::unique_ptr<CompiledLinear>>
CompiledLinear::create(int64_t in, int64_t out, WeightLayout layout,
                       const HostCompileOptions &options,
                       FloatFormat weightFormat) {
  if (in <= 0 || out <= 0)
    return llvm::createStringError("a linear map needs positive sizes");
  if (weightFormat != FloatFormat::F32 && layout != WeightLayout::Packed)
    return llvm::createStringError(
        "16-bit weights are read from packed panels only");
  const char *element = weightFormat == FloatFormat::BF16  ? "bf16"
                        : weightFormat == FloatFormat::F16 ? "f16"
                                                           : "f32";
  auto impl = std::make_unique<Impl>();
  mlir::DialectRegistry registry;
  attnspec::registerToolDialects(registry);
  impl->context.appendDialectRegistry(registry);
  // The GEMM's panels depend on the vector width it is compiled for.
  int64_t vectorBits =
      options.vectorBits
          ? options.vectorBits
          : (llvm::sys::getHostCPUFeatures().lookup("avx512f") ? 512 : 256);
  int64_t width = mlir::attn::cpuGemmPanelWidth(vectorBits);
  // bf16 weights where AMX tiles are usable: packed in k pairs for the tile
  // unit, activations rounded to bf16 as the kernel copies them
  // (AmxGemm.h); otherwise widened to f32 in registers.
  bool amxPairs =
      weightFormat == FloatFormat::BF16 && bf16ProductsOnAmx(options);
  if (amxPairs)
    width = kAmxPanelWidth;
  // The weight's layout picks the product's indexing maps.
  std::string weightType, maps;
  switch (layout) {
  case WeightLayout::OutByIn:
    weightType = llvm::formatv("memref<{0}x{1}xf32>", out, in);
    maps = "indexing_maps = [affine_map<(m, n, k) -> (m, k)>, "
           "affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]";
    break;
  case WeightLayout::InByOut:
    weightType = llvm::formatv("memref<{0}x{1}xf32>", in, out);
    break;
  case WeightLayout::Packed:
    weightType = llvm::formatv("memref<{0}x{1}x{2}x{3}>",
                               (out + width - 1) / width, in, width, element);
    if (amxPairs)
      weightType = llvm::formatv("memref<{0}x{1}x{2}xbf16>",
                                 amxPanels(out), amxPairRows(in), 2 * width);
    break;
  }
  std::string product =
      amxPairs
          ? llvm::formatv(
                "  linalg.generic {{indexing_maps = [affine_map<(m, n, k) -> "
                "(m, k)>, affine_map<(m, n, k) -> (n floordiv 16, k floordiv "
                "2, (n mod 16) * 2 + k mod 2)>, affine_map<(m, n, k) -> (m, "
                "n)>], iterator_types = [\"parallel\", \"parallel\", "
                "\"reduction\"]} ins(%x, %w : memref<?x{0}xf32>, {1}) "
                "outs(%y : memref<?x{2}xf32>) {{\n"
                "  ^bb0(%a: f32, %b: bf16, %c: f32):\n"
                "    %ab = arith.truncf %a : f32 to bf16\n"
                "    %aw = arith.extf %ab : bf16 to f32\n"
                "    %bw = arith.extf %b : bf16 to f32\n"
                "    %p = arith.mulf %aw, %bw : f32\n"
                "    %s = arith.addf %c, %p : f32\n"
                "    linalg.yield %s : f32\n  }\n",
                in, weightType, out)
                .str()
      : layout == WeightLayout::Packed
          ? llvm::formatv(
                "  linalg.generic {{indexing_maps = [affine_map<(m, n, k) -> "
                "(m, k)>, affine_map<(m, n, k) -> (n floordiv {2}, k, n mod "
                "{2})>, affine_map<(m, n, k) -> (m, n)>], iterator_types = "
                "[\"parallel\", \"parallel\", \"reduction\"]} "
                "ins(%x, %w : memref<?x{0}xf32>, {1}) "
                "outs(%y : memref<?x{3}xf32>) {{\n"
                "  ^bb0(%a: f32, %b: {4}, %c: f32):\n{5}"
                "    %p = arith.mulf %a, {6} : f32\n"
                "    %s = arith.addf %c, %p : f32\n"
                "    linalg.yield %s : f32\n  }\n",
                in, weightType, width, out, element,
                // 16-bit weights widened to f32 in the body.
                weightFormat == FloatFormat::F32
                    ? ""
                    : llvm::formatv("    %bw = arith.extf %b : {0} to f32\n",
                                    element)
                          .str(),
                weightFormat == FloatFormat::F32 ? "%b" : "%bw")
                .str()
          : llvm::formatv("  linalg.matmul {0} ins(%x, %w : memref<?x{1}xf32>, "
                          "{2}) outs(%y : memref<?x{3}xf32>)\n",
                          maps, in, weightType, out)
                .str();
  std::string source = llvm::formatv(
      "func.func @linear(%x: memref<?x{0}xf32>, %w: {1}, "
      "%y: memref<?x{2}xf32>) {{\n{3}  return\n}\n",
      in, weightType, out, product);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(source, &impl->context);
  if (!module)
    return llvm::createStringError("internal error: the linear map's IR");
  // The GEMM splits its work for a known thread count (two iterations per
  // thread): all cores unless told otherwise.
  HostCompileOptions compileOptions = options;
  if (!compileOptions.numThreads)
    compileOptions.numThreads =
        std::max(1u, std::thread::hardware_concurrency());
  auto jit = compileForHost(*module, compileOptions);
  if (!jit)
    return jit.takeError();
  impl->jit = std::move(*jit);
  return std::unique_ptr<CompiledLinear>(
      new CompiledLinear(std::move(impl), in, out, layout, width, weightFormat,
                         amxPairs));
}

template <typename T, typename Convert>
std::vector<T> CompiledLinear::packAs(const float *outByIn,
                                      Convert convert) const {
  // Panels of `width` columns: [panel][k][n mod width], or on AMX the k's in
  // pairs, [panel][k / 2][(n mod 16) * 2 + k mod 2]; zeros past out and in.
  int64_t depth = amxPairs ? 2 * amxPairRows(inFeatures) : inFeatures;
  int64_t panels =
      amxPairs ? amxPanels(outFeatures) : (outFeatures + width - 1) / width;
  std::vector<T> packed(panels * depth * width, convert(0.0f));
  for (int64_t n = 0; n < outFeatures; ++n)
    for (int64_t k = 0; k < inFeatures; ++k) {
      int64_t at = amxPairs ? ((n / width) * depth + k - k % 2) * width +
                                  (n % width) * 2 + k % 2
                            : ((n / width) * depth + k) * width + n % width;
      packed[at] = convert(outByIn[n * inFeatures + k]);
    }
  return packed;
}

std::vector<float> CompiledLinear::pack(const float *outByIn) const {
  return packAs<float>(outByIn, [](float x) { return x; });
}

std::vector<uint16_t> CompiledLinear::packHalf(const float *outByIn) const {
  FloatFormat f = format;
  return packAs<uint16_t>(outByIn, [f](float x) { return toBits(f, x); });
}

llvm::Error CompiledLinear::accumulate(const float *x, int64_t rows,
                                       const void *weight, float *y) const {
  // The kernel only reads x and the weight; descriptors take void *.
  MemRefDescriptor xd(const_cast<float *>(x), {rows, inFeatures});
  std::vector<int64_t> weightShape = {outFeatures, inFeatures};
  if (weightLayout == WeightLayout::InByOut)
    weightShape = {inFeatures, outFeatures};
  else if (weightLayout == WeightLayout::Packed)
    weightShape = amxPairs ? std::vector<int64_t>{amxPanels(outFeatures),
                                                  amxPairRows(inFeatures),
                                                  2 * width}
                           : std::vector<int64_t>{
                                 (outFeatures + width - 1) / width,
                                 inFeatures, width};
  MemRefDescriptor wd(const_cast<void *>(weight), weightShape);
  MemRefDescriptor yd(y, {rows, outFeatures});
  return impl->jit->call("linear", {&xd, &wd, &yd});
}
