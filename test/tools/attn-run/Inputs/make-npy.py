"""Writes well-formed and malformed .npy files with the standard library only
(the test suite does not need NumPy): the header layout follows the .npy
format specification, version 1.0."""
import os
import struct
import sys

out = sys.argv[1]


def npy(name, descr, shape, data, fortran=False, header_len=None, cut=None):
    shape_text = "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
        descr, "True" if fortran else "False", shape_text)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    length = len(header) if header_len is None else header_len
    blob = b"\x93NUMPY\x01\x00" + struct.pack("<H", length) + header.encode() + data
    if cut is not None:
        blob = blob[:cut]
    with open(os.path.join(out, name), "wb") as f:
        f.write(blob)


count = 1 * 1 * 8 * 16
floats = struct.pack("<%df" % count, *[((i * 7) % 13) / 13.0 - 0.5 for i in range(count)])
npy("good.npy", "<f4", (1, 1, 8, 16), floats)
npy("good-2x3.npy", "<f4", (2, 3), struct.pack("<6f", *range(6)))
npy("f8.npy", "<f8", (1, 1, 8, 16), b"\0" * (8 * count))
npy("fortran.npy", "<f4", (1, 1, 8, 16), floats, fortran=True)
header_size = 10 + 64 * 2  # start of data for these small headers
npy("truncated.npy", "<f4", (1, 1, 8, 16), floats[:100])
npy("header.npy", "<f4", (1, 1, 8, 16), floats, header_len=5000)

# Hostile headers: shapes whose byte count overflows 64 bits, with 1 KB of
# data (a reader that multiplies without checking allocates too little and
# copies or writes past it).
npy("overflow-2d.npy", "<f4", (2305843009213693952, 32), b"\0" * 1024)
npy("overflow-1d.npy", "<f4", (4611686018427387904,), b"\0" * 1024)
npy("overflow-layer.npy", "<f4", (4611686018427387905, 8, 32), b"\0" * 1024)

# Typed operands of typed.mlir: i32 segment ids that differ at every
# position (only the diagonal is kept), an all-true bool mask, and q, k, v.
L, D = 8, 16
vals = [((i * 5) % 11) / 11.0 - 0.5 for i in range(L * D)]
npy("typed-q.npy", "<f4", (1, 1, L, D), struct.pack("<%df" % (L * D), *vals))
npy("typed-v.npy", "<f4", (1, 1, L, D), struct.pack("<%df" % (L * D), *vals[::-1]))
npy("typed-ids.npy", "<i4", (1, L), struct.pack("<%di" % L, *range(L)))
npy("typed-ids64.npy", "<i8", (1, L), struct.pack("<%dq" % L, *range(L)))
npy("typed-big-ids.npy", "<i8", (1, L), struct.pack("<%dq" % L, *([1 << 40] * L)))
npy("typed-mask.npy", "|b1", (1, 1, L, L), b"\1" * (L * L))
npy("typed-float-ids.npy", "<f4", (1, L), struct.pack("<%df" % L, *range(L)))
npy("typed-int-mask.npy", "<i4", (1, 1, L, L), struct.pack("<%di" % (L * L), *([1] * L * L)))
