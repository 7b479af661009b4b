//===- Serving.cpp - continuous batching over a paged KV cache ------------===//
//
// LayerStack's live sequences (docs/Transformer.md, "Serving"): adding and
// removing them, a step over the new tokens of any of them, and the page
// pool their keys and values live in.
//
//===----------------------------------------------------------------------===//
#include "LayerStackImpl.h"
#include "attn/Runtime/InputLimits.h"
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>

using namespace attnrt;

Status LayerStack::addSequence(int64_t &id) {
  const LayerConfig &l = impl->config;
  if (!l.isDecoder() || l.hasCrossAttention() || l.memoryLength ||
      l.attentionKind != "softmax")
    return Status::error(
        "continuous batching needs a decoder stack of attention kind softmax "
        "without cross-attention or Transformer-XL memory (an encoder keeps "
        "no KV cache: forward_packed batches encoder sequences)");
  if (impl->maxSequences && int64_t(impl->served.size()) >= impl->maxSequences)
    return Status::error("the stack serves " +
                         std::to_string(impl->served.size()) +
                         " sequences, its limit: remove one first");
  if (!impl->servesPaged) {
    // A provider with a paged kernel: one page pool for all sequences.
    const AttentionKernel *paged = nullptr;
    if (Status s = impl->kernels(AttentionBlock::SelfPaged, 1, -1, -1, paged);
        s.failed())
      return s;
    impl->servesPaged = paged != nullptr;
    impl->pool.elementBytes = paged && paged->bf16 ? 2 : 4;
    impl->pool.keys.resize(paged ? l.layers : 0);
    impl->pool.values.resize(paged ? l.layers : 0);
  }
  id = impl->nextSequenceId++;
  // Without pages, each sequence keeps its rows per layer.
  impl->served[id].caches.resize(*impl->servesPaged ? 0 : l.layers);
  return Status::ok();
}

Status LayerStack::removeSequence(int64_t id) {
  auto it = impl->served.find(id);
  if (it == impl->served.end())
    return Status::error("no live sequence " + std::to_string(id));
  impl->releasePages(it->second, 0);
  impl->served.erase(it);
  return Status::ok();
}

int64_t LayerStack::Impl::pageBytes() const {
  return config.kvHeads * kKvPageRows * config.headDim * pool.elementBytes;
}

void LayerStack::Impl::poisonPages(int64_t first, int64_t count) {
  int64_t elements = count * pageBytes() / pool.elementBytes,
          at = first * pageBytes();
  for (auto *pools : {&pool.keys, &pool.values})
    for (std::vector<char> &layer : *pools) {
      if (pool.elementBytes == 4)
        std::fill_n(reinterpret_cast<float *>(layer.data() + at), elements,
                    NAN);
      else // bf16 NaN
        std::fill_n(reinterpret_cast<uint16_t *>(layer.data() + at), elements,
                    uint16_t(0x7fc0));
    }
}

Status LayerStack::Impl::reservePages(ServedSequence &sequence, int64_t rows) {
  int64_t want = (rows + kKvPageRows - 1) / kKvPageRows;
  while (int64_t(sequence.pages.size()) < want) {
    if (pool.free.empty()) {
      // Double the pool (at least 16 pages); new pages hold NaN.
      int64_t grown = std::max<int64_t>(16, 2 * pool.pages);
      if (grown > INT32_MAX)
        return Status::error("the KV page pool cannot grow past 2^31 pages");
      double need = double(grown - pool.pages) * pageBytes() * 2 * config.layers;
      if (int64_t budget = memoryBudgetBytes(); budget && need > double(budget))
        return Status::error(
            "the KV page pool cannot grow to " + std::to_string(grown) +
            " pages: " + std::to_string(int64_t(need / (1 << 20))) +
            " MiB more than this process can allocate");
      for (auto *pools : {&pool.keys, &pool.values})
        for (std::vector<char> &layer : *pools)
          layer.resize(grown * pageBytes());
      poisonPages(pool.pages, grown - pool.pages);
      pool.version = newRowsVersion();
      for (int64_t p = grown - 1; p >= pool.pages; --p)
        pool.free.push_back(int32_t(p));
      pool.pages = grown;
    }
    sequence.pages.push_back(pool.free.back());
    pool.free.pop_back();
  }
  return Status::ok();
}

void LayerStack::Impl::releasePages(ServedSequence &sequence, int64_t rows) {
  size_t keep = (rows + kKvPageRows - 1) / kKvPageRows;
  while (sequence.pages.size() > keep) {
    poisonPages(sequence.pages.back(), 1);
    pool.free.push_back(sequence.pages.back());
    sequence.pages.pop_back();
  }
}

