"""Writes q, k, v .npy files [B, H, L, D] of seeded values in [-1, 1) and
plants a non-finite value in chosen rows of k and v (standard library only):

  plant-nonfinite.py [--values-only] OUT_DIR B H LQ LK D VALUE ROW [ROW ...]

VALUE is nan, inf or -inf; every element of the listed key rows of k and v
(all batches and heads) gets it, or of v only with --values-only."""
import os
import random
import struct
import sys

args = sys.argv[1:]
values_only = args[0] == "--values-only"
if values_only:
    args = args[1:]
out, b, h, lq, lk, d, value = args[0], *map(int, args[1:6]), args[6]
rows = set(int(r) for r in args[7:])
planted = float(value)
rng = random.Random(1234)


def write(name, length, plant):
    count = b * h * length * d
    data = [rng.uniform(-1, 1) for _ in range(count)]
    if plant:
        for e in range(count):
            if (e // d) % length in rows:
                data[e] = planted
    shape = "(%d, %d, %d, %d)" % (b, h, length, d)
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % shape
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(os.path.join(out, name), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
        f.write(header.encode() + struct.pack("<%df" % count, *data))


write("q.npy", lq, False)
write("k.npy", lk, not values_only)
write("v.npy", lk, True)
