"""The reference of the GPU insertion kernels (standard library only):
inserts ROWS.npy into CACHE.npy the plain way, at OFFSETS (one per
dimension), dropping the elements whose place falls outside the cache as
the kernel does, and compares OUT.npy with the result element by element.
The kernels copy elements, so they must match exactly; prints the number
of differing elements, and PASS or FAIL.

  insert-reference.py ROWS.npy CACHE.npy OUT.npy OFFSETS [--bf16]

--bf16 rounds ROWS and CACHE to bf16 (nearest even) first, as attn-run does
for bf16 operands.
"""
import sys

from npy_f32 import bf16, indices, read, strides


def main():
    rows_path, cache_path, out_path, offsets_text = sys.argv[1:5]
    round16 = "--bf16" in sys.argv[5:]
    offsets = [int(t) for t in offsets_text.split(",")]
    row_shape, rows = read(rows_path)
    cache_shape, cache = read(cache_path)
    out_shape, out = read(out_path)
    if round16:
        rows = [bf16(v) for v in rows]
        cache = [bf16(v) for v in cache]
    expected = list(cache)
    row_strides, cache_strides = strides(row_shape), strides(cache_shape)
    for idx in indices(row_shape):
        to = [i + o for i, o in zip(idx, offsets)]
        if all(0 <= t < d for t, d in zip(to, cache_shape)):
            expected[sum(t * s for t, s in zip(to, cache_strides))] = \
                rows[sum(i * s for i, s in zip(idx, row_strides))]
    if out_shape != cache_shape:
        print("shape %s, expected %s" % (out_shape, cache_shape))
        print("FAIL")
        return
    differing = sum(1 for a, b in zip(out, expected) if a != b)
    print("differing elements: %d of %d" % (differing, len(expected)))
    print("PASS" if differing == 0 else "FAIL")


main()
