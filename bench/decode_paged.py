#!/usr/bin/env python3
"""Decoding a batch of sequences whose caches have different lengths
(issue 40's bench (b)), f32, GQA 32:8, D = 128, in one script:

  attn paged    one new token per sequence against its cache in pages of
                16 rows (a shuffled page table over one pool: no sequence's
                pages are contiguous), the attn.paged_kv kernel read in
                place, one call per sequence (as LayerStack::step makes)
  attn rows     the same kernel on each sequence's rows kept contiguous:
                what the pages cost
  PyTorch SDPA  the same batch padded to the longest cache, [32, 8, Lmax,
                128], with a boolean key mask (enable_gqa=True)

Every step reads each cached key and value once: the table gives the
bytes a step must read over its time (GB/s) against the machine's read
bandwidth, which attn-decode-bench measures at its start (--probe-lens).
attn's output is checked against a float64 NumPy attention of the same
rows, PyTorch's too. Medians of --repeat steps per round, rounds
alternating the two.

    .venv/bin/python bench/decode_paged.py [--sequences 32]
        [--min-len 1024] [--max-len 32768] [--repeat 5] [--rounds 3]

Results: bench/RESULTS.md, "Serving".
"""
import argparse
import mmap
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import attn  # noqa: E402
from attn._compiler import compile_source  # noqa: E402

PAGE = 16
DENSE = """
func.func @dense_decode(%q: tensor<1x{hq}x1x{d}xf32>, %k: tensor<1x{hkv}x?x{d}xf32>,
                        %v: tensor<1x{hkv}x?x{d}xf32>) -> tensor<1x{hq}x1x{d}xf32> {{
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x{hq}x1x{d}xf32>, tensor<1x{hkv}x?x{d}xf32>, tensor<1x{hkv}x?x{d}xf32>) -> tensor<1x{hq}x1x{d}xf32>
  return %o : tensor<1x{hq}x1x{d}xf32>
}}
"""
KERNEL = """
func.func @paged_decode(%q: tensor<1x{hq}x1x{d}xf32>, %kp: tensor<?x{hkv}x{page}x{d}xf32>,
                        %vp: tensor<?x{hkv}x{page}x{d}xf32>, %table: tensor<1x?xi32>,
                        %len: tensor<1xi32>) -> tensor<1x{hq}x1x{d}xf32> {{
  %c0 = arith.constant 0 : index
  %n32 = tensor.extract %len[%c0] : tensor<1xi32>
  %n = arith.index_cast %n32 : i32 to index
  %k = attn.paged_kv %kp[%table] length %n : tensor<?x{hkv}x{page}x{d}xf32>, tensor<1x?xi32> -> tensor<1x{hkv}x?x{d}xf32>
  %v = attn.paged_kv %vp[%table] length %n : tensor<?x{hkv}x{page}x{d}xf32>, tensor<1x?xi32> -> tensor<1x{hkv}x?x{d}xf32>
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x{hq}x1x{d}xf32>, tensor<1x{hkv}x?x{d}xf32>, tensor<1x{hkv}x?x{d}xf32>) -> tensor<1x{hq}x1x{d}xf32>
  return %o : tensor<1x{hq}x1x{d}xf32>
}}
"""


