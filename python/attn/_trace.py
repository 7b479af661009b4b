"""Tracing FlexAttention's `score_mod` / `mask_mod` Python functions.

A mod is called once on symbolic values (`Sym`): the score, and the indices
b, h, q_idx, kv_idx. Arithmetic, comparisons, `&`, `|`, `~`, `torch.where`,
`abs`, `tanh`, `exp`, ... build an expression tree; indexing a captured
tensor with symbolic indices records a load of that tensor (a kernel
operand, so new values need no recompiling). Python control flow that
depends on a symbolic value cannot be traced and raises `TraceError` naming
the line that did it.
"""

import operator
import traceback

try:
    import torch
except ImportError:
    torch = None

import numpy as np


class TraceError(ValueError):
    """A score or mask mod attn cannot trace."""


def _user_line():
    """'file:line: code' of the innermost frame outside this module."""
    for frame in reversed(traceback.extract_stack()):
        if frame.filename != __file__:
            return f"{frame.filename}:{frame.lineno}: {frame.line}"
    return "<unknown>"


class Sym:
    """A symbolic value: `op` with `args` (Syms or Python constants), of
    kind 'f' (f32), 'i' (integer index) or 'b' (boolean)."""

    __slots__ = ("op", "args", "kind")

    def __init__(self, op, args, kind):
        self.op, self.args, self.kind = op, tuple(args), kind

    # -- structure ---------------------------------------------------------
    def key(self):
        return (self.op,) + tuple(a.key() if isinstance(a, Sym) else
                                  (("captured", id(a)) if _is_tensor(a) else a)
                                  for a in self.args)

    def __repr__(self):
        return f"Sym{self.key()}"

    def __hash__(self):
        return hash(self.key())

    # -- Python control flow on a symbolic value is not traceable ----------
    def __bool__(self):
        raise TraceError("attn cannot trace Python control flow on a symbolic "
                         f"value (use torch.where): {_user_line()}")

    def __index__(self):
        raise TraceError(f"attn cannot use a symbolic value as a Python integer: {_user_line()}")

    __int__ = __index__

    def __float__(self):
        raise TraceError(f"attn cannot use a symbolic value as a Python float: {_user_line()}")

    def __iter__(self):
        raise TraceError(f"attn cannot iterate over a symbolic value: {_user_line()}")

    # -- arithmetic ----------------------------------------------------------
    def __add__(self, o): return binary("add", self, o)
    def __radd__(self, o): return binary("add", o, self)
    def __sub__(self, o): return binary("sub", self, o)
    def __rsub__(self, o): return binary("sub", o, self)
    def __mul__(self, o): return binary("mul", self, o)
    def __rmul__(self, o): return binary("mul", o, self)
    def __truediv__(self, o): return binary("div", self, o, force_float=True)
    def __rtruediv__(self, o): return binary("div", o, self, force_float=True)
    def __floordiv__(self, o): return binary("floordiv", self, o)
    def __rfloordiv__(self, o): return binary("floordiv", o, self)
    def __mod__(self, o): return binary("mod", self, o)
    def __rmod__(self, o): return binary("mod", o, self)
    def __pow__(self, o): return binary("pow", self, o, force_float=True)
    def __neg__(self): return binary("sub", 0, self)
    def __pos__(self): return self
    def __abs__(self): return unary("abs", self)
    def __lt__(self, o): return compare("lt", self, o)
    def __le__(self, o): return compare("le", self, o)
    def __gt__(self, o): return compare("lt", o, self)
    def __ge__(self, o): return compare("le", o, self)
    def __eq__(self, o): return compare("eq", self, o)  # noqa: E501 (symbolic)
    def __ne__(self, o): return compare("ne", self, o)
    def __and__(self, o): return logical("and", self, o)
    def __rand__(self, o): return logical("and", o, self)
    def __or__(self, o): return logical("or", self, o)
    def __ror__(self, o): return logical("or", o, self)
    def __invert__(self):
        if self.kind != "b":
            raise TraceError(f"~ of a non-boolean value: {_user_line()}")
        return Sym("not", [self], "b")

    # -- tensor-like methods mods use -----------------------------------------
    def abs(self): return unary("abs", self)
    def tanh(self): return unary("tanh", self)
    def exp(self): return unary("exp", self)
    def log(self): return unary("log", self)
    def sqrt(self): return unary("sqrt", self)
    def sigmoid(self): return unary("sigmoid", self)
    def float(self): return self if self.kind == "f" else Sym("tofloat", [self], "f")
    def to(self, *args, **kwargs):
        dtype = kwargs.get("dtype", args[0] if args else None)
        if torch is not None and dtype in (torch.bool,):
            return self != 0 if self.kind != "b" else self
        if torch is not None and isinstance(dtype, torch.dtype) and dtype.is_floating_point:
            return self.float()
        return self
    def clamp(self, min=None, max=None):
        out = self
        if min is not None:
            out = binary("max", out, min)
        if max is not None:
            out = binary("min", out, max)
        return out
    def logical_and(self, o): return logical("and", self, o)
    def logical_or(self, o): return logical("or", self, o)
    def logical_not(self): return ~self

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        handler = _TORCH_FUNCTIONS.get(getattr(func, "__name__", ""))
        if func is getattr(getattr(torch, "Tensor", None), "__getitem__", None):
            return load(args[0], args[1])
        if handler is None:
            raise TraceError(f"attn cannot trace torch.{getattr(func, '__name__', func)} "
                             f"in a mod: {_user_line()}")
        return handler(*args, **kwargs)


