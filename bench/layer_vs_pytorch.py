#!/usr/bin/env python3
"""One Transformer layer, B = 1: attn-run (projections on OpenBLAS, and with
--linear=attn on attn's GEMM) against PyTorch (eval, inference mode) and ONNX
Runtime running that layer exported to ONNX (same threads, same weights) in
one run; attn's output is compared with PyTorch's (max abs difference):

    bench/.venv/bin/python bench/layer_vs_pytorch.py [--layer bert|llama]
        [--sizes 512,2048] [--repeat 7]

--layer bert (default): a BERT-base encoder layer (768 / 12 heads / 3072,
GELU, post-norm), PyTorch's nn.TransformerEncoderLayer.
--layer llama: a Llama-style decoder layer with TinyLlama-1.1B's shape (2048,
32 query heads sharing 4 KV heads of 64, SwiGLU 5632, pre-RMSNorm, RoPE
"half", causal, no biases), written below in plain PyTorch (SDPA with
enable_gqa; the ONNX export repeats K and V per query head instead).

Prints per N the medians, attn's GFLOP/s (2 per multiply-add: projections,
attention 4 N^2 d, halved when causal, feed-forward) and % of the FMA peak
attn-bench measures at the start, ONNX Runtime's GFLOP/s, and the ratios.
Results: bench/RESULTS.md, "Layers".
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

try:
    import onnxruntime
except ImportError:  # the ONNX Runtime column is left out
    onnxruntime = None

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "scripts"))
from torch_compat import export_encoder, layer_spec, write_safetensors  # noqa: E402


class LlamaLayer(torch.nn.Module):
    """h = x + SA(RMSNorm1(x)), y = h + W2 (silu(Wg g) * W1 g), g = RMSNorm2(h):
    the pre-norm decoder layer of docs/Transformer.md without cross-attention,
    written independently of attn (PyTorch's own RMSNorm, SDPA, silu)."""

    def __init__(self, d, heads, kv_heads, ffn, eps=1e-5, base=10000.0,
                 export=False):
        super().__init__()
        self.heads, self.kv_heads, self.dim = heads, kv_heads, d // heads
        self.base, self.export = base, export
        linear = lambda i, o: torch.nn.Linear(i, o, bias=False)  # noqa: E731
        self.q_proj, self.o_proj = linear(d, d), linear(d, d)
        self.k_proj = linear(d, kv_heads * self.dim)
        self.v_proj = linear(d, kv_heads * self.dim)
        self.linear1, self.linear_gate = linear(d, ffn), linear(d, ffn)
        self.linear2 = linear(ffn, d)
        self.norm1 = torch.nn.RMSNorm(d, eps=eps)
        self.norm2 = torch.nn.RMSNorm(d, eps=eps)
        for norm in (self.norm1, self.norm2):  # not all ones: tests the scale
            torch.nn.init.uniform_(norm.weight, 0.5, 1.5)

    def rope(self, x):
        """NeoX / Llama "half" pairs (n, n + D/2), theta = t base^(-2n/D)."""
        n = x.shape[-2]
        inv = self.base ** (-torch.arange(0, self.dim, 2, dtype=torch.float64) / self.dim)
        angles = torch.arange(n, dtype=torch.float64)[:, None] * inv[None, :]
        cos = torch.cat([angles.cos(), angles.cos()], -1).float()
        sin = torch.cat([angles.sin(), angles.sin()], -1).float()
        half = self.dim // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], -1)
        return x * cos + rotated * sin

    def forward(self, x):
        b, n, d = x.shape
        h = self.norm1(x)
        split = lambda t, heads: t.view(b, n, heads, self.dim).transpose(1, 2)  # noqa: E731
        q = self.rope(split(self.q_proj(h), self.heads))
        k = self.rope(split(self.k_proj(h), self.kv_heads))
        v = split(self.v_proj(h), self.kv_heads)
        if self.export:  # the exporter's SDPA has no enable_gqa
            group = self.heads // self.kv_heads
            k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
            a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            a = torch.nn.functional.scaled_dot_product_attention(
                q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.o_proj(a.transpose(1, 2).reshape(b, n, d))
        g = self.norm2(x)
        return x + self.linear2(torch.nn.functional.silu(self.linear_gate(g)) * self.linear1(g))


LLAMA = dict(d=2048, heads=32, kv_heads=4, ffn=5632)


def llama_spec():
    return ("name: llama_layer\nlayer:\n  type: decoder\n"
            f"  d_model: {LLAMA['d']}\n  heads: {LLAMA['heads']}\n"
            f"  kv_heads: {LLAMA['kv_heads']}\n  ffn_hidden: {LLAMA['ffn']}\n"
            "  activation: swiglu\n  norm: rmsnorm\n  norm_position: pre\n"
            "  norm_eps: 1.0e-5\n  bias: false\n  cross_attention: false\n"
            "  positions: rope\n  rope_base: 10000\n  rope_style: half\n")


def export_llama(layer, path):
    prefix = "layers.0."
    out = {}
    for name in ["q_proj", "k_proj", "v_proj", "o_proj"]:
        out[f"{prefix}self_attn.{name}.weight"] = getattr(layer, name).weight.detach().numpy()
    for name in ["linear1", "linear_gate", "linear2", "norm1", "norm2"]:
        out[f"{prefix}{name}.weight"] = getattr(layer, name).weight.detach().numpy()
    write_safetensors(path, out)


def flops(kind, n):
    if kind == "bert":
        d, ffn = 768, 3072
        return 2 * n * d * 4 * d + 4 * n * n * d + 2 * n * d * ffn * 2
    d, ffn = LLAMA["d"], LLAMA["ffn"]
    kv = LLAMA["kv_heads"] * d // LLAMA["heads"]
    return 2 * n * d * (2 * d + 2 * kv) + 2 * n * n * d + 2 * n * d * ffn * 3


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--layer", choices=["bert", "llama"], default="bert")
    parser.add_argument("--sizes", default="512,2048")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--build", default="build")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    # The probe varies between runs on shared VMs: best of three.
    peak = max(float(re.search(r"peak ([0-9.]+) GFLOP/s", subprocess.run(
        [f"{args.build}/bin/attn-bench", "--sizes=64", "--repeat=1",
         f"--num-threads={args.threads}"], capture_output=True, text=True).stdout).group(1))
        for _ in range(3))
    print(f"layer {args.layer}, threads {args.threads}, measured FP32 FMA peak {peak:.1f} GFLOP/s, torch {torch.__version__}")
    print("|    N | attn ms | GFLOP/s | % peak | attn --linear=attn ms | PyTorch ms | "
          "ONNX Runtime ms | ORT GFLOP/s | attn-GEMM / attn | PyTorch / attn | "
          "ORT / attn | max abs diff vs PyTorch (both attn runs) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        torch.manual_seed(0)
        spec = os.path.join(tmp, "layer.yaml")
        weights = os.path.join(tmp, "w.safetensors")
        if args.layer == "bert":
            layer = torch.nn.TransformerEncoderLayer(
                768, 12, 3072, dropout=0.1, activation="gelu", batch_first=True).eval()
            export_encoder([layer], weights)
            exported = layer
            width, text = 768, layer_spec("encoder", 768, 12, 3072, "gelu", False, 1e-5)
        else:
            layer = LlamaLayer(**LLAMA).eval()
            export_llama(layer, weights)
            exported = LlamaLayer(**LLAMA, export=True).eval()
            exported.load_state_dict(layer.state_dict())
            width, text = LLAMA["d"], llama_spec()
        with open(spec, "w") as f:
            f.write(text)
        def ort_session(x):
            """The layer exported for x's shape (torch.export), on ORT's CPU
            provider with all graph optimizations (attention fusion)."""
            if onnxruntime is None:
                return None
            model = os.path.join(tmp, "layer.onnx")
            torch.onnx.export(exported, (x,), model, input_names=["x"],
                              output_names=["y"], dynamo=True, verbose=False)
            so = onnxruntime.SessionOptions()
            so.intra_op_num_threads = args.threads
            return onnxruntime.InferenceSession(
                model, so, providers=["CPUExecutionProvider"])

        def median_of(run):
            run()
            times = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                run()
                times.append(time.perf_counter() - start)
            return statistics.median(times)

        for n in [int(s) for s in args.sizes.split(",")]:
            x = torch.randn(1, n, width)
            np.save(os.path.join(tmp, "x.npy"), x.numpy())
            with torch.inference_mode():
                torch_s = median_of(lambda: layer(x))
                expected = layer(x).numpy()
            session = ort_session(x)
            ort_s = (median_of(lambda: session.run(None, {"x": x.numpy()}))
                     if session else float("nan"))

            def attn_run(*extra):
                out = subprocess.run(
                    [f"{args.build}/bin/attn-run", spec, "--weights", weights,
                     "--input", os.path.join(tmp, "x.npy"),
                     f"--repeat={args.repeat}", f"--num-threads={args.threads}",
                     *extra], capture_output=True, text=True, check=True).stdout
                return float(re.search(r"runs ([0-9.]+) ms", out).group(1)) / 1e3
            attn_s = attn_run("--output", os.path.join(tmp, "y.npy"))
            diff = float(np.abs(np.load(os.path.join(tmp, "y.npy")) - expected).max())
            gemm_s = attn_run("--linear=attn", "--output", os.path.join(tmp, "y.npy"))
            diff = max(diff, float(np.abs(np.load(os.path.join(tmp, "y.npy")) - expected).max()))
            f = flops(args.layer, n)
            print(f"| {n:4d} | {attn_s * 1e3:7.1f} | {f / attn_s * 1e-9:7.1f} | "
                  f"{100 * f / attn_s * 1e-9 / peak:5.1f}% | {gemm_s * 1e3:.1f} | "
                  f"{torch_s * 1e3:.1f} | {ort_s * 1e3:.1f} | "
                  f"{f / ort_s * 1e-9:.1f} | {gemm_s / attn_s:.2f}x | "
                  f"{torch_s / attn_s:.2f}x | {ort_s / attn_s:.2f}x | {diff:.1e} |")


if __name__ == "__main__":
    main()
