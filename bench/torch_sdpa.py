"""Times PyTorch's CPU attention (torch.nn.functional.scaled_dot_product_attention,
flash attention on CPU) on the shapes attn-bench uses, and writes a CSV with
the same columns. Run by bench/run.sh from its virtual environment; the test
suite never needs PyTorch."""
import argparse
import csv
import statistics
import time

import torch
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--sizes", default="512,1024,2048,4096,8192")
parser.add_argument("--heads", type=int, default=12)
parser.add_argument("--dim", type=int, default=64)
parser.add_argument("--repeat", type=int, default=5)
parser.add_argument("--threads", type=int, default=0)
parser.add_argument("--csv", required=True)
args = parser.parse_args()

if args.threads:
    torch.set_num_threads(args.threads)
rows = []
with torch.inference_mode():
    for n in [int(s) for s in args.sizes.split(",")]:
        gen = torch.Generator().manual_seed(n)
        q, k, v = (torch.randn(1, args.heads, n, args.dim, generator=gen) for _ in range(3))
        for causal in (False, True):
            F.scaled_dot_product_attention(q, k, v, is_causal=causal)  # warm-up
            times = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                times.append(time.perf_counter() - start)
            median = statistics.median(times)
            flops = 4.0 * args.heads * n * n * args.dim / (2 if causal else 1)
            rows.append(dict(n=n, causal=int(causal), torch_ms=median * 1e3,
                             torch_gflops=flops / median * 1e-9))
            print("torch %s  N=%5d causal=%d  %9.2f ms  %7.1f GFLOP/s" % (
                torch.__version__, n, causal, median * 1e3, flops / median * 1e-9),
                flush=True)
with open(args.csv, "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
