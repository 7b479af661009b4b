//===- GpuAttentionChains.cpp - attention blocks as one chain on a GPU ----===//
//
// GpuLinearBackend::selfAttention: a self-attention block of whole
// sequences as one submission on the stack's device,
//
//   x rows at the end of each sequence's capacity (zero rows before them)
//     -> QKV product (bias)            [B cap, (H + 2 Hkv) D]
//     -> split kernels                 q [B, H, cap, D], k, v [B, Hkv, cap, D]
//     -> RoPE kernels (with RoPE)      q and k rotated, the angles' cosines
//                                      and sines from tables of the call's
//                                      positions (computed in double on the
//                                      host, as the host path does)
//     -> the attention kernel          heads [B, H, cap, D] (key bias: -inf
//                                      on the rows before the sequence's)
//     -> merge kernel                  [B cap, H D]
//     -> output product (bias)         [B cap, dModel]
//
// and the output's rows of each sequence read back, its residual added on
// the host. The split and merge are GPU layout kernels
// (GpuLayoutKernel.cpp) of the IR below, RoPE an element-wise kernel
// (GpuElementwiseKernel.cpp). Placing x at the capacity's end
// makes every kernel of the chain one per capacity, as the attention
// kernel is (Transformer.cpp, capacities), not one per length; the price
// is the zero rows' share of the two products (a sequence of 80 rows at a
// capacity of 128: 48 rows of each), against Q, K, V and the heads that no
// longer cross to the host and back.
//
// A decoder's call over its KV cache (SelfAttention::cacheKeys) runs the
// same chain with its query rows at the paged kernel's queryRows(Lq) (a
// decoding step's one row, a prompt's capacity) and, between RoPE and the
// attention, two insertion kernels (GpuInsertKernel.cpp) that append k and
// v to the device's copies of the cache's pools at the cache's length,
// which the paged kernel (GpuPagedAttention.h) then reads; the new rows
// are read back into the host's pools after the submission.
//
//===----------------------------------------------------------------------===//
#include "GpuLinear.h"
#include "llvm/Support/FormatVariadic.h"
#include <cmath>

using namespace attnrt;

/// The MLIR of the layout kernel that takes `heads` heads from column
/// `first` of the QKV product's rows [B cap, width] into [B, heads, cap, D].
static std::string splitSource(int64_t batch, int64_t capacity, int64_t width,
                               int64_t first, int64_t heads, int64_t dim) {
  return llvm::formatv(
      R"(func.func @split(%qkv: tensor<{0}x{1}xf32>) -> tensor<{2}x{3}x{4}x{5}xf32> {{
  %part = tensor.extract_slice %qkv[0, {6}] [{0}, {7}] [1, 1] : tensor<{0}x{1}xf32> to tensor<{0}x{7}xf32>
  %rows = tensor.expand_shape %part [[0, 1], [2, 3]] output_shape [{2}, {4}, {3}, {5}] : tensor<{0}x{7}xf32> into tensor<{2}x{4}x{3}x{5}xf32>
  %init = tensor.empty() : tensor<{2}x{3}x{4}x{5}xf32>
  %heads = linalg.transpose ins(%rows : tensor<{2}x{4}x{3}x{5}xf32>) outs(%init : tensor<{2}x{3}x{4}x{5}xf32>) permutation = [0, 2, 1, 3]
  return %heads : tensor<{2}x{3}x{4}x{5}xf32>
}
)",
      batch * capacity, width, batch, heads, capacity, dim, first, heads * dim);
}

/// The MLIR of the layout kernel that merges heads [B, H, cap, D] into
/// rows [B cap, H D].
static std::string mergeSource(int64_t batch, int64_t capacity, int64_t heads,
                               int64_t dim) {
  return llvm::formatv(
      R"(func.func @merge(%heads: tensor<{0}x{1}x{2}x{3}xf32>) -> tensor<{4}x{5}xf32> {{
  %init = tensor.empty() : tensor<{0}x{2}x{1}x{3}xf32>
  %rows = linalg.transpose ins(%heads : tensor<{0}x{1}x{2}x{3}xf32>) outs(%init : tensor<{0}x{2}x{1}x{3}xf32>) permutation = [0, 2, 1, 3]
  %merged = tensor.collapse_shape %rows [[0, 1], [2, 3]] : tensor<{0}x{2}x{1}x{3}xf32> into tensor<{4}x{5}xf32>
  return %merged : tensor<{4}x{5}xf32>
}
)",
      batch, heads, capacity, dim, batch * capacity, heads * dim);
}

