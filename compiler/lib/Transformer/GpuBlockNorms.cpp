//===- GpuBlockNorms.cpp - a residual block's norm in its chain -----------===//
//
// A chain given its block's norm (LinearBackend::BlockNorm) takes the
// stream h rather than its norm:
//
//   pre-norm:   h -> norm kernel -> the block's products ... -> last
//               product + h (epilogue) -> h + f(norm(h))
//   post-norm:  h -> the block's products ... -> last product + h
//               (epilogue) -> norm kernel -> norm(h + f(h))
//
// so the host neither normalizes nor adds the residual, and no more rows
// cross than before (h in, the block's new h out). The norm kernel is a
// row kernel (GpuRowReductionKernel.cpp) of the IR below: f32 sums over
// each row in a tree of 128 partial sums, where the host sums in double
// (the two differ by about 1e-7 of the row's scale).
//
//===----------------------------------------------------------------------===//
#include "GpuLinear.h"
#include "llvm/Support/FormatVariadic.h"

using namespace attnrt;

/// The MLIR of the row kernel that normalizes x [rows, width]: LayerNorm
/// (x - mean) * rsqrt(var + eps) * weight (+ bias), or RMSNorm (`rms`)
/// x * rsqrt(mean(x^2) + eps) * weight, as layermath::layerNorm and
/// rmsNorm compute them.
static std::string normSource(int64_t rows, int64_t width, bool rms, bool bias,
                              double eps) {
  std::string x = llvm::formatv("{0}x{1}xf32", rows, width);
  std::string row = llvm::formatv("{0}xf32", rows);
  std::string n = llvm::formatv("{0}.0", width);
  std::string epsilon = llvm::formatv("{0:e9}", eps);
  std::string maps = R"(#rows = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>
#id = affine_map<(i) -> (i)>
)";
  std::string head = llvm::formatv(
      R"(func.func @norm(%x: tensor<{0}>, %w: tensor<{2}xf32>{3}) -> tensor<{0}> {{
  %e = tensor.empty() : tensor<{0}>
  %er = tensor.empty() : tensor<{1}>
  %zero = arith.constant 0.0 : f32
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<{1}>) -> tensor<{1}>
)",
      x, row, width,
      bias ? llvm::formatv(", %b: tensor<{0}xf32>", width).str()
           : std::string());
  // inv = rsqrt(squares / width + eps), once per row.
  std::string inverse = llvm::formatv(
      R"(  %inv = linalg.generic {{indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%squares : tensor<{0}>) outs(%er : tensor<{0}>) {{
  ^bb0(%s: f32, %o: f32):
    %n = arith.constant {1} : f32
    %eps = arith.constant {2} : f32
    %v = arith.divf %s, %n : f32
    %ve = arith.addf %v, %eps : f32
    %q = math.rsqrt %ve : f32
    linalg.yield %q : f32
  } -> tensor<{0}>
)",
      row, n, epsilon);
  if (rms)
    return maps + head +
           llvm::formatv(
               R"(  %squares = linalg.generic {{indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<{0}>) outs(%acc : tensor<{1}>) {{
  ^bb0(%a: f32, %s: f32):
    %a2 = arith.mulf %a, %a : f32
    %t = arith.addf %a2, %s : f32
    linalg.yield %t : f32
  } -> tensor<{1}>
{2}  %y = linalg.generic {{indexing_maps = [#rows, #row, #col, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x, %inv, %w : tensor<{0}>, tensor<{1}>, tensor<{3}xf32>) outs(%e : tensor<{0}>) {{
  ^bb0(%a: f32, %q: f32, %g: f32, %o: f32):
    %s = arith.mulf %a, %q : f32
    %t = arith.mulf %s, %g : f32
    linalg.yield %t : f32
  } -> tensor<{0}>
  return %y : tensor<{0}>
}
)",
               x, row, inverse, width)
               .str();
  return maps + head +
         llvm::formatv(
             R"(  %sum = linalg.generic {{indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<{0}>) outs(%acc : tensor<{1}>) {{
  ^bb0(%a: f32, %s: f32):
    %t = arith.addf %a, %s : f32
    linalg.yield %t : f32
  } -> tensor<{1}>
  %mean = linalg.generic {{indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%sum : tensor<{1}>) outs(%er : tensor<{1}>) {{
  ^bb0(%s: f32, %o: f32):
    %n = arith.constant {4} : f32
    %m = arith.divf %s, %n : f32
    linalg.yield %m : f32
  } -> tensor<{1}>
  %squares = linalg.generic {{indexing_maps = [#rows, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x, %mean : tensor<{0}>, tensor<{1}>) outs(%acc : tensor<{1}>) {{
  ^bb0(%a: f32, %m: f32, %s: f32):
    %d = arith.subf %a, %m : f32
    %d2 = arith.mulf %d, %d : f32
    %t = arith.addf %d2, %s : f32
    linalg.yield %t : f32
  } -> tensor<{1}>
{2}  %y = linalg.generic {{indexing_maps = [#rows, #row, #row, #col{5}, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x, %mean, %inv, %w{6} : tensor<{0}>, tensor<{1}>, tensor<{1}>, tensor<{3}xf32>{7}) outs(%e : tensor<{0}>) {{
  ^bb0(%a: f32, %m: f32, %q: f32, %g: f32{8}, %o: f32):
    %d = arith.subf %a, %m : f32
    %s = arith.mulf %d, %q : f32
    %t = arith.mulf %s, %g : f32
{9}  } -> tensor<{0}>
  return %y : tensor<{0}>
}
)",
             x, row, inverse, width, n, bias ? ", #col" : "",
             bias ? ", %b" : "",
             bias ? llvm::formatv(", tensor<{0}xf32>", width).str()
                  : std::string(),
             bias ? ", %c: f32" : "",
             bias ? "    %u = arith.addf %t, %c : f32\n    linalg.yield %u : "
                    "f32\n"
                  : "    linalg.yield %t : f32\n")
             .str();
}

llvm::Expected<GpuBuffer *> GpuLinearBackend::queueNorm(const BlockNorm &norm,
                                                        GpuBuffer *in,
                                                        int64_t rows,
                                                        int64_t width) {
  int64_t capacity = rowCapacity(rows);
  NormKernel &found =
      normKernels[{capacity, width, norm.rms, norm.bias != nullptr, norm.eps}];
  if (!found.kernel) {
    llvm::Expected<std::unique_ptr<GpuKernel>> kernel = compileKernel(
        normSource(capacity, width, norm.rms, norm.bias != nullptr, norm.eps));
    if (!kernel)
      return kernel.takeError();
    std::string error;
    found.y =
        device->allocate(uint64_t(capacity) * width * sizeof(float), error);
    if (!found.y)
      return llvm::createStringError(error);
    found.kernel = std::move(*kernel);
    ++counted.kernels;
  }
  std::vector<GpuOperand> operands(1);
  operands[0].buffer = in;
  for (const float *parameter : {norm.weight, norm.bias})
    if (parameter) {
      llvm::Expected<GpuBuffer *> buffer = deviceBias(parameter, width);
      if (!buffer)
        return buffer.takeError();
      operands.emplace_back();
      operands.back().buffer = *buffer;
    }
  operands.emplace_back();
  operands.back().buffer = found.y.get();
  if (llvm::Error e = found.kernel->launchesOn("norm", operands, pending))
    return std::move(e);
  // A workgroup per row: the rows past `rows` in their capacity take none.
  GpuLaunch &queued = pending.back();
  queued.grid[0] = uint32_t(std::min<int64_t>(queued.grid[0], rows));
  ++counted.norms;
  return found.y.get();
}

llvm::Expected<GpuLinearBackend::ChainInput>
GpuLinearBackend::chainInput(const float *x, int64_t rows, int64_t width,
                             const BlockNorm *norm) {
  if (!norm)
    return ChainInput{{x, nullptr}, nullptr};
  std::shared_ptr<GpuBuffer> &stream = streams[{rowCapacity(rows), width}];
  std::string error;
  if (!stream &&
      !(stream = device->allocate(
            uint64_t(rowCapacity(rows)) * width * sizeof(float), error)))
    return llvm::createStringError(error);
  uint64_t bytes = uint64_t(rows) * width * sizeof(float);
  if (!device->write(*stream, x, bytes, error))
    return llvm::createStringError(error);
  counted.inputBytes += bytes;
  ChainInput input{{nullptr, stream.get()}, stream.get()};
  if (norm->pre) {
    llvm::Expected<GpuBuffer *> normalized =
        queueNorm(*norm, stream.get(), rows, width);
    if (!normalized)
      return normalized.takeError();
    input.source = {nullptr, *normalized};
  }
  return input;
}

llvm::Expected<GpuBuffer *>
GpuLinearBackend::chainOutput(const Weight &weight, int64_t rows, Source x,
                              const float *bias, const ChainInput &input,
                              const BlockNorm *norm) {
  LinearEpilogue epilogue = biasEpilogue(bias);
  Source other;
  if (norm) {
    epilogue.residual = true;
    other = {nullptr, input.stream};
  }
  llvm::Expected<Product *> product =
      launch(weight, rows, epilogue, x, bias, other);
  if (!product)
    return product.takeError();
  if (!norm || norm->pre)
    return (*product)->y.get();
  return queueNorm(*norm, (*product)->y.get(), rows,
                   static_cast<const DeviceWeight &>(weight).out);
}
