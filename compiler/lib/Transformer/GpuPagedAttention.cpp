//===- GpuPagedAttention.cpp - a layer stack's paged KV cache on a GPU ----===//
//
// See GpuPagedAttention.h.
//
//===----------------------------------------------------------------------===//
#include "GpuPagedAttention.h"
#include <algorithm>
#include <cstring>

using namespace attnrt;

static int64_t elements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

Status GpuPagedAttention::syncPool(GpuDevice &device, const KernelOperand &pool,
                                   const int32_t *pages, int64_t batch,
                                   int64_t tablePages, int64_t first,
                                   int64_t kvLength, GpuBuffer *&buffer) {
  uint64_t bytes = uint64_t(elements(pool.shape)) * sizeof(float);
  Mirror &mirror = mirrors[pool.owner ? pool.owner : pool.data];
  mirror.lastCall = calls;
  std::string error;
  if (!mirror.buffer || mirror.bytes != bytes ||
      mirror.version != pool.version || !pool.owner) {
    if (!mirror.buffer || mirror.bytes != bytes)
      mirror.buffer = device.allocate(bytes, error);
    mirror.bytes = bytes;
    mirror.version = pool.version;
    if (!mirror.buffer ||
        !device.write(*mirror.buffer, pool.data, bytes, error))
      return Status::error("copying a KV page pool to the device: " + error);
    copied.wholePools += 1;
    copied.wholeBytes += bytes;
    buffer = mirror.buffer.get();
    return Status::ok();
  }
  // Rows [first, kvLength) of each sequence: per page and KV head, one
  // copy of the rows they share.
  int64_t poolPages = pool.shape[0], kvHeads = pool.shape[1],
          pageRows = pool.shape[2], dim = pool.shape[3];
  uint64_t rowBytes = uint64_t(dim) * sizeof(float);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t row = std::max<int64_t>(first, 0); row < kvLength;) {
      int64_t inPage = row % pageRows,
              run = std::min(pageRows - inPage, kvLength - row);
      int64_t entry = row / pageRows;
      int64_t page = entry < tablePages ? pages[b * tablePages + entry] : -1;
      if (page < 0 || page >= poolPages)
        return Status::error("a page table entry outside the KV page pool");
      for (int64_t h = 0; h < kvHeads; ++h) {
        uint64_t at =
            uint64_t((page * kvHeads + h) * pageRows + inPage) * rowBytes;
        if (!device.writeAt(*mirror.buffer, at,
                            static_cast<const char *>(pool.data) + at,
                            uint64_t(run) * rowBytes, error))
          return Status::error("appending KV rows on the device: " + error);
        copied.rows += run;
        copied.rowBytes += uint64_t(run) * rowBytes;
      }
      row += run;
    }
  buffer = mirror.buffer.get();
  return Status::ok();
}

void GpuPagedAttention::forgetUnused() {
  if (calls % 256 == 0)
    for (auto m = mirrors.begin(); m != mirrors.end();)
      m = calls - m->second.lastCall > 1024 ? mirrors.erase(m) : std::next(m);
}

llvm::Expected<GpuPagedAttention::Compiled *>
GpuPagedAttention::kernelFor(int64_t batch, int64_t lq, int64_t poolPages,
                             int64_t pageRows, const int32_t *pages,
                             int64_t listed, int64_t kvLength, Sizes &sizes) {
  // Capacities: decoding's one query stays one; the table's pages cover
  // the length's capacity (never more pages than the pool has).
  sizes = {batch, queryRows(lq), poolPages, pageRows, 0};
  int64_t capacityPages =
      (capacityFor(std::max<int64_t>(kvLength, 1)) + pageRows - 1) / pageRows;
  sizes.tablePages = std::max(listed, std::min(capacityPages, poolPages));
  auto it = compiled.find(sizes);
  if (it == compiled.end()) {
    Compiled c;
    auto kernel = compile(sizes, c.function);
    if (!kernel)
      return kernel.takeError();
    c.kernel = std::move(*kernel);
    it = compiled.emplace(sizes, std::move(c)).first;
  }
  // The table padded with page 0 (never read past the length).
  table.assign(batch * sizes.tablePages, 0);
  for (int64_t b = 0; b < batch; ++b)
    std::copy_n(pages + b * listed, listed,
                table.begin() + b * sizes.tablePages);
  return &it->second;
}

