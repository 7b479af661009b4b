"""Prints the max abs difference of two float32 .npy files of the same
shape and SAME / DIFFERENT against a tolerance (standard library only)."""
import struct
import sys


def read(path):
    blob = open(path, "rb").read()
    length = struct.unpack("<H", blob[8:10])[0]
    data = blob[10 + length:]
    return blob[10:10 + length], struct.unpack("<%df" % (len(data) // 4), data)


header_a, a = read(sys.argv[1])
header_b, b = read(sys.argv[2])
assert header_a == header_b, "shapes differ"
diff = max(abs(x - y) for x, y in zip(a, b))
print("max abs difference %.3e: %s" % (diff, "SAME" if diff <= float(sys.argv[3]) else "DIFFERENT"))
