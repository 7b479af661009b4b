"""Writes a damaged copy of a safetensors file, one damage per mode:

  truncate       drop the last bytes of the data
  header-eof     a header length past the end of the file
  dtype          the first tensor's dtype becomes I64 (unsupported)
  offsets        the first tensor's byte range shrinks (shape disagrees)
  json           the header is not JSON
  short          a file of 5 bytes
"""
import json
import struct
import sys

mode, source, target = sys.argv[1:4]
data = open(source, "rb").read()
(n,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8 : 8 + n])
body = data[8 + n :]
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
else:
    sys.exit("unknown mode " + mode)
open(target, "wb").write(out)
