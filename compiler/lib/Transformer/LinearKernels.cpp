//===- LinearKernels.cpp - matrix products compiled by attn ---------------===//
#include "attn/Compiler/LinearKernels.h"
#include "attn/Conversion/CpuGemm.h"
#include "attn/Spec/Spec.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FormatVariadic.h"
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

/// The target kernels compiled with `options` are for; this CPU's when
/// the options are refused (compileForHost reports why).
static mlir::attn::TargetDescription
targetOrHost(const HostCompileOptions &options) {
  llvm::Expected<mlir::attn::TargetDescription> target = hostTarget(options);
  if (target)
    return *target;
  llvm::consumeError(target.takeError());
  return *hostTarget(HostCompileOptions());
}

LinearPanels::LinearPanels(int64_t in, int64_t out,
                           const HostCompileOptions &options,
                           FloatFormat format)
    : LinearPanels(in, out, targetOrHost(options), format) {}

LinearPanels::LinearPanels(int64_t in, int64_t out,
                           const mlir::attn::TargetDescription &target,
                           FloatFormat format)
    : weightFormat(format) {
  // The GEMM's panels depend on the target it is compiled for.
  panelLayout.in = in;
  panelLayout.out = out;
  panelLayout.width = mlir::attn::cpuGemmPanelWidth(target);
  // bf16 weights where AMX tiles or vdpbf16ps run the products: packed in
  // k pairs (16-column panels for the tile unit, the GEMM's 2V for
  // vdpbf16ps), activations rounded to bf16 as the kernel copies them
  // (AmxGemm.h); otherwise widened to f32 in registers.
  if (format != FloatFormat::BF16 ||
      !(target.bf16ProductsOnAmx() || target.bf16ProductsByDot()))
    return;
  panelLayout.pairs = true;
  panelLayout.amxTiles = target.bf16ProductsOnAmx();
  if (panelLayout.amxTiles)
    panelLayout.width = kAmxPanelWidth;
}

namespace {
/// A kernel's IR on buffers (y an argument its ops write: the JIT's form)
/// or on tensors (y the result of a chain of ops: attn-compile's form,
/// whose signature the C API checks calls against; bufferization turns y
/// back into a trailing output argument).
struct KernelForm {
  bool tensors;
  int64_t out;
  int steps = 0;
  /// Rows of x and y, or -1 for any (GPU kernels have static shapes).
  int64_t rows = -1;

  std::string shaped(const std::string &dims, const char *element) const {
    return (tensors ? "tensor<" : "memref<") + dims + "x" + element + ">";
  }
  std::string rowsDim() const { return rows < 0 ? "?" : std::to_string(rows); }
  std::string yType() const {
    return shaped(rowsDim() + "x" + std::to_string(out), "f32");
  }
  /// y's current value.
  std::string y() const {
    return tensors ? "%y" + std::to_string(steps) : "%y";
  }
  /// The line of `op` (up to its outs) writing y, `region` after the outs.
  std::string writeY(const std::string &op, const std::string &region = "") {
    if (!tensors)
      return "  " + op + "outs(%y : " + yType() + ")" + region + "\n";
    std::string init = y();
    ++steps;
    return "  " + y() + " = " + op + "outs(" + init + " : " + yType() + ")" +
           region + " -> " + yType() + "\n";
  }
};
} // namespace

/// The epilogue's element-wise generic on y (GemmEpilogue.h fuses it into
/// the GEMM), or nothing for the plain product.
static std::string epilogueIR(const LinearEpilogue &e, KernelForm &form) {
  using A = LinearEpilogue::Activation;
  if (!e.bias && e.activation == A::None && !e.residual)
    return "";
  int64_t out = form.out;
  std::string maps, operands, types, args, body;
  auto input = [&](const char *name, const char *map, std::string type) {
    maps += std::string("affine_map<(m, n) -> (") + map + ")>, ";
    operands += std::string(operands.empty() ? "" : ", ") + "%" + name;
    types += std::string(types.empty() ? "" : ", ") + type;
    args += std::string("%") + name + "_in: f32, ";
  };
  if (e.bias)
    input("bias", "n", form.shaped(std::to_string(out), "f32"));
  if (e.readsOther())
    input("other", "m, n", form.yType());
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
  return form.writeY(
      llvm::formatv("linalg.generic {{indexing_maps = [{0}affine_map<(m, n) "
                    "-> (m, n)>], iterator_types = [\"parallel\", "
                    "\"parallel\"]} {1}",
                    maps,
                    operands.empty() ? ""
                                     : "ins(" + operands + " : " + types + ") ")
          .str(),
      llvm::formatv(" {{\n  ^bb0({0}%c: f32):\n{1}    linalg.yield {2} : f32\n"
                    "  }",
                    args, body, v)
          .str());
}