def _is_tensor(x):
    return (torch is not None and isinstance(x, torch.Tensor)) or isinstance(x, np.ndarray)


def _const(x):
    """A Python number or 0-d tensor as a constant; None when `x` is not one."""
    if isinstance(x, bool):
        return x
    if isinstance(x, (int, float)):
        return x
    if isinstance(x, np.generic):  # NumPy scalars
        return x.item()
    if _is_tensor(x) and x.ndim == 0:
        value = x.item()
        return value
    return None


def lift(x):
    """`x` as a Sym (constants become 'const' leaves)."""
    if isinstance(x, Sym):
        return x
    value = _const(x)
    if value is None:
        raise TraceError(f"attn cannot use {type(x).__name__} of shape "
                         f"{tuple(getattr(x, 'shape', ()))} here (index a captured "
                         f"tensor to read it): {_user_line()}")
    kind = "b" if isinstance(value, bool) else "i" if isinstance(value, int) else "f"
    return Sym("const", [value], kind)


def _kind_of(*syms, force_float=False):
    if force_float or any(s.kind == "f" for s in syms):
        return "f"
    return "i"


def binary(op, a, b, force_float=False):
    a, b = lift(a), lift(b)
    if a.kind == "b" or b.kind == "b":
        if op in ("add", "mul"):  # bool arithmetic as integers
            a, b = _as_int(a), _as_int(b)
        else:
            raise TraceError(f"arithmetic on a boolean value: {_user_line()}")
    return Sym(op, [a, b], _kind_of(a, b, force_float=force_float))


def _as_int(s):
    return Sym("select", [s, lift(1), lift(0)], "i") if s.kind == "b" else s


def unary(op, a):
    a = lift(a)
    kind = a.kind if op == "abs" else "f"
    return Sym(op, [a], kind)


def compare(op, a, b):
    return Sym(op, [lift(a), lift(b)], "b")


def logical(op, a, b):
    a, b = lift(a), lift(b)
    if a.kind != "b" or b.kind != "b":
        raise TraceError(f"& and | take boolean values (comparisons): {_user_line()}")
    return Sym(op, [a, b], "b")


def where(cond, a, b):
    cond, a, b = lift(cond), lift(a), lift(b)
    if cond.kind != "b":
        raise TraceError(f"torch.where needs a boolean condition: {_user_line()}")
    kind = "f" if "f" in (a.kind, b.kind) else a.kind
    return Sym("select", [cond, a, b], kind)


def load(tensor, index):
    """A read of a captured tensor at symbolic indices."""
    indices = index if isinstance(index, tuple) else (index,)
    if len(indices) != tensor.ndim:
        raise TraceError(f"a captured tensor of rank {tensor.ndim} must be indexed by "
                         f"{tensor.ndim} indices, got {len(indices)}: {_user_line()}")
    syms = []
    for x in indices:
        s = lift(x)
        if s.kind != "i":
            raise TraceError(f"captured tensors are indexed by integers: {_user_line()}")
        syms.append(s)
    dtype = str(tensor.dtype).replace("torch.", "")
    kind = "b" if dtype == "bool" else "f" if "float" in dtype else "i"
    return Sym("load", [tensor] + syms, kind)


def _minmax(op):
    def f(a, b=None, **_):
        return binary(op, a, b)
    return f


