//===- LayerAttention.cpp - a layer's attention blocks
//---------------------===//
//
// Projections into heads, RoPE, the KV cache (forward's dense rows, per
// sequence) and the calls of the compiled attention kernel: whole, per KV
// head on a cache with spare rows, per packed sequence, or over a paged
// cache (Serving.cpp keeps the pages).
//
//===----------------------------------------------------------------------===//
#include "LayerStackImpl.h"
#include <algorithm>
#include <chrono>

using namespace attnrt;

Status LayerStack::Impl::attention(int64_t layerIndex, AttentionBlock block,
                                   AttentionWeights &w, LayerCache &cache,
                                   BlockInput &input, const Activations *memory,
                                   int64_t batch, int64_t length,
                                   std::vector<float> &result,
                                   const float *residual) {
  const LayerConfig &l = config;
  int64_t rows = batch * length, hd = l.headDim;
  bool self = block == AttentionBlock::Self;
  bool decoding = self && l.isDecoder();
  Status status = Status::ok();
  if (self && packed.empty() && w.qkv.out > 0) {
    bool chained = false;
    Status s = chainedSelfAttention(w, cache, input, batch, length, result,
                                    residual, chained);
    if (s.failed() || chained)
      return s;
  }
  // [B, heads, n, D]: a projection of `in`, split into heads.
  auto project = [&](const LinearWeights &p, const float *in, int64_t n,
                     int64_t heads) {
    lm::Scratch flat(batch * n * heads * hd), split(flat.size());
    if (Status s = linear(p, in, batch * n, flat.data()); s.failed())
      status = s;
    lm::splitHeads(flat.data(), batch, n, heads, hd, split.data());
    return split;
  };
  if (!self && memory) {
    // The encoder memory's keys and values, kept for the calls that follow.
    lm::Scratch memoryKeys = project(w.k, memory->data.data(), memory->length,
                                     l.kvHeads),
                memoryValues = project(w.v, memory->data.data(), memory->length,
                                       l.kvHeads);
    const AttentionKernel *cross = nullptr;
    if (status.failed())
      return status;
    if (Status s = kernels(block, batch, length, memory->length, cross);
        s.failed())
      return s;
    cache.memoryKeys = KvRows();
    cache.memoryValues = KvRows();
    cache.memoryKeys.append(memoryKeys.data(), memory->length,
                            batch * l.kvHeads, hd, cross->bf16);
    cache.memoryValues.append(memoryValues.data(), memory->length,
                              batch * l.kvHeads, hd, cross->bf16);
  }
  if (status.failed())
    return status;
  // Cross-attention on a backend that keeps q where its products run,
  // the memory's keys and values copied there once: one chain there.
  if (!self && !cache.memoryKeys.empty() && packed.empty()) {
    bool chained = false;
    Status s = chainedCrossAttention(w, cache, input, batch, length, result,
                                     residual, chained);
    if (s.failed() || chained)
      return s;
  }
  const float *x = input.normalized(); // this block's input, on the host
  // This call's queries, keys and values, f32 [B, H or Hkv, length, D].
  // Self-attention projects them in one product when they are fused.
  lm::Scratch q, k, v;
  if (self && w.qkv.out > 0) {
    lm::Scratch flat(rows * w.qkv.out);
    if (Status s = linear(w.qkv, x, rows, flat.data()); s.failed())
      return s;
    q.resize(rows * l.heads * hd);
    k.resize(rows * l.kvHeads * hd);
    v.resize(k.size());
    lm::splitHeads(flat.data(), batch, length, l.heads, hd, q.data(),
                   w.qkv.out);
    lm::splitHeads(flat.data() + l.heads * hd, batch, length, l.kvHeads, hd,
                   k.data(), w.qkv.out);
    lm::splitHeads(flat.data() + (l.heads + l.kvHeads) * hd, batch, length,
                   l.kvHeads, hd, v.data(), w.qkv.out);
  } else {
    q = project(w.q, x, length, l.heads);
    if (self && !l.sharesQueryKey)
      k = project(w.k, x, length, l.kvHeads);
    if (self)
      v = project(w.v, x, length, l.kvHeads);
  }
  if (self && !packed.empty()) {
    lm::Scratch heads(rows * l.heads * hd);
    if (Status s = attendPacked(layerIndex, w, q, k, v, heads); s.failed())
      return s;
    lm::Scratch merged(rows * l.heads * hd);
    lm::mergeHeads(heads.data(), batch, length, l.heads, hd, merged.data());
    result.resize(rows * l.dModel); // written whole by the product
    return linear(w.o, merged.data(), rows, result.data(),
                  LinearEpilogue::Activation::None, nullptr, residual);
  }
  if (self && l.positions == "rope") {
    bool interleaved = l.ropeStyle == "interleaved";
    lm::rope(q.data(), batch, l.heads, length, hd, position, l.ropeBase,
             interleaved);
    if (!l.sharesQueryKey)
      lm::rope(k.data(), batch, l.kvHeads, length, hd, position, l.ropeBase,
               interleaved);
  }
  if (self && l.sharesQueryKey)
    k = q;
  if (status.failed())
    return status;
  if (!self && cache.memoryKeys.empty())
    return Status::error("a decoder with cross_attention needs the encoder "
                         "memory (attn-run --memory)");
  if (decoding && !cache.keys.empty() && l.attentionKind != "softmax")
    // Only softmax attention aligns its queries to the end of the keys
    // (bottom_right); the other kinds' causal forms assume queries and
    // keys start together.
    return Status::error(
        "attention kind " + l.attentionKind +
        " runs whole sequences only: call reset() before each forward "
        "(incremental decoding needs kind softmax)");
  int64_t keyLen = !self      ? cache.memoryKeys.length()
                   : decoding ? cache.keys.length() + length
                              : length;
  const AttentionKernel *kernel = nullptr;
  // Decoding: the kernel that reads the cache as pools, where the provider
  // has one (a GPU's: it keeps the cache on the device).
  if (self && decoding) {
    if (Status s = kernels(AttentionBlock::SelfCacheRows, batch, length, keyLen,
                           kernel);
        s.failed())
      return s;
    if (kernel && !kernel->readsAnyPages)
      kernel = nullptr;
  }
  if (!kernel)
    if (Status s = kernels(block, batch, length, keyLen, kernel); s.failed())
      return s;
  bool bf16 = kernel->bf16;

  // Keys and values the kernel reads: this call's (encoder), the cache's
  // (the cache holds rotated keys: a key's position never changes) or the
  // memory's. A bf16 kernel reads all of them in bf16.
  lm::Scratch16 q16, k16, v16;
  void *queries = q.data(), *keys = k.data(), *values = v.data();
  if (bf16) {
    q16.resize(q.size());
    lm::roundToBf16(q.data(), q.size(), q16.data());
    queries = q16.data();
  }
  std::vector<char> denseKeys, denseValues;
  if (!self) {
    keys = cache.memoryKeys.denseRows(denseKeys);
    values = cache.memoryValues.denseRows(denseValues);
  } else if (bf16 && !decoding) {
    k16.resize(k.size());
    v16.resize(v.size());
    lm::roundToBf16(k.data(), k.size(), k16.data());
    lm::roundToBf16(v.data(), v.size(), v16.data());
    keys = k16.data();
    values = v16.data();
  }

  // The kernel writes into `heads` (destination-passing style), or into
  // `heads16` when it runs in bf16.
  lm::Scratch heads(rows * l.heads * hd);
  lm::Scratch16 heads16(bf16 ? heads.size() : 0);
  void *output = bf16 ? static_cast<void *>(heads16.data()) : heads.data();
  auto start = std::chrono::steady_clock::now();
  if (Status s = decoding ? attendCached(*kernel, w, cache, k.data(), v.data(),
                                         queries, output, batch, length)
                          : callKernel(*kernel, w, queries, keys, values,
                                       output, batch, length, keyLen, nullptr,
                                       self ? nullptr : &cache.memoryKeys,
                                       self ? nullptr : &cache.memoryValues);
      s.failed())
    return s;
  attentionSeconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (bf16)
    lm::widenBf16(heads16.data(), heads16.size(), heads.data());
  lm::Scratch merged(rows * l.heads * hd);
  lm::mergeHeads(heads.data(), batch, length, l.heads, hd, merged.data());
  result.resize(rows * l.dModel); // written whole by the product
  if (Status s = linear(w.o, merged.data(), rows, result.data(),
                        LinearEpilogue::Activation::None, nullptr, residual);
      s.failed())
    return s;
  // Transformer-XL: keep only the last memory_length keys for the next
  // segment.
  if (decoding && l.memoryLength && cache.keys.length() > l.memoryLength) {
    cache.keys.keepLast(l.memoryLength);
    cache.values.keepLast(l.memoryLength);
  }
  return Status::ok();
}