/// The MLIR of the element-wise kernel that rotates x [B, H, cap, D] by
/// RoPE from tables [cap, D / 2] of the rows' angles: pairs (x[n],
/// x[n + D/2]) or, `interleaved`, (x[2n], x[2n + 1]); y_a = x_a cos - x_b
/// sin, y_b = x_a sin + x_b cos.
static std::string ropeSource(int64_t batch, int64_t heads, int64_t capacity,
                              int64_t dim, bool interleaved) {
  int64_t half = dim / 2;
  std::string shape =
      llvm::formatv("{0}x{1}x{2}x{3}xf32", batch, heads, capacity, dim);
  std::string table = llvm::formatv("{0}x{1}xf32", capacity, half);
  // The partner of element d, the table column of its pair, and whether d
  // is the pair's first (a) element.
  std::string partner =
      interleaved ? "d + 1 - (d mod 2) * 2"
                  : llvm::formatv("(d + {0}) mod {1}", half, dim).str();
  std::string column =
      interleaved ? "d floordiv 2" : llvm::formatv("d mod {0}", half).str();
  std::string first =
      interleaved
          ? "%odd = arith.remui %d, %c2 : index\n"
            "    %first = arith.cmpi eq, %odd, %c0 : index"
          : llvm::formatv("%first = arith.cmpi ult, %d, %half : index").str();
  return llvm::formatv(
      R"(func.func @rope(%x: tensor<{0}>, %cos: tensor<{1}>, %sin: tensor<{1}>) -> tensor<{0}> {{
  %e = tensor.empty() : tensor<{0}>
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %half = arith.constant {5} : index
  %y = linalg.generic {{indexing_maps = [affine_map<(b, h, s, d) -> (b, h, s, d)>, affine_map<(b, h, s, d) -> (b, h, s, {2})>, affine_map<(b, h, s, d) -> (s, {3})>, affine_map<(b, h, s, d) -> (s, {3})>, affine_map<(b, h, s, d) -> (b, h, s, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %x, %cos, %sin : tensor<{0}>, tensor<{0}>, tensor<{1}>, tensor<{1}>) outs(%e : tensor<{0}>) {{
  ^bb0(%a: f32, %partner: f32, %c: f32, %s: f32, %out: f32):
    %d = linalg.index 3 : index
    {4}
    %ps = arith.mulf %partner, %s : f32
    %neg = arith.negf %ps : f32
    %rot = arith.select %first, %neg, %ps : f32
    %ac = arith.mulf %a, %c : f32
    %r = arith.addf %ac, %rot : f32
    linalg.yield %r : f32
  } -> tensor<{0}>
  return %y : tensor<{0}>
}
)",
      shape, table, partner, column, first, half);
}

/// The MLIR of the insertion kernel that appends rows [B, Hkv, capacity,
/// D] to a decoder's pool [B, Hkv, rows, D] in place, from the row its
/// i32 argument holds (GpuInsertKernel.cpp: rows that fall below 0 or past
/// the pool are dropped).
static std::string appendSource(int64_t batch, int64_t kvHeads,
                                int64_t capacity, int64_t rows, int64_t dim) {
  return llvm::formatv(
      R"(func.func @append(%rows: tensor<{0}x{1}x{2}x{4}xf32>, %at: tensor<1xi32>, %pool: tensor<{0}x{1}x{3}x{4}xf32>) -> tensor<{0}x{1}x{3}x{4}xf32> {{
  %c0 = arith.constant 0 : index
  %a = tensor.extract %at[%c0] : tensor<1xi32>
  %row = arith.index_cast %a : i32 to index
  %r = tensor.insert_slice %rows into %pool[0, 0, %row, 0] [{0}, {1}, {2}, {4}] [1, 1, 1, 1] : tensor<{0}x{1}x{2}x{4}xf32> into tensor<{0}x{1}x{3}x{4}xf32>
  return %r : tensor<{0}x{1}x{3}x{4}xf32>
}
)",
      batch, kvHeads, capacity, rows, dim);
}