llvm::Expected<std::string>
attnrt::linearKernelSource(llvm::StringRef name, WeightLayout layout,
                           const LinearPanels &panels,
                           const LinearEpilogue &epilogue, bool onTensors) {
  int64_t in = panels.layout().in, out = panels.layout().out;
  FloatFormat weightFormat = panels.format();
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
  if (onTensors && (epilogue.accumulate || layout != WeightLayout::Packed))
    return llvm::createStringError(
        "a kernel on tensors writes its result whole, from packed weights");
  KernelForm form{onTensors, out};
  int64_t width = panels.width();
  // The weight's layout picks the product's indexing maps.
  std::string weightType, maps;
  std::vector<int64_t> shape = panels.shape();
  switch (layout) {
  case WeightLayout::OutByIn:
    weightType = llvm::formatv("memref<{0}x{1}xf32>", out, in);
    maps = "indexing_maps = [affine_map<(m, n, k) -> (m, k)>, "
           "affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ";
    break;
  case WeightLayout::InByOut:
    weightType = llvm::formatv("memref<{0}x{1}xf32>", in, out);
    break;
  case WeightLayout::Packed:
    weightType =
        form.shaped(llvm::formatv("{0}x{1}x{2}", shape[0], shape[1], shape[2]),
                    panels.pairs() ? "bf16" : element);
    break;
  }
  std::string xType = form.shaped("?x" + std::to_string(in), "f32");
  std::string operands =
      llvm::formatv("ins(%x, %w : {0}, {1}) ", xType, weightType).str();
  // Without accumulation y starts from zeros (the GEMM's first k-block
  // does, without reading y).
  std::string body;
  if (onTensors)
    body += llvm::formatv("  %first = arith.constant 0 : index\n"
                          "  %rows = tensor.dim %x, %first : {0}\n"
                          "  %y0 = tensor.empty(%rows) : {1}\n",
                          xType, form.yType());
  if (!epilogue.accumulate)
    body += "  %zero = arith.constant 0.0 : f32\n" +
            form.writeY("linalg.fill ins(%zero : f32) ");
  const char *generic =
      "linalg.generic {{indexing_maps = [affine_map<(m, n, k) -> (m, k)>, "
      "affine_map<(m, n, k) -> ({0})>, affine_map<(m, n, k) -> (m, n)>], "
      "iterator_types = [\"parallel\", \"parallel\", \"reduction\"]} ";
  if (panels.pairs())
    body += form.writeY(
        llvm::formatv(generic,
                      llvm::formatv("n floordiv {0}, k floordiv 2, (n mod {0}) "
                                    "* 2 + k mod 2",
                                    width)
                          .str())
                .str() +
            operands,
        " {\n"
        "  ^bb0(%a: f32, %b: bf16, %c: f32):\n"
        "    %ab = arith.truncf %a : f32 to bf16\n"
        "    %aw = arith.extf %ab : bf16 to f32\n"
        "    %bw = arith.extf %b : bf16 to f32\n"
        "    %p = arith.mulf %aw, %bw : f32\n"
        "    %s = arith.addf %c, %p : f32\n"
        "    linalg.yield %s : f32\n  }");
  else if (layout == WeightLayout::Packed)
    body += form.writeY(
        llvm::formatv(
            generic, llvm::formatv("n floordiv {0}, k, n mod {0}", width).str())
                .str() +
            operands,
        llvm::formatv(
            " {{\n  ^bb0(%a: f32, %b: {0}, %c: f32):\n{1}"
            "    %p = arith.mulf %a, {2} : f32\n"
            "    %s = arith.addf %c, %p : f32\n"
            "    linalg.yield %s : f32\n  }",
            element,
            // 16-bit weights widened to f32 in the body.
            weightFormat == FloatFormat::F32
                ? ""
                : llvm::formatv("    %bw = arith.extf %b : {0} to f32\n",
                                element)
                      .str(),
            weightFormat == FloatFormat::F32 ? "%b" : "%bw")
            .str());
  else
    body += form.writeY("linalg.matmul " + maps + operands);
  body += epilogueIR(epilogue, form);
  std::string arguments = "%x: " + xType + ", %w: " + weightType;
  if (epilogue.bias)
    arguments += ", %bias: " + form.shaped(std::to_string(out), "f32");
  if (epilogue.readsOther())
    arguments += ", %other: " + form.yType();
  if (onTensors)
    return llvm::formatv("func.func @{0}({1}) -> {2} {{\n{3}  return {4} : "
                         "{2}\n}\n",
                         name, arguments, form.yType(), body, form.y())
        .str();
  return llvm::formatv("func.func @{0}({1}, %y: {2}) {{\n{3}  return\n}\n",
                       name, arguments, form.yType(), body)
      .str();
}