def huge_array(shape):
    """A float32 array on transparent huge pages (madvise), as the layer
    runtime keeps its page pool: a page table spreads a sequence's rows over
    the pool, and on 4 KiB pages each page of the cache would cost TLB
    misses that contiguous rows do not."""
    count = int(np.prod(shape))
    buffer = mmap.mmap(-1, max(count * 4, 1))
    if hasattr(mmap, "MADV_HUGEPAGE"):
        buffer.madvise(mmap.MADV_HUGEPAGE)
    return np.frombuffer(buffer, np.float32, count).reshape(shape)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sequences", type=int, default=32)
    parser.add_argument("--min-len", type=int, default=1024)
    parser.add_argument("--max-len", type=int, default=32768)
    parser.add_argument("--q-heads", type=int, default=32)
    parser.add_argument("--kv-heads", type=int, default=8)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--build", default="build")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--page-rows", type=int, default=16)
    args = parser.parse_args()
    global PAGE
    PAGE = args.page_rows
    torch.set_num_threads(args.threads)
    hq, hkv, d = args.q_heads, args.kv_heads, args.dim
    rng = np.random.default_rng(args.seed)
    lengths = [int(n) for n in rng.integers(args.min_len, args.max_len + 1, args.sequences)]
    pages_each = [(n + PAGE - 1) // PAGE for n in lengths]
    pool_pages = sum(pages_each)
    # One pool, pages handed out in a shuffled order.
    order = rng.permutation(pool_pages).astype(np.int32)
    tables, at = [], 0
    for p in pages_each:
        tables.append(np.ascontiguousarray(order[at:at + p][None]))
        at += p
    k_pool = huge_array((pool_pages, hkv, PAGE, d))
    v_pool = huge_array((pool_pages, hkv, PAGE, d))
    k_pool[...] = rng.standard_normal(k_pool.shape, dtype=np.float32)
    v_pool[...] = rng.standard_normal(v_pool.shape, dtype=np.float32)
    q = rng.standard_normal((args.sequences, hq, 1, d), dtype=np.float32)

    kernel = compile_source(KERNEL.format(hq=hq, hkv=hkv, d=d, page=PAGE), ".mlir",
                                 function="paged_decode")
    outs = [np.empty((1, hq, 1, d), np.float32) for _ in lengths]
    lens = [np.array([n], np.int32) for n in lengths]

    def attn_step():
        for i in range(len(lengths)):
            kernel(q[i:i + 1], k_pool, v_pool, tables[i], lens[i], out=outs[i])

    def rows(pool, i):  # [hkv, n, d] of sequence i
        return pool[tables[i][0]].transpose(1, 0, 2, 3).reshape(hkv, -1, d)[:, :lengths[i]]

    # PyTorch: the batch padded to the longest cache, masked.
    longest = max(lengths)

    # The same kernel on each sequence's rows kept contiguous (no pages): what
    # paging costs.
    dense_kernel = compile_source(DENSE.format(hq=hq, hkv=hkv, d=d), ".mlir",
                                  function="dense_decode")
    def dense(pool, i):
        a = huge_array((1, hkv, lengths[i], d))
        a[0] = rows(pool, i)
        return a

    dense_k = [dense(k_pool, i) for i in range(len(lengths))]
    dense_v = [dense(v_pool, i) for i in range(len(lengths))]
    dense_outs = [np.empty((1, hq, 1, d), np.float32) for _ in lengths]

    def dense_step():
        for i in range(len(lengths)):
            dense_kernel(q[i:i + 1], dense_k[i], dense_v[i], out=dense_outs[i])

    k_pad = torch.zeros(len(lengths), hkv, longest, d)
    v_pad = torch.zeros(len(lengths), hkv, longest, d)
    mask = torch.zeros(len(lengths), 1, 1, longest, dtype=torch.bool)
    for i, n in enumerate(lengths):
        k_pad[i, :, :n] = torch.from_numpy(rows(k_pool, i))
        v_pad[i, :, :n] = torch.from_numpy(rows(v_pool, i))
        mask[i, :, :, :n] = True
    tq = torch.from_numpy(q)

    def torch_step():
        with torch.inference_mode():
            return F.scaled_dot_product_attention(tq, k_pad, v_pad, attn_mask=mask,
                                                  enable_gqa=True)

    # Checks: both against float64 NumPy on 4 sequences (the longest among them).
    attn_step()
    theirs = torch_step().numpy()
    worst_attn = worst_torch = 0.0
    group = hq // hkv
    for i in sorted(range(len(lengths)), key=lambda i: -lengths[i])[:4]:
        k, v = rows(k_pool, i).astype(np.float64), rows(v_pool, i).astype(np.float64)
        for h in range(hq):
            s = k[h // group] @ q[i, h, 0].astype(np.float64) / np.sqrt(d)
            p = np.exp(s - s.max())
            ref = (p / p.sum()) @ v[h // group]
            scale = np.abs(ref).max()
            worst_attn = max(worst_attn, np.abs(outs[i][0, h, 0] - ref).max() / scale)
            worst_torch = max(worst_torch, np.abs(theirs[i, h, 0] - ref).max() / scale)

    bandwidth = []
    ours, peers, dense_times = [], [], []
    for _ in range(args.rounds):
        probe = subprocess.run(
            [os.path.join(args.build, "bin", "attn-decode-bench"), "--kv-lens=1024",
             "--repeat=1", f"--num-threads={args.threads}"],
            capture_output=True, text=True).stdout
        bandwidth.append(float(re.search(r"read bandwidth ([0-9.]+) GB/s", probe).group(1)))
        for fn, into in ((attn_step, ours), (dense_step, dense_times), (torch_step, peers)):
            fn()
            samples = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                fn()
                samples.append(time.perf_counter() - start)
            into.append(statistics.median(samples))
    bytes_read = sum(lengths) * hkv * d * 4 * 2
    padded_bytes = len(lengths) * longest * hkv * d * 4 * 2
    bw = statistics.median(bandwidth)
    t_attn, t_torch = statistics.median(ours), statistics.median(peers)
    t_dense = statistics.median(dense_times)
    paged_vs_dense = max(float(np.abs(a - b).max()) for a, b in zip(outs, dense_outs))
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = cpu.split("Model name:")[1].splitlines()[0].strip()
    print(f"# {model}, {args.threads} threads, read bandwidth {bw:.1f} GB/s "
          f"(attn-decode-bench's probe, {min(bandwidth):.1f}-{max(bandwidth):.1f}), torch {torch.__version__}")
    print(f"# {len(lengths)} sequences, caches {min(lengths)}..{max(lengths)} (sum {sum(lengths)}), "
          f"Hq {hq}, Hkv {hkv}, D {d}, f32, pages of {PAGE}; a step reads {bytes_read / 1e9:.2f} GB "
          f"({padded_bytes / 1e9:.2f} GB padded)")
    print(f"# max |out - f64 ref| / max |ref|: attn {worst_attn:.1e}, PyTorch {worst_torch:.1e}; "
          f"paged vs contiguous max |diff| {paged_vs_dense:.1e}")
    print("| run | step ms | GB/s of the cache | % of read bandwidth | time / attn |")
    print("|---|---|---|---|---|")
    for name, t in (("attn paged", t_attn), ("attn, rows contiguous", t_dense),
                    ("PyTorch SDPA padded", t_torch)):
        print(f"| {name} | {t * 1e3:.1f} | {bytes_read / t / 1e9:.1f} | "
              f"{100 * bytes_read / t / 1e9 / bw:.1f}% | {t / t_attn:.2f}x |")


if __name__ == "__main__":
    main()