llvm::Expected<GpuLinearBackend::HeadLayouts *>
GpuLinearBackend::headLayoutsFor(const SelfAttention &block, int64_t capacity) {
  int64_t b = block.batch, h = block.heads, hkv = block.kvHeads,
          d = block.headDim;
  int ropeStyle = !block.rope ? 0 : block.ropeInterleaved ? 2 : 1;
  HeadLayouts &found = layouts[{b, capacity, h, hkv, d, ropeStyle}];
  if (found.merge)
    return &found;
  HeadLayouts made;
  int64_t width = (h + 2 * hkv) * d;
  const int64_t partHeads[3] = {h, hkv, hkv};
  const int64_t partFirst[3] = {0, h * d, (h + hkv) * d};
  std::string error;
  auto buffer = [&](int64_t floats, std::shared_ptr<GpuBuffer> &into) {
    if (error.empty())
      into = device->allocate(uint64_t(floats) * sizeof(float), error);
  };
  for (int p = 0; p < 3; ++p) {
    llvm::Expected<std::unique_ptr<GpuKernel>> kernel = compileKernel(
        splitSource(b, capacity, width, partFirst[p], partHeads[p], d));
    if (!kernel)
      return kernel.takeError();
    made.split[p] = std::move(*kernel);
    buffer(b * partHeads[p] * capacity * d, made.parts[p]);
  }
  llvm::Expected<std::unique_ptr<GpuKernel>> merge =
      compileKernel(mergeSource(b, capacity, h, d));
  if (!merge)
    return merge.takeError();
  made.merge = std::move(*merge);
  if (block.rope) {
    for (int p = 0; p < 2; ++p) {
      llvm::Expected<std::unique_ptr<GpuKernel>> rope = compileKernel(
          ropeSource(b, partHeads[p], capacity, d, block.ropeInterleaved));
      if (!rope)
        return rope.takeError();
      made.rope[p] = std::move(*rope);
      buffer(b * partHeads[p] * capacity * d, made.rotated[p]);
    }
    buffer(capacity * d / 2, made.cosines);
    buffer(capacity * d / 2, made.sines);
    counted.layoutKernels += 2;
  }
  buffer(b * capacity, made.keyBias);
  buffer(b * h * capacity * d, made.heads);
  // The output product reads it whole, at that product's row capacity.
  buffer(rowCapacity(b * capacity) * h * d, made.merged);
  if (!error.empty())
    return llvm::createStringError(error);
  counted.layoutKernels += 4;
  found = std::move(made);
  return &found;
}

Status GpuLinearBackend::rotate(const SelfAttention &block, int64_t capacity,
                                int64_t length, HeadLayouts &layout) {
  int64_t half = block.headDim / 2, pad = capacity - length;
  std::string error;
  if (layout.tablesFor != std::make_pair(length, block.position)) {
    // Row s of the capacity holds position first + s - pad; the zero rows
    // before a sequence's take angle 0. Angles in double, as lm::rope.
    std::vector<float> cosines(size_t(capacity * half), 1.0f),
        sines(size_t(capacity * half), 0.0f);
    for (int64_t s = pad; s < capacity; ++s)
      for (int64_t n = 0; n < half; ++n) {
        double theta = double(block.position + s - pad) *
                       std::pow(block.ropeBase, -2.0 * n / block.headDim);
        cosines[s * half + n] = float(std::cos(theta));
        sines[s * half + n] = float(std::sin(theta));
      }
    uint64_t bytes = cosines.size() * sizeof(float);
    if (!device->write(*layout.cosines, cosines.data(), bytes, error) ||
        !device->write(*layout.sines, sines.data(), bytes, error))
      return Status::error(error);
    counted.inputBytes += 2 * bytes;
    layout.tablesFor = {length, block.position};
  }
  for (int p = 0; p < 2; ++p) {
    std::vector<GpuOperand> operands(4);
    operands[0].buffer = layout.parts[p].get();
    operands[1].buffer = layout.cosines.get();
    operands[2].buffer = layout.sines.get();
    operands[3].buffer = layout.rotated[p].get();
    if (llvm::Error e = layout.rope[p]->launchesOn("rope", operands, pending))
      return Status::error(llvm::toString(std::move(e)));
  }
  return Status::ok();
}

