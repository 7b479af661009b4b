"""`attn.compile`: any attn spec or attn IR function as a Python callable."""

import os

import numpy as np

from . import _tensors as T
from ._compiler import compile_source

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

    def __call__(self, *inputs, out=None):
        expected = self.kernel.input_types
        if expected and len(inputs) != len(expected):
            raise ValueError(f"{self.name} takes {len(expected)} inputs ({self.signature}), "
                             f"got {len(inputs)}")
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


def compile(source, function=None):
    """Compiles an attn spec (YAML) or attn IR (.mlir): a path or the text.
    Every family compiles (softmax patterns and mods, Linformer, Nystrom,
    kernelized / Performer, LSH, routing, FNet); see docs/Spec.md for the
    operands each takes."""
    text, suffix = source, None
    if "\n" not in source and os.path.exists(source):
        with open(source) as f:
            text = f.read()
        suffix = ".mlir" if source.endswith(".mlir") else ".yaml"
    if suffix is None:
        stripped = text.lstrip()
        suffix = ".mlir" if stripped.startswith(("func.func", "module", "//")) else ".yaml"
    return CompiledFunction(compile_source(text, suffix, function=function))
