#!/usr/bin/env python3
"""The backward of attention on the CPU (issue 41): attn's differentiable
scaled_dot_product_attention / flex_attention (the forward's kernels, then
attn.attention_grad lowered by attn-attention-grad-to-cpu, the fused
backward kernel) against PyTorch's SDPA backward through torch.autograd,
float32, same inputs and threads, in one process.

Each round times a forward call and, separately, its `.backward(dO)`;
rounds alternate attn / PyTorch and the script prints medians of --repeat
rounds. Backward GFLOP/s count 2.5x the forward's FLOPs, as FlashAttention
does (5 products of Lq x Lk x D, 2 FLOPs per multiply-add; the kept
fraction of the scores for causal and the sliding window), % of the FMA
peak attn-bench measures, the speedup (PyTorch backward time / attn's) and
the largest gradient difference between the two. PyTorch has no sparse
backward on CPU: the sliding window's peer is SDPA with a dense boolean
mask (up to --masked-max), and FlexAttention refuses the backward on CPU
("FlexAttention does not support backward on CPU"; torch 2.15), so it is
not a peer here.

    .venv/bin/python bench/backward_vs_torch.py [--repeat 5] [--quick]

Results: bench/RESULTS.md, "Backward".
"""
import argparse
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import attn  # noqa: E402
sys.path.insert(0, os.path.dirname(__file__))
from peak import measured_peak  # noqa: E402

WINDOW = 256  # sliding window: keys i - 256 .. i
PADDING_KEPT = 0.75  # padding mask: the kept fraction of each row's keys


def cases(quick):
    """(name, B, Hq, Hkv, L, D, kind)"""
    sizes = [1024, 2048] if quick else [1024, 2048, 4096, 8192]
    out = [(f"dense L={n} D=64", 1, 8, 8, n, 64, "dense") for n in sizes]
    out += [(f"causal L={n} D=64", 1, 8, 8, n, 64, "causal") for n in sizes]
    out += [("causal GQA 4:1 L=2048 D=64", 1, 8, 2, 2048, 64, "causal"),
            ("causal L=1024 D=128", 1, 8, 8, 1024, 128, "causal")]
    windows = [2048, 4096] if quick else [2048, 4096, 8192, 16384]
    out += [(f"window {WINDOW} L={n} D=64", 1, 8, 8, n, 64, "window") for n in windows]
    # A padded batch: a boolean attn_mask [B, 1, 1, L] dropping each
    # sequence's last quarter of keys (SDPA's usual padding mask).
    out += [("padding mask B=4 L=1024", 4, 8, 8, 1024, 64, "padding")]
    return out


def kept_fraction(kind, n):
    if kind == "dense":
        return 1.0
    if kind == "causal":
        return (n + 1) / (2 * n)
    if kind == "padding":
        return PADDING_KEPT
    return sum(min(i, WINDOW) + 1 for i in range(n)) / (n * n)


def callers(kind, n, gqa, masked_max):
    """attn's call and PyTorch's (None when it is not run at this size)."""
    if kind in ("dense", "causal"):
        causal = kind == "causal"
        return (lambda q, k, v: attn.scaled_dot_product_attention(
                    q, k, v, is_causal=causal, enable_gqa=gqa),
                lambda q, k, v: F.scaled_dot_product_attention(
                    q, k, v, is_causal=causal, enable_gqa=gqa))
    if kind == "padding":
        # Rows keep the first 3/4 of the keys: every tile is masked.
        mask = torch.arange(n) < int(n * PADDING_KEPT)
        mask = mask.view(1, 1, 1, n).expand(4, 1, 1, n)
        return (lambda q, k, v: attn.scaled_dot_product_attention(q, k, v, attn_mask=mask),
                lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    mod = lambda b, h, q, kv: (q >= kv) & (q - kv <= WINDOW)  # noqa: E731
    mask = attn.create_block_mask(mod, None, None, n, n)
    ours = lambda q, k, v: attn.flex_attention(q, k, v, block_mask=mask)  # noqa: E731
    if n > masked_max:
        return ours, None
    i = torch.arange(n)
    dense = mod(0, 0, i[:, None], i[None, :])
    return ours, lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=dense)


def step(fn, q, k, v, do):
    """(forward seconds, backward seconds, gradients)"""
    q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
    start = time.perf_counter()
    out = fn(q, k, v)
    middle = time.perf_counter()
    out.backward(do)
    end = time.perf_counter()
    return middle - start, end - middle, (q.grad, k.grad, v.grad)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--build", default="build")
    parser.add_argument("--quick", action="store_true", help="the smaller sizes only")
    parser.add_argument("--masked-max", type=int, default=4096,
                        help="largest L at which PyTorch runs the window as a dense mask")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    peak = measured_peak(args.build, args.threads)
    print(f"{args.threads} threads, FP32 FMA peak {peak:.1f} GFLOP/s (attn-bench), "
          f"torch {torch.__version__}, medians of {args.repeat}")
    for name, B, Hq, Hkv, L, D, kind in cases(args.quick):
        g = torch.Generator().manual_seed(0)
        q = torch.randn(B, Hq, L, D, generator=g)
        k = torch.randn(B, Hkv, L, D, generator=g)
        v = torch.randn(B, Hkv, L, D, generator=g)
        do = torch.randn(B, Hq, L, D, generator=g)
        ours, theirs = callers(kind, L, Hq != Hkv, args.masked_max)
        peers = {"attn": ours}
        if theirs:
            peers["torch"] = theirs
        grads = {who: step(fn, q, k, v, do)[2] for who, fn in peers.items()}  # compile
        times = {who: ([], []) for who in peers}
        for _ in range(args.repeat):
            for who, fn in peers.items():
                forward, backward, _ = step(fn, q, k, v, do)
                times[who][0].append(forward)
                times[who][1].append(backward)
        forward_flops = 4 * B * Hq * L * L * D * kept_fraction(kind, L)
        flops = 2.5 * forward_flops
        fa, ba = (statistics.median(t) for t in times["attn"])
        line = (f"{name:24s} backward attn {ba * 1e3:8.1f} ms ({flops / ba * 1e-9:6.1f} GFLOP/s, "
                f"{100 * flops / ba * 1e-9 / peak:4.1f}% of peak)")
        if theirs:
            ft, bt = (statistics.median(t) for t in times["torch"])
            diff = max(float((a - b).abs().max() / b.abs().max())
                       for a, b in zip(grads["attn"], grads["torch"]))
            line += (f"   torch {bt * 1e3:8.1f} ms ({flops / bt * 1e-9:6.1f} GFLOP/s)   "
                     f"speedup {bt / ba:5.2f}   forward attn {fa * 1e3:7.1f} ms torch "
                     f"{ft * 1e3:7.1f} ms   max scaled grad difference {diff:.1e}")
        else:
            line += f"   torch: not run (dense mask past --masked-max)   forward attn {fa * 1e3:7.1f} ms"
        print(line, flush=True)


if __name__ == "__main__":
    main()
