"""attn inside PyTorch programs: `replace_sdpa()` and the torch.library ops.

    with attn.replace_sdpa():
        model(**inputs)   # every F.scaled_dot_product_attention runs on attn

Calls attn does not take (CUDA tensors, dropout, gradients being recorded,
unsupported dtypes, ...) fall back to PyTorch's own function; the first
fallback of each reason is reported once with a warning.

`torch.ops.attn.sdpa` and `torch.ops.attn.flex` (no score/mask mods: those
are Python functions; use attn.flex_attention eagerly) are custom ops, so
torch.compile keeps them in its graph as single nodes.
"""

import contextlib
import threading
import warnings

import torch
import torch.nn.functional as F

from .functional import scaled_dot_product_attention

_original_sdpa = F.scaled_dot_product_attention
_flex_module = None
try:
    import torch.nn.attention.flex_attention as _flex_module
    _original_flex = _flex_module.flex_attention
except ImportError:  # a PyTorch without FlexAttention
    _original_flex = None
_warned = set()
_lock = threading.Lock()
_depth = 0


def _fallback_reason(query, key, value, attn_mask, dropout_p, kwargs):
    tensors = [t for t in (query, key, value, attn_mask) if isinstance(t, torch.Tensor)]
    if any(t.device.type != "cpu" for t in tensors):
        return "tensors not on the CPU"
    if dropout_p:
        return "dropout_p > 0"
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return "gradients are being recorded (attn has no backward yet)"
    if query.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        return f"dtype {query.dtype}"
    if set(kwargs) - {"enable_gqa"}:
        return f"arguments {sorted(set(kwargs) - {'enable_gqa'})}"
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        return "inputs not of rank 4"
    if isinstance(attn_mask, torch.Tensor) and attn_mask.dim() > 4:
        return "a mask of rank > 4"
    return None


def _routed_sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                 scale=None, **kwargs):
    reason = _fallback_reason(query, key, value, attn_mask, dropout_p, kwargs)
    if reason is None:
        try:
            return torch.ops.attn.sdpa(query, key, value, attn_mask, bool(is_causal), scale,
                                       bool(kwargs.get("enable_gqa", False)))
        except (ValueError, TypeError, NotImplementedError) as error:
            reason = str(error)
    _say_once(reason)
    return _original_sdpa(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p,
                          is_causal=is_causal, scale=scale, **kwargs)


def _say_once(reason):
    if reason not in _warned:
        _warned.add(reason)
        warnings.warn(f"attn.replace_sdpa: PyTorch runs this call ({reason})", stacklevel=3)


def _routed_flex(query, key, value, score_mod=None, block_mask=None, scale=None,
                 enable_gqa=False, return_lse=False, kernel_options=None, **kwargs):
    """FlexAttention calls: the torch BlockMask's mask_mod is traced again
    by attn (its seq_lengths give the shape)."""
    from .flex import create_block_mask, flex_attention
    reason = _fallback_reason(query, key, value, None, 0.0, {})
    if reason is None and kwargs:
        reason = f"arguments {sorted(kwargs)}"
    if reason is None:
        try:
            mask = None
            if block_mask is not None:
                q_len, kv_len = block_mask.seq_lengths
                mask = create_block_mask(block_mask.mask_mod, None, None, q_len, kv_len)
            result = flex_attention(query, key, value, score_mod=score_mod, block_mask=mask,
                                    scale=scale, enable_gqa=enable_gqa, return_lse=return_lse)
            return result
        except (ValueError, TypeError, NotImplementedError) as error:
            reason = str(error)
    _say_once(reason)
    return _original_flex(query, key, value, score_mod=score_mod, block_mask=block_mask,
                          scale=scale, enable_gqa=enable_gqa, return_lse=return_lse,
                          kernel_options=kernel_options, **kwargs)


@contextlib.contextmanager
def replace_sdpa():
    """Routes torch.nn.functional.scaled_dot_product_attention and
    torch.nn.attention.flex_attention.flex_attention to attn's kernels
    inside the block (nested blocks are fine). Code that imported
    flex_attention by name before the block keeps PyTorch's."""
    global _depth
    with _lock:
        _depth += 1
        F.scaled_dot_product_attention = _routed_sdpa
        if _flex_module is not None:
            _flex_module.flex_attention = _routed_flex
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                F.scaled_dot_product_attention = _original_sdpa
                if _flex_module is not None:
                    _flex_module.flex_attention = _original_flex


@torch.library.custom_op("attn::sdpa", mutates_args=())
def _sdpa_op(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
             attn_mask: torch.Tensor | None, is_causal: bool, scale: float | None,
             enable_gqa: bool) -> torch.Tensor:
    return scaled_dot_product_attention(query, key, value, attn_mask=attn_mask,
                                        is_causal=is_causal, scale=scale,
                                        enable_gqa=enable_gqa)


@_sdpa_op.register_fake
def _(query, key, value, attn_mask, is_causal, scale, enable_gqa):
    shape = tuple(query.shape[:-1]) + (value.shape[-1],)
    return query.new_empty(shape)


@torch.library.custom_op("attn::flex", mutates_args=())
def _flex_op(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
             scale: float | None, enable_gqa: bool) -> torch.Tensor:
    from .flex import flex_attention
    return flex_attention(query, key, value, scale=scale, enable_gqa=enable_gqa)


@_flex_op.register_fake
def _(query, key, value, scale, enable_gqa):
    shape = tuple(query.shape[:-1]) + (value.shape[-1],)
    return query.new_empty(shape)
