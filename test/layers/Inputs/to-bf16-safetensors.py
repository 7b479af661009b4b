"""Copies a safetensors file with every F32 tensor converted to BF16
(rounded to nearest even, as PyTorch's .to(torch.bfloat16) does).

  to-bf16-safetensors.py SOURCE TARGET
"""
import array
import json
import struct
import sys

source, target = sys.argv[1:3]
data = open(source, "rb").read()
(n,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8 : 8 + n])
body = data[8 + n :]

out_header, chunks, offset = {}, [], 0
for name in sorted(k for k in header if k != "__metadata__"):
    entry = dict(header[name])
    begin, end = entry["data_offsets"]
    raw = body[begin:end]
    if entry["dtype"] == "F32":
        words = array.array("I")
        words.frombytes(raw)
        halves = array.array("H")
        for x in words:
            if x & 0x7FFFFFFF > 0x7F800000:  # NaN stays a quiet NaN
                halves.append((x >> 16) | 0x40)
            else:
                halves.append(((x + 0x7FFF + ((x >> 16) & 1)) >> 16) & 0xFFFF)
        raw = halves.tobytes()
        entry["dtype"] = "BF16"
    entry["data_offsets"] = [offset, offset + len(raw)]
    offset += len(raw)
    out_header[name] = entry
    chunks.append(raw)
text = json.dumps(out_header).encode()
with open(target, "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))
