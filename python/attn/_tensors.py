"""NumPy arrays and PyTorch tensors as kernel operands (no copies where the
kernels can read them as they are)."""

import os

import numpy as np

try:
    import torch
except ImportError:  # the package works on NumPy alone
    torch = None

FLOAT_DTYPES = ("float32", "float16", "bfloat16")


def is_torch(x):
    return torch is not None and isinstance(x, torch.Tensor)


def dtype_name(x):
    """'float32', 'float16', 'bfloat16', 'int32', 'int64', 'bool', ..."""
    if is_torch(x):
        return str(x.dtype).replace("torch.", "")
    return str(np.asarray(x).dtype) if not isinstance(x, np.ndarray) else str(x.dtype)


def as_operand(x, what, keep_grad=False, on_device=False):
    """`x` as something the extension takes: a CPU tensor or array in
    row-major order (a copy only when it is not). With `keep_grad`, a torch
    tensor stays in autograd's graph (an operand whose gradient attn's
    backward returns). With `on_device`, a CUDA tensor stays where it is
    (a CUDA kernel binds it in place: binds_in_place)."""
    if is_torch(x):
        if x.device.type != "cpu" and not (on_device and x.device.type == "cuda"):
            raise ValueError(f"{what} is on {x.device}; attn's kernels take CPU "
                             "tensors, and CUDA tensors on CUDA targets")
        if x.layout != torch.strided:
            raise ValueError(f"{what} has layout {x.layout}; attn takes dense "
                             "(torch.strided) tensors")
        if not keep_grad:
            x = x.detach()
        return x if x.is_contiguous() else x.contiguous()
    if isinstance(x, np.ndarray):
        return x if x.flags.c_contiguous else np.ascontiguousarray(x)
    raise TypeError(f"{what} must be a numpy.ndarray or a torch.Tensor, "
                    f"got {type(x).__name__}")


def empty_like_family(reference, shape, dtype=None):
    """An uninitialized result of `shape` in `reference`'s library and dtype."""
    if is_torch(reference):
        return torch.empty(shape, dtype=dtype or reference.dtype, device=reference.device)
    return np.empty(shape, dtype=dtype or reference.dtype)


def zeros_like_family(reference, shape):
    if is_torch(reference):
        return torch.zeros(shape, dtype=reference.dtype, device=reference.device)
    return np.zeros(shape, dtype=reference.dtype)


def cast(x, dtype_of):
    """`x` converted to the dtype of `dtype_of` (same library)."""
    if is_torch(dtype_of):
        if not is_torch(x):
            x = torch.from_numpy(np.asarray(x))
        return x.to(dtype_of.dtype)
    return np.asarray(x).astype(dtype_of.dtype)


def rows_equal(x):
    """Whether every row of a 4-D `x` along dimension 2 equals the first: a
    per-key mask or bias materialized for every query. The last row is
    compared first, so masks that differ (causal ones) cost O(Lk)."""
    n = x.shape[2]
    if n <= 1:
        return True
    if is_torch(x):
        with torch.no_grad():
            first = x[:, :, :1, :]
            return bool(torch.equal(x[:, :, n - 1:, :], first)) and \
                bool(torch.equal(x, first.expand_as(x)))
    a = np.asarray(x)
    first = a[:, :, :1, :]
    return bool(np.array_equal(a[:, :, n - 1:, :], first)) and \
        bool(np.array_equal(a, np.broadcast_to(first, a.shape)))


def requires_grad(x):
    return is_torch(x) and x.requires_grad


def expand(x, shape):
    """`x` broadcast to `shape` and made dense (a copy)."""
    if is_torch(x):
        return x.expand(shape).contiguous()
    return np.ascontiguousarray(np.broadcast_to(x, shape))



def target_of(device, reference):
    """(attn-compile target, the torch device results go back to or None)
    for a call's `device` argument and its inputs: "cpu" by default,
    "vulkan" when asked for, CUDA tensors on cuda-sm80 / cuda-sm90."""
    on_cuda = is_torch(reference) and reference.device.type == "cuda"
    if device in (None, "cpu") and not on_cuda:
        return "cpu", None
    if device == "vulkan" or (isinstance(device, str) and device.startswith("vulkan")):
        return device, None
    if on_cuda or device == "cuda" or (isinstance(device, str) and device.startswith("cuda")):
        if isinstance(device, str) and device.startswith("cuda-sm"):
            return device, reference.device if on_cuda else None
        if torch is None or not torch.cuda.is_available():
            raise ValueError("device='cuda': PyTorch sees no CUDA device here")
        major, _ = torch.cuda.get_device_capability(reference.device if on_cuda else None)
        return ("cuda-sm90" if major >= 9 else "cuda-sm80"), (reference.device if on_cuda
                                                             else None)
    raise ValueError(f"device must be 'cpu', 'vulkan' or 'cuda', got {device!r}")


def binds_in_place(target, *tensors):
    """Whether a kernel compiled for `target` takes `tensors` (None for an
    absent operand) where they are: CUDA tensors, all on the device the
    runtime opens ($ATTN_CUDA_DEVICE, default 0), for a CUDA target. Its
    launches go to the legacy default stream, which orders them after the
    work of torch's (blocking) streams."""
    if not target.startswith("cuda"):
        return False
    index = int(os.environ.get("ATTN_CUDA_DEVICE", "0") or 0)
    present = [x for x in tensors if x is not None]
    return bool(present) and all(
        is_torch(x) and x.device.type == "cuda" and (x.device.index or 0) == index
        and x.layout == torch.strided for x in present)


# attn-compile's flags for f32 products on CUDA's tensor cores, by the
# name attn.compile takes.
F32_PRODUCTS = {"exact": (), "3xtf32": ("--gpu-3xtf32",), "tf32": ("--gpu-tf32",)}


def f32_products(target, dtype, requested=None):
    """attn-compile flags for f32 attention on `target`: `requested`
    ("exact", "3xtf32" or "tf32") or, when None, what
    torch.get_float32_matmul_precision() allows: "highest" (torch's
    default) keeps the exact scalar kernel, "high" takes 3xTF32 (about
    f32's error, as torch's "bfloat16x3"), "medium" TF32 (10-bit
    mantissas). Only CUDA targets have tensor-core f32 products."""
    if requested is not None and requested not in F32_PRODUCTS:
        raise ValueError(f"f32_products must be one of {sorted(F32_PRODUCTS)}, "
                         f"got {requested!r}")
    if not target.startswith("cuda") or dtype != "float32":
        return ()
    if requested is None:
        precision = torch.get_float32_matmul_precision() if torch is not None else "highest"
        requested = {"high": "3xtf32", "medium": "tf32"}.get(precision, "exact")
    return F32_PRODUCTS[requested]


def on_host(home, fn, *args):
    """Runs `fn` with torch tensors among `args` moved to the host and its
    result moved back to `home` (the GPU path copies for now)."""
    result = fn(*[a.cpu() if is_torch(a) else a for a in args])
    if home is None:
        return result
    if isinstance(result, tuple):
        return tuple(r.to(home) for r in result)
    return result.to(home)


def into(out, result):
    """`result`, written into the caller's `out` when one is given."""
    if out is None:
        return result
    out[...] = result
    return out
