//===- TileCounters.cpp - key tiles visited by compiled kernels -----------===//
#include "attn/Compiler/TileCounters.h"
#include <atomic>
#include <initializer_list>

namespace {
std::atomic<int64_t> queryTile{0}, queryPeriod{0}, keyTile{0}, queryTiles{0},
    visited{0}, partial{0}, backwardQueryTile{0}, backwardKeyTile{0},
    backwardQueryPass{0}, backwardKeyPass{0}, backwardFused{0};
} // namespace

extern "C" void attn_record_tiles(int64_t tq, int64_t period, int64_t tk,
                                  int64_t v, int64_t p) {
  queryTile.store(tq, std::memory_order_relaxed);
  queryPeriod.store(period, std::memory_order_relaxed);
  keyTile.store(tk, std::memory_order_relaxed);
  queryTiles.fetch_add(1, std::memory_order_relaxed);
  visited.fetch_add(v, std::memory_order_relaxed);
  partial.fetch_add(p, std::memory_order_relaxed);
}

extern "C" void attn_record_backward_tiles(int64_t tq, int64_t tk,
                                           int64_t queryPass, int64_t keyPass) {
  backwardQueryTile.store(tq, std::memory_order_relaxed);
  backwardKeyTile.store(tk, std::memory_order_relaxed);
  backwardQueryPass.fetch_add(queryPass, std::memory_order_relaxed);
  backwardKeyPass.fetch_add(keyPass, std::memory_order_relaxed);
}

extern "C" void attn_record_backward_fused_tiles(int64_t tq, int64_t tk,
                                                 int64_t visitedTiles) {
  backwardQueryTile.store(tq, std::memory_order_relaxed);
  backwardKeyTile.store(tk, std::memory_order_relaxed);
  backwardFused.fetch_add(visitedTiles, std::memory_order_relaxed);
}

void attnrt::resetTileCounts() {
  for (std::atomic<int64_t> *counter :
       {&queryTile, &queryPeriod, &keyTile, &queryTiles, &visited, &partial,
        &backwardQueryTile, &backwardKeyTile, &backwardQueryPass,
        &backwardKeyPass, &backwardFused})
    counter->store(0);
}

attnrt::TileCounts attnrt::readTileCounts() {
  return {queryTile.load(),         queryPeriod.load(),
          keyTile.load(),           queryTiles.load(),
          visited.load(),           partial.load(),
          backwardQueryTile.load(), backwardKeyTile.load(),
          backwardQueryPass.load(), backwardKeyPass.load(),
          backwardFused.load()};
}