Status GpuLinearBackend::queueLayout(GpuKernel &kernel, const char *function,
                                     GpuBuffer *in, GpuBuffer *out) {
  std::vector<GpuOperand> operands(2);
  operands[0].buffer = in;
  operands[1].buffer = out;
  if (llvm::Error e = kernel.launchesOn(function, operands, pending))
    return Status::error(llvm::toString(std::move(e)));
  return Status::ok();
}

llvm::Error
GpuLinearBackend::deviceOperands(const std::vector<KernelOperand> &operands,
                                 std::vector<GpuBuffer *> &buffers) {
  for (const KernelOperand &operand : operands) {
    int64_t count = 1;
    for (int64_t d : operand.shape)
      count *= d;
    llvm::Expected<GpuBuffer *> buffer =
        deviceBias(static_cast<const float *>(operand.data), count);
    if (!buffer)
      return buffer.takeError();
    buffers.push_back(*buffer);
  }
  return llvm::Error::success();
}

Status GpuLinearBackend::finishChain(GpuKernel &merge, GpuBuffer *heads,
                                     GpuBuffer *merged, int64_t projected,
                                     const Weight &o, const float *oBias,
                                     int64_t batch, int64_t capacity,
                                     int64_t length, const ChainInput &input,
                                     const BlockNorm *norm,
                                     const float *residual, float *y) {
  if (Status s = queueLayout(merge, "merge", heads, merged); s.failed()) {
    pending.clear();
    return s;
  }
  int64_t rows = batch * capacity;
  llvm::Expected<GpuBuffer *> output =
      chainOutput(o, rows, {nullptr, merged}, oBias, input, norm);
  if (!output)
    return Status::error(llvm::toString(output.takeError()));
  const auto &weight = static_cast<const DeviceWeight &>(o);
  counted.keptBytes += uint64_t(rows) * (projected + weight.in) * sizeof(float);
  // Each sequence's rows, from the end of its capacity.
  return readBack(**output, length, weight.out, y, norm ? nullptr : residual,
                  {batch, capacity, capacity - length});
}

Status GpuLinearBackend::appendRows(const SelfAttention &block,
                                    int64_t capacity, GpuBuffer *keys,
                                    GpuBuffer *values, GpuBuffer *pools[2]) {
  const std::vector<int64_t> &shape = block.cacheKeys->shape;
  std::unique_ptr<GpuKernel> &kernel =
      appends[{block.batch, block.kvHeads, capacity, shape[2], block.headDim}];
  if (!kernel) {
    llvm::Expected<std::unique_ptr<GpuKernel>> made =
        compileKernel(appendSource(block.batch, block.kvHeads, capacity,
                                   shape[2], block.headDim));
    if (!made)
      return Status::error(llvm::toString(made.takeError()));
    kernel = std::move(*made);
    counted.layoutKernels += 1;
  }
  // The capacity's last `length` rows go to the pool's rows [keyLength -
  // length, keyLength); a prompt's padding rows before them, below 0.
  int32_t at = block.keyLength - int32_t(capacity);
  std::string error;
  if (!appendAt && !(appendAt = device->allocate(sizeof(int32_t), error)))
    return Status::error(error);
  if (!device->write(*appendAt, &at, sizeof(at), error))
    return Status::error(error);
  counted.inputBytes += sizeof(at);
  GpuBuffer *rows[2] = {keys, values};
  for (int p = 0; p < 2; ++p) {
    std::vector<GpuOperand> operands(4);
    operands[0].buffer = rows[p];
    operands[1].buffer = appendAt.get();
    operands[2].buffer = pools[p];
    operands[3].buffer = pools[p]; // the result: the pool, updated in place
    if (llvm::Error e = kernel->launchesOn("append", operands, pending))
      return Status::error(llvm::toString(std::move(e)));
  }
  return Status::ok();
}

