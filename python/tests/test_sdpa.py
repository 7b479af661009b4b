"""attn.scaled_dot_product_attention against PyTorch and a float64 reference."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import attn
from reference import attention_f64

# f32 kernels against the f64 reference: outputs are convex combinations of
# V's rows (N(0, 1) entries, |o| < 5); the online softmax and the f32 dot
# products over D <= 128 terms leave ~1e-6 relative error, so 1e-5 absolute
# holds with margin and still catches a wrong mask, scale or head mapping
# (those move outputs by ~1e-1).
F32_TOL = 1e-5


def qkv(B, Hq, Hkv, Lq, Lk, D, Dv=None, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    Dv = D if Dv is None else Dv
    q = torch.randn(B, Hq, Lq, D, generator=g)
    k = torch.randn(B, Hkv, Lk, D, generator=g)
    v = torch.randn(B, Hkv, Lk, Dv, generator=g)
    return q.to(dtype), k.to(dtype), v.to(dtype)


def check_f32(out, q, k, v, keep=None, bias=None, scale=None, torch_out=None):
    ref = attention_f64(q.double(), k.double(), v.double(), keep=keep,
                        bias=None if bias is None else bias.double(), scale=scale)
    err = np.abs(out.double().numpy() - ref).max()
    assert err < F32_TOL, f"attn vs f64 reference: {err}"
    if torch_out is not None:
        err_torch = (out - torch_out).abs().max().item()
        assert err_torch < F32_TOL, f"attn vs torch SDPA: {err_torch}"


@pytest.mark.parametrize("L,D", [(97, 40), (128, 64), (1000, 64), (97, 128)])
@pytest.mark.parametrize("causal", [False, True])
def test_dense_and_causal(L, D, causal):
    q, k, v = qkv(1, 2, 2, L, L, D)
    out = attn.scaled_dot_product_attention(q, k, v, is_causal=causal)
    keep = np.tril(np.ones((L, L), dtype=bool)) if causal else None
    check_f32(out, q, k, v, keep=keep,
              torch_out=F.scaled_dot_product_attention(q, k, v, is_causal=causal))


def test_causal_is_top_left_when_lengths_differ():
    q, k, v = qkv(1, 2, 2, 37, 100, 64)
    out = attn.scaled_dot_product_attention(q, k, v, is_causal=True)
    keep = np.tril(np.ones((37, 100), dtype=bool))
    check_f32(out, q, k, v, keep=keep,
              torch_out=F.scaled_dot_product_attention(q, k, v, is_causal=True))


def test_boolean_mask_broadcast():
    q, k, v = qkv(2, 4, 4, 97, 113, 64)
    g = torch.Generator().manual_seed(1)
    mask = torch.rand(2, 1, 97, 113, generator=g) > 0.3   # per batch, shared by heads
    mask[..., 0] = True  # every row keeps a key: PyTorch gives NaN otherwise
    out = attn.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    check_f32(out, q, k, v, keep=mask.numpy(),
              torch_out=F.scaled_dot_product_attention(q, k, v, attn_mask=mask))


def test_two_dimensional_mask():
    q, k, v = qkv(1, 3, 3, 50, 50, 40)
    mask = torch.ones(50, 50, dtype=torch.bool).triu(-5).tril(5)
    out = attn.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    check_f32(out, q, k, v, keep=mask.numpy(),
              torch_out=F.scaled_dot_product_attention(q, k, v, attn_mask=mask))


def test_additive_mask_and_scale():
    q, k, v = qkv(2, 2, 2, 64, 80, 64)
    g = torch.Generator().manual_seed(2)
    bias = torch.randn(2, 2, 64, 80, generator=g)
    bias[:, :, :, 70:] = float("-inf")   # padding: the last keys dropped
    out = attn.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=0.3)
    check_f32(out, q, k, v, bias=bias, scale=0.3,
              torch_out=F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=0.3))


def test_padding_mask_per_key():
    q, k, v = qkv(2, 4, 4, 33, 33, 64)
    bias = torch.zeros(2, 1, 1, 33)
    bias[1, :, :, 20:] = float("-inf")
    out = attn.scaled_dot_product_attention(q, k, v, attn_mask=bias)
    check_f32(out, q, k, v, bias=bias,
              torch_out=F.scaled_dot_product_attention(q, k, v, attn_mask=bias))


def test_boolean_padding_mask_per_key():
    # [B, 1, 1, Lk] reaches attn as a per-key mask (not expanded to Lq
    # rows), which the vectorized CPU kernels take; GQA, keys past each
    # sequence's length dropped.
    q, k, v = qkv(2, 4, 2, 45, 45, 64)
    mask = torch.ones(2, 1, 1, 45, dtype=torch.bool)
    mask[1, :, :, 30:] = False
    mask[0, :, :, 40:] = False
    out = attn.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    check_f32(out, q, k, v, keep=mask.numpy(),
              torch_out=F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                                        enable_gqa=True))


@pytest.mark.parametrize("additive", [False, True])
def test_materialized_padding_mask_is_taken_per_key(additive):
    # Hugging Face's encoders pass the padding mask materialized for every
    # query, [B, 1, L, L], rows equal: attn takes it per key (the vectorized
    # kernels' path). A causal mask, whose rows differ, stays [L, L].
    q, k, v = qkv(2, 4, 4, 45, 45, 64)
    keep = torch.ones(2, 1, 1, 45, dtype=torch.bool)
    keep[1, :, :, 30:] = False
    keep = keep.expand(2, 1, 45, 45).contiguous()
    mask = torch.zeros(2, 1, 45, 45).masked_fill(~keep, float("-inf")) if additive else keep
    kind, operand = attn.functional._mask_operand(mask, q, 2, 4, 45, 45)
    assert tuple(operand.shape) == (2, 1, 1, 45)
    out = attn.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    check_f32(out, q, k, v, keep=keep.numpy(),
              torch_out=F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    causal = torch.ones(45, 45, dtype=torch.bool).tril().expand(2, 1, 45, 45)
    kind, operand = attn.functional._mask_operand(causal, q, 2, 4, 45, 45)
    assert tuple(operand.shape) == (2, 1, 45, 45)


@pytest.mark.parametrize("Hq,Hkv", [(8, 2), (4, 1)])
def test_gqa(Hq, Hkv):
    q, k, v = qkv(2, Hq, Hkv, 97, 97, 64)
    out = attn.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    check_f32(out, q, k, v, keep=np.tril(np.ones((97, 97), dtype=bool)),
              torch_out=F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                        enable_gqa=True))


def test_value_dim_differs():
    q, k, v = qkv(1, 2, 2, 40, 60, 64, Dv=32)
    out = attn.scaled_dot_product_attention(q, k, v)
    assert out.shape == (1, 2, 40, 32)
    check_f32(out, q, k, v, torch_out=F.scaled_dot_product_attention(q, k, v))


def test_rank3_inputs():
    q, k, v = (x[:, 0] for x in qkv(2, 1, 1, 30, 30, 64))
    out = attn.scaled_dot_product_attention(q, k, v, is_causal=True)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert out.shape == ref.shape
    assert (out - ref).abs().max().item() < F32_TOL


@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("causal", [False, True])
def test_bf16_within_twice_torch_error(D, causal):
    q, k, v = qkv(1, 4, 4, 256, 256, D, dtype=torch.bfloat16)
    keep = np.tril(np.ones((256, 256), dtype=bool)) if causal else None
    ref = attention_f64(q.double(), k.double(), v.double(), keep=keep)
    ours = attn.scaled_dot_product_attention(q, k, v, is_causal=causal)
    theirs = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    assert ours.dtype == torch.bfloat16
    err_ours = np.abs(ours.double().numpy() - ref).max()
    err_torch = np.abs(theirs.double().numpy() - ref).max()
    # The bar: attn's bf16 error at most twice PyTorch's own.
    assert err_ours <= 2 * err_torch, (err_ours, err_torch)


def test_f16():
    q, k, v = qkv(1, 2, 2, 64, 64, 64, dtype=torch.float16)
    ref = attention_f64(q.double(), k.double(), v.double())
    out = attn.scaled_dot_product_attention(q, k, v)
    assert out.dtype == torch.float16
    # f16 output rounding: half an ulp at |o| < 2 is 1e-3.
    assert np.abs(out.double().numpy() - ref).max() < 2e-3


def test_numpy_inputs_and_out():
    q, k, v = (x.numpy() for x in qkv(1, 2, 2, 70, 70, 64))
    out = np.empty((1, 2, 70, 64), dtype=np.float32)
    result = attn.scaled_dot_product_attention(q, k, v, is_causal=True, out=out)
    assert result is out
    ref = attention_f64(q, k, v, keep=np.tril(np.ones((70, 70), dtype=bool)))
    assert np.abs(out - ref).max() < F32_TOL


def test_torch_out_written_in_place():
    q, k, v = qkv(1, 2, 2, 64, 64, 64)
    out = torch.full((1, 2, 64, 64), float("nan"))
    pointer = out.data_ptr()
    result = attn.scaled_dot_product_attention(q, k, v, out=out)
    assert result.data_ptr() == pointer
    check_f32(out, q, k, v)


def test_non_contiguous_inputs_are_copied():
    # [B, L, H, D] transposed to [B, H, L, D]: what Hugging Face models pass.
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(1, 50, 4, 64, generator=g).transpose(1, 2) for _ in range(3))
    assert not q.is_contiguous()
    out = attn.scaled_dot_product_attention(q, k, v, is_causal=True)
    check_f32(out, q, k, v, keep=np.tril(np.ones((50, 50), dtype=bool)))


def test_fully_masked_row_is_zero():
    q, k, v = qkv(1, 1, 1, 4, 8, 64)
    mask = torch.ones(4, 8, dtype=torch.bool)
    mask[2] = False
    out = attn.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert torch.all(out[0, 0, 2] == 0)
    check_f32(out, q, k, v, keep=mask.numpy())


def test_kernels_are_cached_per_shape():
    q, k, v = qkv(1, 2, 2, 48, 48, 64)
    attn.scaled_dot_product_attention(q, k, v)
    count = len(attn.functional._kernels)
    attn.scaled_dot_product_attention(q + 1, k, v)
    assert len(attn.functional._kernels) == count
