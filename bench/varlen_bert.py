#!/usr/bin/env python3
"""BERT-base on a batch of sentences of different lengths (issue 40's bench
(a)), in one run: 32 sentences with lengths drawn uniformly from 16..512
(seeded), through

  attn varlen   TransformerStack.forward_packed: the tokens packed, no
                padding (FlashAttention's varlen layout)
  attn padded   forward_padded: [32, 512] with per-sentence lengths (the
                tokens gathered and run packed)
  attn dense    forward on the padded [32, 512] batch with no mask: the
                work a padded batch costs when nothing skips the padding
  PyTorch       Hugging Face's BertModel encoder (SDPA) on the padded batch
                with its attention mask (eval, inference mode)
  ONNX Runtime  that encoder exported to ONNX, padded batch and mask

Same weights (a random BertModel, --layers encoder layers), same threads.
attn's varlen rows are compared with PyTorch's at the real tokens (max abs
difference). Prints medians of --repeat rounds (the peers alternate within
each round), GFLOP/s of the useful work (the real tokens' products and
attention: 2 per multiply-add) and % of the FMA peak attn-bench measures.

    .venv/bin/python bench/varlen_bert.py [--layers 2] [--repeat 5]

Results: bench/RESULTS.md, "Serving".
"""
import argparse
import copy
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import transformers

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import attn  # noqa: E402
sys.path.insert(0, os.path.dirname(__file__))
from peak import measured_peak  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--sentences", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--build", default="build")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    peak = measured_peak(args.build, args.threads)

    rng = np.random.default_rng(args.seed)
    lengths = [int(n) for n in rng.integers(16, 513, args.sentences)]
    longest = max(lengths)
    config = transformers.BertConfig(hidden_size=768, num_attention_heads=12,
                                     intermediate_size=3072, num_hidden_layers=args.layers,
                                     max_position_embeddings=512, attn_implementation="sdpa")
    torch.manual_seed(args.seed)
    model = transformers.BertModel(config).eval()
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        stack = attn.TransformerStack.from_pretrained(tmp)

    d = 768
    tokens = [rng.standard_normal((n, d)).astype(np.float32) for n in lengths]
    packed = np.concatenate(tokens)
    padded = np.zeros((len(lengths), longest, d), np.float32)
    mask = np.zeros((len(lengths), longest), np.int64)
    for b, t in enumerate(tokens):
        padded[b, :len(t)] = t
        mask[b, :len(t)] = 1
    torch_padded, torch_mask = torch.from_numpy(padded), torch.from_numpy(mask)
    # The encoder's additive mask [B, 1, 1, L]: 0 at tokens, the most
    # negative float at padding.
    extended = ((1.0 - torch_mask[:, None, None, :].float())
                * torch.finfo(torch.float32).min)

    def torch_encoder():
        with torch.inference_mode():
            return model.encoder(torch_padded, attention_mask=extended).last_hidden_state

    # PyTorch's output at the real tokens, before the export.
    reference = torch_encoder().numpy()
    real = np.concatenate([reference[b, :n] for b, n in enumerate(lengths)])

    # ONNX Runtime: the encoder with the additive mask as an input.
    import onnxruntime

    class Encoder(torch.nn.Module):
        def __init__(self, encoder):
            super().__init__()
            self.encoder = encoder

        def forward(self, x, additive):
            return self.encoder(x, attention_mask=additive).last_hidden_state

    onnx_path = os.path.join(tempfile.mkdtemp(), "encoder.onnx")
    # A copy is exported: tracing leaves the module it runs in another state.
    torch.onnx.export(Encoder(copy.deepcopy(model.encoder)), (torch_padded, extended), onnx_path,
                      input_names=["x", "mask"], output_names=["y"], dynamo=False,
                      dynamic_axes={"x": {0: "b", 1: "l"}, "mask": {0: "b", 3: "l"}})
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = args.threads
    session = onnxruntime.InferenceSession(onnx_path, options,
                                           providers=["CPUExecutionProvider"])
    feed = {"x": padded, "mask": extended.numpy()}

    runs = {
        "attn varlen": lambda: stack.forward_packed(packed, lengths),
        "attn padded": lambda: stack.forward_padded(padded, lengths),
        "attn dense": lambda: stack.forward(padded),
        "PyTorch": torch_encoder,
        "ONNX Runtime": lambda: session.run(None, feed)[0],
    }
    # Agreement with PyTorch at the real tokens.
    varlen = stack.forward_packed(packed, lengths)
    after = torch_encoder().numpy()
    after_export = float(np.abs(np.concatenate(
        [after[b, :n] for b, n in enumerate(lengths)]) - real).max())
    difference = float(np.abs(varlen - real).max())
    onnx = session.run(None, feed)[0]
    onnx_difference = float(np.abs(np.concatenate(
        [onnx[b, :n] for b, n in enumerate(lengths)]) - real).max())

    times = {name: [] for name in runs}
    for name, run in runs.items():  # warm-up
        run()
    for _ in range(args.repeat):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)

    # Useful work: per real token 2 (4 d^2 + 2 d f) per layer; attention
    # 4 n^2 d per sentence and layer.
    tokens_total = sum(lengths)
    flops = args.layers * (2 * tokens_total * (4 * d * d + 2 * d * 3072)
                           + sum(4 * n * n * d for n in lengths))
    print(f"# {subprocess.run(['lscpu'], capture_output=True, text=True).stdout.split('Model name:')[1].splitlines()[0].strip()}, "
          f"{args.threads} threads, FP32 FMA peak {peak:.1f} GFLOP/s (attn-bench), "
          f"torch {torch.__version__}, onnxruntime {onnxruntime.__version__}")
    print(f"# BERT-base, {args.layers} layers, {len(lengths)} sentences, lengths 16..512 "
          f"(sum {tokens_total}, padded {len(lengths)} x {longest} = {len(lengths) * longest}); "
          f"useful work {flops / 1e9:.1f} GFLOP; medians of {args.repeat}")
    print(f"# attn varlen vs PyTorch at the real tokens: max |diff| = {difference:.2e} "
          f"(ONNX Runtime vs PyTorch: {onnx_difference:.2e}; PyTorch after the ONNX "
          f"export vs before: {after_export:.2e})")
    base = statistics.median(times["attn varlen"])
    print("| run | ms | useful GFLOP/s | % peak | time / attn varlen |")
    print("|---|---|---|---|---|")
    for name, samples in times.items():
        t = statistics.median(samples)
        print(f"| {name} | {t * 1e3:.1f} | {flops / t / 1e9:.1f} | "
              f"{100 * flops / t / 1e9 / peak:.1f}% | {t / base:.2f}x |")


if __name__ == "__main__":
    main()
