"""Plain double-precision attention, independent of attn: the tests'
reference (softmax over the kept keys; a row that keeps none is 0, attn's
rule)."""

import numpy as np


def attention_f64(q, k, v, keep=None, bias=None, scale=None):
    """q [B, Hq, Lq, D], k [B, Hkv, Lk, D], v [B, Hkv, Lk, Dv] (any float
    arrays); keep: bool broadcastable to [B, Hq, Lq, Lk]; bias: additive."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k = np.repeat(k, group, axis=1)
    v = np.repeat(v, group, axis=1)
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = np.einsum("bhid,bhjd->bhij", q, k) * scale
    if bias is not None:
        s = s + np.asarray(bias, dtype=np.float64)
    if keep is not None:
        s = np.where(keep, s, -np.inf)
    m = np.max(s, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - m)
    denom = e.sum(axis=-1, keepdims=True)
    p = np.divide(e, denom, out=np.zeros_like(e), where=denom > 0)
    return np.einsum("bhij,bhjd->bhid", p, v)
