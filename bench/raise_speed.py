"""Speed of attention raised by attn-raise vs. the same linalg lowered by
upstream passes, on IR torch-mlir exports from PyTorch (one process per
run; both through attn-run's JIT and attn-cpu-pipeline, so the only
difference is whether attn-raise ran).

    python3 -m venv venv && venv/bin/pip install torch torch-mlir
    venv/bin/python bench/raise_speed.py [--length 1024] [--repeat 5]

Prints the median time of each and the ratio."""
import argparse
import os
import re
import subprocess
import tempfile

import torch
import torch.nn.functional as F
from torch_mlir import fx

BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "bin")


class Causal(torch.nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class Plain(torch.nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)


def median_ms(path, repeat):
    out = subprocess.run([os.path.join(BIN, "attn-run"), path, "--repeat=%d" % repeat],
                         check=True, capture_output=True, text=True).stdout
    return float(re.search(r"median of \d+ runs: ([0-9.]+) ms", out).group(1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--length", type=int, default=1024)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    q, k, v = (torch.randn(args.batch, args.heads, args.length, args.dim) for _ in range(3))
    print("B=%d H=%d L=%d D=%d, %d threads" % (args.batch, args.heads, args.length, args.dim,
                                                os.cpu_count()))
    with tempfile.TemporaryDirectory() as tmp:
        for name, module in (("sdpa", Plain()), ("sdpa_causal", Causal())):
            linalg = os.path.join(tmp, name + ".mlir")
            raised = os.path.join(tmp, name + "-raised.mlir")
            ir = fx.export_and_import(module, q, k, v, output_type="linalg-on-tensors",
                                      func_name=name)
            open(linalg, "w").write(str(ir))
            subprocess.run([os.path.join(BIN, "attn-opt"), linalg, "--attn-raise",
                            "--canonicalize", "-o", raised], check=True)
            upstream, ours = median_ms(linalg, args.repeat), median_ms(raised, args.repeat)
            print("%-12s linalg (upstream lowering) %10.2f ms   raised %8.2f ms   %6.1fx"
                  % (name, upstream, ours, upstream / ours))


if __name__ == "__main__":
    main()
