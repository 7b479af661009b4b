"""The f64 reference of the GPU products (standard library only): Y = X W^T
(W stored [N, K], a layer's weights as read) or, with --kn, Y = X W (W
stored [K, N]); prints max |out - ref| / max |ref| and PASS when it is
within TOLERANCE, else FAIL.

  linear-reference.py X.npy W.npy OUT.npy TOLERANCE [--kn] [--bf16]
                      [--epilogue-math BIAS.npy RESIDUAL.npy]

--bf16 rounds X and W to bf16 (nearest even) first, as attn-run does for
bf16 operands; --bf16-weights rounds W alone. --epilogue-math finishes each element v (plus BIAS at its
column) as linear-kernels.mlir's epilogue_math does: copysign(exp(-|v|),
v) + tanh(v) / 2 + v / (1 + exp(-v)) + RESIDUAL.
"""
import math
import sys

from npy_f32 import read, bf16


args = [a for a in sys.argv[1:] if not a.startswith("--")]
kn = "--kn" in sys.argv
finish = None
if "--epilogue-math" in sys.argv:
    _, bias = read(args[4])
    _, residual = read(args[5])

    def finish(v, r, c, n):
        v += bias[c]
        return (math.copysign(math.exp(-abs(v)), v) + math.tanh(v) / 2 +
                v / (1 + math.exp(-v)) + residual[r * n + c])
(m, k), x = read(args[0])
wshape, w = read(args[1])
oshape, out = read(args[2])
tolerance = float(args[3])
if "--bf16" in sys.argv:
    x = [bf16(v) for v in x]
if "--bf16" in sys.argv or "--bf16-weights" in sys.argv:
    w = [bf16(v) for v in w]
n = wshape[1] if kn else wshape[0]
assert oshape == [m, n], (oshape, m, n)
worst = biggest = 0.0
for r in range(m):
    for c in range(n):
        if kn:
            ref = sum(x[r * k + i] * w[i * n + c] for i in range(k))
        else:
            ref = sum(x[r * k + i] * w[c * k + i] for i in range(k))
        if finish:
            ref = finish(ref, r, c, n)
        worst = max(worst, abs(out[r * n + c] - ref))
        biggest = max(biggest, abs(ref))
error = worst / biggest
print("scaled error %.3g: %s" % (error, "PASS" if error <= tolerance else "FAIL"))
