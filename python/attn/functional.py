"""`attn.scaled_dot_product_attention`: PyTorch's SDPA on attn's kernels.

Semantics are torch.nn.functional.scaled_dot_product_attention's, with one
documented difference: a query row whose keys are all masked out yields 0
(attn's rule, docs/Dialect.md), where PyTorch's math path yields NaN.
"""

from . import _tensors as T
from .autograd import attention_with_grad, needs_grad
from ._compiler import _forget_hooks, compile_source
from ._ir import ELEMENT, AttentionCall

_kernels = {}  # (shapes, dtype, options) -> Kernel: no IR text on a hit
_fast = {}     # torch calls without a mask: (shapes, dtypes, options) -> (Kernel, result shape)
_forget_hooks += [_kernels.clear, _fast.clear]


def _check_qkv(q, k, v, enable_gqa, what="scaled_dot_product_attention"):
    """(q, k, v) as rank-4 operands and their common dtype name; raises with
    attn's message for what the kernels cannot take."""
    for name, x in (("query", q), ("key", k), ("value", v)):
        if not (T.is_torch(x) or hasattr(x, "__array__")):
            raise TypeError(f"{what}: {name} must be a torch.Tensor or a numpy.ndarray")
        if x.ndim not in (3, 4):
            raise ValueError(f"{what}: {name} must have rank 4 [B, H, L, D] "
                             f"(or 3, [B, L, D]), got rank {x.ndim} {tuple(x.shape)}")
    if not (q.ndim == k.ndim == v.ndim):
        raise ValueError(f"{what}: query, key and value must have the same rank, got "
                         f"{q.ndim}, {k.ndim}, {v.ndim}")
    dtype = T.dtype_name(q)
    if dtype not in T.FLOAT_DTYPES:
        raise TypeError(f"{what}: unsupported dtype {dtype} (attn takes float32, "
                        "float16 and bfloat16)")
    if T.dtype_name(k) != dtype or T.dtype_name(v) != dtype:
        raise TypeError(f"{what}: query, key and value must share a dtype, got "
                        f"{dtype}, {T.dtype_name(k)}, {T.dtype_name(v)}")
    if T.is_torch(q) != T.is_torch(k) or T.is_torch(q) != T.is_torch(v):
        raise TypeError(f"{what}: mix of torch tensors and numpy arrays")
    squeeze = q.ndim == 3
    if squeeze:
        q, k, v = (x.reshape((x.shape[0], 1) + tuple(x.shape[1:])) for x in (q, k, v))
    B, Hq, Lq, D = q.shape
    if k.shape[0] != B or v.shape[0] != B:
        raise ValueError(f"{what}: batch sizes differ: query {B}, key {k.shape[0]}, "
                         f"value {v.shape[0]}")
    if k.shape[3] != D:
        raise ValueError(f"{what}: query and key head dims differ: {D} and {k.shape[3]}")
    if k.shape[1] != v.shape[1] or k.shape[2] != v.shape[2]:
        raise ValueError(f"{what}: key {tuple(k.shape)} and value {tuple(v.shape)} "
                         "differ in heads or length")
    Hkv = k.shape[1]
    if Hkv != Hq:
        if not enable_gqa:
            raise ValueError(f"{what}: {Hq} query heads and {Hkv} key/value heads "
                             "need enable_gqa=True")
        if Hkv == 0 or Hq % Hkv:
            raise ValueError(f"{what}: {Hkv} key/value heads do not divide {Hq} "
                             "query heads")
    return q, k, v, dtype, squeeze


