"""Backward for attn's attention calls (docs/Python.md, "Training").

`attention_function(call, target)` runs an `AttentionCall` forward with its
log-sum-exp kept and, when torch asks for gradients, the compiled
attn.attention_grad of the same call (docs/Dialect.md, "Backward"): dq, dk
and dv of the query, key and value. compile_source caches the kernels.
"""

from dataclasses import replace

from . import _tensors as T
from ._compiler import compile_source

def needs_grad(*tensors):
    """Whether torch records gradients for any of these tensors."""
    if not all(T.is_torch(t) for t in tensors):
        return False
    import torch
    return torch.is_grad_enabled() and any(t.requires_grad for t in tensors)


def attention_with_grad(call, q, k, v, extras):
    """The output of `call` on (q, k, v, *extras) as a torch tensor whose
    backward runs attn's kernel. Gradients flow to q, k, v, the bias, the
    relative-position table and the float tensors a score_mod captures;
    masks, segment ids and integer tensors get none."""
    import torch

    # The bias and relative-position table get gradients (all of those the
    # call has, when one of them requires grad).
    roles = call.operand_roles()[3:]
    differentiable = [roles.index(r) for r in call.differentiable_roles()]
    operand_grads = any(needs_grad(extras[n]) for n in differentiable)

    class _Attention(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v, *extras):
            kernel = compile_source(replace(call, lse=True).module("attention_forward"))
            q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
            out = torch.empty(call.output_shape(), dtype=q.dtype)
            lse = torch.empty(tuple(q.shape[:3]), dtype=torch.float32)
            kernel(q, k, v, *extras, out=[out, lse])
            ctx.save_for_backward(q, k, v, out, lse, *extras)
            return out

        @staticmethod
        def backward(ctx, grad_out):
            q, k, v, out, lse, *extras = ctx.saved_tensors
            kernel = compile_source(call.grad_module("attention_backward",
                                                     operand_grads=operand_grads))
            grads = [torch.empty_like(t) for t in (q, k, v)]
            if operand_grads:
                grads += [torch.empty_like(extras[n]) for n in differentiable]
            kernel(q, k, v, *extras, out, grad_out.contiguous().to(q.dtype), lse,
                   out=grads)
            extra_grads = [None] * len(extras)
            if operand_grads:
                for n, grad in zip(differentiable, grads[3:]):
                    extra_grads[n] = grad
            return tuple(grads[:3]) + tuple(extra_grads)

    return _Attention.apply(q, k, v, *extras)
