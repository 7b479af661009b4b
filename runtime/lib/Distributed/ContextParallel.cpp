//===- ContextParallel.cpp - ring and Ulysses attention over ranks --------===//
//
// docs/Distributed.md has the math and the communication volumes. The
// ring here sends each rank's own K/V block directly to the ranks that
// need it, one shift per step (step t: to rank r + t, from rank r - t), so
// that a block nobody at distance t needs is never sent; the volume of a
// dense attention is the classic ring's, (P - 1) blocks per rank.
//
//===----------------------------------------------------------------------===//
#include "attn/Runtime/ContextParallel.h"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

using namespace attnrt;

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Part `i` of `n` near-equal parts of `tokens` (the first tokens % n one
/// longer).
TokenChunk part(int64_t tokens, int64_t n, int64_t i) {
  int64_t base = tokens / n, extra = tokens % n;
  return {i * base + std::min(i, extra), base + (i < extra ? 1 : 0)};
}

int64_t rowsOf(const std::vector<TokenChunk> &chunks) {
  int64_t rows = 0;
  for (const TokenChunk &c : chunks)
    rows += c.length;
  return rows;
}

/// Rows [offset, offset + count) of each of `planes` planes of `rows` x
/// `width` floats into a dense [planes, count, width] buffer.
void gatherRows(const float *src, int64_t planes, int64_t rows, int64_t width,
                int64_t offset, int64_t count, float *dst) {
  for (int64_t p = 0; p < planes; ++p)
    std::memcpy(dst + p * count * width, src + (p * rows + offset) * width,
                sizeof(float) * count * width);
}
} // namespace

std::vector<TokenChunk> attnrt::rankChunks(SequenceLayout layout,
                                           int64_t tokens, int ranks,
                                           int rank) {
  if (layout == SequenceLayout::Contiguous)
    return {part(tokens, ranks, rank)};
  return {part(tokens, 2 * int64_t(ranks), rank),
          part(tokens, 2 * int64_t(ranks), 2 * int64_t(ranks) - 1 - rank)};
}

void attnrt::mergeAttentionPartial(float *o, float *lse, const float *oPart,
                                   const float *lsePart, int64_t rows,
                                   int64_t dv) {
  const float negInf = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < rows; ++i) {
    float a = lse[i], b = lsePart[i];
    if (b == negInf)
      continue; // the part kept nothing
    if (a == negInf) {
      std::memcpy(o + i * dv, oPart + i * dv, sizeof(float) * dv);
      lse[i] = b;
      continue;
    }
    // In double: the weights are shares of the total softmax mass.
    double m = std::max(a, b);
    double wa = std::exp(double(a) - m), wb = std::exp(double(b) - m);
    double total = wa + wb;
    wa /= total;
    wb /= total;
    for (int64_t c = 0; c < dv; ++c)
      o[i * dv + c] = float(wa * o[i * dv + c] + wb * oPart[i * dv + c]);
    lse[i] = float(m + std::log(total));
  }
}

