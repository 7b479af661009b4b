"""Writes a per-key boolean mask .npy [B, H, 1, LK]: true (kept) for every
key but the listed ones (a padding mask as front ends pass it; standard
library only):

  make-key-mask.py OUT B H LK ROW [ROW ...]"""
import struct
import sys

out, b, h, lk = sys.argv[1], *map(int, sys.argv[2:5])
dropped = set(int(r) for r in sys.argv[5:])
data = bytes(0 if j in dropped else 1
             for _ in range(b * h) for j in range(lk))
shape = "(%d, %d, 1, %d)" % (b, h, lk)
header = "{'descr': '|b1', 'fortran_order': False, 'shape': %s, }" % shape
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
with open(out, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
    f.write(header.encode() + data)
