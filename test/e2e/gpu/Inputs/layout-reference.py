"""The reference of the GPU layout kernels (standard library only): applies
a chain of layout steps to IN.npy the plain way, with nested lists, and
compares OUT.npy with the result element by element. The kernels copy
elements, so they must match exactly; prints the number of differing
elements, and PASS or FAIL.

  layout-reference.py IN.npy OUT.npy [--bf16] STEP...

  slice:OFFSETS:SIZES      tensor.extract_slice (unit strides)
  reshape:DIMS             tensor.expand_shape / collapse_shape
  transpose:PERM           linalg.transpose (result dim i = input dim PERM[i])
  pad:LOW:HIGH:VALUE       tensor.pad by VALUE

--bf16 rounds IN to bf16 (nearest even) first, as attn-run does for bf16
operands.
"""
import sys

from npy_f32 import bf16, indices, read, strides


def ints(text):
    return [int(t) for t in text.split(",")]


def step(shape, data, text):
    kind, *args = text.split(":")
    st = strides(shape)
    at = lambda idx: data[sum(i * s for i, s in zip(idx, st))]
    if kind == "reshape":
        new = ints(args[0])
        assert eval("*".join(map(str, new))) == len(data), text
        return new, data
    if kind == "slice":
        offsets, sizes = ints(args[0]), ints(args[1])
        return sizes, [at([i + o for i, o in zip(idx, offsets)]) for idx in indices(sizes)]
    if kind == "transpose":
        perm = ints(args[0])
        new = [shape[p] for p in perm]
        out = []
        for idx in indices(new):
            source = [0] * len(shape)
            for i, p in enumerate(perm):
                source[p] = idx[i]
            out.append(at(source))
        return new, out
    if kind == "pad":
        low, high, value = ints(args[0]), ints(args[1]), float(args[2])
        new = [d + l + h for d, l, h in zip(shape, low, high)]
        out = []
        for idx in indices(new):
            source = [i - l for i, l in zip(idx, low)]
            inside = all(0 <= s < d for s, d in zip(source, shape))
            out.append(at(source) if inside else value)
        return new, out
    raise SystemExit("unknown step " + text)


def main():
    args = sys.argv[1:]
    rounding = "--bf16" in args
    args = [a for a in args if a != "--bf16"]
    shape, data = read(args[0])
    out_shape, out = read(args[1])
    if rounding:
        data = [bf16(v) for v in data]
    for text in args[2:]:
        shape, data = step(shape, data, text)
    if shape != out_shape:
        print("FAIL: shape %s, expected %s" % (out_shape, shape))
        return
    wrong = sum(1 for a, b in zip(out, data) if not (a == b or (a != a and b != b)))
    print("differing elements: %d of %d" % (wrong, len(data)))
    print("PASS" if wrong == 0 else "FAIL")


main()
