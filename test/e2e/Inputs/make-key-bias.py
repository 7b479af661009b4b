"""Writes a per-key bias .npy [B, H, 1, LK]: 0 for every key but the listed
ones, which get -inf (a padding mask as front ends pass it, additively;
standard library only):

  make-key-bias.py OUT B H LK ROW [ROW ...]"""
import struct
import sys

out, b, h, lk = sys.argv[1], *map(int, sys.argv[2:5])
dropped = set(int(r) for r in sys.argv[5:])
data = [float("-inf") if j in dropped else 0.0
        for _ in range(b * h) for j in range(lk)]
shape = "(%d, %d, 1, %d)" % (b, h, lk)
header = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % shape
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
with open(out, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
    f.write(header.encode() + struct.pack("<%df" % len(data), *data))