bool LayerStack::Impl::variantOperands(const AttentionKernel &kernel,
                                       AttentionWeights &w,
                                       std::vector<KernelOperand> &operands) {
  static const std::string own[] = {
      "q", "k", "v", "qk", "k_pages", "v_pages", "page_table", "kv_length"};
  const std::vector<std::string> &names = kernel.argumentNames;
  for (size_t i = 0; i < names.size(); ++i) {
    if (std::find(std::begin(own), std::end(own), names[i]) != std::end(own))
      continue;
    auto it = w.extras.find(names[i]);
    if (it == w.extras.end() || (i < kernel.argumentShapes.size() &&
                                 it->second.shape != kernel.argumentShapes[i]))
      return false;
    operands.push_back({it->second.data.data(), it->second.shape});
  }
  return true;
}

Status LayerStack::Impl::chainedSelfAttention(
    AttentionWeights &w, LayerCache &cache, BlockInput &input, int64_t batch,
    int64_t length, std::vector<float> &result, const float *residual,
    bool &chained) {
  const LayerConfig &l = config;
  chained = false;
  bool decoding = l.isDecoder();
  int64_t before = cache.keys.length(), keyLen = before + length;
  const AttentionKernel *kernel = nullptr;
  if (Status s = kernels(decoding ? AttentionBlock::SelfCacheRows
                                  : AttentionBlock::Self,
                         batch, length, decoding ? keyLen : length, kernel);
      s.failed())
    return s;
  LinearBackend::SelfAttention chain;
  if (!kernel || !linearBackend->chainsSelfAttention(*kernel) ||
      (decoding && !kernel->pagedDeviceLaunches) ||
      (!decoding && !kernel->deviceLaunches) ||
      !variantOperands(*kernel, w, chain.operands))
    return Status::ok();
  chain.qkv = w.qkv.prepared.get();
  chain.o = w.o.prepared.get();
  chain.qkvBias = biasOf(w.qkv.bias);
  chain.oBias = biasOf(w.o.bias);
  chain.batch = batch;
  chain.length = length;
  chain.heads = l.heads;
  chain.kvHeads = l.kvHeads;
  chain.headDim = l.headDim;
  chain.kernel = kernel;
  chain.rope = l.positions == "rope";
  chain.ropeInterleaved = l.ropeStyle == "interleaved";
  chain.ropeBase = l.ropeBase;
  chain.position = position;
  // A decoder's new rows: room for them in the host's pools (at least the
  // query rows of the call: the chain appends them all, the padding rows
  // before a prompt's below row 0, where they are dropped), filled by the
  // chain. Padding rows after cached ones would overwrite those, so a
  // call whose queries do not fill their rows runs first or not chained.
  KernelOperand keys{nullptr, {}}, values{nullptr, {}};
  if (decoding) {
    int64_t queries = kernel->queryRows(length);
    if (queries != length && before != 0)
      return Status::ok();
    int64_t blocks = batch * l.kvHeads;
    cache.keys.extend(length, blocks, l.headDim, /*bf16=*/false, queries);
    cache.values.extend(length, blocks, l.headDim, /*bf16=*/false, queries);
    std::vector<int64_t> shape = {batch, l.kvHeads, cache.keys.capacityRows(),
                                  l.headDim};
    keys = {cache.keys.data(), shape, &cache.keys, cache.keys.version()};
    values = {cache.values.data(), shape, &cache.values,
              cache.values.version()};
    chain.cacheKeys = &keys;
    chain.cacheValues = &values;
    chain.keyLength = int32_t(keyLen);
  }
  chained = true;
  chain.norm = input.deviceNorm;
  input.normUsed = chain.norm != nullptr;
  result.resize(batch * length * l.dModel); // written whole by the chain
  auto start = std::chrono::steady_clock::now();
  Status s = linearBackend->selfAttention(input.chainInput(), chain, residual,
                                          result.data());
  attentionSeconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (decoding && s.failed()) {
    cache.keys.truncate(before);
    cache.values.truncate(before);
  }
  // Transformer-XL: keep only the last memory_length keys for the next
  // segment.
  if (decoding && l.memoryLength && cache.keys.length() > l.memoryLength) {
    cache.keys.keepLast(l.memoryLength);
    cache.values.keepLast(l.memoryLength);
  }
  return s;
}