void LayerStack::Impl::writePages(int64_t layerIndex,
                                  const std::vector<int32_t> &pages,
                                  int64_t position, int64_t n, const float *k,
                                  const float *v) {
  int64_t hd = config.headDim;
  for (int64_t t = 0; t < n; ++t) {
    int64_t row = position + t;
    int64_t page = pages[row / kKvPageRows], inPage = row % kKvPageRows;
    for (int64_t h = 0; h < config.kvHeads; ++h) {
      int64_t at = ((page * config.kvHeads + h) * kKvPageRows + inPage) * hd;
      const float *from[2] = {k + (h * n + t) * hd, v + (h * n + t) * hd};
      std::vector<char> *to[2] = {&pool.keys[layerIndex],
                                  &pool.values[layerIndex]};
      for (int i = 0; i < 2; ++i) {
        char *base = to[i]->data() + at * pool.elementBytes;
        if (pool.elementBytes == 2)
          lm::roundToBf16(from[i], hd,
                          reinterpret_cast<uint16_t *>(base));
        else
          std::copy_n(from[i], hd, reinterpret_cast<float *>(base));
      }
    }
  }
}

Status LayerStack::step(const std::vector<int64_t> &ids, const Activations &x,
                        const std::vector<int64_t> &lengths,
                        Activations &result) {
  const LayerConfig &l = impl->config;
  if (x.width != l.dModel ||
      int64_t(x.data.size()) != x.batch * x.length * x.width)
    return Status::error(
        "the input is " + shapeText({x.batch, x.length, x.width}) +
        ", a step takes [1, tokens, d_model = " + std::to_string(l.dModel) +
        "]");
  if (ids.size() != lengths.size())
    return Status::error("a step takes one length per sequence id (" +
                         std::to_string(ids.size()) + " ids, " +
                         std::to_string(lengths.size()) + " lengths)");
  if (std::string error = Impl::checkPackedLengths(x, lengths); !error.empty())
    return Status::error(error);
  std::vector<Impl::PackedSequence> packed;
  std::set<int64_t> seen;
  for (size_t i = 0; i < ids.size(); ++i) {
    auto it = impl->served.find(ids[i]);
    if (it == impl->served.end())
      return Status::error("no live sequence " + std::to_string(ids[i]) +
                           " (ids come from adding a sequence)");
    if (!seen.insert(ids[i]).second)
      return Status::error("sequence " + std::to_string(ids[i]) +
                           " appears twice in one step");
    Impl::ServedSequence &sequence = it->second;
    if (lengths[i] > INT32_MAX - sequence.length)
      return Status::error("sequence " + std::to_string(ids[i]) +
                           " would pass 2^31 tokens");
    if (impl->maxSequenceTokens &&
        lengths[i] > impl->maxSequenceTokens - sequence.length)
      return Status::error("sequence " + std::to_string(ids[i]) + " holds " +
                           std::to_string(sequence.length) + " tokens; " +
                           std::to_string(lengths[i]) +
                           " more pass its capacity of " +
                           std::to_string(impl->maxSequenceTokens));
    packed.push_back({lengths[i], sequence.length,
                      sequence.caches.empty() ? nullptr : &sequence.caches,
                      nullptr});
  }
  double need = impl->forwardBytes(1, x.length, 0);
  if (int64_t budget = memoryBudgetBytes(); budget && need > double(budget))
    return Status::error(
        "the step's " + std::to_string(x.length) + " tokens need about " +
        std::to_string(int64_t(need / (1 << 20))) +
        " MiB of buffers, more than the " + std::to_string(budget >> 20) +
        " MiB this process can still allocate");
  // Pages for the step's rows (a paged cache), taken before any layer runs.
  Status s = Status::ok();
  for (size_t i = 0; i < ids.size() && !s.failed(); ++i) {
    Impl::ServedSequence &sequence = impl->served[ids[i]];
    if (*impl->servesPaged) {
      s = impl->reservePages(sequence, sequence.length + lengths[i]);
      packed[i].pages = &sequence.pages;
    }
  }
  if (!s.failed()) {
    impl->packed = packed;
    s = impl->run(x, nullptr, result, onLayer);
    impl->packed.clear();
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    Impl::ServedSequence &sequence = impl->served[ids[i]];
    if (!s.failed()) {
      sequence.length += lengths[i];
      continue;
    }
    // Undo what the layers before the failure appended.
    impl->releasePages(sequence, sequence.length);
    for (LayerCache &cache : sequence.caches) {
      cache.keys.truncate(sequence.length);
      cache.values.truncate(sequence.length);
    }
  }
  return s;
}

int64_t LayerStack::sequenceLength(int64_t id) const {
  auto it = impl->served.find(id);
  return it == impl->served.end() ? -1 : it->second.length;
}

int64_t LayerStack::liveSequences() const { return impl->served.size(); }

int64_t LayerStack::cacheBytes() const {
  int64_t bytes = 0;
  for (const auto &[id, sequence] : impl->served)
    for (const LayerCache &cache : sequence.caches)
      bytes += cache.keys.heldBytes() + cache.values.heldBytes();
  return bytes +
         usedPages() * 2 * impl->config.layers * impl->pageBytes();
}

int64_t LayerStack::poolPages() const { return impl->pool.pages; }

int64_t LayerStack::usedPages() const {
  return impl->pool.pages - int64_t(impl->pool.free.size());
}

void LayerStack::setServingLimits(int64_t maxSequences,
                                  int64_t maxSequenceTokens) {
  impl->maxSequences = std::max<int64_t>(maxSequences, 0);
  impl->maxSequenceTokens = std::max<int64_t>(maxSequenceTokens, 0);
}