_TORCH_FUNCTIONS = {
    "where": where,
    "abs": lambda a, **_: unary("abs", a),
    "tanh": lambda a, **_: unary("tanh", a),
    "exp": lambda a, **_: unary("exp", a),
    "log": lambda a, **_: unary("log", a),
    "sqrt": lambda a, **_: unary("sqrt", a),
    "sigmoid": lambda a, **_: unary("sigmoid", a),
    "add": lambda a, b, **_: binary("add", a, b),
    "sub": lambda a, b, **_: binary("sub", a, b),
    "mul": lambda a, b, **_: binary("mul", a, b),
    "div": lambda a, b, **_: binary("div", a, b, force_float=True),
    "maximum": _minmax("max"),
    "minimum": _minmax("min"),
    "clamp": lambda a, min=None, max=None, **_: lift(a).clamp(min, max),
    "logical_and": lambda a, b, **_: logical("and", a, b),
    "logical_or": lambda a, b, **_: logical("or", a, b),
    "logical_not": lambda a, **_: ~lift(a),
    "__add__": lambda a, b: binary("add", a, b),
    "__radd__": lambda a, b: binary("add", b, a),
    "__sub__": lambda a, b: binary("sub", a, b),
    "__rsub__": lambda a, b: binary("sub", b, a),
    "__mul__": lambda a, b: binary("mul", a, b),
    "__rmul__": lambda a, b: binary("mul", b, a),
    "__truediv__": lambda a, b: binary("div", a, b, force_float=True),
    "__rtruediv__": lambda a, b: binary("div", b, a, force_float=True),
    "__eq__": lambda a, b: compare("eq", a, b),
    "__ne__": lambda a, b: compare("ne", a, b),
    "__lt__": lambda a, b: compare("lt", a, b),
    "__le__": lambda a, b: compare("le", a, b),
    "__gt__": lambda a, b: compare("lt", b, a),
    "__ge__": lambda a, b: compare("le", b, a),
    "__and__": lambda a, b: logical("and", a, b),
    "__or__": lambda a, b: logical("or", a, b),
}

SCORE = Sym("score", [], "f")
B, H, Q, KV = (Sym("index", [n], "i") for n in ("b", "h", "q", "kv"))


def trace_score_mod(score_mod):
    out = _call(score_mod, SCORE, B, H, Q, KV)
    out = lift(out)
    if out.kind != "f":
        out = Sym("tofloat", [out], "f")
    return out


def trace_mask_mod(mask_mod):
    out = lift(_call(mask_mod, B, H, Q, KV))
    if out.kind != "b":
        raise TraceError("a mask_mod must return a boolean (a comparison)")
    return out


def _call(fn, *args):
    try:
        return fn(*args)
    except TraceError:
        raise
    except (TypeError, RuntimeError) as error:
        frame = traceback.extract_tb(error.__traceback__)[-1]
        raise TraceError(f"attn could not trace {getattr(fn, '__name__', fn)}: {error} "
                         f"({frame.filename}:{frame.lineno}: {frame.line})") from error


def captured_tensors(expr, found=None):
    """The distinct captured tensors `expr` reads, in first-use order."""
    found = [] if found is None else found
    if expr.op == "load" and not any(t is expr.args[0] for t in found):
        found.append(expr.args[0])
    for a in expr.args:
        if isinstance(a, Sym):
            captured_tensors(a, found)
    return found


def evaluate(expr, score, b, h, q, kv, xp):
    """`expr` on arrays (broadcast index grids), with the library `xp`
    (torch): the reference path and dense masks."""
    def ev(e):
        op, args = e.op, e.args
        if op == "score":
            return score
        if op == "index":
            return {"b": b, "h": h, "q": q, "kv": kv}[args[0]]
        if op == "const":
            return args[0]
        if op == "load":
            tensor = args[0]
            return tensor[tuple(ev(a) for a in args[1:])]
        vals = [ev(a) for a in args]
        table = {
            "add": operator.add, "sub": operator.sub, "mul": operator.mul,
            "div": operator.truediv, "floordiv": operator.floordiv,
            "mod": operator.mod, "pow": operator.pow,
            "lt": operator.lt, "le": operator.le, "eq": operator.eq, "ne": operator.ne,
            "and": operator.and_, "or": operator.or_,
        }
        if op in table:
            return table[op](*vals)
        if op == "not":
            return ~vals[0]
        if op == "select":
            return xp.where(vals[0], vals[1], vals[2])
        if op == "max":
            return xp.maximum(xp.as_tensor(vals[0]), xp.as_tensor(vals[1]))
        if op == "min":
            return xp.minimum(xp.as_tensor(vals[0]), xp.as_tensor(vals[1]))
        if op in ("abs", "tanh", "exp", "log", "sqrt", "sigmoid"):
            return getattr(xp, op)(xp.as_tensor(vals[0]))
        if op == "tofloat":
            return xp.as_tensor(vals[0]).float()
        raise TraceError(f"unknown traced op {op}")
    return ev(expr)

