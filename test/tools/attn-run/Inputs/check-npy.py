"""Checks that an .npy file is float32, C order, of the given shape, with as
many finite values as the shape needs (standard library only)."""
import math
import struct
import sys

path, shape = sys.argv[1], tuple(int(s) for s in sys.argv[2].split(","))
blob = open(path, "rb").read()
assert blob[:6] == b"\x93NUMPY", "bad magic"
length = struct.unpack("<H", blob[8:10])[0]
header = blob[10:10 + length].decode()
assert "'descr': '<f4'" in header, header
assert "'fortran_order': False" in header, header
assert "'shape': (%s)" % ", ".join(str(s) for s in shape) in header, header
assert (10 + length) % 64 == 0, "data not 64-byte aligned"
count = math.prod(shape)
values = struct.unpack("<%df" % count, blob[10 + length:10 + length + 4 * count])
assert all(math.isfinite(v) for v in values)
print("ok")