def _mask_operand(attn_mask, q, B, Hq, Lq, Lk, on_device=False):
    """The mask as attn's `mask` (bool) or `bias` (additive) operand of a
    broadcastable 4-D shape: ("mask" | "bias", operand)."""
    shape = tuple(attn_mask.shape)
    if len(shape) > 4:
        raise ValueError(f"attn_mask must have rank 4 or less, got {shape}")
    shape4 = (1,) * (4 - len(shape)) + shape
    full = (B, Hq, Lq, Lk)
    for d, (have, want) in enumerate(zip(shape4, full)):
        if have not in (1, want):
            raise ValueError(f"attn_mask {shape} does not broadcast to {full} "
                             f"(dimension {d - 4 + len(shape)})")
    mask = attn_mask.reshape(shape4)
    kind = "mask" if T.dtype_name(attn_mask) == "bool" else "bias"
    if kind == "bias":
        if T.dtype_name(attn_mask) not in T.FLOAT_DTYPES:
            raise TypeError(f"attn_mask must be bool or a float dtype, got "
                            f"{T.dtype_name(attn_mask)}")
        if T.dtype_name(attn_mask) != T.dtype_name(q):
            mask = T.cast(mask, q)
    # A padding mask materialized for every query (as Hugging Face's models
    # pass it) is taken per key when its rows are equal and no gradient is
    # asked of it: the vectorized CPU kernels read it per key.
    if shape4[2] == Lq and Lq > 1 and not T.requires_grad(mask) and \
            T.rows_equal(mask):
        mask = mask[:, :, :1, :]
        shape4 = tuple(mask.shape)
    # Batch and head dimensions broadcast in the kernels; query and key
    # dimensions are materialized (a per-key bias or mask [.., 1, Lk] is
    # taken as is: the padding masks, which the CPU kernels take per key).
    target = list(shape4)
    target[3] = Lk
    if tuple(target) != shape4:
        mask = T.expand(mask, tuple(target))
    # A bias that requires grad stays in the graph (autograd.py returns its
    # gradient, which the steps above carry back to attn_mask).
    return kind, T.as_operand(mask, "attn_mask", keep_grad=kind == "bias",
                              on_device=on_device)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False, *,
                                 out=None, device=None):
    """torch.nn.functional.scaled_dot_product_attention on attn's CPU kernels.

    query [B, Hq, L, D], key [B, Hkv, S, D], value [B, Hkv, S, Dv] (or rank 3
    without the head dimension), NumPy arrays or CPU torch tensors of
    float32, float16 or bfloat16. `attn_mask` is boolean (True keeps) or
    additive, broadcastable to [B, Hq, L, S]; `is_causal` keeps j <= i
    (top-left). `out`, when given, receives the result in place.
    `device="vulkan"` or `"cuda"` runs attn's GPU kernels: CUDA tensors
    are bound in place, host inputs copied (docs/Python.md, "GPUs")."""
    # The fast path: a call like one before (same tensor types, shapes and
    # dtypes, so the same checks pass) goes straight to its kernel.
    target, home = T.target_of(device, query)
    if target != "cpu":
        if T.binds_in_place(target, query, key, value, attn_mask, out):
            # CUDA tensors stay where they are: the kernel binds them.
            return _sdpa(query, key, value, attn_mask, dropout_p, is_causal, scale,
                         enable_gqa, out, target)
        result = T.on_host(home, lambda q, k, v, m: _sdpa(
            q, k, v, m, dropout_p, is_causal, scale, enable_gqa, None, target),
            query, key, value, attn_mask)
        return T.into(out, result)
    return _sdpa(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, out,
                 "cpu")


