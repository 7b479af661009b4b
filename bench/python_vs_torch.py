#!/usr/bin/env python3
"""attn's Python entry points against PyTorch SDPA, FlexAttention (eager and
torch.compile'd) and ONNX Runtime, in one script on the same threads and
shapes (B = 1, f32):

    .venv/bin/python bench/python_vs_torch.py [--sizes 1024,2048,4096,8192]
        [--heads 8] [--dim 64] [--repeat 5] [--rounds 3] [--threads 2]
        [--no-flex-compile] [--no-ort] [--no-models]

Rows: dense, causal, sliding window (causal, 256 keys back), document
masking (causal within documents of random lengths around N / 8) and,
with --kinds padding, a boolean padding mask [1, 1, 1, N] dropping the
last quarter of the keys (attn also timed with it expanded to [N, N]).
attn runs `attn.scaled_dot_product_attention` (dense, causal) and
`attn.flex_attention` (window and documents, whose mask_mods it lowers to
#attn.window and #attn.segments); PyTorch SDPA gets the boolean mask;
FlexAttention the same mask_mod; ONNX Runtime com.microsoft.MultiHeadAttention
(dense, and the masks as an additive attention_bias). Each round times
every peer (median of --repeat calls) in turn; the table gives medians over
rounds, GFLOP/s of the kept scores (4 D per kept (i, j) per head), % of
the FMA peak attn-bench measures, and attn's speed over each peer. Every
peer's output is checked against attn's (max |diff|), so a wrong peer
cannot look fast. Also: attn-run's own kernel time for the dense rows (the
Python call should be within 5 % of it), the Python overhead per call on
a tiny shape, the cold and warm-cache start of a new process, and a
Hugging Face BERT-base and a Llama-style model forward with and without
attn.replace_sdpa(). Results: bench/RESULTS.md.
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import torch
import torch._dynamo
import torch.nn.functional as F
from torch.nn.attention import flex_attention as tflex

import attn

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.path.join(ROOT, "build")
WINDOW = 256
warnings.filterwarnings("ignore")


def median_ms(fn, repeat):
    # Let the previous peer's thread pools stop spinning (libomp keeps its
    # threads busy-waiting for KMP_BLOCKTIME, 200 ms; ONNX Runtime and
    # libgomp spin too) before this peer's threads want the cores.
    time.sleep(0.3)
    fn()  # warm: compile, caches
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def documents(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    lengths = []
    while sum(lengths) < n:
        lengths.append(int(torch.randint(n // 16, n // 4 + 1, (1,), generator=g)))
    ids = torch.repeat_interleave(torch.arange(len(lengths)), torch.tensor(lengths))
    return ids[:n].contiguous()


def problem(kind, n):
    """(mask_mod or None, dense boolean mask or None, kept pairs)."""
    if kind == "dense":
        return None, None, n * n
    if kind == "padding":
        # A padded sequence: its last quarter of keys dropped for every query.
        kept = n - n // 4
        mod = lambda b, h, q, kv: kv < kept
    elif kind == "causal":
        mod = lambda b, h, q, kv: q >= kv
    elif kind == "window":
        mod = lambda b, h, q, kv: (q >= kv) & (q - kv <= WINDOW)
    else:
        doc = documents(n)
        mod = lambda b, h, q, kv: (doc[q] == doc[kv]) & (q >= kv)
    i = torch.arange(n)
    dense = mod(0, 0, i[:, None], i[None, :]).expand(n, n)
    return mod, dense, int(dense.sum())


def peers(kind, n, q, k, v, args):
    mod, dense, kept = problem(kind, n)
    out = {}
    if kind in ("dense", "causal"):
        out["attn"] = lambda: attn.scaled_dot_product_attention(q, k, v, is_causal=kind == "causal")
        out["torch sdpa"] = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=kind == "causal")
    elif kind == "padding":
        # SDPA's boolean padding mask [B, 1, 1, N]: attn takes it per key on
        # its vectorized kernels; expanded to [B, 1, N, N] it would take the
        # generic loops (how attn ran it before per-key masks), timed too.
        pad = dense[:1].reshape(1, 1, 1, n)
        out["attn"] = lambda: attn.scaled_dot_product_attention(q, k, v, attn_mask=pad)
        full = pad.expand(1, 1, n, n).contiguous()
        out["attn [N, N] mask"] = lambda: attn.scaled_dot_product_attention(q, k, v, attn_mask=full)
        out["torch sdpa"] = lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=pad)
    else:
        mask = attn.create_block_mask(mod, None, None, n, n)
        out["attn"] = lambda: attn.flex_attention(q, k, v, block_mask=mask)
        out["torch sdpa"] = lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=dense)
    tmask = None if mod is None else tflex.create_block_mask(mod, None, None, n, n, device="cpu")
    if n <= args.flex_eager_max:
        out["flex eager"] = lambda: tflex.flex_attention(q, k, v, block_mask=tmask)
    if args.flex_compile:
        compiled = torch.compile(tflex.flex_attention, dynamic=False)
        out["flex compiled"] = lambda: compiled(q, k, v, block_mask=tmask)
    if args.ort:
        out["onnxruntime"] = ort_peer(q, k, v, None if kind == "dense" else dense, args)
    return out, kept


def ort_peer(q, k, v, dense, args):
    import numpy as np
    import onnxruntime
    from onnx import TensorProto, helper
    _, h, n, d = q.shape
    shape = [1, n, h * d]
    names = ["q", "k", "v"]
    inputs = [helper.make_tensor_value_info(x, TensorProto.FLOAT, shape) for x in names]
    node_inputs = list(names)
    feeds = {x: t.transpose(1, 2).reshape(1, n, h * d).numpy() for x, t in zip(names, (q, k, v))}
    if dense is not None:
        inputs.append(helper.make_tensor_value_info("bias", TensorProto.FLOAT, [1, 1, n, n]))
        node_inputs += ["", "", "bias"]  # bias, key_padding_mask, attention_bias
        feeds["bias"] = np.where(dense.numpy(), 0.0, -1e30).astype(np.float32)[None, None]
    output = helper.make_tensor_value_info("o", TensorProto.FLOAT, shape)
    node = helper.make_node("MultiHeadAttention", node_inputs, ["o"], domain="com.microsoft",
                            num_heads=h)
    model = helper.make_model(helper.make_graph([node], "mha", inputs, [output]),
                              opset_imports=[helper.make_opsetid("", 17),
                                             helper.make_opsetid("com.microsoft", 1)])
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(model.SerializeToString(), options,
                                           providers=["CPUExecutionProvider"])

    def run():
        o = session.run(None, feeds)[0]
        return torch.from_numpy(o).reshape(1, n, h, d).transpose(1, 2)
    return run


def fma_peak():
    out = subprocess.run([os.path.join(BUILD, "bin", "attn-bench"), "--sizes=256", "--repeat=1"],
                         capture_output=True, text=True).stdout
    m = re.search(r"FMA peak ([0-9.]+) GFLOP/s", out)
    return float(m.group(1)) if m else float("nan")


def attn_run_ms(n, args):
    spec = (f"name: bench_dense\nattention:\n  q_heads: {args.heads}\n  q_len: {n}\n"
            f"  head_dim: {args.dim}\n")
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(spec)
    try:
        out = subprocess.run([os.path.join(BUILD, "bin", "attn-run"), f.name,
                              f"--repeat={args.repeat}"], capture_output=True, text=True).stdout
    finally:
        os.remove(f.name)
    m = re.search(r"median of \d+ runs: ([0-9.]+) ms", out)
    return float(m.group(1)) if m else float("nan")


def attention_table(args, peak):
    print(f"\n## Attention (B 1, H {args.heads}, D {args.dim}, f32, {args.threads} threads; "
          f"FMA peak {peak:.1f} GFLOP/s)\n")
    names = ["attn", "torch sdpa", "flex eager", "flex compiled", "onnxruntime"]
    print("| N | mask | " + " | ".join(f"{p} ms" for p in names) +
          " | attn GFLOP/s | % peak | attn speed over each | max diff |")
    print("|---|---|" + "---:|" * (len(names) + 4))
    for n in args.sizes:
        g = torch.Generator().manual_seed(n)
        q, k, v = (torch.randn(1, args.heads, n, args.dim, generator=g) for _ in range(3))
        for kind in args.kinds:
            fns, kept = peers(kind, n, q, k, v, args)
            rounds = {p: [] for p in fns}
            for _ in range(args.rounds):
                for p, fn in fns.items():
                    rounds[p].append(median_ms(fn, args.repeat))
            ms = {p: statistics.median(t) for p, t in rounds.items()}
            ours = fns["attn"]()
            diff = max(float((fn() - ours).abs().max()) for p, fn in fns.items() if p != "attn")
            flops = 4.0 * args.heads * args.dim * kept
            gflops = flops / ms["attn"] / 1e6
            speed = ", ".join(f"{p} {ms[p] / ms['attn']:.2f}x" for p in fns if p != "attn")
            cells = " | ".join(f"{ms[p]:.2f}" if p in ms else "-" for p in names)
            print(f"| {n} | {kind} | {cells} | {gflops:.1f} | {100 * gflops / peak:.1f} % | "
                  f"{speed} | {diff:.1e} |", flush=True)
            if kind == "dense":
                run_ms = attn_run_ms(n, args)
                print(f"|   | attn-run's own kernel | {run_ms:.2f} ms: the Python call is "
                      f"{ms['attn'] / run_ms:.3f}x of it | | | | | | | | | |", flush=True)


def overhead(args):
    q = torch.randn(1, 1, 16, 16)
    attn.scaled_dot_product_attention(q, q, q)
    kernel = list(attn.functional._kernels.values())[-1]  # the one just compiled
    out = torch.empty(1, 1, 16, 16)
    n = 20000

    def per_call(fn):
        best = math.inf
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(n):
                fn()
            best = min(best, (time.perf_counter() - start) / n)
        return best * 1e6

    full = per_call(lambda: attn.scaled_dot_product_attention(q, q, q))
    raw = per_call(lambda: kernel(q, q, q, out=out))
    torch_us = per_call(lambda: F.scaled_dot_product_attention(q, q, q))
    print(f"\n## Python call overhead ([1, 1, 16, 16], best of 5 x {n} calls)\n")
    print(f"- attn.scaled_dot_product_attention: {full:.1f} us per call (kernel included)")
    print(f"- the compiled kernel called directly (attn.Kernel): {raw:.1f} us")
    print(f"- so the SDPA front end adds {full - raw:.1f} us; torch SDPA on the same shape: "
          f"{torch_us:.1f} us")


START = r"""
import time, torch
t0 = time.perf_counter()
import attn
t1 = time.perf_counter()
q = torch.randn(1, 8, 1024, 64)
attn.scaled_dot_product_attention(q, q, q, is_causal=True)
t2 = time.perf_counter()
print(f"{t1 - t0:.3f} {t2 - t1:.3f}")
"""


def start_times():
    cache = tempfile.mkdtemp(prefix="attn-bench-cache-")
    env = dict(os.environ, ATTN_CACHE_DIR=cache)
    print("\n## Start of a new process (import attn, then the first causal call at N 1024)\n")
    for label in ("cold cache (compiles)", "warm cache (loads the library)"):
        out = subprocess.run([sys.executable, "-c", START], env=env, capture_output=True,
                             text=True, check=True).stdout.split()
        print(f"- {label}: import {float(out[0]) * 1e3:.0f} ms, first call "
              f"{float(out[1]) * 1e3:.0f} ms")


def models(args):
    import transformers
    print(f"\n## Hugging Face models, forward with and without attn.replace_sdpa() "
          f"(random weights, f32, {args.threads} threads)\n")
    print("| model | tokens | PyTorch ms | with replace_sdpa ms | speed | max diff |")
    print("|---|---|---:|---:|---:|---:|")
    cases = [
        ("BERT-base", transformers.BertModel(transformers.BertConfig(
            attn_implementation="sdpa")), 512),
        ("Llama-style (d 1024, 8 layers, 16 heads, GQA 4, RoPE)",
         transformers.LlamaModel(transformers.LlamaConfig(
             hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
             num_attention_heads=16, num_key_value_heads=4, vocab_size=32000,
             attn_implementation="sdpa")), 2048),
    ]
    for name, model, tokens in cases:
        model.eval()
        ids = torch.randint(0, 1000, (1, tokens), generator=torch.Generator().manual_seed(0))
        with torch.inference_mode():
            def plain():
                return model(input_ids=ids).last_hidden_state

            def routed():
                with attn.replace_sdpa():
                    return model(input_ids=ids).last_hidden_state
            rounds = {"torch": [], "attn": []}
            for _ in range(args.rounds):
                rounds["torch"].append(median_ms(plain, max(2, args.repeat // 2)))
                rounds["attn"].append(median_ms(routed, max(2, args.repeat // 2)))
            a, b = statistics.median(rounds["torch"]), statistics.median(rounds["attn"])
            diff = float((plain() - routed()).abs().max())
        print(f"| {name} | {tokens} | {a:.1f} | {b:.1f} | {a / b:.2f}x | {diff:.1e} |",
              flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="1024,2048,4096,8192")
    p.add_argument("--kinds", default="dense,causal,window,document")
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--flex-eager-max", type=int, default=4096,
                   help="largest N for eager FlexAttention (it materializes the scores)")
    p.add_argument("--no-flex-compile", dest="flex_compile", action="store_false")
    p.add_argument("--no-ort", dest="ort", action="store_false")
    p.add_argument("--no-models", dest="models", action="store_false")
    p.add_argument("--only", default="", help="attention,overhead,start,models (default all)")
    args = p.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",")]
    args.kinds = args.kinds.split(",")
    torch.set_num_threads(args.threads)
    # Every (shape, mask) recompiles FlexAttention; past dynamo's default
    # limit (8) it would silently fall back to the eager kernel.
    for name in ("recompile_limit", "cache_size_limit"):
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, 1024)
    only = set(args.only.split(",")) if args.only else {"attention", "overhead", "start", "models"}
    if args.ort:
        try:
            import onnxruntime  # noqa: F401
        except ImportError:
            print("onnxruntime is not installed: its column is left out "
                  "(.venv/bin/pip install onnxruntime onnx)")
            args.ort = False
    peak = fma_peak()
    if "attention" in only:
        attention_table(args, peak)
    if "overhead" in only:
        overhead(args)
    if "start" in only:
        start_times()
    if "models" in only and args.models:
        models(args)


if __name__ == "__main__":
    main()
