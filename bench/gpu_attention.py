"""GPU attention: attn's kernels against PyTorch's scaled_dot_product_attention
on the same GPU, in one run.

For each (dtype, head dim, N, causal) it writes a spec, times attn's kernel
with `attn-run SPEC --device=cuda --repeat=R` (the median of R launches,
timed by CUDA events around each launch), times
torch.nn.functional.scaled_dot_product_attention on the same shape and dtype
(CUDA events, median of R), and prints TFLOP/s for both, the ratio and the
share of the GPU's peak (--peak-f16 / --peak-f32, TFLOP/s; the defaults are
an H100 SXM's dense figures). FLOPs are 4 B H N^2 D, halved for causal.

    python3 bench/gpu_attention.py --attn-run build/bin/attn-run

Without a CUDA GPU, --device=vulkan times the Vulkan kernels instead (on
lavapipe that measures the CPU, not a GPU) and PyTorch is skipped unless it
sees a CUDA device. PyTorch comes from the bench venv (bench/run.sh makes
one); the test suite never needs it.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

parser = argparse.ArgumentParser()
parser.add_argument("--attn-run", default="build/bin/attn-run")
parser.add_argument("--device", default="cuda", choices=["cuda", "vulkan"])
parser.add_argument("--gpu-target", default="",
                    help="e.g. cuda-sm90 (default: attn-run's default)")
parser.add_argument("--dtypes", default="f16,bf16,f32")
parser.add_argument("--dims", default="64,128")
parser.add_argument("--sizes", default="1024,4096,16384")
parser.add_argument("--batch", type=int, default=1)
parser.add_argument("--heads", type=int, default=16)
parser.add_argument("--repeat", type=int, default=10)
parser.add_argument("--peak-f16", type=float, default=989.0)
parser.add_argument("--peak-f32", type=float, default=67.0)
args = parser.parse_args()

try:
    import torch
    import torch.nn.functional as F
    have_torch = torch.cuda.is_available()
    why_no_torch = "" if have_torch else "PyTorch sees no CUDA device"
except ImportError:
    have_torch = False
    why_no_torch = "PyTorch is not installed (bench/run.sh makes a venv)"


def attn_time_ms(dtype, dim, n, causal):
    spec = (f"name: bench\ndtype: {dtype}\nattention:\n  batch: {args.batch}\n"
            f"  q_heads: {args.heads}\n  q_len: {n}\n  head_dim: {dim}\n"
            + ("  pattern: causal\n" if causal else ""))
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(spec)
    command = [args.attn_run, f.name, f"--device={args.device}",
               f"--repeat={args.repeat}"]
    if args.gpu_target:
        command.append(f"--gpu-target={args.gpu_target}")
    try:
        out = subprocess.run(command, capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    match = re.search(r"median of \d+ runs: ([0-9.]+) ms", out.stdout)
    if out.returncode != 0 or not match:
        sys.exit("attn-run failed:\n" + out.stdout + out.stderr)
    return float(match.group(1))


def torch_time_ms(dtype, dim, n, causal):
    types = {"f32": torch.float32, "f16": torch.float16,
             "bf16": torch.bfloat16}
    q, k, v = (torch.randn(args.batch, args.heads, n, dim, device="cuda",
                           dtype=types[dtype]) for _ in range(3))
    F.scaled_dot_product_attention(q, k, v, is_causal=causal)  # warm-up
    times = []
    for _ in range(args.repeat):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


print(f"attn --device={args.device}; peer: "
      + (f"torch {torch.__version__} SDPA on {torch.cuda.get_device_name()}"
         if have_torch else f"none ({why_no_torch})"))
print("dtype   D      N causal   attn ms  attn TF/s  %peak   torch ms "
      "torch TF/s  attn/torch")
for dtype in args.dtypes.split(","):
    peak = args.peak_f32 if dtype == "f32" else args.peak_f16
    for dim in (int(d) for d in args.dims.split(",")):
        for n in (int(s) for s in args.sizes.split(",")):
            for causal in (False, True):
                flops = 4.0 * args.batch * args.heads * n * n * dim
                flops /= 2 if causal else 1
                ms = attn_time_ms(dtype, dim, n, causal)
                tflops = flops / ms * 1e-9
                line = (f"{dtype:5} {dim:3} {n:6} {int(causal):6} {ms:9.3f} "
                        f"{tflops:10.1f} {100 * tflops / peak:5.1f}%")
                if have_torch:
                    tms = torch_time_ms(dtype, dim, n, causal)
                    line += (f" {tms:10.3f} {flops / tms * 1e-9:10.1f} "
                             f"{tms / ms:10.2f}x")
                print(line, flush=True)
