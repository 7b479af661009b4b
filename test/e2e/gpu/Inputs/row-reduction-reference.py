"""The f64 reference of the GPU row kernels of row-reduction-kernels.mlir
(standard library only, written apart from the kernel); prints
max |out - ref| / max |ref| and PASS when it is within TOLERANCE, else FAIL.

  row-reduction-reference.py residual-layer-norm X R W B OUT TOLERANCE
  row-reduction-reference.py rms-norm-bf16 X W OUT TOLERANCE
  row-reduction-reference.py softmax X OUT TOLERANCE
  row-reduction-reference.py product-and-minimum X OUT TOLERANCE

residual-layer-norm: h = x + r per row; (h - mean) / sqrt(var + 1e-5) * w + b
  (var: the mean of the squared deviations).
rms-norm-bf16: x and w rounded to bf16; x / sqrt(mean(x^2) + 1e-6) * w.
softmax: exp(x - max) / sum exp(x - max) per row.
product-and-minimum: x * (2 prod x) + min(0.5, min x) per row.
"""
import math
import sys

from npy_f32 import bf16, read


def rows_of(values, width):
    return [values[i:i + width] for i in range(0, len(values), width)]


def residual_layer_norm(x_path, r_path, w_path, b_path):
    shape, x = read(x_path)
    _, r = read(r_path)
    _, w = read(w_path)
    _, b = read(b_path)
    width = shape[-1]
    out = []
    for row in rows_of([a + c for a, c in zip(x, r)], width):
        mean = math.fsum(row) / width
        var = math.fsum((v - mean) ** 2 for v in row) / width
        scale = 1.0 / math.sqrt(var + 1e-5)
        out += [(v - mean) * scale * w[j] + b[j] for j, v in enumerate(row)]
    return out


def rms_norm_bf16(x_path, w_path):
    shape, x = read(x_path)
    _, w = read(w_path)
    width = shape[-1]
    w = [bf16(v) for v in w]
    out = []
    for row in rows_of([bf16(v) for v in x], width):
        scale = 1.0 / math.sqrt(math.fsum(v * v for v in row) / width + 1e-6)
        out += [v * scale * w[j] for j, v in enumerate(row)]
    return out


def softmax(x_path):
    shape, x = read(x_path)
    out = []
    for row in rows_of(x, shape[-1]):
        top = max(row)
        exps = [math.exp(v - top) for v in row]
        total = math.fsum(exps)
        out += [e / total for e in exps]
    return out


def product_and_minimum(x_path):
    shape, x = read(x_path)
    out = []
    for row in rows_of(x, shape[-1]):
        product = 2.0
        for v in row:
            product *= v
        low = min([0.5] + list(row))
        out += [v * product + low for v in row]
    return out


def main():
    kind, args = sys.argv[1], sys.argv[2:]
    inputs = {"residual-layer-norm": 4, "rms-norm-bf16": 2, "softmax": 1,
              "product-and-minimum": 1}[kind]
    ref = {"residual-layer-norm": residual_layer_norm,
           "rms-norm-bf16": rms_norm_bf16, "softmax": softmax,
           "product-and-minimum": product_and_minimum}[kind](*args[:inputs])
    _, out = read(args[inputs])
    tolerance = float(args[inputs + 1])
    scale = max(abs(v) for v in ref)
    error = max(abs(a - b) for a, b in zip(out, ref)) / scale
    print("max |out - ref| / max |ref| = %.2e" % error)
    print("PASS" if error <= tolerance and len(out) == len(ref) else "FAIL")


main()
