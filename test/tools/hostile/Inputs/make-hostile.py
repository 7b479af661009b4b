"""Writes the minimized hostile inputs of hostile.test into a folder
(standard library only): specs that crashed, hung or aborted attn before
they were screened, and .npy / safetensors headers that overflowed sizes.
Each is named after what it tries."""
import json
import os
import struct
import sys

out = sys.argv[1]


def write(name, data):
    with open(os.path.join(out, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


GOOD = ("name: ok\nattention:\n  q_heads: 2\n  q_len: 16\n  head_dim: 8\n")

# Specs LLVM's YAML reader crashed on (null root, alias, anchor).
write("only-comment.yaml", "#\n")
write("alias.yaml", "*a\n")
write("anchor.yaml", "&a\n")
write("nested-alias.yaml", "name: x\nattention: *a\n")
write("nul.yaml", "\0name: x\n")
write("utf16.yaml", "name: x\n".encode("utf-16"))
write("binary.yaml", bytes(range(256)))
write("invalid-utf8.yaml", b"name: \xc3\x28\n")
# Nesting 100,000 deep (flow sequences, flow maps, unclosed, block).
write("deep-seq.yaml", "[" * 100000 + "]" * 100000)
write("deep-map.yaml", "a: " + "{b: " * 100000)
write("deep-block.yaml", "- " * 100000 + "x\n")
write("deep-or.yaml", GOOD + '  pattern: "' + "#attn.or<[" * 5000 + "#attn.causal" + "]>" * 5000 + '"\n')
write("deep-json.yaml", '{"name": "x", "layer": ' + "[" * 100000 + "\n")
# Sizes that overflow or cannot be held.
write("kv-len-zero.yaml", GOOD + "  kv_len: 0\n")
write("value-dim-zero.yaml", GOOD + "  value_dim: 0\n")
write("q-len-huge.yaml", GOOD.replace("q_len: 16", "q_len: 1099511627776"))
write("heads-len-overflow.yaml", GOOD.replace("q_heads: 2", "q_heads: 4294967296").replace("q_len: 16", "q_len: 4294967296"))
write("t5-buckets.yaml", GOOD.replace("q_heads: 2", "q_heads: 1") + '  mods: "[#attn.t5_bias<buckets = 1099511627776, max_distance = 2199023255552, bidirectional = true>]"\n')
write("softcap-pair.yaml", GOOD + '  mods: "[#attn.softcap<cap = 1.0e-30>, #attn.softcap<cap = 1.0e30>]"\n')
write("mods-comment.yaml", GOOD + '  mods: "[#attn.alibi<max_bias = 8.0>] //"\n')
LAYER = ("name: l\nlayer:\n  d_model: 32\n  heads: 4\n  ffn_hidden: 64\n")
write("layers-huge.yaml", LAYER + "  layers: 1000000000\n")
write("layer-head-dim.yaml", LAYER + "  head_dim: 4611686018427387904\n")
write("layer-relative.yaml", LAYER + "  positions: relative\n  relative_buckets: 1099511627776\n")
write("layer-mods-comment.yaml", LAYER + '  positions: alibi\n  attention:\n    mods: "[#attn.softcap<cap = 30.0>] //"\n')

# .npy headers whose shape overflows, and a mutated header.
def npy(name, shape, data):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % shape
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    write(name, b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data)

npy("npy-overflow.npy", "(2305843009213693952, 32)", b"\0" * 1024)
npy("npy-negative.npy", "(-1, 32)", b"\0" * 1024)
npy("npy-garbage-shape.npy", "(1, 1, 8, 16, ))))", b"\0" * 1024)
write("npy-short-header.npy", b"\x93NUMPY\x03\x00\xff\xff")

# Safetensors with a deeply nested JSON header and an overflowing shape.
deep = ("[" * 100000).encode()
write("deep.safetensors", struct.pack("<Q", len(deep)) + deep)
head = json.dumps({"w": {"dtype": "F32", "shape": [4611686018427387904, 4],
                         "data_offsets": [0, 16]}}).encode()
write("overflow.safetensors", struct.pack("<Q", len(head)) + head + b"\0" * 16)

# attn IR whose pattern nests 5,000 deep (MLIR's parser recurses per level).
n = 5000
t = "tensor<1x1x16x8xf32>"
write("deep-or.mlir",
      "func.func @f(%%q: %s) -> %s {\n  %%o = attn.attention %%q, %%q, %%q pattern(%s#attn.causal%s) : (%s, %s, %s) -> %s\n  return %%o : %s\n}\n"
      % (t, t, "#attn.or<[" * n, "]>" * n, t, t, t, t, t))

# A static causal length of 2^30: its tile schedule (2^24 query tiles, 2^47
# tiles) is not built; the kernel classifies tiles at run time instead.
write("long-causal.yaml", "name: long\nattention:\n  q_heads: 1\n  q_len: 1073741824\n  head_dim: 8\n  pattern: causal\n")

# Buffers of 687 GB: more than any machine here holds.
write("more-than-memory.yaml", "name: bigmem\nattention:\n  q_heads: 16\n  q_len: 268435456\n  head_dim: 8\n  pattern: causal\n")

# An f16 spec: the CPU target takes it (widened to f32 on load).
write("f16.yaml", GOOD.replace("name: ok", "name: half\ndtype: f16"))