Status GpuLinearBackend::readNewRows(const SelfAttention &block,
                                     int64_t capacity, GpuBuffer *keys,
                                     GpuBuffer *values) {
  // The call's k and v [B, Hkv, capacity, D], one read each (a decoding
  // step's capacity is its one row: the buffers hold the new rows alone),
  // then each block's last `length` rows to rows [keyLength - length,
  // keyLength) of its block in the host's pools.
  const std::vector<int64_t> &shape = block.cacheKeys->shape;
  int64_t blocks = shape[0] * shape[1], dim = block.headDim;
  int64_t first = block.keyLength - block.length, pad = capacity - block.length;
  uint64_t bytes = uint64_t(blocks * capacity * dim) * sizeof(float);
  newRows.resize(size_t(blocks * capacity * dim));
  std::string error;
  GpuBuffer *from[2] = {keys, values};
  KernelOperand *to[2] = {block.cacheKeys, block.cacheValues};
  for (int p = 0; p < 2; ++p) {
    if (!device->read(*from[p], newRows.data(), bytes, error))
      return Status::error("reading a step's keys back: " + error);
    float *pool = static_cast<float *>(to[p]->data);
    for (int64_t b = 0; b < blocks; ++b)
      std::copy_n(newRows.data() + (b * capacity + pad) * dim,
                  block.length * dim, pool + (b * shape[2] + first) * dim);
  }
  counted.outputBytes += 2 * bytes;
  return Status::ok();
}

