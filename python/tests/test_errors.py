"""Bad input raises a Python exception with attn's message, never a crash."""

import numpy as np
import pytest
import torch

import attn


def t(*shape, dtype=torch.float32):
    return torch.randn(*shape).to(dtype)


def test_wrong_rank():
    with pytest.raises(ValueError, match="rank 4"):
        attn.scaled_dot_product_attention(t(2, 3, 4, 5, 6), t(2, 3, 4, 5, 6), t(2, 3, 4, 5, 6))
    with pytest.raises(ValueError, match="rank 4"):
        attn.scaled_dot_product_attention(t(8), t(8), t(8))


def test_mismatched_batch():
    with pytest.raises(ValueError, match="batch sizes differ"):
        attn.scaled_dot_product_attention(t(2, 2, 8, 16), t(3, 2, 8, 16), t(3, 2, 8, 16))


def test_mismatched_head_dim():
    with pytest.raises(ValueError, match="head dims differ"):
        attn.scaled_dot_product_attention(t(1, 2, 8, 16), t(1, 2, 8, 32), t(1, 2, 8, 16))


def test_gqa_needs_flag_and_division():
    with pytest.raises(ValueError, match="enable_gqa=True"):
        attn.scaled_dot_product_attention(t(1, 8, 8, 16), t(1, 2, 8, 16), t(1, 2, 8, 16))
    with pytest.raises(ValueError, match="do not divide"):
        attn.scaled_dot_product_attention(t(1, 6, 8, 16), t(1, 4, 8, 16), t(1, 4, 8, 16),
                                          enable_gqa=True)


def test_unsupported_dtype():
    with pytest.raises(TypeError, match="unsupported dtype float64"):
        attn.scaled_dot_product_attention(*(t(1, 1, 4, 8, dtype=torch.float64),) * 3)
    with pytest.raises(TypeError, match="share a dtype"):
        attn.scaled_dot_product_attention(t(1, 1, 4, 8), t(1, 1, 4, 8, dtype=torch.float16),
                                          t(1, 1, 4, 8))
    with pytest.raises(TypeError, match="must be a torch.Tensor or a numpy.ndarray"):
        attn.scaled_dot_product_attention([1.0], [1.0], [1.0])


def test_layout_that_cannot_be_taken():
    sparse = t(1, 1, 4, 8).to_sparse()
    with pytest.raises(ValueError, match="strided"):
        attn.scaled_dot_product_attention(sparse, t(1, 1, 4, 8), t(1, 1, 4, 8))


def test_mask_that_does_not_broadcast():
    with pytest.raises(ValueError, match="does not broadcast"):
        attn.scaled_dot_product_attention(t(1, 2, 8, 16), t(1, 2, 8, 16), t(1, 2, 8, 16),
                                          attn_mask=torch.ones(3, 8, 8, dtype=torch.bool))
    with pytest.raises(TypeError, match="bool or a float"):
        attn.scaled_dot_product_attention(t(1, 2, 8, 16), t(1, 2, 8, 16), t(1, 2, 8, 16),
                                          attn_mask=torch.ones(8, 8, dtype=torch.int32))


def test_dropout_and_causal_with_mask():
    q = t(1, 1, 4, 8)
    with pytest.raises(NotImplementedError, match="dropout"):
        attn.scaled_dot_product_attention(q, q, q, dropout_p=0.1)
    with pytest.raises(ValueError, match="not both"):
        attn.scaled_dot_product_attention(q, q, q, is_causal=True,
                                          attn_mask=torch.ones(4, 4, dtype=torch.bool))


def test_wrong_out():
    q = t(1, 1, 4, 8)
    with pytest.raises(ValueError, match="out must be"):
        attn.scaled_dot_product_attention(q, q, q, out=torch.empty(1, 1, 4, 9))


def test_untraceable_mod_names_its_line():
    def branching(score, b, h, q_idx, kv_idx):
        if q_idx > kv_idx:  # data-dependent Python control flow
            return score
        return score * 2

    q = t(1, 1, 16, 8)
    with pytest.raises(attn.TraceError, match=r"test_errors.py:\d+: +if q_idx > kv_idx"):
        attn.flex_attention(q, q, q, score_mod=branching)


def test_mask_mod_must_be_boolean():
    q = t(1, 1, 16, 8)
    with pytest.raises(attn.TraceError, match="boolean"):
        attn.flex_attention(q, q, q, block_mask=attn.create_block_mask(
            lambda b, h, q_idx, kv_idx: q_idx - kv_idx, 1, 1, 16, 16))


def test_block_mask_for_other_lengths():
    q = t(1, 1, 16, 8)
    mask = attn.create_block_mask(lambda b, h, qi, ki: qi >= ki, 1, 1, 32, 32)
    with pytest.raises(ValueError, match="Q_LEN 32"):
        attn.flex_attention(q, q, q, block_mask=mask)


def test_compile_error_is_located():
    with pytest.raises(attn.CompileError, match=r"<attn source>:\d+:\d+: error"):
        attn.compile("func.func @bad(%q: tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32> {\n"
                     "  %o = attn.attention %q, %q, %q pattern(#attn.window<left = -1, right = 0>)"
                     " : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>)"
                     " -> tensor<1x1x4x8xf32>\n  return %o : tensor<1x1x4x8xf32>\n}\n")


def test_call_checked_against_signature():
    f = attn.compile("func.func @k(%q: tensor<1x1x4x8xf32>, %k: tensor<1x1x4x8xf32>, "
                     "%v: tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32> {\n"
                     "  %o = attn.attention %q, %k, %v : (tensor<1x1x4x8xf32>, "
                     "tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>\n"
                     "  return %o : tensor<1x1x4x8xf32>\n}\n")
    x = np.zeros((1, 1, 4, 8), np.float32)
    with pytest.raises(ValueError, match="dimension 2 must be 4, got 5"):
        f(x, x, np.zeros((1, 1, 5, 8), np.float32))
    with pytest.raises(ValueError, match="takes 3 inputs"):
        f(x, x)
    with pytest.raises(ValueError, match="must be f32"):
        f(x, x, x.astype(np.float16))
