"""FlexAttention's API on attn's kernels.

`flex_attention(q, k, v, score_mod, block_mask)` traces the mods
(`_trace.py`) and lowers what it recognizes to attn's attributes, so the
kernels skip tiles and need no per-element code for them:

    q_idx >= kv_idx, kv_idx <= q_idx              #attn.causal
    bounds on q_idx - kv_idx (sliding windows)    #attn.window<left, right>
    (q_idx - kv_idx) % d == 0                     #attn.strided<stride = d>
    doc[q_idx] == doc[kv_idx] (1-D, or [B, L])    #attn.segments + operands
    &, | of those                                 #attn.and / #attn.or
    c * tanh(score / c)                           #attn.softcap<cap = c>

Everything else becomes the op's score region (arith / math ops on the
score and the indices; captured tensors read with tensor.extract as extra
kernel operands), so any traceable mod runs, and new values in a captured
tensor need no recompiling. `traced_ir(...)` returns the module a call
compiles, for inspection.
"""

import math

from . import _tensors as T
from . import _trace as tr
from .autograd import attention_with_grad, needs_grad
from ._compiler import compile_source
from ._ir import ELEMENT, AttentionCall, float_literal, tensor_type
from .functional import _check_qkv


class BlockMask:
    """What create_block_mask returns: the traced mask_mod, its shape, the
    attn pattern recognized in it, and for the rest of the mask (evaluated
    per score in the kernel) the blocks of BLOCK_SIZE x BLOCK_SIZE it keeps,
    so that the kernels skip the others (#attn.block_layout)."""

    def __init__(self, mask_mod, B, H, Q_LEN, KV_LEN, BLOCK_SIZE=128):
        self.mask_mod = mask_mod
        self.shape = (B, H, Q_LEN, KV_LEN)
        self.BLOCK_SIZE = BLOCK_SIZE
        self.expr = tr.trace_mask_mod(mask_mod)
        self.pattern, self.residual = _recognize(self.expr, Q_LEN, KV_LEN)
        self.layout = None
        if self.residual is not None:
            # From the whole mask: the recognized part bounds the blocks too.
            self.layout = _block_layout(self.expr, B, H, Q_LEN, KV_LEN, BLOCK_SIZE)

    def __repr__(self):
        return f"BlockMask(shape={self.shape}, mask_mod={getattr(self.mask_mod, '__name__', '?')})"


def _reads(expr, index):
    """Whether `expr` reads the index `index` ('b', 'h', 'q' or 'kv')."""
    if expr.op == "index":
        return expr.args[0] == index
    return any(isinstance(a, tr.Sym) and _reads(a, index) for a in expr.args)


def _block_layout(expr, B, H, Lq, Lk, block):
    """[1 or H, ceil(Lq / block), ceil(Lk / block)] bool: the blocks where
    `expr` keeps some score, for any batch row; None when every block is
    kept, or when the mask reads a batch or head index whose size is not
    given (B or H None)."""
    import torch
    if (_reads(expr, "b") and B is None) or (_reads(expr, "h") and H is None):
        return None
    heads = H if _reads(expr, "h") else 1
    batches = B if _reads(expr, "b") else 1
    nq, nk = -(-Lq // block), -(-Lk // block)
    b = torch.arange(batches).view(-1, 1, 1, 1)
    h = torch.arange(heads).view(1, -1, 1, 1)
    kv = torch.arange(Lk).view(1, 1, 1, -1)
    layout = torch.zeros(heads, nq, nk, dtype=torch.bool)
    pad = nk * block - Lk
    for qb in range(nq):
        q = torch.arange(qb * block, min((qb + 1) * block, Lq)).view(1, 1, -1, 1)
        kept = tr.evaluate(expr, None, b, h, q, kv, torch)
        kept = torch.as_tensor(kept, dtype=torch.bool).expand(batches, heads, q.shape[2], Lk)
        kept = kept.any(dim=0).any(dim=1)                      # [heads, Lk]
        kept = torch.nn.functional.pad(kept, (0, pad))
        layout[:, qb] = kept.view(heads, nk, block).any(dim=2)
    if bool(layout.all()):
        return None
    return layout


def _layout_text(layout, block):
    rows = ", ".join("[" + ", ".join("[" + ", ".join("1" if x else "0" for x in row) + "]"
                                     for row in head) + "]" for head in layout.tolist())
    shape = "x".join(str(d) for d in layout.shape)
    return f"#attn.block_layout<block = {block}, layout = dense<[{rows}]> : tensor<{shape}xi1>>"


def create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device="cpu", BLOCK_SIZE=128,
                      _compile=False):
    """FlexAttention's create_block_mask: `mask_mod(b, h, q_idx, kv_idx)`
    returns True where a score is kept. B or H may be None (broadcast)."""
    if device not in ("cpu", None) and str(device) != "cpu":
        raise ValueError(f"create_block_mask: attn runs CPU tensors, got device={device}")
    return BlockMask(mask_mod, B, H, Q_LEN, KV_LEN, BLOCK_SIZE)


