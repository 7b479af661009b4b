//===- BandwidthProbe.h - measured memory read bandwidth --------*- C++ -*-===//
#ifndef ATTN_BENCH_BANDWIDTHPROBE_H
#define ATTN_BENCH_BANDWIDTHPROBE_H

/// GB/s of summing a buffer far larger than the caches on `threads`
/// threads (each its own contiguous part): what a kernel that reads its
/// operands once from memory can reach.
double measureReadBandwidth(int threads);

#endif // ATTN_BENCH_BANDWIDTHPROBE_H
