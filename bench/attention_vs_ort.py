#!/usr/bin/env python3
"""Dense multi-head attention, attn against ONNX Runtime's fused CPU
`com.microsoft.MultiHeadAttention` on the same machine, threads and shapes,
in one script (B = 1, f32):

    bench/.venv/bin/python bench/attention_vs_ort.py [--sizes 1024,4096]
        [--heads 12] [--dim 64] [--repeat 5] [--rounds 3] [--threads 2]

Each round times ONNX Runtime (median of --repeat runs of one session) and
then runs attn-bench (its own median of --repeat; it also measures the FMA
peak and times bf16 inputs, which ONNX Runtime's CPU attention does not
take); the table gives medians over rounds and attn's speed over ONNX
Runtime. ONNX Runtime's output is checked against a float64 NumPy
attention for N <= 2048 (max |diff| printed), so a wrong peer cannot look
fast. Results: bench/RESULTS.md.
"""
import argparse
import os
import re
import statistics
import subprocess
import time

import numpy as np
import onnxruntime
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))


def mha_model(n, heads, dim):
    shape = [1, n, heads * dim]
    inputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
              for name in ("q", "k", "v")]
    output = helper.make_tensor_value_info("o", TensorProto.FLOAT, shape)
    node = helper.make_node("MultiHeadAttention", ["q", "k", "v"], ["o"],
                            domain="com.microsoft", num_heads=heads)
    graph = helper.make_graph([node], "mha", inputs, [output])
    model = helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    return model.SerializeToString()


def reference(x, heads, dim):
    q, k, v = [x[name].reshape(1, -1, heads, dim).transpose(0, 2, 1, 3)
               .astype(np.float64) for name in ("q", "k", "v")]
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(dim)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return (p @ v).transpose(0, 2, 1, 3).reshape(1, -1, heads * dim)


def time_ort(n, args):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(
        mha_model(n, args.heads, args.dim), options,
        providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(n)
    x = {name: rng.standard_normal((1, n, args.heads * args.dim),
                                   dtype=np.float32) for name in "qkv"}
    out = session.run(None, x)[0]
    diff = (float(np.abs(out - reference(x, args.heads, args.dim)).max())
            if n <= 2048 else float("nan"))
    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        session.run(None, x)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3, diff


def run_attn(args):
    bench = os.path.join(args.build, "bin", "attn-bench")
    out = subprocess.run(
        [bench, "--sizes=" + args.sizes, "--heads=%d" % args.heads,
         "--dim=%d" % args.dim, "--repeat=%d" % args.repeat,
         "--num-threads=%d" % args.threads, "--bf16"],
        check=True, capture_output=True, text=True).stdout
    peak = float(re.search(r"peak ([0-9.]+) GFLOP/s", out).group(1))
    rows = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\d+)\s+no\s+\|\s+([0-9.]+).*\|\s+([0-9.]+)\s+"
                     r"[0-9.]+\s+[0-9.]+x\s+\S+$", line)
        if m:
            rows[int(m.group(1))] = (float(m.group(2)), float(m.group(3)))
    return peak, rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1024,4096")
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    args = parser.parse_args()
    sizes = [int(n) for n in args.sizes.split(",")]
    ort, ours, ours16, peaks, diffs = {}, {}, {}, [], {}
    for _ in range(args.rounds):
        for n in sizes:
            ms, diffs[n] = time_ort(n, args)
            ort.setdefault(n, []).append(ms)
        # The peers' thread pools may still spin after their last call.
        time.sleep(1.0)
        peak, rows = run_attn(args)
        peaks.append(peak)
        for n, (f32, bf16) in rows.items():
            ours.setdefault(n, []).append(f32)
            ours16.setdefault(n, []).append(bf16)
    print("H %d, D %d, %d threads, onnxruntime %s, FMA peak %.0f-%.0f GFLOP/s"
          % (args.heads, args.dim, args.threads, onnxruntime.__version__,
             min(peaks), max(peaks)))
    print("%6s | %9s %8s %7s | %9s %8s | %8s | %9s %8s | %10s"
          % ("N", "attn ms", "GFLOP/s", "% peak", "ORT ms", "GFLOP/s",
             "attn/ORT", "bf16 ms", "vs ORT", "ORT diff"))
    peak = statistics.median(peaks)
    for n in sizes:
        flops = 4.0 * args.heads * n * n * args.dim
        a, o, a16 = (statistics.median(ours[n]), statistics.median(ort[n]),
                     statistics.median(ours16[n]))
        print("%6d | %9.2f %8.1f %6.1f%% | %9.2f %8.1f | %7.2fx | %9.2f %7.2fx"
              " | %10.1e" % (n, a, flops / a * 1e-6, flops / a * 1e-6 / peak
                             * 100, o, flops / o * 1e-6, o / a, a16, o / a16,
                             diffs[n]))


if __name__ == "__main__":
    main()
