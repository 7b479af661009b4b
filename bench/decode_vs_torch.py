#!/usr/bin/env python3
"""One decoding step (1 new token against a KV cache, GQA), attn against
PyTorch's scaled_dot_product_attention(enable_gqa=True) on the same
threads and shapes, in one script (B = 1, f32):

    bench/.venv/bin/python bench/decode_vs_torch.py [--kv-lens 4096,32768]
        [--q-heads 32] [--kv-heads 8] [--dim 128] [--repeat 7] [--rounds 3]

Each round times PyTorch (median of --repeat calls) and then runs
attn-decode-bench (which measures the machine's read bandwidth, times
attn's packed-heads kernel and checks it against an unfused OpenBLAS
attention); the table gives medians over rounds, the bandwidth attn's
kernel reaches (K and V read once) and its speed over PyTorch. PyTorch's
output is checked against a float64 NumPy attention (max |diff|), so a
wrong peer cannot look fast. The new token sits at the end of the cache,
so bottom-right causal keeps every key and the call needs no mask.
Results: bench/RESULTS.md.
"""
import argparse
import os
import re
import statistics
import subprocess
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))


def time_torch(lk, args):
    gen = torch.Generator().manual_seed(lk)
    q = torch.randn(1, args.q_heads, 1, args.dim, generator=gen)
    k = torch.randn(1, args.kv_heads, lk, args.dim, generator=gen)
    v = torch.randn(1, args.kv_heads, lk, args.dim, generator=gen)
    with torch.inference_mode():
        out = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        group = args.q_heads // args.kv_heads
        kr = k.double().repeat_interleave(group, 1)
        vr = v.double().repeat_interleave(group, 1)
        s = q.double() @ kr.transpose(-1, -2) / np.sqrt(args.dim)
        ref = torch.softmax(s, -1) @ vr
        diff = float((out.double() - ref).abs().max())
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3, diff


def run_attn(args):
    bench = os.path.join(args.build, "bin", "attn-decode-bench")
    out = subprocess.run(
        [bench, "--kv-lens=" + args.kv_lens, "--q-heads=%d" % args.q_heads,
         "--kv-heads=%d" % args.kv_heads, "--dim=%d" % args.dim,
         "--repeat=%d" % args.repeat, "--num-threads=%d" % args.threads],
        check=True, capture_output=True, text=True).stdout
    bandwidth = float(re.search(r"read bandwidth ([0-9.]+) GB/s", out).group(1))
    rows = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\d+)\s+\|\s+([0-9.]+)\s+", line)
        if m:
            rows[int(m.group(1))] = float(m.group(2))
    return bandwidth, rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kv-lens", default="4096,32768")
    parser.add_argument("--q-heads", type=int, default=32)
    parser.add_argument("--kv-heads", type=int, default=8)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    lens = [int(n) for n in args.kv_lens.split(",")]
    theirs, ours, bandwidths, diffs = {}, {}, [], {}
    for _ in range(args.rounds):
        for lk in lens:
            ms, diffs[lk] = time_torch(lk, args)
            theirs.setdefault(lk, []).append(ms)
        # PyTorch's OpenMP threads spin for a while after their last call
        # and would take the cores from attn's.
        time.sleep(1.0)
        bandwidth, rows = run_attn(args)
        bandwidths.append(bandwidth)
        for lk, ms in rows.items():
            ours.setdefault(lk, []).append(ms)
    bandwidth = statistics.median(bandwidths)
    print("Hq %d, Hkv %d, D %d, %d threads, torch %s, read bandwidth "
          "%.1f-%.1f GB/s" % (args.q_heads, args.kv_heads, args.dim,
                              args.threads, torch.__version__,
                              min(bandwidths), max(bandwidths)))
    print("%7s | %9s %7s %7s | %9s | %9s | %10s"
          % ("Lk", "attn ms", "GB/s", "% bw", "torch ms", "attn/torch",
             "torch diff"))
    for lk in lens:
        a, t = statistics.median(ours[lk]), statistics.median(theirs[lk])
        gbs = 2 * args.kv_heads * lk * args.dim * 4 / a * 1e-6
        print("%7d | %9.2f %7.1f %6.1f%% | %9.2f | %9.2fx | %10.1e"
              % (lk, a, gbs, gbs / bandwidth * 100, t, t / a, diffs[lk]))


if __name__ == "__main__":
    main()
