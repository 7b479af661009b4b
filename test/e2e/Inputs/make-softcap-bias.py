"""Writes the operands of nonfinite.mlir's soft-cap cases (standard library
only): q [1, 1, 16, 8], k and v [1, 1, 32, 8], a bias [1, 1, 16, 32] that is
0 for keys j < 20 and -inf after, and k20 / v20, the first 20 keys alone."""
import os
import random
import struct
import sys

out = sys.argv[1]
rng = random.Random(7)


def npy(name, shape, data):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (
        ", ".join(map(str, shape)))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(os.path.join(out, name), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
        f.write(header.encode() + struct.pack("<%df" % len(data), *data))


q = [rng.uniform(-4, 4) for _ in range(16 * 8)]
k = [rng.uniform(-4, 4) for _ in range(32 * 8)]
v = [rng.uniform(-1, 1) for _ in range(32 * 8)]
npy("q.npy", (1, 1, 16, 8), q)
npy("k.npy", (1, 1, 32, 8), k)
npy("v.npy", (1, 1, 32, 8), v)
npy("k20.npy", (1, 1, 20, 8), k[:20 * 8])
npy("v20.npy", (1, 1, 20, 8), v[:20 * 8])
npy("bias.npy", (1, 1, 16, 32),
    [0.0 if j < 20 else float("-inf") for i in range(16) for j in range(32)])