Status LayerStack::Impl::chainedCrossAttention(
    AttentionWeights &w, LayerCache &cache, BlockInput &input, int64_t batch,
    int64_t length, std::vector<float> &result, const float *residual,
    bool &chained) {
  const LayerConfig &l = config;
  chained = false;
  KvRows &keys = cache.memoryKeys, &values = cache.memoryValues;
  const AttentionKernel *kernel = nullptr;
  if (Status s =
          kernels(AttentionBlock::Cross, batch, length, keys.length(), kernel);
      s.failed())
    return s;
  LinearBackend::CrossAttention chain;
  if (!kernel || kernel->bf16 || !kernel->deviceLaunches ||
      !kernel->deviceCopy || !linearBackend->chainsCrossAttention(*kernel) ||
      !variantOperands(*kernel, w, chain.operands))
    return Status::ok();
  chain.q = w.q.prepared.get();
  chain.o = w.o.prepared.get();
  chain.qBias = biasOf(w.q.bias);
  chain.oBias = biasOf(w.o.bias);
  chain.batch = batch;
  chain.length = length;
  chain.heads = l.heads;
  chain.headDim = l.headDim;
  chain.kernel = kernel;
  // The memory's rows are dense: appended once, whole.
  std::vector<int64_t> shape = {batch, l.kvHeads, keys.length(), l.headDim};
  std::vector<char> denseKeys, denseValues;
  chain.keys = {keys.denseRows(denseKeys), shape, &keys, keys.version()};
  chain.values = {values.denseRows(denseValues), shape, &values,
                  values.version()};
  chained = true;
  chain.norm = input.deviceNorm;
  input.normUsed = chain.norm != nullptr;
  result.resize(batch * length * l.dModel); // written whole by the chain
  auto start = std::chrono::steady_clock::now();
  Status s = linearBackend->crossAttention(input.chainInput(), chain, residual,
                                           result.data());
  attentionSeconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return s;
}

