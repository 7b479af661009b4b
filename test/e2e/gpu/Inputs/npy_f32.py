"""What the GPU tests' references share (standard library only): reading
an f32 .npy file, rounding to bf16 as attn-run does for bf16 operands,
and walking the indices of a row-major tensor."""
import struct


def read(path):
    """(shape, values) of an f32 .npy file."""
    blob = open(path, "rb").read()
    header_length = struct.unpack("<H", blob[8:10])[0]
    header = blob[10:10 + header_length].decode()
    shape = [int(d) for d in header.split("(")[1].split(")")[0].split(",") if d.strip()]
    data = blob[10 + header_length:]
    return shape, struct.unpack("<%df" % (len(data) // 4), data)


def bf16(v):
    """v rounded to bf16, nearest even."""
    bits = struct.unpack("<I", struct.pack("<f", v))[0]
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def strides(shape):
    """Row-major strides of `shape`, in elements."""
    out, s = [], 1
    for d in reversed(shape):
        out.insert(0, s)
        s *= d
    return out


def indices(shape):
    """Every index of `shape`, row-major."""
    if not shape:
        yield ()
        return
    for i in range(shape[0]):
        for rest in indices(shape[1:]):
            yield (i,) + rest