std::string attnrt::gpuLinearKernelSource(llvm::StringRef name, int64_t rows,
                                          int64_t in, int64_t out,
                                          const LinearEpilogue &epilogue,
                                          FloatFormat weightFormat) {
  KernelForm form{/*tensors=*/true, out};
  form.rows = rows;
  const char *element = weightFormat == FloatFormat::BF16  ? "bf16"
                        : weightFormat == FloatFormat::F16 ? "f16"
                                                           : "f32";
  std::string xType = form.shaped(llvm::formatv("{0}x{1}", rows, in), "f32");
  std::string wType = form.shaped(llvm::formatv("{0}x{1}", out, in), element);
  std::string body = "  %zero = arith.constant 0.0 : f32\n  %y0 = "
                     "tensor.empty() : " +
                     form.yType() + "\n";
  body += form.writeY("linalg.fill ins(%zero : f32) ");
  body += form.writeY(
      "linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, "
      "affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] "
      "ins(%x, %w : " +
      xType + ", " + wType + ") ");
  LinearEpilogue finish = epilogue;
  finish.accumulate = false;
  body += epilogueIR(finish, form);
  std::string arguments = "%x: " + xType + ", %w: " + wType;
  if (finish.bias)
    arguments += ", %bias: " + form.shaped(std::to_string(out), "f32");
  if (finish.readsOther())
    arguments += ", %other: " + form.yType();
  return llvm::formatv("func.func @{0}({1}) -> {2} {{\n{3}  return {4} : "
                       "{2}\n}\n",
                       name, arguments, form.yType(), body, form.y())
      .str();
}

llvm::Expected<std::unique_ptr<CompiledLinear>>
CompiledLinear::create(int64_t in, int64_t out, WeightLayout layout,
                       const HostCompileOptions &options,
                       FloatFormat weightFormat, LinearEpilogue epilogue) {
  LinearPanels panels(in, out, options, weightFormat);
  llvm::Expected<std::string> source =
      linearKernelSource("linear", layout, panels, epilogue,
                         /*onTensors=*/false);
  if (!source)
    return source.takeError();
  auto impl = std::make_unique<Impl>();
  mlir::DialectRegistry registry;
  attnspec::registerToolDialects(registry);
  impl->context.appendDialectRegistry(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(*source, &impl->context);
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
      new CompiledLinear(std::move(impl), in, out, layout, panels, epilogue));
}

std::vector<float> LinearPanels::pack(const float *outByIn) const {
  std::vector<float> packed(panelLayout.elements());
  panelLayout.pack(outByIn, packed.data(), [](float x) { return x; });
  return packed;
}

std::vector<uint16_t> LinearPanels::packHalf(const float *outByIn) const {
  FloatFormat f = weightFormat;
  std::vector<uint16_t> packed(panelLayout.elements());
  panelLayout.pack(outByIn, packed.data(),
                   [f](float x) { return toBits(f, x); });
  return packed;
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