Status LayerStack::Impl::attendCached(const AttentionKernel &kernel,
                                      AttentionWeights &w, LayerCache &cache,
                                      const float *k, const float *v,
                                      void *queries, void *output,
                                      int64_t batch, int64_t length) {
  const LayerConfig &l = config;
  cache.keys.append(k, length, batch * l.kvHeads, l.headDim, kernel.bf16);
  cache.values.append(v, length, batch * l.kvHeads, l.headDim, kernel.bf16);
  int64_t keyLen = cache.keys.length();
  // The SelfCacheRows kernel reads the cache as pools, one page of its
  // capacity per sequence.
  if (kernel.readsAnyPages) {
    std::vector<int64_t> shape = {batch, l.kvHeads, cache.keys.capacityRows(),
                                  l.headDim};
    std::vector<int32_t> pages(batch);
    for (int64_t b = 0; b < batch; ++b)
      pages[b] = int32_t(b);
    PagedOperands operands{
        {cache.keys.data(), shape, &cache.keys, cache.keys.version()},
        {cache.values.data(), shape, &cache.values, cache.values.version()},
        {pages.data(), {batch, 1}},
        int32_t(keyLen)};
    return callKernel(kernel, w, queries, nullptr, nullptr, output, batch,
                      length, keyLen, &operands);
  }
  // The prompt compiles the kernel that later calls read the cache in
  // place with, so that no decode step waits for the compiler.
  const AttentionKernel *oneKvHead = nullptr;
  if (Status s =
          kernels(AttentionBlock::SelfOneKvHead, 1, length, keyLen, oneKvHead);
      s.failed())
    return s;
  if (!cache.keys.dense() && oneKvHead && oneKvHead->bf16 == kernel.bf16)
    return callPerKvHead(*oneKvHead, w, cache, queries, output, batch, length);
  std::vector<char> denseKeys, denseValues; // copies of a cache with spare rows
  return callKernel(kernel, w, queries, cache.keys.denseRows(denseKeys),
                    cache.values.denseRows(denseValues), output, batch, length,
                    keyLen);
}

