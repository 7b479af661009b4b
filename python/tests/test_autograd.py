"""Gradients through attn's backward (attn.attention_grad, autograd.py):
attn.scaled_dot_product_attention and attn.flex_attention on float32
inputs that require grad, against torch's autograd in float64 of
independent formulas: PyTorch's math SDPA, and for flex (whose CPU
FlexAttention has no backward) plain softmax(mod(q k^T)) v."""

import pytest
import torch

import attn

# f32 gradients against float64: errors seen ~1e-6 of each gradient's
# largest entry (sums over <= 200 keys/queries of products of O(1) terms);
# 1e-4 leaves 100x margin and a wrong term (a missed scale, a GQA head,
# a mask) is off by 1e-2 or more.
TOL = 1e-4


def random(*shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed),
                       dtype=torch.float64)


def grads(fn, tensors, dout, dtype):
    leaves = [t.to(dtype).requires_grad_() for t in tensors]
    out = fn(*leaves)
    out.backward(dout.to(dtype))
    return out, [t.grad for t in leaves]


def check(ours, theirs, q, k, v, dout):
    out, ours_grads = grads(ours, (q, k, v), dout, torch.float32)
    ref, ref_grads = grads(theirs, (q, k, v), dout, torch.float64)
    assert out.grad_fn is not None
    scale = ref.abs().max()
    assert (out.double() - ref).abs().max() <= TOL * scale
    for name, a, r in zip(("dq", "dk", "dv"), ours_grads, ref_grads):
        error = (a.double() - r).abs().max() / r.abs().max()
        assert error <= TOL, f"{name}: scaled error {error:.2e}"


@pytest.mark.parametrize("causal,hq,hkv,lq,lk", [
    (False, 4, 4, 37, 53), (True, 4, 2, 53, 53), (False, 4, 1, 1, 97)])
def test_sdpa(causal, hq, hkv, lq, lk):
    q, k, v = random(2, hq, lq, 40, seed=1), random(2, hkv, lk, 40, seed=2), \
        random(2, hkv, lk, 24, seed=3)
    dout = random(2, hq, lq, 24, seed=4)
    f = torch.nn.functional.scaled_dot_product_attention
    check(lambda q, k, v: attn.scaled_dot_product_attention(
              q, k, v, is_causal=causal, enable_gqa=hq != hkv),
          lambda q, k, v: f(q, k, v, is_causal=causal, enable_gqa=hq != hkv),
          q, k, v, dout)


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_sdpa_masks(kind):
    q, k, v = random(2, 2, 30, 16, seed=5), random(2, 2, 45, 16, seed=6), \
        random(2, 2, 45, 16, seed=7)
    dout = random(2, 2, 30, 16, seed=8)
    mask = torch.rand(30, 45, generator=torch.Generator().manual_seed(9)) > 0.3 \
        if kind == "bool" else random(2, 1, 30, 45, seed=9).float()
    f = torch.nn.functional.scaled_dot_product_attention
    check(lambda q, k, v: attn.scaled_dot_product_attention(q, k, v, attn_mask=mask),
          lambda q, k, v: f(q, k, v, attn_mask=mask if kind == "bool" else mask.double()),
          q, k, v, dout)


@pytest.mark.parametrize("bias_shape", [(2, 1, 30, 45), (45,), (1, 2, 1, 45)])
def test_sdpa_bias_gradient(bias_shape):
    """An additive attn_mask that requires grad gets its gradient (summed
    over the dimensions it broadcasts), as in torch."""
    q, k, v = random(2, 2, 30, 16, seed=22), random(2, 2, 45, 16, seed=23), \
        random(2, 2, 45, 16, seed=24)
    bias = random(*bias_shape, seed=25)
    dout = random(2, 2, 30, 16, seed=26)
    f = torch.nn.functional.scaled_dot_product_attention
    ours_bias = bias.float().requires_grad_()
    ref_bias = bias.clone().requires_grad_()
    check(lambda q, k, v: attn.scaled_dot_product_attention(q, k, v, attn_mask=ours_bias),
          lambda q, k, v: f(q, k, v, attn_mask=ref_bias), q, k, v, dout)
    error = (ours_bias.grad.double() - ref_bias.grad).abs().max() / ref_bias.grad.abs().max()
    assert error <= TOL, f"dbias: scaled error {error:.2e}"


def test_sdpa_rank3_and_no_grad():
    q, k, v = random(3, 20, 8, seed=10), random(3, 20, 8, seed=11), random(3, 20, 8, seed=12)
    f = torch.nn.functional.scaled_dot_product_attention
    check(attn.scaled_dot_product_attention, f, q, k, v, random(3, 20, 8, seed=13))
    with torch.no_grad():
        out = attn.scaled_dot_product_attention(*(t.float().requires_grad_() for t in (q, k, v)))
    assert out.grad_fn is None


