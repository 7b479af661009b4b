"""attn IR text for one attention call (docs/Dialect.md).

The Python front ends describe a call as an `AttentionCall` (shapes, the
optional dense operands, a mask pattern, score mods, a score region) and
this module writes the one-function module attn-compile takes:

    func.func @attention(%q, %k, %v, [%mask], [%bias], [%q_segments,
                         %kv_segments], [%rel_table], [captured...]) -> %o
"""

import re
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

ELEMENT = {"float32": "f32", "float16": "f16", "bfloat16": "bf16",
           "int32": "i32", "bool": "i1"}


def tensor_type(shape, element):
    return "tensor<" + "".join(f"{d}x" for d in shape) + element + ">"


def float_literal(value):
    """A float MLIR reads back exactly (f32 attributes are rounded once)."""
    text = repr(float(value))
    if "inf" in text or "nan" in text:
        raise ValueError(f"attn attributes must be finite, got {value}")
    if "." not in text and "e" not in text:
        text += ".0"
    return text


@dataclass
class AttentionCall:
    q_shape: Tuple[int, ...]
    k_shape: Tuple[int, ...]
    v_shape: Tuple[int, ...]
    element: str = "f32"                    # f32, f16, bf16
    mask_shape: Optional[Tuple[int, ...]] = None   # i1 [B|1, H|1, Lq, Lk]
    bias_shape: Optional[Tuple[int, ...]] = None   # [B|1, H|1, Lq|1, Lk]
    segment_shapes: Optional[Tuple[Tuple[int, ...], Tuple[int, ...]]] = None
    rel_table_shape: Optional[Tuple[int, ...]] = None
    pattern: Optional[str] = None           # attn syntax, e.g. "#attn.causal"
    mods: List[str] = field(default_factory=list)
    scale: Optional[float] = None
    align: Optional[str] = None             # "bottom_right" or None
    # A score region: (body lines using %x %b %h %i %j, result value name),
    # and the captured tensors it reads, as ((shape, element), ...).
    score_body: Optional[Tuple[List[str], str]] = None
    captured: List[Tuple[Tuple[int, ...], str]] = field(default_factory=list)
    lse: bool = False

    def operand_roles(self):
        roles = ["q", "k", "v"]
        if self.mask_shape is not None:
            roles.append("mask")
        if self.bias_shape is not None:
            roles.append("bias")
        if self.segment_shapes is not None:
            roles += ["q_segments", "kv_segments"]
        if self.rel_table_shape is not None:
            roles.append("rel_table")
        roles += [f"captured{n}" for n in range(len(self.captured))]
        return roles

    def output_shape(self):
        return (self.q_shape[0], self.q_shape[1], self.q_shape[2], self.v_shape[3])

    def _operands_and_clauses(self):
        """The function arguments (name, type), the op's clauses and the
        types of its optional operands after q, k, v."""
        e = self.element
        args = [("q", tensor_type(self.q_shape, e)), ("k", tensor_type(self.k_shape, e)),
                ("v", tensor_type(self.v_shape, e))]
        clauses = []
        if self.mask_shape is not None:
            args.append(("mask", tensor_type(self.mask_shape, "i1")))
            clauses.append("mask(%mask)")
        if self.bias_shape is not None:
            args.append(("bias", tensor_type(self.bias_shape, e)))
            clauses.append("bias(%bias)")
        if self.segment_shapes is not None:
            args.append(("q_segments", tensor_type(self.segment_shapes[0], "i32")))
            args.append(("kv_segments", tensor_type(self.segment_shapes[1], "i32")))
            clauses.append("segments(%q_segments, %kv_segments)")
        if self.rel_table_shape is not None:
            args.append(("rel_table", tensor_type(self.rel_table_shape, e)))
            clauses.append("rel_table(%rel_table)")
        optional = [t for _, t in args[3:]]
        if self.pattern:
            clauses.append(f"pattern({self.pattern})")
        if self.scale is not None:
            clauses.append(f"scale = {float_literal(self.scale)}")
        if self.align:
            clauses.append(f"align = {self.align}")
        if self.mods:
            clauses.append("mods = [" + ", ".join(self.mods) + "]")
        return args, clauses, optional

    def differentiable_roles(self):
        """The roles attn.attention_grad returns operand gradients for, in
        its order: bias, rel_table, then the float tensors the score region
        captures in order of first use (docs/Dialect.md, "Backward")."""
        roles = [r for r, shape in (("bias", self.bias_shape),
                                    ("rel_table", self.rel_table_shape))
                 if shape is not None]
        if self.score_body is not None:
            floats = {f"%captured{n}" for n, (_, element) in enumerate(self.captured)
                      if element == "f32"}
            for name in re.findall(r"%captured\d+", " ".join(self.score_body[0])):
                if name in floats and name[1:] not in roles:
                    roles.append(name[1:])
        return roles

    def grad_module(self, name="attention_grad", operand_grads=False):
        """The backward (attn.attention_grad, docs/Dialect.md): a function of
        the forward's operands (captured tensors included), then its output
        o, the output's gradient do and its lse, returning (dq, dk, dv) and
        with `operand_grads` the gradients of differentiable_roles()."""
        e = self.element
        args, clauses, optional = self._operands_and_clauses()
        shapes = {"bias": self.bias_shape, "rel_table": self.rel_table_shape}
        for n, (shape, element) in enumerate(self.captured):
            args.append((f"captured{n}", tensor_type(shape, element)))
            shapes[f"captured{n}"] = shape
        out = tensor_type(self.output_shape(), e)
        lse = tensor_type(self.q_shape[:3], "f32")
        args += [("o", out), ("do", out), ("lse", lse)]
        grads = [tensor_type(self.q_shape, e), tensor_type(self.k_shape, e),
                 tensor_type(self.v_shape, e)]
        operand_types = [grads[0], grads[1], grads[2], out, out, lse] + optional
        results = ["%dq", "%dk", "%dv"]
        if operand_grads:
            for role in self.differentiable_roles():
                # Captured tensors are f32 operands; bias and table the call's.
                grads.append(tensor_type(shapes[role],
                                         "f32" if role.startswith("captured") else e))
                results.append(f"%d{role}")
        head = ("  " + ", ".join(results) + " = attn.attention_grad %q, %k, %v, %o, %do, "
                "%lse " + " ".join(clauses))
        types = " : (" + ", ".join(operand_types) + ") -> (" + ", ".join(grads) + ")"
        lines = ["func.func @%s(%s) -> (%s) {" % (
            name, ", ".join(f"%{n}: {t}" for n, t in args), ", ".join(grads))]
        lines += self._op_lines(head, types)
        lines += ["  return " + ", ".join(results) + " : " + ", ".join(grads), "}"]
        return "\n".join(lines) + "\n"

    def _op_lines(self, head, types):
        """The op's line `head` (up to its clauses), its score region when
        the call has one, and its functional `types`."""
        if self.score_body is None:
            return [head + types]
        body, value = self.score_body
        return ([head + " score {",
                 "  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):"] +
                ["    " + line for line in body] +
                [f"    attn.yield {value} : f32", "  }" + types])

    def module(self, name="attention"):
        e = self.element
        args, clauses, _ = self._operands_and_clauses()
        attention_operands = [t for _, t in args]
        for n, (shape, element) in enumerate(self.captured):
            args.append((f"captured{n}", tensor_type(shape, element)))
        out = tensor_type(self.output_shape(), e)
        results = out
        if self.lse:
            results = f"({out}, {tensor_type(self.q_shape[:3], 'f32')})"
        lines = ["func.func @%s(%s) -> %s {" % (
            name, ", ".join(f"%{n}: {t}" for n, t in args), results)]
        head = "  %o = attn.attention %q, %k, %v " + " ".join(clauses)
        if self.lse:
            head = head.replace("%o =", "%o, %lse =", 1)
        lines += self._op_lines(head, " : (" + ", ".join(attention_operands) +
                                f") -> {results}")
        if self.lse:
            lines.append(f"  return %o, %lse : {out}, {tensor_type(self.q_shape[:3], 'f32')}")
        else:
            lines.append(f"  return %o : {out}")
        lines.append("}")
        return "\n".join(lines) + "\n"