Status LayerStack::Impl::attendPacked(int64_t layerIndex, AttentionWeights &w,
                                      const lm::Scratch &q,
                                      const lm::Scratch &k,
                                      const lm::Scratch &v,
                                      lm::Scratch &heads) {
  const LayerConfig &l = config;
  int64_t hd = l.headDim, total = 0;
  for (const PackedSequence &sequence : packed)
    total += sequence.length;
  // Rows [first, first + n) of every head of x [1, H, total, D], gathered
  // into [1, H, n, D].
  auto gather = [&](const float *x, int64_t nHeads, int64_t first, int64_t n,
                    lm::Scratch &into) {
    into.resize(nHeads * n * hd);
    for (int64_t h = 0; h < nHeads; ++h)
      std::copy_n(x + (h * total + first) * hd, n * hd,
                  into.data() + h * n * hd);
  };
  bool rope = l.positions == "rope", interleaved = l.ropeStyle == "interleaved";
  lm::Scratch qs, ks, vs, out;
  lm::Scratch16 q16, k16, v16, out16;
  int64_t first = 0;
  for (const PackedSequence &sequence : packed) {
    int64_t n = sequence.length, position = sequence.position;
    gather(q.data(), l.heads, first, n, qs);
    if (!l.sharesQueryKey)
      gather(k.data(), l.kvHeads, first, n, ks);
    gather(v.data(), l.kvHeads, first, n, vs);
    if (rope) {
      lm::rope(qs.data(), 1, l.heads, n, hd, position, l.ropeBase, interleaved);
      if (!l.sharesQueryKey)
        lm::rope(ks.data(), 1, l.kvHeads, n, hd, position, l.ropeBase,
                 interleaved);
    }
    if (l.sharesQueryKey) // lsh: keys are the (rotated) queries
      ks = qs;
    LayerCache *cache =
        sequence.caches ? &(*sequence.caches)[layerIndex] : nullptr;
    int64_t keyLen = n + (cache ? cache->keys.length() : 0);
    if (sequence.pages)
      keyLen = position + n;
    const AttentionKernel *kernel = nullptr;
    if (Status s = kernels(sequence.pages ? AttentionBlock::SelfPaged
                                          : AttentionBlock::Self,
                           1, n, keyLen, kernel);
        s.failed())
      return s;
    if (!kernel)
      return Status::error("the kernel provider has no paged attention");
    out.resize(l.heads * n * hd);
    void *queries = qs.data(), *keys = ks.data(), *values = vs.data(),
         *output = out.data();
    if (kernel->bf16) {
      for (auto [from, to] :
           {std::pair(&qs, &q16), std::pair(&ks, &k16), std::pair(&vs, &v16)}) {
        if ((cache || sequence.pages) && from != &qs)
          continue; // the cache rounds what it appends
        to->resize(from->size());
        lm::roundToBf16(from->data(), from->size(), to->data());
      }
      out16.resize(out.size());
      queries = q16.data();
      keys = k16.data();
      values = v16.data();
      output = out16.data();
    }
    auto start = std::chrono::steady_clock::now();
    Status called = Status::ok();
    if (sequence.pages) {
      writePages(layerIndex, *sequence.pages, position, n, ks.data(),
                 vs.data());
      PagedOperands paged = poolOperands(layerIndex, *sequence.pages, keyLen);
      called = callKernel(*kernel, w, queries, nullptr, nullptr, output, 1, n,
                          keyLen, &paged);
    } else if (cache) {
      called = attendCached(*kernel, w, *cache, ks.data(), vs.data(), queries,
                            output, 1, n);
    } else {
      called = callKernel(*kernel, w, queries, keys, values, output, 1, n, n);
    }
    if (called.failed())
      return called;
    attentionSeconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (kernel->bf16)
      lm::widenBf16(out16.data(), out16.size(), out.data());
    for (int64_t h = 0; h < l.heads; ++h)
      std::copy_n(out.data() + h * n * hd, n * hd,
                  heads.data() + (h * total + first) * hd);
    first += n;
  }
  return Status::ok();
}

