"""Checks a softmax computed by attn against a plain double-precision one
(standard library only): softmax-reference.py IN.npy OUT.npy DIM TOL.
IN and OUT are f32 .npy files of one shape; OUT must be softmax(IN) along
axis DIM. Prints the max abs error and PASS / FAIL."""
import struct
import sys
import math


def read(path):
    blob = open(path, "rb").read()
    length = struct.unpack("<H", blob[8:10])[0]
    header = blob[10:10 + length].decode()
    shape = tuple(int(s) for s in header.split("'shape': (")[1].split(")")[0].split(",") if s.strip())
    data = blob[10 + length:]
    return shape, struct.unpack("<%df" % (len(data) // 4), data)


shape, x = read(sys.argv[1])
out_shape, y = read(sys.argv[2])
dim, tol = int(sys.argv[3]), float(sys.argv[4])
assert shape == out_shape, "shapes differ: %s vs %s" % (shape, out_shape)
stride = 1
for s in shape[dim + 1:]:
    stride *= s
n = shape[dim]
error = 0.0
for start in range(len(x)):
    # One softmax per index with coordinate 0 along DIM.
    if (start // stride) % n:
        continue
    row = [x[start + t * stride] for t in range(n)]
    top = max(row)
    e = [math.exp(v - top) for v in row]
    total = sum(e)
    for t in range(n):
        error = max(error, abs(e[t] / total - y[start + t * stride]))
print("softmax max abs error %.3e: %s" % (error, "PASS" if error <= tol else "FAIL"))
