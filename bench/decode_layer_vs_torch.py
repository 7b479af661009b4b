#!/usr/bin/env python3
"""Decoding through a whole decoder layer with a KV cache, B = 1, f32:
attn-run --decode-steps (the cache read in place, docs/Transformer.md "KV
cache") against the same Llama-style layer in PyTorch with an HF-style
cache (keys and values appended with torch.cat, SDPA with enable_gqa), on
the same threads, weights and tokens:

    bench/.venv/bin/python bench/decode_layer_vs_torch.py [--prompt 2048]
        [--steps 32] [--rounds 3] [--threads N]

The layer is TinyLlama-1.1B's (2048, 32 query heads sharing 4 KV heads of
64, SwiGLU 5632, pre-RMSNorm, RoPE "half", no biases; scripts/torch_compat.py
LlamaLayer). Each round runs PyTorch (the prompt, then --steps tokens one
call each) and attn-run (the same); the table gives the medians over rounds
of the mean time per step, the bytes a step must read at least (the
layer's weights and the cache's keys and values) over that time, and the
largest difference between attn's and PyTorch's outputs of the decoded
tokens. Results: bench/RESULTS.md.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "scripts"))
from torch_compat import LlamaLayer, export_llama, llama_spec  # noqa: E402

LLAMA = dict(d=2048, heads=32, kv_heads=4, ffn=5632)  # TinyLlama-1.1B


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--prompt", type=int, default=2048)
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--build", default="build")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    layer = LlamaLayer(**LLAMA).eval()
    total = args.prompt + args.steps
    x = torch.randn(1, total, LLAMA["d"])
    d, kv = LLAMA["d"], LLAMA["kv_heads"] * LLAMA["d"] // LLAMA["heads"]
    weight_bytes = 4 * (2 * d * d + 2 * d * kv + 3 * d * LLAMA["ffn"])
    # The cache's keys and values at the middle step.
    cache_bytes = 4 * 2 * kv * (args.prompt + args.steps // 2)

    def torch_decode():
        with torch.inference_mode():
            cache = {}
            layer(x[:, :args.prompt], cache)
            outputs = []
            start = time.perf_counter()
            for t in range(args.prompt, total):
                outputs.append(layer(x[:, t:t + 1], cache))
            seconds = (time.perf_counter() - start) / args.steps
        return seconds, torch.cat(outputs, 1).numpy()

    with tempfile.TemporaryDirectory() as tmp:
        spec = os.path.join(tmp, "llama.yaml")
        with open(spec, "w") as f:
            f.write(llama_spec(**LLAMA))
        weights = os.path.join(tmp, "llama.safetensors")
        export_llama(layer, weights)
        np.save(os.path.join(tmp, "x.npy"), x.numpy())

        def attn_decode():
            out = subprocess.run(
                [f"{args.build}/bin/attn-run", spec, "--weights", weights,
                 "--input", os.path.join(tmp, "x.npy"),
                 f"--decode-steps={args.steps}",
                 f"--num-threads={args.threads}",
                 "--output", os.path.join(tmp, "y.npy")],
                capture_output=True, text=True, check=True).stdout
            ms = float(re.search(r"([0-9.]+) ms per step", out).group(1))
            y = np.load(os.path.join(tmp, "y.npy"))[:, args.prompt:]
            return ms / 1e3, y

        attn_times, torch_times, diff = [], [], 0.0
        for _ in range(args.rounds):
            torch_s, expected = torch_decode()
            attn_s, y = attn_decode()
            torch_times.append(torch_s)
            attn_times.append(attn_s)
            diff = max(diff, float(np.abs(y - expected).max()))
    attn_s, torch_s = statistics.median(attn_times), statistics.median(torch_times)
    step_bytes = weight_bytes + cache_bytes
    print(f"Llama-style layer (TinyLlama shape), {args.threads} threads, "
          f"torch {torch.__version__}; a step reads >= {step_bytes / 1e6:.0f} MB "
          f"(weights {weight_bytes / 1e6:.0f}, KV cache {cache_bytes / 1e6:.0f})")
    print("| prompt | steps | attn ms / step | GB/s | PyTorch ms / step | GB/s "
          "| PyTorch / attn | max abs diff |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| {args.prompt} | {args.steps} | {attn_s * 1e3:.2f} | "
          f"{step_bytes / attn_s * 1e-9:.1f} | {torch_s * 1e3:.2f} | "
          f"{step_bytes / torch_s * 1e-9:.1f} | {torch_s / attn_s:.2f}x | "
          f"{diff:.1e} |")
    print("rounds, attn / PyTorch ms:", ", ".join(
        f"{a * 1e3:.2f} / {t * 1e3:.2f}" for a, t in zip(attn_times, torch_times)))


if __name__ == "__main__":
    main()
