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
