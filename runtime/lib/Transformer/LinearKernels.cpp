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
                               int64_t out, WeightLayout layout,
                               LinearPanels panels, LinearEpilogue epilogue)
    : impl(std::move(impl)), inFeatures(in), outFeatures(out),
      weightLayout(layout), panels(panels), finish(epilogue) {}
CompiledLinear::~CompiledLinear() = default;

LinearPanels::LinearPanels(int64_t in, int64_t out,
                           const HostCompileOptions &options,
                           FloatFormat format)
    : in(in), out(out), weightFormat(format) {
  // The GEMM's panels depend on the vector width it is compiled for.
  int64_t vectorBits =
      options.vectorBits
          ? options.vectorBits
          : (llvm::sys::getHostCPUFeatures().lookup("avx512f") ? 512 : 256);
  panelWidth = mlir::attn::cpuGemmPanelWidth(vectorBits);
  // bf16 weights where AMX tiles are usable: packed in k pairs for the tile
  // unit, activations rounded to bf16 as the kernel copies them
  // (AmxGemm.h); otherwise widened to f32 in registers.
  pairs = format == FloatFormat::BF16 && bf16ProductsOnAmx(options);
  if (pairs)
    panelWidth = kAmxPanelWidth;
}

std::vector<int64_t> LinearPanels::shape() const {
  if (pairs)
    return {2 * ((out + 31) / 32), 16 * ((in + 31) / 32), 2 * panelWidth};
  return {(out + panelWidth - 1) / panelWidth, in, panelWidth};
}

/// The epilogue's element-wise generic on y (GemmEpilogue.h fuses it into
/// the GEMM), or nothing for the plain product.
static std::string epilogueIR(const LinearEpilogue &e, int64_t out) {
  using A = LinearEpilogue::Activation;
  if (!e.bias && e.activation == A::None && !e.residual)
    return "";
  std::string maps, operands, types, args, body;
  auto input = [&](const char *name, const char *map, std::string type) {
    maps += std::string("affine_map<(m, n) -> (") + map + ")>, ";
    operands += std::string(operands.empty() ? "" : ", ") + "%" + name;
    types += std::string(types.empty() ? "" : ", ") + type;
    args += std::string("%") + name + "_in: f32, ";
  };
  if (e.bias)
    input("bias", "n", llvm::formatv("memref<{0}xf32>", out).str());
  if (e.readsOther())
    input("other", "m, n", llvm::formatv("memref<?x{0}xf32>", out).str());
  std::string v = "%c";
  auto step = [&](std::string name, std::string expression) {
    body += "    %" + name + " = " + expression + "\n";
    v = "%" + name;
  };
  if (e.bias)
    step("biased", "arith.addf " + v + ", %bias_in : f32");
  std::string x = v;
  // GELU's x / 2 (1 + f), both forms (%one defined).
  auto halfXTimesOnePlus = [&](const std::string &f) {
    step("onePlus", "arith.addf " + f + ", %one : f32");
    step("half", "arith.constant 0.5 : f32");
    step("halfX", "arith.mulf " + x + ", %half : f32");
    step("gelu", "arith.mulf %halfX, %onePlus : f32");
  };
  switch (e.activation) {
  case A::None:
    break;
  case A::Relu:
    step("floor", "arith.constant 0.0 : f32");
    step("relu", "arith.maximumf " + x + ", %floor : f32");
    break;
  case A::Gelu: {
    // erf by Abramowitz and Stegun 7.1.26 (within 1.5e-7, as the layer
    // runtime's own GELU): MLIR's math.erf polynomial was ~10x less exact
    // (a BERT layer's error against the f64 reference 4e-7 -> 3e-6).
    step("rsqrt2", "arith.constant 0.70710678118654752 : f32");
    step("scaled", "arith.mulf " + x + ", %rsqrt2 : f32");
    step("a", "math.absf %scaled : f32");
    step("p", "arith.constant 0.3275911 : f32");
    step("pa", "arith.mulf %a, %p : f32");
    step("one", "arith.constant 1.0 : f32");
    step("den", "arith.addf %pa, %one : f32");
    step("t", "arith.divf %one, %den : f32");
    const char *coefficients[] = {"1.061405429", "-1.453152027", "1.421413741",
                                  "-0.284496736", "0.254829592"};
    step("c0", std::string("arith.constant ") + coefficients[0] + " : f32");
    for (int i = 1; i < 5; ++i) {
      std::string id = std::to_string(i);
      step("m" + id, "arith.mulf " + v + ", %t : f32");
      step("k" + id,
           std::string("arith.constant ") + coefficients[i] + " : f32");
      step("c" + id, "arith.addf %m" + id + ", %k" + id + " : f32");
    }
    step("poly", "arith.mulf " + v + ", %t : f32");
    step("a2", "arith.mulf %a, %a : f32");
    step("na2", "arith.negf %a2 : f32");
    step("ex", "math.exp %na2 : f32");
    step("pe", "arith.mulf %poly, %ex : f32");
    step("erfAbs", "arith.subf %one, %pe : f32");
    step("erf", "math.copysign %erfAbs, %scaled : f32");
    halfXTimesOnePlus("%erf");
    break;
  }
  case A::GeluTanh:
    step("cube", "arith.mulf " + x + ", " + x + " : f32");
    step("cube3", "arith.mulf %cube, " + x + " : f32");
    step("k", "arith.constant 0.044715 : f32");
    step("kc", "arith.mulf %cube3, %k : f32");
    step("inner", "arith.addf " + x + ", %kc : f32");
    step("s", "arith.constant 0.79788456080286536 : f32");
    step("arg", "arith.mulf %inner, %s : f32");
    step("tanh", "math.tanh %arg : f32");
    step("one", "arith.constant 1.0 : f32");
    halfXTimesOnePlus("%tanh");
    break;
  case A::SiluTimesOther:
    step("negated", "arith.negf " + x + " : f32");
    step("e", "math.exp %negated : f32");
    step("one", "arith.constant 1.0 : f32");
    step("denominator", "arith.addf %e, %one : f32");
    step("silu", "arith.divf " + x + ", %denominator : f32");
    step("gated", "arith.mulf %silu, %other_in : f32");
    break;
  }
  if (e.residual)
    step("summed", "arith.addf " + v + ", %other_in : f32");
  return llvm::formatv(
             "  linalg.generic {{indexing_maps = [{0}affine_map<(m, n) -> (m, "
             "n)>], iterator_types = [\"parallel\", \"parallel\"]} "
             "{1}outs(%y : memref<?x{2}xf32>) {{\n"
             "  ^bb0({3}%c: f32):\n{4}    linalg.yield {5} : f32\n  }\n",
             maps, operands.empty() ? "" : "ins(" + operands + " : " + types + ") ",
             out, args, body, v)
      .str();
}