Status GpuPagedAttention::deviceLaunches(
    const AttentionKernel::PagedDeviceOperands &on, GpuBuffer *pools[2],
    std::vector<GpuLaunch> &launches) {
  const KernelOperand &keys = on.keys, &values = on.values;
  if (keys.shape.size() != 4 || keys.shape != values.shape || !on.q ||
      !on.output || on.length < 1 || on.keyLength < on.length)
    return Status::error("internal error: the paged attention's device "
                         "operands are not q, the pools and the output");
  // One page per sequence: sequence b's is page b.
  int64_t batch = keys.shape[0];
  std::vector<int32_t> pages(batch);
  for (int64_t b = 0; b < batch; ++b)
    pages[b] = int32_t(b);
  Sizes sizes;
  llvm::Expected<Compiled *> compiledKernel =
      kernelFor(batch, on.length, batch, keys.shape[2], pages.data(), 1,
                on.keyLength, sizes);
  if (!compiledKernel)
    return Status::error(llvm::toString(compiledKernel.takeError()));
  GpuKernel &kernel = *(*compiledKernel)->kernel;
  GpuDevice &device = kernel.gpuDevice();
  ++calls;
  // The call's rows are the caller's to write: nothing past them copied.
  for (int p = 0; p < 2; ++p)
    if (Status s = syncPool(device, p == 0 ? keys : values, pages.data(), batch,
                            1, on.keyLength, on.keyLength, pools[p]);
        s.failed())
      return s;
  forgetUnused();
  std::string error;
  uint64_t tableBytes = table.size() * sizeof(int32_t);
  if (!tableBuffer || tableBuffer->bytes() < tableBytes)
    tableBuffer = device.allocate(tableBytes, error);
  if (!lengthBuffer)
    lengthBuffer = device.allocate(sizeof(int32_t), error);
  if (!tableBuffer || !lengthBuffer ||
      !device.write(*tableBuffer, table.data(), tableBytes, error) ||
      !device.write(*lengthBuffer, &on.keyLength, sizeof(int32_t), error))
    return Status::error("the paged attention's table on the device: " + error);
  std::vector<GpuOperand> operands;
  size_t extra = 0;
  for (const std::string &name : names) {
    operands.emplace_back();
    GpuBuffer *&buffer = operands.back().buffer;
    if (name == "q")
      buffer = on.q;
    else if (name == "k_pages" || name == "v_pages")
      buffer = pools[name == "v_pages"];
    else if (name == "page_table")
      buffer = tableBuffer.get();
    else if (name == "kv_length")
      buffer = lengthBuffer.get();
    else if (extra < on.extras.size())
      buffer = on.extras[extra++]; // variant operands, in order
    else
      return Status::error("the paged attention's operand '" + name +
                           "' is not on the device");
  }
  operands.emplace_back();
  operands.back().buffer = on.output;
  if (llvm::Error e =
          kernel.launchesOn((*compiledKernel)->function, operands, launches))
    return Status::error(llvm::toString(std::move(e)));
  return Status::ok();
}

Status GpuPagedAttention::call(const std::vector<KernelOperand> &inputs,
                               const KernelOperand &output) {
  if (inputs.size() != names.size())
    return Status::error("the paged attention takes " +
                         std::to_string(names.size()) + " operands, given " +
                         std::to_string(inputs.size()));
  auto find = [&](const char *name) -> const KernelOperand * {
    auto it = std::find(names.begin(), names.end(), name);
    return it == names.end() ? nullptr : &inputs[it - names.begin()];
  };
  const KernelOperand *q = find("q"), *keys = find("k_pages"),
                      *values = find("v_pages"), *pages = find("page_table"),
                      *length = find("kv_length");
  if (!q || !keys || !values || !pages || !length || q->shape.size() != 4 ||
      output.shape.size() != 4 || keys->shape.size() != 4 ||
      keys->shape != values->shape || pages->shape.size() != 2 ||
      pages->shape[0] != q->shape[0])
    return Status::error("the paged attention's operands are not q, "
                         "k_pages, v_pages, page_table and kv_length");
  int64_t batch = q->shape[0], heads = q->shape[1], lq = q->shape[2],
          dim = q->shape[3], valueDim = output.shape[3];
  int64_t kvLength = *static_cast<const int32_t *>(length->data);
  const int32_t *pageList = static_cast<const int32_t *>(pages->data);
  Sizes sizes;
  llvm::Expected<Compiled *> compiledKernel =
      kernelFor(batch, lq, keys->shape[0], keys->shape[2], pageList,
                pages->shape[1], kvLength, sizes);
  if (!compiledKernel)
    return Status::error(llvm::toString(compiledKernel.takeError()));
  GpuKernel &kernel = *(*compiledKernel)->kernel;
  GpuDevice &device = kernel.gpuDevice();

  ++calls;
  GpuBuffer *keyPool = nullptr, *valuePool = nullptr;
  for (auto [pool, buffer] :
       {std::pair(keys, &keyPool), std::pair(values, &valuePool)})
    if (Status s = syncPool(device, *pool, pageList, batch, pages->shape[1],
                            kvLength - lq, kvLength, *buffer);
        s.failed())
      return s;
  forgetUnused();

  // The queries and output padded at the start: the real rows end the
  // capacity, where bottom-right alignment puts them at the end of the
  // keys as before.
  int64_t queries = sizes.queries, pad = queries - lq;
  const float *queryData = static_cast<const float *>(q->data);
  float *outData = static_cast<float *>(output.data);
  if (pad) {
    paddedQueries.assign(batch * heads * queries * dim, 0.0f);
    for (int64_t bh = 0; bh < batch * heads; ++bh)
      std::memcpy(paddedQueries.data() + (bh * queries + pad) * dim,
                  queryData + bh * lq * dim, sizeof(float) * lq * dim);
    paddedResult.resize(batch * heads * queries * valueDim);
  }
  std::vector<GpuOperand> operands;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string &name = names[i];
    if (name == "k_pages")
      operands.push_back({nullptr, 0, keyPool});
    else if (name == "v_pages")
      operands.push_back({nullptr, 0, valuePool});
    else if (name == "page_table")
      operands.push_back({table.data(), table.size() * sizeof(int32_t)});
    else if (name == "q" && pad)
      operands.push_back(
          {paddedQueries.data(), paddedQueries.size() * sizeof(float)});
    else
      operands.push_back({inputs[i].data, 0});
  }
  operands.push_back({pad ? paddedResult.data() : outData, 0});
  if (llvm::Error e = kernel.call((*compiledKernel)->function, operands))
    return Status::error(llvm::toString(std::move(e)));
  if (pad)
    for (int64_t bh = 0; bh < batch * heads; ++bh)
      std::memcpy(outData + bh * lq * valueDim,
                  paddedResult.data() + (bh * queries + pad) * valueDim,
                  sizeof(float) * lq * valueDim);
  return Status::ok();
}