bool attnrt::ringAttention(Communicator &comm, SequenceLayout layout,
                           int64_t tokens, const AttentionDims &dims,
                           BlockAttention &blocks, const float *q,
                           const float *k, const float *v, float *o,
                           ContextParallelStats &stats, std::string &error) {
  const int ranks = comm.size(), rank = comm.rank();
  const int64_t B = dims.batch, Hq = dims.queryHeads, Hkv = dims.keyHeads,
                D = dims.headDim, Dv = dims.valueDim;
  std::vector<std::vector<TokenChunk>> chunks(ranks);
  for (int s = 0; s < ranks; ++s)
    chunks[s] = rankChunks(layout, tokens, ranks, s);
  const std::vector<TokenChunk> &mine = chunks[rank];
  const int64_t n = rowsOf(mine);
  // Whether any query of rank x keeps any key of rank y: decided the same
  // way on every rank, so sender and receiver agree without asking.
  auto needs = [&](int x, int y) {
    for (const TokenChunk &a : chunks[x])
      for (const TokenChunk &b : chunks[y])
        if (a.length && b.length &&
            blocks.classify(a, b) != BlockClass::Empty)
          return true;
    return false;
  };

  const float negInf = -std::numeric_limits<float>::infinity();
  std::fill(o, o + B * Hq * n * Dv, 0.0f);
  std::vector<float> lse(B * Hq * n, negInf);
  std::vector<float> qBlock, kBlock, vBlock, oPart, lsePart;
  size_t sentBefore = comm.bytesSent();

  // The partial attention of this rank's queries over rank s's block.
  auto computeBlock = [&](int s, const float *ks, const float *vs) {
    auto start = Clock::now();
    const int64_t sRows = rowsOf(chunks[s]);
    int64_t qOffset = 0;
    for (const TokenChunk &a : mine) {
      int64_t kOffset = 0;
      for (const TokenChunk &b : chunks[s]) {
        BlockClass cls = a.length && b.length ? blocks.classify(a, b)
                                              : BlockClass::Empty;
        if (cls == BlockClass::Empty) {
          ++stats.blocksSkipped;
          kOffset += b.length;
          continue;
        }
        const float *qa = q, *kb = ks, *vb = vs;
        if (mine.size() > 1) {
          qBlock.resize(B * Hq * a.length * D);
          gatherRows(q, B * Hq, n, D, qOffset, a.length, qBlock.data());
          qa = qBlock.data();
        }
        if (chunks[s].size() > 1) {
          kBlock.resize(B * Hkv * b.length * D);
          vBlock.resize(B * Hkv * b.length * Dv);
          gatherRows(ks, B * Hkv, sRows, D, kOffset, b.length, kBlock.data());
          gatherRows(vs, B * Hkv, sRows, Dv, kOffset, b.length, vBlock.data());
          kb = kBlock.data();
          vb = vBlock.data();
        }
        oPart.resize(B * Hq * a.length * Dv);
        lsePart.resize(B * Hq * a.length);
        if (!blocks.run(a, b, cls, Hq, Hkv, qa, kb, vb, oPart.data(),
                        lsePart.data(), error))
          return false;
        for (int64_t p = 0; p < B * Hq; ++p)
          mergeAttentionPartial(o + (p * n + qOffset) * Dv,
                                lse.data() + p * n + qOffset,
                                oPart.data() + p * a.length * Dv,
                                lsePart.data() + p * a.length, a.length, Dv);
        ++stats.blocksComputed;
        kOffset += b.length;
      }
      qOffset += a.length;
    }
    stats.computeSeconds += secondsSince(start);
    return true;
  };

  // Two arriving slots: step t's block is computed while step t + 1's
  // arrives in the other.
  struct Step {
    int source = -1, destination = -1;
    std::unique_ptr<Communicator::Exchange> keys, values;
  };
  int64_t slotRows = 0;
  std::vector<Step> steps(ranks);
  for (int t = 1; t < ranks; ++t) {
    int destination = (rank + t) % ranks, source = (rank - t + ranks) % ranks;
    if (needs(destination, rank))
      steps[t].destination = destination;
    if (needs(rank, source)) {
      steps[t].source = source;
      slotRows = std::max(slotRows, rowsOf(chunks[source]));
    }
  }
  int usedSlots = std::min(ranks - 1, 2);
  std::vector<float> slotKeys[2], slotValues[2];
  for (int i = 0; i < usedSlots && slotRows; ++i) {
    slotKeys[i].resize(B * Hkv * slotRows * D);
    slotValues[i].resize(B * Hkv * slotRows * Dv);
  }
  stats.peakKeyValueBytes =
      sizeof(float) * (B * Hkv * n * (D + Dv) +
                       (slotRows ? usedSlots : 0) * B * Hkv * slotRows * (D + Dv));

  auto startStep = [&](int t) {
    Step &step = steps[t];
    if (step.source < 0 && step.destination < 0)
      return true;
    int slot = (t - 1) % 2;
    int64_t sourceRows = step.source < 0 ? 0 : rowsOf(chunks[step.source]);
    bool sending = step.destination >= 0;
    step.keys = comm.startExchange(
        k, sending ? sizeof(float) * B * Hkv * n * D : 0, step.destination,
        slotKeys[slot].data(), sizeof(float) * B * Hkv * sourceRows * D,
        step.source, error);
    if (!step.keys)
      return false;
    step.values = comm.startExchange(
        v, sending ? sizeof(float) * B * Hkv * n * Dv : 0, step.destination,
        slotValues[slot].data(), sizeof(float) * B * Hkv * sourceRows * Dv,
        step.source, error);
    return bool(step.values);
  };

  if (ranks > 1 && !startStep(1))
    return false;
  if (!computeBlock(rank, k, v))
    return false;
  for (int t = 1; t < ranks; ++t) {
    Step &step = steps[t];
    auto start = Clock::now();
    if (step.keys && (!step.keys->wait(error) || !step.values->wait(error)))
      return false;
    stats.waitSeconds += secondsSince(start);
    if (t + 1 < ranks && !startStep(t + 1))
      return false;
    if (step.source >= 0) {
      stats.blocksFrom.push_back(step.source);
      if (!computeBlock(step.source, slotKeys[(t - 1) % 2].data(),
                        slotValues[(t - 1) % 2].data()))
        return false;
    }
  }
  stats.bytesSent += comm.bytesSent() - sentBefore;
  return true;
}

