"""The f64 reference of the GPU element-wise kernels of
elementwise-kernels.mlir (standard library only); prints max |out - ref| /
max |ref| and PASS when it is within TOLERANCE, else FAIL.

  elementwise-reference.py rope-half|rope-interleaved X COS SIN OUT TOLERANCE
  elementwise-reference.py row-math X ROW OUT TOLERANCE

rope-*: X [B, H, L, D], COS and SIN [L, D/2]; pair n of each row (halves:
x[n], x[n + D/2]; interleaved: x[2n], x[2n + 1]) rotates:
  y_a = x_a cos - x_b sin,  y_b = x_a sin + x_b cos.
row-math: exp(tanh(x[i, j]) * row[j]).
"""
import math
import sys

from npy_f32 import read


def rope(x_path, cos_path, sin_path, interleaved):
    shape, x = read(x_path)
    _, cos = read(cos_path)
    _, sin = read(sin_path)
    length, dim = shape[2], shape[3]
    half = dim // 2
    y = [0.0] * len(x)
    for row in range(len(x) // dim):
        l = row % length
        base = row * dim
        for n in range(half):
            a, b = (2 * n, 2 * n + 1) if interleaved else (n, n + half)
            c, s = cos[l * half + n], sin[l * half + n]
            xa, xb = x[base + a], x[base + b]
            y[base + a] = xa * c - xb * s
            y[base + b] = xa * s + xb * c
    return y


def main():
    kind = sys.argv[1]
    if kind.startswith("rope"):
        ref = rope(*sys.argv[2:5], interleaved=kind == "rope-interleaved")
        out_path, tolerance = sys.argv[5], float(sys.argv[6])
    else:
        shape, x = read(sys.argv[2])
        _, row = read(sys.argv[3])
        cols = shape[1]
        ref = [math.exp(math.tanh(v) * row[i % cols]) for i, v in enumerate(x)]
        out_path, tolerance = sys.argv[4], float(sys.argv[5])
    _, out = read(out_path)
    scale = max(abs(v) for v in ref)
    error = max(abs(a - b) for a, b in zip(out, ref)) / scale
    print("max |out - ref| / max |ref| = %.2e" % error)
    print("PASS" if error <= tolerance and len(out) == len(ref) else "FAIL")


main()
