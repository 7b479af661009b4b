"""Writes an f32 .npy matrix for the property tests (standard library only):
  eye OUT N [HEADS]        the N x N identity ([HEADS, N, N] when given)
  normal OUT ROWS COLS SIGMA SEED   seeded N(0, SIGMA^2) entries
  zeros OUT DIM...         zeros of shape DIM...
  fill OUT VALUE DIM...    VALUE (e.g. nan) everywhere, shape DIM...
  tensor OUT SEED DIM...   seeded N(0, 1) entries of shape DIM...
  unit-rows IN OUT         IN with its last-axis rows scaled to unit length
  negative-rows OUT SEED EVERY DIM...   as tensor, but every EVERY-th
                           last-axis row is -|x| (no positive entry)
  i32 OUT ROWS VALUE,...   an int32 [ROWS, len / ROWS] matrix of the values
  i32-vector OUT VALUE,... an int32 vector of the values (a kv_length: [1])
  nan-tail OUT SEED FROM DIM...   as tensor, with NaN in every row
                           (second-to-last axis) from FROM on
  inf-tail OUT SEED FROM DIM...   as tensor, with -inf in every column
                           (last axis) from FROM on (a padding bias)
  poison-pages IN OUT PAGE[:ROW],...   IN, a paged pool [pages, H, P, D],
                           with NaN in rows ROW.. (default 0) of each PAGE
"""
import random
import struct
import sys


def write(path, shape, values, descr="<f4", code="f"):
    shape_text = "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape_text)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (len(values), code), *values))


def seeded(seed, shape):
    """Seeded N(0, 1) entries of `shape`, row-major."""
    count = 1
    for d in shape:
        count *= d
    rng = random.Random(seed)
    return [rng.gauss(0.0, 1.0) for _ in range(count)]


kind, out = sys.argv[1], sys.argv[2]
if kind == "eye":
    n = int(sys.argv[3])
    heads = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    eye = [1.0 if r == c else 0.0 for r in range(n) for c in range(n)]
    write(out, ([heads] if heads else []) + [n, n], eye * max(heads, 1))
elif kind == "normal":
    rows, cols, sigma, seed = int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
    rng = random.Random(seed)
    write(out, [rows, cols], [rng.gauss(0.0, sigma) for _ in range(rows * cols)])
elif kind == "zeros":
    shape = [int(d) for d in sys.argv[3:]]
    count = 1
    for d in shape:
        count *= d
    write(out, shape, [0.0] * count)
elif kind == "fill":
    value, shape = float(sys.argv[3]), [int(d) for d in sys.argv[4:]]
    count = 1
    for d in shape:
        count *= d
    write(out, shape, [value] * count)
elif kind == "tensor":
    seed, shape = int(sys.argv[3]), [int(d) for d in sys.argv[4:]]
    write(out, shape, seeded(seed, shape))
elif kind in ("nan-tail", "inf-tail", "negative-rows"):
    seed, at, shape = int(sys.argv[3]), int(sys.argv[4]), [int(d) for d in sys.argv[5:]]
    values = seeded(seed, shape)
    rows, cols = shape[-2] if len(shape) > 1 else 1, shape[-1]
    for e in range(len(values)):
        row, col = (e // cols) % rows, e % cols
        if kind == "nan-tail" and row >= at:
            values[e] = float("nan")
        elif kind == "inf-tail" and col >= at:
            values[e] = float("-inf")
        elif kind == "negative-rows" and (e // cols) % at == 0:
            values[e] = -abs(values[e])
    write(out, shape, values)
elif kind == "i32":
    rows, values = int(sys.argv[3]), [int(v) for v in sys.argv[4].split(",")]
    write(out, [rows, len(values) // rows], values, "<i4", "i")
elif kind == "i32-vector":
    values = [int(v) for v in sys.argv[3].split(",")]
    write(out, [len(values)], values, "<i4", "i")
elif kind == "poison-pages":
    source, out = out, sys.argv[3]
    blob = open(source, "rb").read()
    header_length = struct.unpack("<H", blob[8:10])[0]
    header = blob[10:10 + header_length].decode()
    shape = [int(d) for d in header.split("(")[1].split(")")[0].split(",") if d.strip()]
    data = list(struct.unpack("<%df" % ((len(blob) - 10 - header_length) // 4), blob[10 + header_length:]))
    _, heads, rows, dim = shape
    for spec in sys.argv[4].split(","):
        page, _, first = spec.partition(":")
        for h in range(heads):
            for r in range(int(first or 0), rows):
                at = ((int(page) * heads + h) * rows + r) * dim
                data[at:at + dim] = [float("nan")] * dim
    write(out, shape, data)
elif kind == "unit-rows":
    source, out = out, sys.argv[3]
    blob = open(source, "rb").read()
    header_length = struct.unpack("<H", blob[8:10])[0]
    header = blob[10:10 + header_length].decode()
    shape = [int(d) for d in header.split("(")[1].split(")")[0].split(",") if d.strip()]
    data = struct.unpack("<%df" % ((len(blob) - 10 - header_length) // 4), blob[10 + header_length:])
    cols, rows = shape[-1], []
    for r in range(len(data) // cols):
        row = data[r * cols:(r + 1) * cols]
        norm = sum(x * x for x in row) ** 0.5
        rows += [x / norm if norm else 0.0 for x in row]
    write(out, shape, rows)
else:
    sys.exit("unknown kind " + kind)