def _sdpa(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, out,
          target):
    fast_key = None
    if target == "cpu" and attn_mask is None and out is None and T.is_torch(query) and T.is_torch(key) \
            and T.is_torch(value) and not dropout_p and not needs_grad(query, key, value):
        fast_key = (query.shape, key.shape, value.shape, query.dtype, key.dtype,
                    value.dtype, is_causal, scale, enable_gqa)
        hit = _fast.get(fast_key)
        if hit is not None and query.is_contiguous() and key.is_contiguous() \
                and value.is_contiguous() and query.device.type == "cpu":
            kernel, shape = hit
            result = T.torch.empty(shape, dtype=query.dtype)
            kernel(query, key, value, out=result)
            return result
    if dropout_p != 0.0:
        raise NotImplementedError("attn.scaled_dot_product_attention: dropout_p > 0 "
                                  "is not supported (attn's kernels are inference kernels)")
    if is_causal and attn_mask is not None:
        raise ValueError("attn.scaled_dot_product_attention: give attn_mask or "
                         "is_causal, not both")
    q, k, v, dtype, squeeze = _check_qkv(query, key, value, enable_gqa)
    B, Hq, Lq, D = q.shape
    Lk, Dv = k.shape[2], v.shape[3]
    result_shape = (B, Hq, Lq, Dv)
    if 0 in (B, Hq, Lq, D, Lk, Dv):
        result = T.zeros_like_family(q, result_shape)
        return _finish(result, squeeze, out)

    on_device = target.startswith("cuda")
    operands = [T.as_operand(x, name, on_device=on_device)
                for x, name in ((q, "query"), (k, "key"), (v, "value"))]
    mask_kind = mask_shape = None
    if attn_mask is not None:
        mask_kind, mask = _mask_operand(attn_mask, q, B, Hq, Lq, Lk, on_device)
        mask_shape = tuple(mask.shape)
        operands.append(mask)
    products = T.f32_products(target, dtype)
    key_tuple = (tuple(q.shape), tuple(k.shape), tuple(v.shape), dtype, mask_kind,
                 mask_shape, bool(is_causal), None if scale is None else float(scale), target,
                 products)

    def described():
        return AttentionCall(tuple(q.shape), tuple(k.shape), tuple(v.shape),
                             element=ELEMENT[dtype],
                             mask_shape=mask_shape if mask_kind == "mask" else None,
                             bias_shape=mask_shape if mask_kind == "bias" else None,
                             pattern="#attn.causal" if is_causal else None,
                             scale=scale)

    if target == "cpu" and needs_grad(q, k, v, *operands[3:]):
        # Training: the output carries attn's backward (autograd.py).
        if out is not None:
            raise ValueError("attn.scaled_dot_product_attention: out= cannot take "
                             "a result that requires grad")
        result = attention_with_grad(described(), q, k, v, operands[3:])
        return _finish(result, squeeze, None)
    kernel = _kernels.get(key_tuple)
    if kernel is None:
        kernel = compile_source(described().module("sdpa"), target=target,
                                extra_args=products)
        _kernels[key_tuple] = kernel

    result = _output(out, q, result_shape, squeeze)
    kernel(*operands, out=result)
    if fast_key is not None and not squeeze and T.is_torch(q) and q.device.type == "cpu":
        _fast[fast_key] = (kernel, result_shape)
    return _finish(result, squeeze, out)


def _output(out, q, shape, squeeze):
    """Where the kernel writes: the caller's `out` when it is dense and of
    the right shape and dtype, else a new tensor."""
    if out is not None:
        want = shape[:1] + shape[2:] if squeeze else shape
        if tuple(out.shape) != tuple(want) or T.dtype_name(out) != T.dtype_name(q):
            raise ValueError(f"out must be {T.dtype_name(q)} {tuple(want)}, got "
                             f"{T.dtype_name(out)} {tuple(out.shape)}")
        contiguous = out.is_contiguous() if T.is_torch(out) else out.flags.c_contiguous
        if contiguous:
            return out.reshape(shape)
    return T.empty_like_family(q, shape)


def _finish(result, squeeze, out):
    """The caller's `out` when given (copied into when the kernel could not
    write it in place), else the result."""
    if squeeze:
        result = result.reshape((result.shape[0],) + tuple(result.shape[2:]))
    if out is None:
        return result
    if not _shares_memory(result, out):
        out[...] = result
    return out


def _shares_memory(a, b):
    if T.is_torch(a) and T.is_torch(b):
        return a.data_ptr() == b.data_ptr()
    if not T.is_torch(a) and not T.is_torch(b):
        import numpy as np
        return np.shares_memory(a, b)
    return False