Status GpuLinearBackend::selfAttention(const float *x,
                                       const SelfAttention &block,
                                       const float *residual, float *y) {
  pending.clear(); // nothing a failed call queued
  const AttentionKernel &kernel = *block.kernel;
  bool decoding = block.cacheKeys != nullptr;
  int64_t batch = block.batch, length = block.length,
          capacity = decoding ? kernel.queryRows(length) : kernel.capacity;
  if (decoding ? !kernel.pagedDeviceLaunches || !block.cacheValues ||
                     length > capacity || block.keyLength < length
               : !kernel.deviceLaunches || length > capacity ||
                     (length < capacity && !kernel.takesKeyBias))
    return Status::error(
        "internal error: a chained self-attention over " +
        std::to_string(length) + " rows, on a kernel of " +
        std::to_string(capacity) + " rows" +
        (decoding || kernel.takesKeyBias ? "" : " without a key bias"));
  if (batch == 0 || length == 0)
    return Status::ok();
  const auto &qkv = static_cast<const DeviceWeight &>(*block.qkv);
  int64_t rows = batch * capacity, pad = capacity - length;
  llvm::Expected<HeadLayouts *> found = headLayoutsFor(block, capacity);
  if (!found)
    return Status::error(llvm::toString(found.takeError()));
  HeadLayouts &layout = **found;

  // x's rows at the end of their sequence's capacity; zeros before them
  // (their keys are masked, but a masked NaN would still poison a sum).
  scratch.assign(size_t(rows) * qkv.in, 0.0f);
  for (int64_t b = 0; b < batch; ++b)
    std::copy_n(x + b * length * qkv.in, length * qkv.in,
                scratch.data() + (b * capacity + pad) * qkv.in);
  llvm::Expected<ChainInput> input =
      chainInput(scratch.data(), rows, qkv.in, block.norm);
  if (!input)
    return Status::error(llvm::toString(input.takeError()));
  llvm::Expected<Product *> projected =
      launch(*block.qkv, rows, biasEpilogue(block.qkvBias), input->source,
             block.qkvBias, {});
  if (!projected)
    return Status::error(llvm::toString(projected.takeError()));

  for (int p = 0; p < 3; ++p)
    if (Status s = queueLayout(*layout.split[p], "split", (*projected)->y.get(),
                               layout.parts[p].get());
        s.failed()) {
      pending.clear();
      return s;
    }
  std::string error;
  if (!decoding && kernel.takesKeyBias && layout.biasLength != length) {
    // [B, 1, 1, capacity]: -inf on the rows before each sequence's.
    std::vector<float> bias(size_t(rows), 0.0f);
    for (int64_t b = 0; b < batch; ++b)
      std::fill_n(bias.data() + b * capacity, pad, -INFINITY);
    if (!device->write(*layout.keyBias, bias.data(),
                       bias.size() * sizeof(float), error)) {
      pending.clear();
      return Status::error(error);
    }
    counted.inputBytes += bias.size() * sizeof(float);
    layout.biasLength = length;
  }
  GpuBuffer *q = layout.parts[0].get(), *k = layout.parts[1].get();
  if (block.rope) {
    if (Status s = rotate(block, capacity, length, layout); s.failed()) {
      pending.clear();
      return s;
    }
    q = layout.rotated[0].get();
    k = layout.rotated[1].get();
  }
  GpuBuffer *pools[2] = {nullptr, nullptr};
  if (decoding) {
    // The pools' device copies first (their stale parts copied now), then
    // this call's keys and values appended to them, then the attention.
    AttentionKernel::PagedDeviceOperands operands;
    operands.q = q;
    operands.output = layout.heads.get();
    operands.keys = *block.cacheKeys;
    operands.values = *block.cacheValues;
    operands.length = length;
    operands.keyLength = block.keyLength;
    std::vector<GpuLaunch> attention;
    if (llvm::Error e = deviceOperands(block.operands, operands.extras))
      return Status::error(llvm::toString(std::move(e)));
    Status s = kernel.pagedDeviceLaunches(operands, pools, attention);
    if (!s.failed())
      s = appendRows(block, capacity, k, layout.parts[2].get(), pools);
    if (s.failed()) {
      pending.clear();
      return s;
    }
    llvm::append_range(pending, attention);
  } else {
    AttentionKernel::DeviceOperands operands;
    operands.q = q;
    operands.k = k;
    operands.v = layout.parts[2].get();
    operands.keyBias = kernel.takesKeyBias ? layout.keyBias.get() : nullptr;
    operands.output = layout.heads.get();
    if (llvm::Error e = deviceOperands(block.operands, operands.extras)) {
      pending.clear();
      return Status::error(llvm::toString(std::move(e)));
    }
    if (Status s = kernel.deviceLaunches(operands, pending); s.failed()) {
      pending.clear();
      return s;
    }
  }
  ++counted.attentionBlocks;
  if (Status s =
          finishChain(*layout.merge, layout.heads.get(), layout.merged.get(),
                      qkv.out, *block.o, block.oBias, batch, capacity, length,
                      *input, block.norm, residual, y);
      s.failed() || !decoding)
    return s;
  return readNewRows(block, capacity, k, layout.parts[2].get());
}

llvm::Expected<GpuLinearBackend::QueryLayouts *>
GpuLinearBackend::queryLayoutsFor(const CrossAttention &block) {
  const AttentionKernel &kernel = *block.kernel;
  int64_t b = block.batch, capacity = kernel.capacity, h = block.heads,
          d = block.headDim;
  QueryLayouts &found = queryLayouts[{b, capacity, kernel.keyCapacity, h, d}];
  if (found.merge)
    return &found;
  QueryLayouts made;
  llvm::Expected<std::unique_ptr<GpuKernel>> split =
      compileKernel(splitSource(b, capacity, h * d, 0, h, d));
  if (!split)
    return split.takeError();
  llvm::Expected<std::unique_ptr<GpuKernel>> merge =
      compileKernel(mergeSource(b, capacity, h, d));
  if (!merge)
    return merge.takeError();
  made.split = std::move(*split);
  made.merge = std::move(*merge);
  std::string error;
  auto buffer = [&](int64_t floats, std::shared_ptr<GpuBuffer> &into) {
    if (error.empty())
      into = device->allocate(uint64_t(floats) * sizeof(float), error);
  };
  buffer(b * h * capacity * d, made.q);
  buffer(b * h * capacity * d, made.heads);
  // The output product reads it whole, at that product's row capacity.
  buffer(rowCapacity(b * capacity) * h * d, made.merged);
  buffer(b * kernel.keyCapacity, made.keyBias);
  if (!error.empty())
    return llvm::createStringError(error);
  counted.layoutKernels += 2;
  found = std::move(made);
  return &found;
}

