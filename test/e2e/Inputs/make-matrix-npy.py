"""Writes an f32 .npy matrix for the property tests (standard library only):
  eye OUT N [HEADS]        the N x N identity ([HEADS, N, N] when given)
  normal OUT ROWS COLS SIGMA SEED   seeded N(0, SIGMA^2) entries
"""
import random
import struct
import sys


def write(path, shape, values):
    shape_text = "(" + ", ".join(str(s) for s in shape) + ")"
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % shape_text
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%df" % len(values), *values))


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
else:
    sys.exit("unknown kind " + kind)
