"""GPU attention: attn's kernels against PyTorch's scaled_dot_product_attention
on the same GPU, in one run.

For each (dtype, head dim, N, causal) it writes a spec, times attn's kernel
with `attn-run SPEC --device=cuda --repeat=R` (the median of R launches,
timed by CUDA events around each launch), times
torch.nn.functional.scaled_dot_product_attention on the same shape and dtype
(CUDA events, median of R) with the flash backend forced for f16 / bf16,
and FlexAttention (torch.compile'd flex_attention, a causal block mask for
causal) on the same tensors, and prints TFLOP/s for each, attn's ratio to
each and attn's share of the GPU's peak (--peak-f16 / --peak-f32, TFLOP/s;
the defaults are an H100 SXM's dense figures). FLOPs are 4 B H N^2 D,
halved for causal. --tf32 runs f32 on attn's TF32 tensor-core kernel
(--gpu-tf32) and lets PyTorch use TF32 too.

    python3 bench/gpu_attention.py --attn-run build/bin/attn-run

--decode times one decoding step instead (q_len 1, GQA with --kv-heads,
kv_len from --sizes): attn against SDPA, reported as GB/s of K and V read
and the share of --peak-bw (GB/s; default an H100 SXM's 3350).

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
parser.add_argument("--tf32", action="store_true")
parser.add_argument("--decode", action="store_true")
parser.add_argument("--kv-heads", type=int, default=2)
parser.add_argument("--peak-bw", type=float, default=3350.0)
parser.add_argument("--no-flex", action="store_true")
args = parser.parse_args()

try:
    import torch
    import torch.nn.functional as F
    have_torch = torch.cuda.is_available()
    why_no_torch = "" if have_torch else "PyTorch sees no CUDA device"
except ImportError:
    have_torch = False
    why_no_torch = "PyTorch is not installed (bench/run.sh makes a venv)"


def attn_time_ms(dtype, dim, n, causal, decode=False):
    shape = (f"  q_heads: {args.heads}\n  kv_heads: {args.kv_heads}\n"
             f"  q_len: 1\n  kv_len: {n}\n" if decode else
             f"  q_heads: {args.heads}\n  q_len: {n}\n")
    spec = (f"name: bench\ndtype: {dtype}\nattention:\n  batch: {args.batch}\n"
            + shape + f"  head_dim: {dim}\n"
            + ("  pattern: causal\n" if causal else ""))
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(spec)
    command = [args.attn_run, f.name, f"--device={args.device}",
               f"--repeat={args.repeat}"]
    if args.gpu_target:
        command.append(f"--gpu-target={args.gpu_target}")
    if args.tf32 and dtype == "f32":
        command.append("--gpu-tf32")
    try:
        out = subprocess.run(command, capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    match = re.search(r"median of \d+ runs: ([0-9.]+) ms", out.stdout)
    if out.returncode != 0 or not match:
        sys.exit("attn-run failed:\n" + out.stdout + out.stderr)
    return float(match.group(1))


TYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}


def median_ms(run):
    run()  # warm-up (and compilation)
    times = []
    for _ in range(args.repeat):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def tensors(dtype, dim, n, decode):
    t = getattr(torch, TYPES[dtype])
    kv_heads = args.kv_heads if decode else args.heads
    q = torch.randn(args.batch, args.heads, 1 if decode else n, dim,
                    device="cuda", dtype=t)
    k, v = (torch.randn(args.batch, kv_heads, n, dim, device="cuda", dtype=t)
            for _ in range(2))
    return q, k, v


def sdpa_time_ms(dtype, dim, n, causal, decode=False):
    q, k, v = tensors(dtype, dim, n, decode)
    gqa = {"enable_gqa": True} if decode else {}
    if dtype != "f32" and not decode:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return median_ms(lambda: F.scaled_dot_product_attention(
                q, k, v, is_causal=causal))
    return median_ms(lambda: F.scaled_dot_product_attention(
        q, k, v, is_causal=causal, **gqa))


def flex_time_ms(dtype, dim, n, causal):
    from torch.nn.attention.flex_attention import (create_block_mask,
                                                   flex_attention)
    q, k, v = tensors(dtype, dim, n, False)
    flex = torch.compile(flex_attention)
    mask = None
    if causal:
        mask = create_block_mask(lambda b, h, i, j: i >= j, None, None, n, n,
                                 device="cuda")
    return median_ms(lambda: flex(q, k, v, block_mask=mask))


if have_torch and args.tf32:
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
print(f"attn --device={args.device}"
      + (" (TF32 for f32)" if args.tf32 else "") + "; peers: "
      + (f"torch {torch.__version__} SDPA (flash backend for 16-bit)"
         + ("" if args.no_flex or args.decode else " and FlexAttention")
         + f" on {torch.cuda.get_device_name()}"
         if have_torch else f"none ({why_no_torch})"))

if args.decode:
    # One decoding step: K and V are read once; bandwidth is what counts.
    print("dtype   D   kv_len   attn ms  attn GB/s  %peak   sdpa ms "
          "sdpa GB/s  attn/sdpa")
    for dtype in args.dtypes.split(","):
        size = 4 if dtype == "f32" else 2
        for dim in (int(d) for d in args.dims.split(",")):
            for n in (int(s) for s in args.sizes.split(",")):
                moved = 2.0 * args.batch * args.kv_heads * n * dim * size
                ms = attn_time_ms(dtype, dim, n, False, decode=True)
                gbs = moved / ms * 1e-6
                line = (f"{dtype:5} {dim:3} {n:8} {ms:9.3f} {gbs:10.1f} "
                        f"{100 * gbs / args.peak_bw:5.1f}%")
                if have_torch:
                    tms = sdpa_time_ms(dtype, dim, n, False, decode=True)
                    line += (f" {tms:9.3f} {moved / tms * 1e-6:10.1f} "
                             f"{tms / ms:9.2f}x")
                print(line, flush=True)
    sys.exit(0)

print("dtype   D      N causal   attn ms  attn TF/s  %peak   sdpa TF/s "
      "attn/sdpa   flex TF/s attn/flex")
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
                    tms = sdpa_time_ms(dtype, dim, n, causal)
                    line += (f" {flops / tms * 1e-9:10.1f} {tms / ms:9.2f}x")
                    if not args.no_flex:
                        try:
                            fms = flex_time_ms(dtype, dim, n, causal)
                            line += (f" {flops / fms * 1e-9:10.1f} "
                                     f"{fms / ms:9.2f}x")
                        except Exception as e:  # noqa: BLE001 (a peer's own failure)
                            line += f"  flex failed: {type(e).__name__}"
                print(line, flush=True)