bool attnrt::ulyssesAttention(Communicator &comm, SequenceLayout layout,
                              int64_t tokens, const AttentionDims &dims,
                              BlockAttention &blocks, const float *q,
                              const float *k, const float *v, float *o,
                              ContextParallelStats &stats,
                              std::string &error) {
  const int ranks = comm.size(), rank = comm.rank();
  const int64_t B = dims.batch, Hq = dims.queryHeads, Hkv = dims.keyHeads,
                D = dims.headDim, Dv = dims.valueDim;
  // Each rank gets Hq / P query heads and their key/value heads: Hkv / P
  // of them, or, with fewer key/value heads than ranks (GQA), the one its
  // query heads share (sent to every rank of the group).
  if (Hq % ranks || (Hkv % ranks && ranks % Hkv)) {
    error = "Ulysses needs the number of ranks (" + std::to_string(ranks) +
            ") to divide the query heads (" + std::to_string(Hq) +
            ") and to divide or be a multiple of the key/value heads (" +
            std::to_string(Hkv) + "); use the ring";
    return false;
  }
  std::vector<std::vector<TokenChunk>> chunks(ranks);
  int64_t maxRows = 0;
  for (int s = 0; s < ranks; ++s) {
    chunks[s] = rankChunks(layout, tokens, ranks, s);
    maxRows = std::max(maxRows, rowsOf(chunks[s]));
  }
  const int64_t n = rowsOf(chunks[rank]);
  size_t sentBefore = comm.bytesSent();

  // Sequence-sharded [B, H, n, W] -> head-sharded [B, H / P, tokens, W]:
  // block d of the send buffer is [B, H / P, maxRows, W] (rows padded).
  auto toHeads = [&](const float *local, int64_t heads, int64_t width,
                     std::vector<float> &whole) {
    int64_t share = std::max<int64_t>(heads / ranks, 1),
            block = B * share * maxRows * width;
    // The first head rank d gets (d * heads / P: with fewer heads than
    // ranks, several ranks get the same one).
    auto firstHead = [&](int d) { return d * heads / ranks; };
    std::vector<float> send(ranks * block, 0.0f), receive(ranks * block);
    for (int d = 0; d < ranks; ++d)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < share; ++h)
          std::memcpy(send.data() + d * block + (b * share + h) * maxRows * width,
                      local + (b * heads + firstHead(d) + h) * n * width,
                      sizeof(float) * n * width);
    if (!comm.allToAll(send.data(), receive.data(), sizeof(float) * block,
                       error))
      return false;
    whole.assign(B * share * tokens * width, 0.0f);
    for (int s = 0; s < ranks; ++s) {
      int64_t row = 0;
      for (const TokenChunk &c : chunks[s]) {
        for (int64_t p = 0; p < B * share; ++p)
          std::memcpy(whole.data() + (p * tokens + c.start) * width,
                      receive.data() + s * block + (p * maxRows + row) * width,
                      sizeof(float) * c.length * width);
        row += c.length;
      }
    }
    return true;
  };
  std::vector<float> qAll, kAll, vAll;
  if (!toHeads(q, Hq, D, qAll) || !toHeads(k, Hkv, D, kAll) ||
      !toHeads(v, Hkv, Dv, vAll))
    return false;
  stats.peakKeyValueBytes = sizeof(float) * (kAll.size() + vAll.size());

  const int64_t hq = Hq / ranks, hk = std::max<int64_t>(Hkv / ranks, 1);
  TokenChunk all{0, tokens};
  std::vector<float> oAll(B * hq * tokens * Dv), lseAll(B * hq * tokens);
  auto start = Clock::now();
  if (!blocks.run(all, all, blocks.classify(all, all), hq, hk, qAll.data(),
                  kAll.data(), vAll.data(), oAll.data(), lseAll.data(), error))
    return false;
  stats.computeSeconds += secondsSince(start);
  ++stats.blocksComputed;

  // And back: block s of the send buffer is rank s's rows of these heads.
  int64_t block = B * hq * maxRows * Dv;
  std::vector<float> send(ranks * block, 0.0f), receive(ranks * block);
  for (int d = 0; d < ranks; ++d) {
    int64_t row = 0;
    for (const TokenChunk &c : chunks[d]) {
      for (int64_t p = 0; p < B * hq; ++p)
        std::memcpy(send.data() + d * block + (p * maxRows + row) * Dv,
                    oAll.data() + (p * tokens + c.start) * Dv,
                    sizeof(float) * c.length * Dv);
      row += c.length;
    }
  }
  if (!comm.allToAll(send.data(), receive.data(), sizeof(float) * block,
                     error))
    return false;
  for (int s = 0; s < ranks; ++s)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < hq; ++h)
        std::memcpy(o + (b * Hq + s * hq + h) * n * Dv,
                    receive.data() + s * block + (b * hq + h) * maxRows * Dv,
                    sizeof(float) * n * Dv);
  stats.bytesSent += comm.bytesSent() - sentBefore;
  return true;
}