# --- recognizing mask patterns -------------------------------------------------

def _linear(e):
    """`e` as {q: a, kv: c, 1: k} with integer coefficients; None when it
    is not linear in q_idx and kv_idx alone."""
    if e.op == "const" and isinstance(e.args[0], int) and not isinstance(e.args[0], bool):
        return {"q": 0, "kv": 0, 1: e.args[0]}
    if e.op == "index" and e.args[0] in ("q", "kv"):
        return {"q": int(e.args[0] == "q"), "kv": int(e.args[0] == "kv"), 1: 0}
    if e.op in ("add", "sub"):
        a, b = _linear(e.args[0]), _linear(e.args[1])
        if a is None or b is None:
            return None
        sign = 1 if e.op == "add" else -1
        return {k: a[k] + sign * b[k] for k in a}
    if e.op == "mul":
        a, b = _linear(e.args[0]), _linear(e.args[1])
        if a is None or b is None:
            return None
        for x, y in ((a, b), (b, a)):
            if x["q"] == 0 and x["kv"] == 0:
                return {k: x[1] * y[k] for k in y}
    return None


def _distance_form(e):
    """For a linear `e` that depends on q and kv only through r = kv - q:
    (c, k) with e = c * r + k; None otherwise."""
    lin = _linear(e)
    if lin is None or lin["q"] != -lin["kv"]:
        return None
    return lin["kv"], lin[1]


