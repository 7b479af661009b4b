//===- PeakProbe.h - measured FP32 FMA peak ---------------------*- C++ -*-===//
#ifndef ATTN_BENCH_PEAKPROBE_H
#define ATTN_BENCH_PEAKPROBE_H

/// FP32 GFLOP/s of independent FMA chains on `threads` threads, using the
/// widest vector FMA this CPU has (AVX-512 or AVX2+FMA).
double measurePeakGflops(int threads);

#endif // ATTN_BENCH_PEAKPROBE_H
