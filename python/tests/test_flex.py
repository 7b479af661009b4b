"""attn.flex_attention against torch's FlexAttention (eager, float64) for
the score and mask mods of FlexAttention's examples (attention-gym)."""

import math

import pytest
import torch
from torch.nn.attention import flex_attention as torch_flex

import attn
from attn import _compiler

# attn computes in f32; the reference is torch's FlexAttention in float64.
# Outputs are convex combinations of V rows (|o| < 5): 1e-5 absolute leaves
# 10x margin over the f32 error seen (~1e-6) and catches any wrong mask or
# bias (errors of 1e-2 and more).
TOL = 1e-5
B, H, L, D = 2, 4, 200, 64


def inputs(B=B, H=H, L=L, D=D, Hkv=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    Hkv = H if Hkv is None else Hkv
    return (torch.randn(B, H, L, D, generator=g), torch.randn(B, Hkv, L, D, generator=g),
            torch.randn(B, Hkv, L, D, generator=g))


def reference(q, k, v, score_mod=None, mask_mod=None, enable_gqa=False, scale=None):
    block_mask = None
    if mask_mod is not None:
        block_mask = torch_flex.create_block_mask(mask_mod, None, None, q.shape[2],
                                                  k.shape[2], device="cpu")
    return torch_flex.flex_attention(q.double(), k.double(), v.double(), score_mod=score_mod,
                                     block_mask=block_mask, enable_gqa=enable_gqa,
                                     scale=scale)


def ours(q, k, v, score_mod=None, mask_mod=None, **kw):
    block_mask = None
    if mask_mod is not None:
        block_mask = attn.create_block_mask(mask_mod, None, None, q.shape[2], k.shape[2])
    return attn.flex_attention(q, k, v, score_mod=score_mod, block_mask=block_mask, **kw)


def compare(q, k, v, score_mod=None, mask_mod=None, **kw):
    got = ours(q, k, v, score_mod, mask_mod, **kw)
    want = reference(q, k, v, score_mod, mask_mod, **kw)
    err = (got.double() - want).abs().max().item()
    assert err < TOL, err
    return got


def ir(q, k, v, score_mod=None, mask_mod=None):
    block_mask = None
    if mask_mod is not None:
        block_mask = attn.create_block_mask(mask_mod, None, None, q.shape[2], k.shape[2])
    return attn.traced_ir(q, k, v, score_mod=score_mod, block_mask=block_mask)


# --- the mods --------------------------------------------------------------------

def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


WINDOW = 32


def sliding_window(b, h, q_idx, kv_idx):
    return (q_idx - kv_idx).abs() <= WINDOW  # written with abs: two bounds


def causal_window(b, h, q_idx, kv_idx):
    return (q_idx >= kv_idx) & (q_idx - kv_idx <= WINDOW)


PREFIX = 37


def prefix_lm(b, h, q_idx, kv_idx):
    return (kv_idx <= PREFIX) | (q_idx >= kv_idx)


def dilated(b, h, q_idx, kv_idx):
    return ((q_idx - kv_idx) % 3 == 0) & ((q_idx - kv_idx).abs() <= 60)


def softcap(score, b, h, q_idx, kv_idx):
    return 20.0 * torch.tanh(score / 20.0)


def relative_position(score, b, h, q_idx, kv_idx):
    return score + (q_idx - kv_idx) * 0.01


def test_causal_recognized():
    q, k, v = inputs()
    text = ir(q, k, v, mask_mod=causal)
    assert "pattern(#attn.causal)" in text and "score {" not in text
    compare(q, k, v, mask_mod=causal)


def test_sliding_window_recognized():
    q, k, v = inputs()
    text = ir(q, k, v, mask_mod=causal_window)
    assert f"#attn.window<left = {WINDOW}, right = 0>" in text and "score {" not in text
    compare(q, k, v, mask_mod=causal_window)


def test_abs_window():
    q, k, v = inputs()
    # abs() is not linear: it becomes the score region (still exact).
    compare(q, k, v, mask_mod=sliding_window)


def test_prefix_lm_skips_blocks_by_layout():
    q, k, v = inputs(L=300)
    # No attn pattern says "key in the prefix, or causal": the mask runs in
    # the score region, and the blocks it keeps become a block layout
    # (128-blocks: the upper-right blocks beyond the prefix are skipped).
    text = ir(q, k, v, mask_mod=prefix_lm)
    assert "#attn.block_layout<block = 128, layout = dense<[[[1, 0, 0], [1, 1, 0], " \
           "[1, 1, 1]]]>" in text
    compare(q, k, v, mask_mod=prefix_lm)


def test_head_dependent_mask_layout_per_head():
    q, k, v = inputs(L=512)
    spans = torch.tensor([10, 600, 50, 130])

    def per_head_window(b, h, q_idx, kv_idx):
        return (q_idx >= kv_idx) & (q_idx - kv_idx <= spans[h])

    mask = attn.create_block_mask(per_head_window, None, H, 512, 512)
    # Head 0 (span 10) never reaches two blocks back; head 3 (span 130) does.
    assert mask.layout is not None and mask.layout.shape == (H, 4, 4)
    assert not mask.layout[0, 2, 0] and mask.layout[3, 2, 0] and mask.layout[1, 3, 0]
    got = attn.flex_attention(q, k, v, block_mask=mask)
    want = torch_flex.flex_attention(q.double(), k.double(), v.double(),
                                     block_mask=torch_flex.create_block_mask(
                                         per_head_window, None, H, 512, 512, device="cpu"))
    assert (got.double() - want).abs().max().item() < TOL


def test_dilated_recognized():
    q, k, v = inputs()
    assert "#attn.strided<stride = 3>" in ir(q, k, v, mask_mod=dilated)
    compare(q, k, v, mask_mod=dilated)


def test_softcap_recognized():
    q, k, v = inputs()
    q = q * 4  # large logits, so the cap matters
    text = ir(q, k, v, score_mod=softcap)
    assert "#attn.softcap<cap = 20.0>" in text and "score {" not in text
    compare(q, k, v, score_mod=softcap)


def test_relative_position():
    q, k, v = inputs()
    compare(q, k, v, score_mod=relative_position)


def test_alibi_with_captured_slopes():
    q, k, v = inputs()
    slopes = torch.tensor([2.0 ** (-8.0 * (i + 1) / H) for i in range(H)])

    def alibi(score, b, h, q_idx, kv_idx):
        return score + slopes[h] * (kv_idx - q_idx)

    compare(q, k, v, score_mod=alibi, mask_mod=causal)


def test_document_mask_recognized_as_segments():
    q, k, v = inputs()
    document = torch.repeat_interleave(torch.arange(5), torch.tensor([30, 50, 20, 64, 36]))

    def document_causal(b, h, q_idx, kv_idx):
        return (document[q_idx] == document[kv_idx]) & (q_idx >= kv_idx)

    text = ir(q, k, v, mask_mod=document_causal)
    assert "#attn.segments" in text and "#attn.causal" in text and "score {" not in text
    compare(q, k, v, mask_mod=document_causal)


def test_captured_per_head_relative_bias_table():
    q, k, v = inputs()
    g = torch.Generator().manual_seed(5)
    table = torch.randn(H, 2 * L - 1, generator=g)

    def relative_bias(score, b, h, q_idx, kv_idx):
        return score + table[h, q_idx - kv_idx + L - 1]

    compare(q, k, v, score_mod=relative_bias)


def test_tanh_gate():
    q, k, v = inputs()
    gate = torch.tensor([0.5, -1.0, 2.0, 0.1])

    def gated(score, b, h, q_idx, kv_idx):
        return score * torch.tanh(gate[h]) + torch.where(q_idx > kv_idx, -0.5, 0.0)

    compare(q, k, v, score_mod=gated)


def test_batch_dependent_bias():
    q, k, v = inputs()
    per_batch = torch.tensor([0.3, -0.7])

    def mod(score, b, h, q_idx, kv_idx):
        return score + per_batch[b] * (kv_idx % 7)

    compare(q, k, v, score_mod=mod)


def test_gqa_and_odd_length():
    q, k, v = inputs(L=97, Hkv=2)
    compare(q, k, v, score_mod=relative_position, mask_mod=causal, enable_gqa=True)


def test_return_lse():
    q, k, v = inputs(L=64)
    out, lse = attn.flex_attention(q, k, v, block_mask=attn.create_block_mask(
        causal, None, None, 64, 64), return_lse=True)
    # log sum_j exp(scale q.k) over the kept keys, in float64.
    s = (q.double() @ k.double().transpose(-1, -2)) / math.sqrt(D)
    s = s.masked_fill(~torch.ones(64, 64, dtype=torch.bool).tril(), float("-inf"))
    assert (lse.double() - torch.logsumexp(s, -1)).abs().max().item() < 1e-5
    assert lse.dtype == torch.float32


def test_captured_values_change_without_recompiling():
    q, k, v = inputs(L=64)
    bias = torch.zeros(H)

    def mod(score, b, h, q_idx, kv_idx):
        return score + bias[h] * (q_idx - kv_idx)

    compare(q, k, v, score_mod=mod)
    kernels = len(_compiler._memory)
    bias.copy_(torch.tensor([0.1, 0.2, -0.3, 0.4]))  # new values, same tensor
    compare(q, k, v, score_mod=mod)
    bias = torch.tensor([1.0, -1.0, 0.5, 0.0])        # a new tensor, same shape
    compare(q, k, v, score_mod=mod)
    assert len(_compiler._memory) == kernels