llvm::Expected<std::unique_ptr<CompiledLinear>>
CompiledLinear::create(int64_t in, int64_t out, WeightLayout layout,
                       const HostCompileOptions &options,
                       FloatFormat weightFormat, LinearEpilogue epilogue) {
  if (in <= 0 || out <= 0)
    return llvm::createStringError("a linear map needs positive sizes");
  if (weightFormat != FloatFormat::F32 && layout != WeightLayout::Packed)
    return llvm::createStringError(
        "16-bit weights are read from packed panels only");
  const char *element = weightFormat == FloatFormat::BF16  ? "bf16"
                        : weightFormat == FloatFormat::F16 ? "f16"
                                                           : "f32";
  using A = LinearEpilogue::Activation;
  if (layout != WeightLayout::Packed &&
      (!epilogue.accumulate || epilogue.bias ||
       epilogue.activation != A::None || epilogue.residual))
    return llvm::createStringError(
        "an epilogue needs a kernel on packed weights");
  if (epilogue.accumulate &&
      (epilogue.activation != A::None || epilogue.residual))
    return llvm::createStringError(
        "an activation or a residual applies to the product, not to an "
        "accumulated sum");
  if (epilogue.residual && epilogue.activation == A::SiluTimesOther)
    return llvm::createStringError(
        "SwiGLU's gate and a residual both read the other operand");
  auto impl = std::make_unique<Impl>();
  mlir::DialectRegistry registry;
  attnspec::registerToolDialects(registry);
  impl->context.appendDialectRegistry(registry);
  LinearPanels panels(in, out, options, weightFormat);
  int64_t width = panels.width();
  bool amxPairs = panels.amxPairs();
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
    if (amxPairs) {
      std::vector<int64_t> shape = panels.shape();
      weightType = llvm::formatv("memref<{0}x{1}x{2}xbf16>", shape[0],
                                 shape[1], shape[2]);
    }
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
  // Without accumulation y starts from zeros (the GEMM's first k-block
  // does, without reading y).
  std::string start =
      epilogue.accumulate
          ? ""
          : llvm::formatv("  %zero = arith.constant 0.0 : f32\n"
                          "  linalg.fill ins(%zero : f32) outs(%y : "
                          "memref<?x{0}xf32>)\n",
                          out)
                .str();
  std::string extraArgs;
  if (epilogue.bias)
    extraArgs += llvm::formatv("%bias: memref<{0}xf32>, ", out).str();
  if (epilogue.readsOther())
    extraArgs += llvm::formatv("%other: memref<?x{0}xf32>, ", out).str();
  std::string source = llvm::formatv(
      "func.func @linear(%x: memref<?x{0}xf32>, %w: {1}, {4}"
      "%y: memref<?x{2}xf32>) {{\n{5}{3}{6}  return\n}\n",
      in, weightType, out, product, extraArgs, start,
      epilogueIR(epilogue, out));
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
  return std::unique_ptr<CompiledLinear>(new CompiledLinear(
      std::move(impl), in, out, layout, panels, epilogue));
}

