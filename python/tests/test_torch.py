"""attn inside PyTorch programs: replace_sdpa on a Hugging Face model, and
the torch.library op under torch.compile."""

import warnings

import pytest
import torch
import torch.nn.functional as F

import attn
import attn.torch_integration
from attn import functional

transformers = pytest.importorskip("transformers")


def small_bert():
    config = transformers.BertConfig(vocab_size=100, hidden_size=64, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=128,
                                     max_position_embeddings=64,
                                     attn_implementation="sdpa")
    torch.manual_seed(0)
    return transformers.BertModel(config).eval()


def test_replace_sdpa_runs_a_transformers_model():
    model = small_bert()
    ids = torch.randint(0, 100, (2, 23), generator=torch.Generator().manual_seed(1))
    mask = torch.ones(2, 23, dtype=torch.long)
    mask[1, 15:] = 0  # padding in the second sequence
    calls = []
    original = functional.scaled_dot_product_attention

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    with torch.no_grad():
        want = model(input_ids=ids, attention_mask=mask).last_hidden_state
        functional_module = attn.torch_integration
        functional_module.scaled_dot_product_attention = counting
        try:
            with attn.replace_sdpa():
                got = model(input_ids=ids, attention_mask=mask).last_hidden_state
        finally:
            functional_module.scaled_dot_product_attention = original
    assert len(calls) == 2  # one attention per layer ran on attn
    assert F.scaled_dot_product_attention is attn.torch_integration._original_sdpa
    # Same math in f32 on both sides; LayerNorm after attention keeps errors
    # at the f32 level (1e-6 on O(1) hidden states).
    assert (got - want).abs().max().item() < 1e-5


def test_replace_sdpa_falls_back_with_one_warning():
    q = torch.randn(1, 2, 8, 16, requires_grad=True)
    with attn.replace_sdpa(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a = F.scaled_dot_product_attention(q, q, q)
        b = F.scaled_dot_product_attention(q, q, q)
    messages = [str(w.message) for w in caught if "replace_sdpa" in str(w.message)]
    assert len(messages) <= 1  # said once per reason in the process
    assert a.requires_grad and b.requires_grad  # PyTorch ran it, with autograd


def test_custom_op_under_torch_compile():
    def fn(q, k, v):
        return torch.ops.attn.sdpa(q, k, v, None, True, None, False) * 2

    q, k, v = (torch.randn(1, 2, 40, 32) for _ in range(3))
    compiled = torch.compile(fn, backend="aot_eager", fullgraph=True)
    got = compiled(q, k, v)
    want = F.scaled_dot_product_attention(q, k, v, is_causal=True) * 2
    assert (got - want).abs().max().item() < 1e-5


def test_replace_sdpa_routes_flex_attention():
    from torch.nn.attention import flex_attention as tflex
    q, k, v = (torch.randn(1, 2, 96, 32, generator=torch.Generator().manual_seed(s))
               for s in range(3))

    def window(b, h, q_idx, kv_idx):
        return (q_idx >= kv_idx) & (q_idx - kv_idx <= 10)

    def bias(score, b, h, q_idx, kv_idx):
        return score + 0.1 * h

    mask = tflex.create_block_mask(window, None, None, 96, 96, device="cpu")
    want = tflex.flex_attention(q.double(), k.double(), v.double(), score_mod=bias,
                                block_mask=mask)
    seen = []
    original = attn.flex.flex_attention

    def counting(*args, **kwargs):
        seen.append(kwargs.get("block_mask"))
        return original(*args, **kwargs)

    attn.flex.flex_attention = counting
    try:
        with attn.replace_sdpa():
            got = tflex.flex_attention(q, k, v, score_mod=bias, block_mask=mask)
    finally:
        attn.flex.flex_attention = original
    assert len(seen) == 1 and isinstance(seen[0], attn.BlockMask)
    assert tflex.flex_attention is attn.torch_integration._original_flex
    assert (got.double() - want).abs().max().item() < 1e-5


def test_flex_out_is_written_in_place():
    q = torch.randn(1, 1, 16, 8)
    out = torch.empty(1, 1, 16, 8)
    result = attn.flex_attention(q, q, q, out=out)
    assert result.data_ptr() == out.data_ptr()
    with pytest.raises(ValueError, match="out must be"):
        attn.flex_attention(q, q, q, out=torch.empty(1, 1, 16, 9))