Status LayerStack::Impl::callKernel(const AttentionKernel &kernel,
                                    AttentionWeights &w, void *queries,
                                    void *keys, void *values, void *output,
                                    int64_t batch, int64_t length,
                                    int64_t keyLen, const PagedOperands *paged,
                                    const KvRows *keyRows,
                                    const KvRows *valueRows) {
  const LayerConfig &l = config;
  int64_t hd = l.headDim;
  std::vector<KernelOperand> operands;
  // kv_length's (step caps it at 2^31)
  int32_t kvLength = paged ? paged->keyLen : int32_t(keyLen);
  for (size_t i = 0; i < kernel.argumentNames.size(); ++i) {
    const std::string &name = kernel.argumentNames[i];
    if (paged && name == "k_pages") {
      operands.push_back(paged->keys);
    } else if (paged && name == "v_pages") {
      operands.push_back(paged->values);
    } else if (paged && name == "page_table") {
      operands.push_back(paged->table);
    } else if (paged && name == "kv_length") {
      operands.push_back({&kvLength, {1}});
    } else if (name == "q" || name == "qk") {
      operands.push_back({queries, {batch, l.heads, length, hd}});
    } else if (name == "k" || name == "v") {
      const KvRows *rows = name == "k" ? keyRows : valueRows;
      operands.push_back({name == "k" ? keys : values,
                          {batch, l.kvHeads, keyLen, hd},
                          rows,
                          rows ? rows->version() : 0});
    } else {
      auto it = w.extras.find(name);
      if (it == w.extras.end())
        return Status::error("the attention needs operand '" + name +
                             "', which the layer has no weight for");
      if (i < kernel.argumentShapes.size() &&
          it->second.shape != kernel.argumentShapes[i])
        return Status::error(
            "self_attn." + name + " has shape " + shapeText(it->second.shape) +
            ", the attention over " + std::to_string(keyLen) + " keys needs " +
            shapeText(kernel.argumentShapes[i]));
      // Variant operands stay f32 (bf16 kernels take q, k and v only).
      operands.push_back({it->second.data.data(), it->second.shape});
    }
  }
  return kernel.call(operands, {output, {batch, l.heads, length, hd}});
}

LayerStack::Impl::PagedOperands LayerStack::Impl::poolOperands(
    int64_t layerIndex, const std::vector<int32_t> &pages, int64_t keyLen) {
  std::vector<int64_t> shape = {pool.pages, config.kvHeads, kKvPageRows,
                                config.headDim};
  std::vector<char> &keys = pool.keys[layerIndex],
                    &values = pool.values[layerIndex];
  return {{keys.data(), shape, &keys, pool.version},
          {values.data(), shape, &values, pool.version},
          {const_cast<int32_t *>(pages.data()), {1, int64_t(pages.size())}},
          int32_t(keyLen)};
}

Status LayerStack::Impl::callPerKvHead(const AttentionKernel &kernel,
                                       AttentionWeights &w, LayerCache &cache,
                                       void *queries, void *output,
                                       int64_t batch, int64_t length) {
  const LayerConfig &l = config;
  int64_t hd = l.headDim, group = l.heads / l.kvHeads;
  int64_t keyLen = cache.keys.length();
  int64_t elementBytes = kernel.bf16 ? 2 : 4;
  auto offset = [&](void *base, int64_t elements) {
    return static_cast<void *>(static_cast<char *>(base) +
                               elements * elementBytes);
  };
  // Operands other than q, k and v: tables with a row per query head.
  const std::vector<std::string> &names = kernel.argumentNames;
  std::vector<Tensor *> tables(names.size(), nullptr);
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == "q" || names[i] == "k" || names[i] == "v")
      continue;
    auto it = w.extras.find(names[i]);
    if (it == w.extras.end() || it->second.shape.empty() ||
        it->second.shape[0] != l.heads)
      return Status::error("the per-KV-head attention needs operand '" +
                           names[i] + "' with a row per query head");
    tables[i] = &it->second;
  }
  std::vector<int64_t> qShape = {1, group, length, hd},
                       kShape = {1, 1, keyLen, hd};
  std::vector<KernelOperand> operands(names.size());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t g = 0; g < l.kvHeads; ++g) {
      int64_t block = b * l.kvHeads + g;
      int64_t firstHead = (b * l.heads + g * group) * length * hd;
      for (size_t i = 0; i < names.size(); ++i) {
        if (names[i] == "q") {
          operands[i] = {offset(queries, firstHead), qShape};
        } else if (names[i] == "k" || names[i] == "v") {
          KvRows &rows = names[i] == "k" ? cache.keys : cache.values;
          operands[i] = {rows.at(block, 0), kShape};
        } else {
          // The group's rows; variant operands stay f32.
          std::vector<int64_t> shape = tables[i]->shape;
          int64_t rowSize = int64_t(tables[i]->data.size()) / shape[0];
          shape[0] = group;
          operands[i] = {tables[i]->data.data() + g * group * rowSize, shape};
        }
      }
      if (Status s = kernel.call(operands, {offset(output, firstHead), qShape});
          s.failed())
        return s;
    }
  return Status::ok();
}
