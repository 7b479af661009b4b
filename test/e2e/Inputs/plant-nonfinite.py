"""Writes q, k, v .npy files [B, H, L, D] of seeded values in [-1, 1) and
plants a non-finite value in chosen rows of k and v (standard library only):

  plant-nonfinite.py OUT_DIR B H LQ LK D VALUE ROW [ROW ...]

VALUE is nan, inf or -inf; every element of the listed key rows of k and v
(all batches and heads) gets it."""
import os
import random
import struct
import sys

out, b, h, lq, lk, d, value = sys.argv[1], *map(int, sys.argv[2:7]), sys.argv[7]
rows = set(int(r) for r in sys.argv[8:])
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
write("k.npy", lk, True)
write("v.npy", lk, True)
