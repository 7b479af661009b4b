"""Writes a damaged copy of a safetensors file, one damage per mode:

  truncate       drop the last bytes of the data
  header-eof     a header length past the end of the file
  dtype          the first tensor's dtype becomes I64 (unsupported)
  offsets        the first tensor's byte range shrinks (shape disagrees)
  json           the header is not JSON
  short          a file of 5 bytes
  set NAME INDEX VALUE
                 element INDEX of tensor NAME becomes VALUE (nan, inf, a
                 number); the tensor's dtype is kept
  extra NAME     adds tensor NAME, a copy of the first tensor
  merge OTHER    adds every tensor of the safetensors file OTHER
"""
import json
import struct
import sys


def read(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8 : 8 + n]), data[8 + n :]


mode, source, target = sys.argv[1:4]
data = open(source, "rb").read()
header, body = read(source)
first = sorted(k for k in header if k != "__metadata__")[0]


def pack(h):
    text = json.dumps(h).encode()
    return struct.pack("<Q", len(text)) + text


if mode == "truncate":
    out = data[: len(data) - 100]
elif mode == "header-eof":
    out = struct.pack("<Q", len(data)) + data[8:]
elif mode == "dtype":
    header[first]["dtype"] = "I64"
    out = pack(header) + body
elif mode == "offsets":
    begin, end = header[first]["data_offsets"]
    header[first]["data_offsets"] = [begin, end - 4]
    out = pack(header) + body
elif mode == "json":
    out = struct.pack("<Q", 9) + b"{not json" + body
elif mode == "short":
    out = data[:5]
elif mode == "set":
    name, index, value = sys.argv[4], int(sys.argv[5]), float(sys.argv[6])
    entry = header[name]
    begin = entry["data_offsets"][0]
    body = bytearray(body)
    if entry["dtype"] == "F32":
        body[begin + 4 * index : begin + 4 * index + 4] = struct.pack("<f", value)
    elif entry["dtype"] == "F16":
        body[begin + 2 * index : begin + 2 * index + 2] = struct.pack("<e", value)
    else:  # BF16: the high half of the f32 (NaN and inf are exact)
        bits = struct.pack("<f", value)[2:]
        body[begin + 2 * index : begin + 2 * index + 2] = bits
    out = pack(header) + bytes(body)
elif mode in ("extra", "merge"):
    tensors = {}
    for h, b in [(header, body)] + (
        [] if mode == "extra" else [read(sys.argv[4])]
    ):
        for k, e in h.items():
            if k != "__metadata__":
                tensors[k] = (e, b[e["data_offsets"][0] : e["data_offsets"][1]])
    if mode == "extra":
        tensors[sys.argv[4]] = tensors[first]
    new_header, new_body = {}, b""
    for k in sorted(tensors):
        e, b = tensors[k]
        new_header[k] = {"dtype": e["dtype"], "shape": e["shape"],
                         "data_offsets": [len(new_body), len(new_body) + len(b)]}
        new_body += b
    out = pack(new_header) + new_body
else:
    sys.exit("unknown mode " + mode)
open(target, "wb").write(out)