@pytest.mark.parametrize("dtype,tol", [(torch.bfloat16, 3e-2), (torch.float16, 4e-3)])
def test_sdpa_16_bit(dtype, tol):
    """16-bit inputs: widened in the kernels, f32 accumulation, each
    gradient rounded once (8 units of the format's rounding, as attn-run's
    --backward --check; seen ~3e-3 bf16, ~4e-4 f16)."""
    q, k, v = random(1, 4, 60, 32, seed=27), random(1, 2, 60, 32, seed=28), \
        random(1, 2, 60, 32, seed=29)
    q, k, v = (t.to(dtype).double() for t in (q, k, v))  # representable inputs
    dout = random(1, 4, 60, 32, seed=30).to(dtype).double()
    leaves = [t.to(dtype).requires_grad_() for t in (q, k, v)]
    attn.scaled_dot_product_attention(*leaves, is_causal=True, enable_gqa=True) \
        .backward(dout.to(dtype))
    ref = [t.clone().requires_grad_() for t in (q, k, v)]
    torch.nn.functional.scaled_dot_product_attention(*ref, is_causal=True, enable_gqa=True) \
        .backward(dout)
    for name, a, r in zip(("dq", "dk", "dv"), leaves, ref):
        assert a.grad.dtype == dtype
        error = (a.grad.double() - r.grad).abs().max() / r.grad.abs().max()
        assert error <= tol, f"{name}: scaled error {error:.2e}"


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def window(b, h, q_idx, kv_idx):
    return (q_idx >= kv_idx) & (q_idx - kv_idx <= 16)


def softcap(score, b, h, q_idx, kv_idx):
    return 20.0 * torch.tanh(score / 20.0)


@pytest.mark.parametrize("score_mod,mask_mod", [
    (None, causal), (None, window), (softcap, None), (softcap, causal)])
def test_flex(score_mod, mask_mod):
    q, k, v = random(1, 4, 100, 32, seed=14) * 3, random(1, 4, 100, 32, seed=15), \
        random(1, 4, 100, 32, seed=16)
    dout = random(1, 4, 100, 32, seed=17)

    def ours(q, k, v):
        block_mask = attn.create_block_mask(mask_mod, None, None, 100, 100) \
            if mask_mod else None
        return attn.flex_attention(q, k, v, score_mod=score_mod, block_mask=block_mask)

    def theirs(q, k, v):
        scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
        i = torch.arange(100).view(100, 1)
        j = torch.arange(100).view(1, 100)
        if score_mod:
            scores = score_mod(scores, None, None, i, j)
        if mask_mod:
            scores = scores.masked_fill(~mask_mod(None, None, i, j), float("-inf"))
        return torch.softmax(scores, dim=-1) @ v

    check(ours, theirs, q, k, v, dout)


def test_flex_captured_tensors():
    # A score_mod reading captured tensors (a score region): a learnable
    # relative-position table and a per-head gate through a sigmoid, under
    # a causal block mask. Their gradients (FlexAttention's CPU path has no
    # backward, and its GPU one none for captured buffers) against float64
    # autograd of the same formula; table sums <= 80 logits per entry.
    L = 80
    q, k, v = random(1, 2, L, 16, seed=31) * 2, random(1, 2, L, 16, seed=32), \
        random(1, 2, L, 16, seed=33)
    table, gate = random(2, 2 * L, seed=34), random(2, seed=35)
    dout = random(1, 2, L, 16, seed=36)

    def mod(t, g):
        return lambda s, b, h, i, j: s * torch.sigmoid(g[h]) + t[h, i - j + L]

    leaves = [x.float().requires_grad_() for x in (q, k, v, table, gate)]
    mask = attn.create_block_mask(causal, None, None, L, L)
    out = attn.flex_attention(*leaves[:3], score_mod=mod(*leaves[3:]), block_mask=mask)
    out.backward(dout.float())

    ref = [x.clone().requires_grad_() for x in (q, k, v, table, gate)]
    i, j = torch.arange(L).view(L, 1), torch.arange(L).view(1, L)
    scores = mod(*ref[3:])(ref[0] @ ref[1].transpose(-1, -2) / 4.0, None,
                           torch.arange(2).view(1, 2, 1, 1), i, j)
    scores = scores.masked_fill(j > i, float("-inf"))
    (torch.softmax(scores, dim=-1) @ ref[2]).backward(dout)
    for name, a, r in zip(("dq", "dk", "dv", "dtable", "dgate"), leaves, ref):
        error = (a.grad.double() - r.grad).abs().max() / r.grad.abs().max()
        assert error <= TOL, f"{name}: scaled error {error:.2e}"

    # A captured tensor alone requiring grad is enough to train it.
    table_only = table.float().requires_grad_()
    attn.flex_attention(q.float(), k.float(), v.float(),
                        score_mod=mod(table_only, gate.float()),
                        block_mask=mask).backward(dout.float())
    error = (table_only.grad.double() - ref[3].grad).abs().max() / ref[3].grad.abs().max()
    assert error <= TOL


def test_refusals():
    q, k, v = (random(1, 2, 16, 8, seed=s).float().requires_grad_() for s in (18, 19, 20))
    with pytest.raises(ValueError, match="out="):
        attn.scaled_dot_product_attention(q, k, v, out=torch.empty(1, 2, 16, 8))
