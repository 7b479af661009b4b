#!/usr/bin/env python3
"""One Transformer layer, B = 1: attn-run (projections on attn's GEMM with
bias, activation and residual fused, and with --linear=openblas on OpenBLAS
sgemm with those steps as passes of their own) against PyTorch (eval,
inference mode) and ONNX Runtime running that layer exported to ONNX (same
threads, same weights) in one run; attn's output is compared with PyTorch's
(max abs difference):

    bench/.venv/bin/python bench/layer_vs_pytorch.py [--layer bert|llama]
        [--sizes 512,2048] [--repeat 7] [--bf16]

--layer bert (default): a BERT-base encoder layer (768 / 12 heads / 3072,
GELU, post-norm), PyTorch's nn.TransformerEncoderLayer.
--layer llama: a Llama-style decoder layer with TinyLlama-1.1B's shape (2048,
32 query heads sharing 4 KV heads of 64, SwiGLU 5632, pre-RMSNorm, RoPE
"half", causal, no biases), written below in plain PyTorch (SDPA with
enable_gqa; the ONNX export repeats K and V per query head instead).

--bf16 adds a second table: the same layer with `dtype: bf16` (weights
rounded to bf16 and kept so; products on AMX where the CPU allows it,
by vdpbf16ps on AVX-512 BF16 CPUs without AMX)
against PyTorch running the layer in bf16 (module and input .to(bfloat16):
oneDNN's bf16 kernels), with both outputs' largest difference from
PyTorch's f32 output.

Prints per N the medians, attn's GFLOP/s (2 per multiply-add: projections,
attention 4 N^2 d, halved when causal, feed-forward) and % of the FMA peak
attn-bench measures at the start, ONNX Runtime's GFLOP/s, and the ratios.
Results: bench/RESULTS.md, "Layers".
"""
import argparse
import copy
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
from torch_compat import (LlamaLayer, export_encoder, export_llama,  # noqa: E402
                          layer_spec, llama_spec)
sys.path.insert(0, os.path.dirname(__file__))
from peak import measured_peak  # noqa: E402

LLAMA = dict(d=2048, heads=32, kv_heads=4, ffn=5632)  # TinyLlama-1.1B


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
    parser.add_argument("--bf16", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    # The probe varies between runs on shared VMs: best of three.
    peak = measured_peak(args.build, args.threads)
    print(f"layer {args.layer}, threads {args.threads}, measured FP32 FMA peak {peak:.1f} GFLOP/s, torch {torch.__version__}")
    print("|    N | attn ms | GFLOP/s | % peak | attn --linear=openblas ms | PyTorch ms | "
          "ONNX Runtime ms | ORT GFLOP/s | OpenBLAS / attn | PyTorch / attn | "
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
            width, text = LLAMA["d"], llama_spec(**LLAMA)
        with open(spec, "w") as f:
            f.write(text)
        spec16 = os.path.join(tmp, "layer_bf16.yaml")
        with open(spec16, "w") as f:
            f.write(re.sub(r"^(name: .*)$", r"\1\ndtype: bf16", text, count=1,
                           flags=re.M))
        bf16_rows = []
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

            def attn_run(*extra, spec=spec):
                out = subprocess.run(
                    [f"{args.build}/bin/attn-run", spec, "--weights", weights,
                     "--input", os.path.join(tmp, "x.npy"),
                     f"--repeat={args.repeat}", f"--num-threads={args.threads}",
                     *extra], capture_output=True, text=True, check=True).stdout
                return float(re.search(r"runs ([0-9.]+) ms", out).group(1)) / 1e3
            attn_s = attn_run("--output", os.path.join(tmp, "y.npy"))
            diff = float(np.abs(np.load(os.path.join(tmp, "y.npy")) - expected).max())
            blas_s = attn_run("--linear=openblas", "--output", os.path.join(tmp, "y.npy"))
            diff = max(diff, float(np.abs(np.load(os.path.join(tmp, "y.npy")) - expected).max()))
            f = flops(args.layer, n)
            print(f"| {n:4d} | {attn_s * 1e3:7.1f} | {f / attn_s * 1e-9:7.1f} | "
                  f"{100 * f / attn_s * 1e-9 / peak:5.1f}% | {blas_s * 1e3:.1f} | "
                  f"{torch_s * 1e3:.1f} | {ort_s * 1e3:.1f} | "
                  f"{f / ort_s * 1e-9:.1f} | {blas_s / attn_s:.2f}x | "
                  f"{torch_s / attn_s:.2f}x | {ort_s / attn_s:.2f}x | {diff:.1e} |")
            if args.bf16:
                attn16_s = attn_run("--output", os.path.join(tmp, "y.npy"),
                                    spec=spec16)
                diff16 = float(np.abs(np.load(os.path.join(tmp, "y.npy")) - expected).max())
                layer16 = copy.deepcopy(layer).to(torch.bfloat16)
                x16 = x.to(torch.bfloat16)
                with torch.inference_mode():
                    torch16_s = median_of(lambda: layer16(x16))
                    torch_diff16 = float((layer16(x16).float() - torch.from_numpy(expected)).abs().max())
                bf16_rows.append(
                    f"| {n:4d} | {attn16_s * 1e3:7.1f} | {f / attn16_s * 1e-9:7.1f} | "
                    f"{torch16_s * 1e3:.1f} | {attn_s / attn16_s:.2f}x | "
                    f"{ort_s / attn16_s:.2f}x | {torch16_s / attn16_s:.2f}x | "
                    f"{diff16:.1e} | {torch_diff16:.1e} |")
        if bf16_rows:
            print()
            print("|    N | attn bf16 ms | GFLOP/s | PyTorch bf16 ms | attn f32 / attn bf16 | "
                  "ORT f32 / attn bf16 | PyTorch bf16 / attn bf16 | attn bf16 max abs diff vs PyTorch f32 | "
                  "PyTorch bf16 max abs diff vs PyTorch f32 |")
            print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
            print("\n".join(bf16_rows))


if __name__ == "__main__":
    main()