template <typename T, typename Convert>
std::vector<T> LinearPanels::packAs(const float *outByIn,
                                    Convert convert) const {
  // Panels of `width` columns: [panel][k][n mod width], or on AMX the k's in
  // pairs, [panel][k / 2][(n mod 16) * 2 + k mod 2]; zeros past out and in.
  std::vector<int64_t> dims = shape();
  int64_t depth = pairs ? 2 * dims[1] : in;
  std::vector<T> packed(dims[0] * dims[1] * dims[2], convert(0.0f));
  for (int64_t n = 0; n < out; ++n)
    for (int64_t k = 0; k < in; ++k) {
      int64_t at = pairs ? ((n / panelWidth) * depth + k - k % 2) * panelWidth +
                               (n % panelWidth) * 2 + k % 2
                         : ((n / panelWidth) * depth + k) * panelWidth +
                               n % panelWidth;
      packed[at] = convert(outByIn[n * in + k]);
    }
  return packed;
}

std::vector<float> LinearPanels::pack(const float *outByIn) const {
  return packAs<float>(outByIn, [](float x) { return x; });
}

std::vector<uint16_t> LinearPanels::packHalf(const float *outByIn) const {
  FloatFormat f = weightFormat;
  return packAs<uint16_t>(outByIn, [f](float x) { return toBits(f, x); });
}

llvm::Error CompiledLinear::accumulate(const float *x, int64_t rows,
                                       const void *weight, float *y) const {
  return run(x, rows, weight, nullptr, nullptr, y);
}

llvm::Error CompiledLinear::run(const float *x, int64_t rows,
                                const void *weight, const float *bias,
                                const float *other, float *y) const {
  if (finish.bias != (bias != nullptr) ||
      finish.readsOther() != (other != nullptr))
    return llvm::createStringError(
        "the kernel's epilogue takes a bias or another operand as it was "
        "compiled");
  // The kernel only reads x, the weight, the bias and `other`; descriptors
  // take void *.
  MemRefDescriptor xd(const_cast<float *>(x), {rows, inFeatures});
  std::vector<int64_t> weightShape = {outFeatures, inFeatures};
  if (weightLayout == WeightLayout::InByOut)
    weightShape = {inFeatures, outFeatures};
  else if (weightLayout == WeightLayout::Packed)
    weightShape = panels.shape();
  MemRefDescriptor wd(const_cast<void *>(weight), weightShape);
  MemRefDescriptor bd(const_cast<float *>(bias), {outFeatures});
  MemRefDescriptor od(const_cast<float *>(other), {rows, outFeatures});
  MemRefDescriptor yd(y, {rows, outFeatures});
  std::vector<MemRefDescriptor *> args = {&xd, &wd};
  if (bias)
    args.push_back(&bd);
  if (other)
    args.push_back(&od);
  args.push_back(&yd);
  return impl->jit->call("linear", args);
}