def _bounds(cmp):
    """A comparison as bounds on r = kv - q: (lo, hi), None for unbounded;
    None when it is not such a bound."""
    diff = tr.Sym("sub", [cmp.args[0], cmp.args[1]], "i")
    form = _distance_form(diff)
    if form is None:
        return None
    c, k = form  # cmp: c r + k  (op)  0
    if c == 0:
        return None
    if cmp.op == "lt":
        k += 1  # integers: c r + k < 0  <=>  c r + k + 1 <= 0
    elif cmp.op != "le":
        if cmp.op == "eq":
            if k % c:
                return None
            return (-k // c, -k // c)
        return None
    # c r <= -k
    if c > 0:
        return (None, math.floor(-k / c))
    return (math.ceil(-k / c), None)


class _Pattern:
    """A recognized mask: the pattern text and the segment tensor it needs."""

    def __init__(self, text, segments=None):
        self.text, self.segments = text, segments


def _window(lo, hi, Lq, Lk):
    big = Lq + Lk  # beyond any distance in the problem
    left = big if lo is None else -lo
    right = big if hi is None else hi
    if left < 0 or right < 0:
        return None  # excludes r = 0: no window expresses it
    if lo is None and hi == 0:
        return "#attn.causal"
    return f"#attn.window<left = {min(left, big)}, right = {min(right, big)}>"


def _recognize(e, Lq, Lk):
    """(pattern or None, residual expression or None): pattern AND residual
    equals `e`."""
    if e.op == "const" and e.args[0] is True:
        return None, None
    if e.op == "and":
        # Bounds of several comparisons meet in one window.
        bounds = [_bounds(a) if a.op in ("lt", "le", "eq") else None for a in e.args]
        if all(b is not None for b in bounds):
            lo = max((b[0] for b in bounds if b[0] is not None), default=None)
            hi = min((b[1] for b in bounds if b[1] is not None), default=None)
            text = _window(lo, hi, Lq, Lk)
            if text:
                return _Pattern(text), None
        parts = [_recognize(a, Lq, Lk) for a in e.args]
        patterns = [p for p, _ in parts if p is not None]
        residuals = [r for _, r in parts if r is not None]
        residual = residuals[0] if len(residuals) == 1 else (
            tr.Sym("and", residuals, "b") if residuals else None)
        if not patterns:
            return None, e
        segments = [p.segments for p in patterns if p.segments is not None]
        if len(segments) > 1:
            return None, e
        text = patterns[0].text if len(patterns) == 1 else (
            "#attn.and<[" + ", ".join(p.text for p in patterns) + "]>")
        return _Pattern(text, segments[0] if segments else None), residual
    if e.op == "or":
        parts = [_recognize(a, Lq, Lk) for a in e.args]
        if any(p is None or r is not None for p, r in parts):
            return None, e
        segments = [p.segments for p, _ in parts if p.segments is not None]
        if segments:
            return None, e
        return _Pattern("#attn.or<[" + ", ".join(p.text for p, _ in parts) + "]>"), None
    if e.op in ("lt", "le", "eq"):
        b = _bounds(e)
        if b is not None:
            text = _window(b[0], b[1], Lq, Lk)
            if text:
                return _Pattern(text), None
        if e.op == "eq":
            seg = _segments(e)
            if seg is not None:
                return _Pattern("#attn.segments", seg), None
            stride = _stride(e)
            if stride is not None:
                return _Pattern(f"#attn.strided<stride = {stride}>"), None
    return None, e


def _segments(e):
    """doc[q_idx] == doc[kv_idx] or doc[b, q_idx] == doc[b, kv_idx]: doc."""
    a, b = e.args
    if a.op != "load" or b.op != "load" or a.args[0] is not b.args[0]:
        return None
    ia, ib = a.args[1:], b.args[1:]
    tensor = a.args[0]
    if T.dtype_name(tensor) not in ("int32", "int64", "int16", "int8", "uint8"):
        return None
    def is_index(s, n):
        return s.op == "index" and s.args[0] == n
    def q_and_kv(x, y):
        return (is_index(x, "q") and is_index(y, "kv")) or (
            is_index(x, "kv") and is_index(y, "q"))
    if len(ia) == 1 and q_and_kv(ia[0], ib[0]):
        return tensor
    if len(ia) == 2 and is_index(ia[0], "b") and is_index(ib[0], "b") and \
            q_and_kv(ia[1], ib[1]):
        return tensor
    return None


def _stride(e):
    """(±(kv - q)) % d == 0: d."""
    a, b = e.args
    if not (b.op == "const" and b.args[0] == 0 and a.op == "mod"):
        return None
    inner, divisor = a.args
    form = _distance_form(inner)
    if form is None or abs(form[0]) != 1 or form[1] != 0:
        return None
    if divisor.op != "const" or not isinstance(divisor.args[0], int) or divisor.args[0] < 1:
        return None
    return divisor.args[0]


# --- score mods ----------------------------------------------------------------

def _softcap(e):
    """c for e = c * tanh(score / c) (either operand order); else None."""
    if e.op != "mul":
        return None
    for c, t in (e.args, e.args[::-1]):
        if c.op == "const" and t.op == "tanh":
            inner = t.args[0]
            if inner.op == "div" and inner.args[0].op == "score" and \
                    inner.args[1].op == "const" and inner.args[1].args[0] == c.args[0]:
                cap = float(c.args[0])
                return cap if cap > 0 else None
            if inner.op == "mul" and c.args[0] != 0:
                for s, k in (inner.args, inner.args[::-1]):
                    if s.op == "score" and k.op == "const" and \
                            math.isclose(k.args[0] * c.args[0], 1.0, rel_tol=1e-12):
                        cap = float(c.args[0])
                        return cap if cap > 0 else None
    return None


def _replace_softcap(e):
    """(cap, e with the soft-cap subtree as the score) when the score is
    only read through one soft-cap; (None, e) otherwise."""
    caps = []

    def walk(x):
        cap = _softcap(x)
        if cap is not None:
            caps.append(cap)
            return tr.SCORE
        if x.op == "score":
            caps.append(None)
            return x
        if not x.args or not any(isinstance(a, tr.Sym) for a in x.args):
            return x
        return tr.Sym(x.op, [walk(a) if isinstance(a, tr.Sym) else a for a in x.args], x.kind)

    out = walk(e)
    if caps and all(c is not None for c in caps) and len(set(caps)) == 1:
        return caps[0], out
    return None, e


# --- the score region --------------------------------------------------------------

class _RegionWriter:
    """MLIR lines of a score region computing a traced expression."""

    def __init__(self, captured):
        self.lines, self.names, self.counter = [], {}, 0
        self.captured = captured

    def fresh(self):
        self.counter += 1
        return f"%t{self.counter}"

    def emit(self, text):
        name = self.fresh()
        self.lines.append(f"{name} = {text}")
        return name

    def value(self, e, want=None):
        """The SSA name of `e` as `want` ('f', 'i', 'b' or its own kind)."""
        name, kind = self._value(e)
        want = want or kind
        if want == kind:
            return name
        if want == "f" and kind == "i":
            i64 = self.emit(f"arith.index_cast {name} : index to i64")
            return self.emit(f"arith.sitofp {i64} : i64 to f32")
        if want == "i" and kind == "b":
            one = self.emit("arith.constant 1 : index")
            zero = self.emit("arith.constant 0 : index")
            return self.emit(f"arith.select {name}, {one}, {zero} : index")
        if want == "f" and kind == "b":
            one = self.emit("arith.constant 1.0 : f32")
            zero = self.emit("arith.constant 0.0 : f32")
            return self.emit(f"arith.select {name}, {one}, {zero} : f32")
        raise tr.TraceError(f"cannot use a {kind} value as {want}")

    def _value(self, e):
        key = e.key()
        if key in self.names:
            return self.names[key]
        result = self._emit(e)
        self.names[key] = result
        return result

    def _emit(self, e):
        op, args, kind = e.op, e.args, e.kind
        if op == "score":
            return "%x", "f"
        if op == "index":
            return {"b": "%b", "h": "%h", "q": "%i", "kv": "%j"}[args[0]], "i"
        if op == "const":
            v = args[0]
            if kind == "b":
                return self.emit(f"arith.constant {'true' if v else 'false'}"), "b"
            if kind == "i":
                return self.emit(f"arith.constant {int(v)} : index"), "i"
            if math.isinf(v):
                bits = "0xFF800000" if v < 0 else "0x7F800000"
                return self.emit(f"arith.constant {bits} : f32"), "f"
            return self.emit(f"arith.constant {float_literal(v)} : f32"), "f"
        if op == "load":
            n = next(i for i, t in enumerate(self.captured) if t is args[0])
            tensor = self.captured[n]
            idx = [self.value(a, "i") for a in args[1:]]
            element = _captured_element(tensor)
            loaded = self.emit(f"tensor.extract %captured{n}[{', '.join(idx)}] : "
                               f"{tensor_type(tuple(tensor.shape), element)}")
            if element == "i32":
                return self.emit(f"arith.index_cast {loaded} : i32 to index"), "i"
            return loaded, {"i1": "b", "f32": "f"}[element]
        if op in ("add", "sub", "mul", "div", "max", "min", "pow"):
            t = "f" if kind == "f" else "i"
            a, b = self.value(args[0], t), self.value(args[1], t)
            if t == "f":
                mnemonic = {"add": "arith.addf", "sub": "arith.subf", "mul": "arith.mulf",
                             "div": "arith.divf", "max": "arith.maximumf",
                             "min": "arith.minimumf", "pow": "math.powf"}[op]
                return self.emit(f"{mnemonic} {a}, {b} : f32"), "f"
            if op in ("div", "pow"):
                raise tr.TraceError("integer division and powers need float operands")
            mnemonic = {"add": "arith.addi", "sub": "arith.subi", "mul": "arith.muli",
                         "max": "arith.maxsi", "min": "arith.minsi"}[op]
            return self.emit(f"{mnemonic} {a}, {b} : index"), "i"
        if op in ("floordiv", "mod"):
            if kind == "f":
                raise tr.TraceError("// and % of float values are not supported in mods")
            a, b = self.value(args[0], "i"), self.value(args[1], "i")
            if op == "floordiv":
                return self.emit(f"arith.floordivsi {a}, {b} : index"), "i"
            # Python's (and torch's) % takes the divisor's sign.
            r = self.emit(f"arith.remsi {a}, {b} : index")
            zero = self.emit("arith.constant 0 : index")
            nonzero = self.emit(f"arith.cmpi ne, {r}, {zero} : index")
            rneg = self.emit(f"arith.cmpi slt, {r}, {zero} : index")
            bneg = self.emit(f"arith.cmpi slt, {b}, {zero} : index")
            differ = self.emit(f"arith.xori {rneg}, {bneg} : i1")
            fix = self.emit(f"arith.andi {nonzero}, {differ} : i1")
            shifted = self.emit(f"arith.addi {r}, {b} : index")
            return self.emit(f"arith.select {fix}, {shifted}, {r} : index"), "i"
        if op in ("lt", "le", "eq", "ne"):
            a_kind = "f" if "f" in (args[0].kind, args[1].kind) else (
                "b" if args[0].kind == args[1].kind == "b" else "i")
            a, b = self.value(args[0], a_kind), self.value(args[1], a_kind)
            if a_kind == "f":
                pred = {"lt": "olt", "le": "ole", "eq": "oeq", "ne": "une"}[op]
                return self.emit(f"arith.cmpf {pred}, {a}, {b} : f32"), "b"
            pred = {"lt": "slt", "le": "sle", "eq": "eq", "ne": "ne"}[op]
            t = "i1" if a_kind == "b" else "index"
            return self.emit(f"arith.cmpi {pred}, {a}, {b} : {t}"), "b"
        if op in ("and", "or"):
            a, b = self.value(args[0], "b"), self.value(args[1], "b")
            for extra in args[2:]:
                a = self.emit(f"arith.{'andi' if op == 'and' else 'ori'} {a}, {b} : i1")
                b = self.value(extra, "b")
            return self.emit(f"arith.{'andi' if op == 'and' else 'ori'} {a}, {b} : i1"), "b"
        if op == "not":
            a = self.value(args[0], "b")
            true = self.emit("arith.constant true")
            return self.emit(f"arith.xori {a}, {true} : i1"), "b"
        if op == "select":
            c = self.value(args[0], "b")
            t = kind
            a, b = self.value(args[1], t), self.value(args[2], t)
            type_ = {"f": "f32", "i": "index", "b": "i1"}[t]
            return self.emit(f"arith.select {c}, {a}, {b} : {type_}"), t
        if op == "abs":
            if kind == "i":
                a = self.value(args[0], "i")
                zero = self.emit("arith.constant 0 : index")
                neg = self.emit(f"arith.subi {zero}, {a} : index")
                return self.emit(f"arith.maxsi {a}, {neg} : index"), "i"
            return self.emit(f"math.absf {self.value(args[0], 'f')} : f32"), "f"
        if op in ("tanh", "exp", "log", "sqrt"):
            return self.emit(f"math.{op} {self.value(args[0], 'f')} : f32"), "f"
        if op == "sigmoid":
            a = self.value(args[0], "f")
            neg = self.emit(f"arith.negf {a} : f32")
            ex = self.emit(f"math.exp {neg} : f32")
            one = self.emit("arith.constant 1.0 : f32")
            den = self.emit(f"arith.addf {one}, {ex} : f32")
            return self.emit(f"arith.divf {one}, {den} : f32"), "f"
        if op == "tofloat":
            return self.value(args[0], "f"), "f"
        raise tr.TraceError(f"attn cannot lower traced op '{op}'")


def _captured_element(tensor):
    name = T.dtype_name(tensor)
    if name == "bool":
        return "i1"
    if name.startswith(("int", "uint")):
        return "i32"
    return "f32"


def _captured_operand(tensor):
    """A captured tensor as a kernel operand: bool, int32 or float32 (a
    float one stays in autograd's graph: attn's backward gives its
    gradient)."""
    element = _captured_element(tensor)
    if T.is_torch(tensor):
        import torch
        dtype = {"i1": torch.bool, "i32": torch.int32, "f32": torch.float32}[element]
        if tensor.dtype != dtype:
            if element == "i32" and tensor.numel() and (
                    tensor.max() > 2**31 - 1 or tensor.min() < -2**31):
                raise ValueError("a captured integer tensor holds values beyond int32")
            tensor = tensor.to(dtype)
    else:
        import numpy as np
        dtype = {"i1": np.bool_, "i32": np.int32, "f32": np.float32}[element]
        tensor = np.asarray(tensor).astype(dtype, copy=False)
    return T.as_operand(tensor, "a captured tensor", keep_grad=element == "f32")


# --- the entry point ---------------------------------------------------------------

def _plan(q_shape, k_shape, v_shape, element, score_mod, block_mask, scale, return_lse):
    """(AttentionCall, extra operands) of a flex_attention call."""
    Lq, Lk = q_shape[2], k_shape[2]
    pattern, residual, segments = None, None, None
    if block_mask is not None:
        _, _, mq, mk = block_mask.shape
        if (mq, mk) != (Lq, Lk):
            raise ValueError(f"flex_attention: the block mask is for Q_LEN {mq}, KV_LEN "
                             f"{mk}; the inputs have {Lq} and {Lk}")
        found, residual = block_mask.pattern, block_mask.residual
        if found is not None:
            pattern, segments = found.text, found.segments
        if block_mask.layout is not None:
            layout = _layout_text(block_mask.layout, block_mask.BLOCK_SIZE)
            pattern = layout if pattern is None else f"#attn.and<[{pattern}, {layout}]>"
    mods, score_expr = [], None
    if score_mod is not None:
        score_expr = tr.trace_score_mod(score_mod)
        cap, rest = _replace_softcap(score_expr)
        if cap is not None:
            mods.append(f"#attn.softcap<cap = {float_literal(cap)}>")
            score_expr = rest
        if score_expr.op == "score":
            score_expr = None
    region_expr = score_expr
    if residual is not None:
        base = region_expr if region_expr is not None else tr.SCORE
        region_expr = tr.where(residual, base, -math.inf)
    captured = tr.captured_tensors(region_expr) if region_expr is not None else []
    extra = []
    segment_shapes = None
    if segments is not None:
        B = q_shape[0]
        seg = segments
        if seg.ndim == 1:
            seg = seg.reshape((1, seg.shape[0]))
        if seg.shape[0] not in (1, B) or seg.shape[1] < max(Lq, Lk):
            raise ValueError(f"flex_attention: document ids of shape {tuple(segments.shape)} "
                             f"do not cover batch {B} and lengths {Lq}, {Lk}")
        seg = _captured_operand(seg)
        qs = T.expand(seg[:, :Lq], (B, Lq))
        ks = T.expand(seg[:, :Lk], (B, Lk))
        extra += [qs, ks]
        segment_shapes = ((B, Lq), (B, Lk))
    body = None
    if region_expr is not None:
        writer = _RegionWriter(captured)
        value = writer.value(region_expr, "f")
        body = (writer.lines, value)
    operands = [_captured_operand(t) for t in captured]
    call = AttentionCall(q_shape, k_shape, v_shape, element=element,
                         segment_shapes=segment_shapes, pattern=pattern, mods=mods,
                         scale=scale, score_body=body,
                         captured=[(tuple(o.shape), _captured_element(o)) for o in operands],
                         lse=return_lse)
    return call, extra + operands


def traced_ir(query, key, value, score_mod=None, block_mask=None, scale=None,
              enable_gqa=False, return_lse=False):
    """The attn IR flex_attention compiles for these arguments."""
    q, k, v, dtype, _ = _check_qkv(query, key, value, enable_gqa, "flex_attention")
    call, _ = _plan(tuple(q.shape), tuple(k.shape), tuple(v.shape), ELEMENT[dtype],
                    score_mod, block_mask, scale, return_lse)
    return call.module("flex")


def flex_attention(query, key, value, score_mod=None, block_mask=None, scale=None,
                   enable_gqa=False, return_lse=False, *, out=None, device=None):
    """torch.nn.attention.flex_attention.flex_attention on attn's kernels.

    `score_mod(score, b, h, q_idx, kv_idx)` returns the modified score;
    `block_mask` comes from create_block_mask. Returns the output
    [B, Hq, L, Dv], and with return_lse=True also the log-sum-exp of each
    row's kept scores [B, Hq, L] (float32; -inf for a row that keeps
    nothing, whose output is 0). `device="vulkan"` runs the GPU kernels on
    copies; CUDA tensors are bound in place (lse is not available on
    GPUs)."""
    target, home = T.target_of(device, query)
    if target != "cpu":
        if return_lse:
            raise ValueError("flex_attention: return_lse runs on the CPU only (GPU "
                             "targets have no lse result)")
        if T.binds_in_place(target, query, key, value, out):
            # CUDA tensors stay where they are: the kernel binds them.
            return _flex(query, key, value, score_mod, block_mask, scale, enable_gqa, False,
                         out, target)
        result = T.on_host(home, lambda q, k, v: _flex(
            q, k, v, score_mod, block_mask, scale, enable_gqa, False, None, target),
            query, key, value)
        return T.into(out, result)
    return _flex(query, key, value, score_mod, block_mask, scale, enable_gqa, return_lse,
                 out, "cpu")


def _flex(query, key, value, score_mod, block_mask, scale, enable_gqa, return_lse, out,
          target):
    q, k, v, dtype, squeeze = _check_qkv(query, key, value, enable_gqa, "flex_attention")
    if squeeze:
        raise ValueError("flex_attention: query, key and value must have rank 4 "
                         "[B, H, L, D]")
    call, extra = _plan(tuple(q.shape), tuple(k.shape), tuple(v.shape), ELEMENT[dtype],
                        score_mod, block_mask, scale, return_lse)
    if target == "cpu" and needs_grad(q, k, v, *extra):
        # Training: the output carries attn's backward (autograd.py); a
        # captured tensor that requires grad is enough.
        if return_lse or out is not None:
            raise ValueError("flex_attention: return_lse and out= are for inference "
                             "(inputs that require grad take neither)")
        return attention_with_grad(call, q, k, v, extra)
    kernel = compile_source(call.module("flex"), target=target,
                            extra_args=T.f32_products(target, dtype))
    on_device = target.startswith("cuda")
    operands = [T.as_operand(x, name, on_device=on_device)
                for x, name in ((q, "query"), (k, "key"), (v, "value"))] + extra
    shape = call.output_shape()
    if out is not None:
        contiguous = out.is_contiguous() if T.is_torch(out) else out.flags.c_contiguous
        if tuple(out.shape) != shape or T.dtype_name(out) != dtype or not contiguous or \
                T.is_torch(out) != T.is_torch(q):
            raise ValueError(f"flex_attention: out must be a dense {dtype} {shape} of the "
                             f"inputs' library, got {T.dtype_name(out)} {tuple(out.shape)}")
    result = T.empty_like_family(q, shape) if out is None else out
    outputs = [result]
    if return_lse:
        lse = T.empty_like_family(q, tuple(q.shape[:3]),
                                  dtype=_float32_of(q))
        outputs.append(lse)
    kernel(*operands, out=outputs)
    return (result, outputs[1]) if return_lse else result


def _float32_of(x):
    if T.is_torch(x):
        import torch
        return torch.float32
    import numpy as np
    return np.float32