Status GpuLinearBackend::crossAttention(const float *x,
                                        const CrossAttention &block,
                                        const float *residual, float *y) {
  pending.clear(); // nothing a failed call queued
  const AttentionKernel &kernel = *block.kernel;
  int64_t batch = block.batch, length = block.length,
          capacity = kernel.capacity, keyCapacity = kernel.keyCapacity,
          keys = block.keys.shape.size() == 4 ? block.keys.shape[2] : -1;
  if (!kernel.deviceLaunches || !kernel.deviceCopy || length > capacity ||
      keys < 0 || keys > keyCapacity ||
      (keys < keyCapacity && !kernel.takesKeyBias))
    return Status::error("internal error: a chained cross-attention of " +
                         std::to_string(length) + " rows over " +
                         std::to_string(keys) + " keys, on a kernel of " +
                         std::to_string(capacity) + " and " +
                         std::to_string(keyCapacity));
  if (batch == 0 || length == 0)
    return Status::ok();
  const auto &q = static_cast<const DeviceWeight &>(*block.q);
  int64_t rows = batch * capacity, pad = capacity - length;
  llvm::Expected<QueryLayouts *> found = queryLayoutsFor(block);
  if (!found)
    return Status::error(llvm::toString(found.takeError()));
  QueryLayouts &layout = **found;
  // The memory's keys and values: copied once per memory.
  GpuBuffer *memory[2] = {nullptr, nullptr};
  for (int p = 0; p < 2; ++p)
    if (Status s =
            kernel.deviceCopy(p == 0 ? block.keys : block.values, memory[p]);
        s.failed())
      return s;
  std::string error;
  if (kernel.takesKeyBias && layout.biasKeys != keys) {
    // [B, 1, 1, keyCapacity]: -inf on the rows before the memory's.
    std::vector<float> bias(size_t(batch * keyCapacity), 0.0f);
    for (int64_t b = 0; b < batch; ++b)
      std::fill_n(bias.data() + b * keyCapacity, keyCapacity - keys, -INFINITY);
    if (!device->write(*layout.keyBias, bias.data(),
                       bias.size() * sizeof(float), error))
      return Status::error(error);
    counted.inputBytes += bias.size() * sizeof(float);
    layout.biasKeys = keys;
  }

  // x's rows at the end of their sequence's capacity, zeros before them.
  scratch.assign(size_t(rows) * q.in, 0.0f);
  for (int64_t b = 0; b < batch; ++b)
    std::copy_n(x + b * length * q.in, length * q.in,
                scratch.data() + (b * capacity + pad) * q.in);
  llvm::Expected<ChainInput> input =
      chainInput(scratch.data(), rows, q.in, block.norm);
  if (!input)
    return Status::error(llvm::toString(input.takeError()));
  llvm::Expected<Product *> projected =
      launch(*block.q, rows, biasEpilogue(block.qBias), input->source,
             block.qBias, {});
  if (!projected)
    return Status::error(llvm::toString(projected.takeError()));
  AttentionKernel::DeviceOperands operands;
  operands.q = layout.q.get();
  operands.k = memory[0];
  operands.v = memory[1];
  operands.keyBias = kernel.takesKeyBias ? layout.keyBias.get() : nullptr;
  operands.output = layout.heads.get();
  if (llvm::Error e = deviceOperands(block.operands, operands.extras)) {
    pending.clear();
    return Status::error(llvm::toString(std::move(e)));
  }
  Status s = queueLayout(*layout.split, "split", (*projected)->y.get(),
                         layout.q.get());
  if (!s.failed())
    s = kernel.deviceLaunches(operands, pending);
  if (s.failed()) {
    pending.clear();
    return s;
  }
  // The output product may be the Q product's kernel (the same sizes):
  // its result replaces the Q rows after the split has read them.
  ++counted.crossBlocks;
  return finishChain(*layout.merge, layout.heads.get(), layout.merged.get(),
                     q.out, *block.o, block.oBias, batch, capacity, length,
                     *input, block.norm, residual, y);
}
