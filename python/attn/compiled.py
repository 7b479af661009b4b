"""`attn.compile`: any attn spec or attn IR function as a Python callable."""

import os

import numpy as np

from . import _tensors as T
from ._compiler import DeviceArray, GpuKernel, compile_source

_NUMPY = {"f32": np.float32, "f16": np.float16, "i32": np.int32, "i1": np.bool_}


class CompiledFunction:
    """A compiled public function of a spec or module.

    `f(*inputs)` allocates the results (their sizes from the signature) in
    the inputs' library (NumPy or torch); `f(*inputs, out=[...])` writes
    into the caller's tensors. `f.signature` states what it takes."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.name = kernel.function
        self.signature = kernel.signature

    @property
    def compile_seconds(self):
        return self.kernel.compile_seconds

    def to_device(self, x):
        """GPU functions: a DeviceArray holding a copy of host array `x`."""
        return self._gpu().to_device(x)

    def empty_device(self, shape, dtype="float32"):
        """GPU functions: a zero-filled DeviceArray."""
        return self._gpu().empty_device(shape, dtype)

    def _gpu(self):
        if not isinstance(self.kernel, GpuKernel):
            raise ValueError(f"{self.name} runs on the CPU; device arrays belong to "
                             "functions compiled with device='vulkan' or 'cuda'")
        return self.kernel

    def __call__(self, *inputs, out=None):
        expected = self.kernel.input_types
        if expected and len(inputs) != len(expected):
            raise ValueError(f"{self.name} takes {len(expected)} inputs ({self.signature}), "
                             f"got {len(inputs)}")
        if isinstance(self.kernel, GpuKernel):
            # GPU artifacts carry launch descriptors, not signatures: the
            # caller gives the results; device arrays and CUDA tensors go
            # as they are.
            if out is None:
                raise ValueError(f"{self.name} runs on {self.kernel.device}: pass out=[...] "
                                 "(host arrays or device arrays)")
            operands = [x if _on_device(x) else T.as_operand(x, f"input {n}")
                        for n, x in enumerate(inputs)]
            outputs = list(out) if isinstance(out, (list, tuple)) else [out]
            self.kernel(*operands, out=outputs)
            return out
        operands = [T.as_operand(x, f"input {n}") for n, x in enumerate(inputs)]
        outputs = out if out is not None else self._allocate(operands)
        outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        self.kernel(*operands, out=outputs)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _allocate(self, operands):
        results = []
        for element, sizes in self.kernel.output_types:
            shape = []
            for d, s in enumerate(sizes):
                if isinstance(s, tuple):
                    s = operands[s[0]].shape[s[1]]
                if s is None:
                    raise ValueError(f"{self.name}: result dimension {d} is not known "
                                     "from the inputs; pass out=[...]")
                shape.append(int(s))
            results.append(_empty(element, tuple(shape), operands[0] if operands else None))
        return results

    def __repr__(self):
        return f"<attn.CompiledFunction {self.name}: {self.signature}>"


def _empty(element, shape, like):
    if like is not None and T.is_torch(like):
        import torch
        dtype = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
                 "i32": torch.int32, "i1": torch.bool}[element]
        return torch.empty(shape, dtype=dtype)
    if element not in _NUMPY:
        raise ValueError(f"NumPy has no {element}: call with torch tensors or pass out=")
    return np.empty(shape, dtype=_NUMPY[element])


def compile(source, function=None, device="cpu", f32_products=None):
    """Compiles an attn spec (YAML) or attn IR (.mlir): a path or the text.
    Every family compiles (softmax patterns and mods, Linformer, Nystrom,
    kernelized / Performer, LSH, routing, FNet); see docs/Spec.md for the
    operands each takes. `device="vulkan"` or `"cuda"` (one attention of
    the function's arguments) compiles for the GPU: calls take out=[...],
    and `to_device` / `empty_device` give arrays that stay on it. On CUDA,
    f32 attention's products are `f32_products`: "exact" (the scalar
    kernel), "3xtf32" or "tf32" on tensor cores; None follows
    torch.get_float32_matmul_precision() ("highest": exact, "high":
    3xtf32, "medium": tf32)."""
    target, _ = T.target_of(device, None)
    text, suffix = source, None
    if "\n" not in source and os.path.exists(source):
        with open(source) as f:
            text = f.read()
        suffix = ".mlir" if source.endswith(".mlir") else ".yaml"
    if suffix is None:
        stripped = text.lstrip()
        suffix = ".mlir" if stripped.startswith(("func.func", "module", "//")) else ".yaml"
    # Which attention is f32 is the compiler's to know: the flags only
    # change f32 attention.
    products = T.f32_products(target, "float32", f32_products)
    return CompiledFunction(compile_source(text, suffix, function=function, target=target,
                                           extra_args=products))


def _on_device(x):
    """Whether `x` is GPU memory a GPU kernel binds in place."""
    return isinstance(x, DeviceArray) or (T.is_torch(x) and x.device.type == "cuda")
