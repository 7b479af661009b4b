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


# Device arrays: attn.compile(..., device="vulkan"). GQA 2:1, causal
# aligned bottom-right, 700 keys for a 33-row query tile: the launch splits
# its key tiles and merges them on the device.
GQA_SPLIT = """
func.func @gqa_split(%q: tensor<1x4x33x32xf32>, %k: tensor<1x2x700x32xf32>,
                     %v: tensor<1x2x700x32xf32>) -> tensor<1x4x33x32xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x4x33x32xf32>, tensor<1x2x700x32xf32>, tensor<1x2x700x32xf32>)
      -> tensor<1x4x33x32xf32>
  return %o : tensor<1x4x33x32xf32>
}
"""


def bottom_right_causal(L, S):
    return np.arange(S)[None, :] <= np.arange(L)[:, None] + (S - L)


def test_device_arrays_chain_calls_without_copies():
    f = attn.compile(GQA_SPLIT, device="vulkan")
    rng = np.random.default_rng(3)
    q = rng.uniform(-1, 1, (1, 4, 33, 32)).astype(np.float32)
    k = rng.uniform(-1, 1, (1, 2, 700, 32)).astype(np.float32)
    v = rng.uniform(-1, 1, (1, 2, 700, 32)).astype(np.float32)
    dq, dk, dv = f.to_device(q), f.to_device(k), f.to_device(v)
    o1, o2 = f.empty_device(q.shape), f.empty_device(q.shape)
    f(dq, dk, dv, out=[o1])
    f(o1, dk, dv, out=[o2])  # the first output is the second query, on the device
    keep = bottom_right_causal(33, 700)
    ref1 = attention_f64(q, k, v, keep=keep)
    ref2 = attention_f64(ref1, k, v, keep=keep)
    assert np.abs(o1.to_host() - ref1).max() < TOL
    # O1's f32 rounding enters the second call; attention's outputs are
    # convex combinations of V's rows, which do not amplify it.
    assert np.abs(o2.to_host() - ref2).max() < TOL
    # Host and device operands mix; a host output is copied back.
    host = np.zeros_like(q)
    f(q, dk, dv, out=[host])
    assert np.abs(host - ref1).max() < TOL


def test_device_arrays_from_torch_come_back_as_torch():
    f = attn.compile(GQA_SPLIT, device="vulkan")
    q = torch.rand(1, 4, 33, 32) - 0.5
    k, v = torch.rand(1, 2, 700, 32) - 0.5, torch.rand(1, 2, 700, 32) - 0.5
    out = f.empty_device((1, 4, 33, 32), torch.float32)
    f(f.to_device(q), f.to_device(k), f.to_device(v), out=[out])
    result = out.to_host()
    assert isinstance(result, torch.Tensor)
    ref = attention_f64(q.numpy(), k.numpy(), v.numpy(), keep=bottom_right_causal(33, 700))
    assert np.abs(result.numpy() - ref).max() < TOL


def test_device_array_errors():
    f = attn.compile(GQA_SPLIT, device="vulkan")
    q = np.zeros((1, 4, 33, 32), np.float32)
    k = f.to_device(np.zeros((1, 2, 700, 32), np.float32))
    small = f.empty_device((1, 4, 33, 31))
    with pytest.raises(ValueError, match=r"operand 0 \(arg0\) is a device buffer of 16368 bytes, the kernel takes 16896"):
        f(small, k, k, out=[f.empty_device(q.shape)])
    with pytest.raises(ValueError, match="pass out="):
        f(q, k, k)
    with pytest.raises(ValueError, match=r"write: got \(2, 2\) float32"):
        small.write(np.zeros((2, 2), np.float32))
    cpu = attn.compile(GQA_SPLIT)
    with pytest.raises(ValueError, match="runs on the CPU"):
        cpu.to_device(q)


def test_cuda_tensors_bind_in_place_only_on_the_runtime_device():
    from attn import _tensors as T
    q, k, v = qkv(L=8)
    meta = torch.empty(1, 2, 8, 64, device="meta")
    assert not T.binds_in_place("vulkan", q, k, v)
    assert not T.binds_in_place("cuda-sm90", q, k, v)        # host tensors
    assert not T.binds_in_place("cuda-sm90", meta, meta, meta)
    assert not T.binds_in_place("cuda-sm90", None)
    if torch.cuda.is_available():
        g = q.cuda()
        assert T.binds_in_place("cuda-sm90", g, g, g, None)
        assert not T.binds_in_place("cuda-sm90", g, q, g)    # one on the host


def test_in_place_branch_runs_on_the_callers_tensors(monkeypatch):
    """What CUDA tensors take (the kernel binds the caller's tensors, no
    trip through the host), run here on the Vulkan kernels with host
    tensors standing in for CUDA ones."""
    from attn import _tensors as T

    def no_copies(*args):
        raise AssertionError("went through the host")

    monkeypatch.setattr(T, "binds_in_place", lambda target, *tensors: True)
    monkeypatch.setattr(T, "on_host", no_copies)
    q, k, v = qkv(L=45)
    keep = torch.rand(1, 1, 45, 45, generator=torch.Generator().manual_seed(1)) > 0.3
    keep[..., 0] = True
    out = torch.empty_like(q)
    got = attn.scaled_dot_product_attention(q, k, v, attn_mask=keep, device="vulkan", out=out)
    assert got is out
    ref = attention_f64(q, k, v, keep=keep[0, 0].numpy())
    assert np.abs(out.numpy() - ref).max() < TOL

    def causal(b, h, q_idx, kv_idx):
        return q_idx >= kv_idx

    got = attn.flex_attention(q, k, v, device="vulkan", block_mask=attn.create_block_mask(
        causal, None, None, 45, 45))
    ref = attention_f64(q, k, v, keep=np.tril(np.ones((45, 45), dtype=bool)))
    assert np.abs(got.numpy() - ref).max() < TOL
