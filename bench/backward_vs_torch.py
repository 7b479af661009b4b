#!/usr/bin/env python3
"""Attention forward + backward on the CPU (issue 41): attn's
differentiable scaled_dot_product_attention (the forward's kernels, then
attn.attention_grad lowered by attn-lower-attention-grad) against PyTorch's
SDPA forward + backward, float32, same inputs and threads, in one process.
Rounds alternate attn / PyTorch; prints medians of --repeat rounds, the
ratio, GFLOP/s (forward 2 products + backward 5 products of Lq x Lk x D,
2 per multiply-add, halved when causal) and % of the FMA peak attn-bench
measures, and the largest gradient difference between the two.

    .venv/bin/python bench/backward_vs_torch.py [--repeat 5]

Results: bench/RESULTS.md, "Backward".
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import attn  # noqa: E402

CASES = [  # (name, B, Hq, Hkv, L, D, causal)
    ("dense L=1024 D=64", 1, 8, 8, 1024, 64, False),
    ("causal L=1024 D=64", 1, 8, 8, 1024, 64, True),
    ("causal GQA 4:1 L=2048 D=64", 1, 8, 2, 2048, 64, True),
    ("causal L=1024 D=128", 1, 8, 8, 1024, 128, True),
]


def step(fn, q, k, v, do, causal, gqa):
    q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
    out = fn(q, k, v, is_causal=causal, enable_gqa=gqa)
    out.backward(do)
    return q.grad, k.grad, v.grad


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--build", default="build")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    peak = max(float(re.search(r"peak ([0-9.]+) GFLOP/s", subprocess.run(
        [f"{args.build}/bin/attn-bench", "--sizes=64", "--repeat=1",
         f"--num-threads={args.threads}"], capture_output=True, text=True).stdout).group(1))
        for _ in range(3))
    print(f"{args.threads} threads, FP32 FMA peak {peak:.1f} GFLOP/s (attn-bench), "
          f"torch {torch.__version__}")
    for name, B, Hq, Hkv, L, D, causal in CASES:
        g = torch.Generator().manual_seed(0)
        q = torch.randn(B, Hq, L, D, generator=g)
        k = torch.randn(B, Hkv, L, D, generator=g)
        v = torch.randn(B, Hkv, L, D, generator=g)
        do = torch.randn(B, Hq, L, D, generator=g)
        gqa = Hq != Hkv
        ours = step(attn.scaled_dot_product_attention, q, k, v, do, causal, gqa)  # compile
        theirs = step(torch.nn.functional.scaled_dot_product_attention, q, k, v, do, causal, gqa)
        diff = max(float((a - b).abs().max() / b.abs().max()) for a, b in zip(ours, theirs))
        times = {"attn": [], "torch": []}
        for _ in range(args.repeat):
            for who, fn in (("attn", attn.scaled_dot_product_attention),
                            ("torch", torch.nn.functional.scaled_dot_product_attention)):
                start = time.perf_counter()
                step(fn, q, k, v, do, causal, gqa)
                times[who].append(time.perf_counter() - start)
        flops = 7 * 2 * B * Hq * L * L * D / (2 if causal else 1)
        a, t = statistics.median(times["attn"]), statistics.median(times["torch"])
        print(f"{name:28s} attn {a * 1e3:8.1f} ms ({flops / a * 1e-9:6.1f} GFLOP/s, "
              f"{100 * flops / a * 1e-9 / peak:4.1f}% of peak)   torch {t * 1e3:8.1f} ms "
              f"({flops / t * 1e-9:6.1f} GFLOP/s)   attn/torch time {a / t:5.2f}   "
              f"max scaled grad difference {diff:.1e}")


if __name__ == "__main__":
    main()
