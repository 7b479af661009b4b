"""The GPU path: device="vulkan" runs the same calls on attn's Vulkan
kernels (lavapipe, Mesa's Vulkan on the CPU, in the suite)."""

import os

import numpy as np
import pytest
import torch
from torch.nn.attention import flex_attention as tflex

import attn
from reference import attention_f64

LAVAPIPE = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
pytestmark = pytest.mark.skipif(not os.path.exists(LAVAPIPE),
                                reason="no Vulkan device (install mesa-vulkan-drivers)")
TOL = 1e-5  # f32 on the GPU kernels: the same bound as the CPU's (test_sdpa.py)


def qkv(L=97, H=2, D=64):
    g = torch.Generator().manual_seed(0)
    return tuple(torch.randn(1, H, L, D, generator=g) for _ in range(3))


def test_sdpa_causal_on_vulkan():
    q, k, v = qkv()
    out = attn.scaled_dot_product_attention(q, k, v, is_causal=True, device="vulkan")
    ref = attention_f64(q, k, v, keep=np.tril(np.ones((97, 97), dtype=bool)))
    assert np.abs(out.numpy() - ref).max() < TOL


def test_flex_document_mask_on_vulkan():
    q, k, v = qkv()
    doc = torch.repeat_interleave(torch.arange(3), torch.tensor([30, 40, 27]))

    def document_causal(b, h, q_idx, kv_idx):
        return (doc[q_idx] == doc[kv_idx]) & (q_idx >= kv_idx)

    out = attn.flex_attention(q, k, v, device="vulkan", block_mask=attn.create_block_mask(
        document_causal, None, None, 97, 97))
    ref = tflex.flex_attention(q.double(), k.double(), v.double(),
                               block_mask=tflex.create_block_mask(document_causal, None, None,
                                                                  97, 97, device="cpu"))
    assert (out.double() - ref).abs().max().item() < TOL


def test_captured_tensors_in_a_score_region_are_refused_on_vulkan():
    q, k, v = qkv()
    slopes = torch.tensor([0.5, 0.25])
    with pytest.raises(attn.CompileError, match="score region that uses values from outside"):
        attn.flex_attention(q, k, v, device="vulkan",
                            score_mod=lambda s, b, h, i, j: s + slopes[h] * (j - i))


def test_unknown_device():
    q, k, v = qkv(L=8)
    with pytest.raises(ValueError, match="device must be"):
        attn.scaled_dot_product_attention(q, k, v, device="tpu")
