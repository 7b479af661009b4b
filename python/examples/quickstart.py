"""attn from Python: PyTorch's SDPA and a FlexAttention mod on attn's kernels,
checked against PyTorch. Run with .venv/bin/python python/examples/quickstart.py"""

import time

import torch
import torch.nn.functional as F

import attn

torch.manual_seed(0)
q, k, v = (torch.randn(1, 8, 1024, 64) for _ in range(3))

# A drop-in SDPA: causal attention, compiled on first use, cached after.
start = time.perf_counter()
out = attn.scaled_dot_product_attention(q, k, v, is_causal=True)
first = time.perf_counter() - start
start = time.perf_counter()
out = attn.scaled_dot_product_attention(q, k, v, is_causal=True)
warm = time.perf_counter() - start
err = (out - F.scaled_dot_product_attention(q, k, v, is_causal=True)).abs().max().item()
print(f"sdpa causal [1, 8, 1024, 64]: first call {first:.2f} s, then {warm * 1e3:.2f} ms; "
      f"max |attn - torch| = {err:.2e}")

# FlexAttention's API: the mask becomes attn's sliding-window pattern (tiles
# outside the window are never visited), the ALiBi mod a score region.
slopes = torch.tensor([2.0 ** (-(i + 1)) for i in range(8)])


def alibi(score, b, h, q_idx, kv_idx):
    return score + slopes[h] * (kv_idx - q_idx)


def sliding_window(b, h, q_idx, kv_idx):
    return (q_idx >= kv_idx) & (q_idx - kv_idx <= 128)


mask = attn.create_block_mask(sliding_window, None, None, 1024, 1024)
out = attn.flex_attention(q, k, v, score_mod=alibi, block_mask=mask)
keep = torch.ones(1024, 1024, dtype=torch.bool).tril().triu(-128)
pos = torch.arange(1024)
bias = slopes[:, None, None] * (pos[None, None, :] - pos[None, :, None])
ref = F.scaled_dot_product_attention(q, k, v, attn_mask=bias.masked_fill(~keep, float("-inf")))
err = (out - ref).abs().max().item()
print(f"flex alibi + sliding window: max |attn - torch| = {err:.2e}")
if err > 1e-4:
    raise SystemExit("quickstart: results differ from PyTorch")
print("quickstart: PASS")
