"""The f64 reference of paged-kv.test (standard library only): attention of
q [1, H, Lq, D] over the first LENGTH rows of a paged cache, the rows of
sequence 0 read through the page table (entries clamped to the pool), GQA
(query head h reads KV head h / (H / Hkv)), causal with the queries at the
end of the keys, scale 1/sqrt(D); prints max |out - ref| / max |ref| and
PASS when it is within TOLERANCE.

  paged-reference.py Q.npy K_POOL.npy V_POOL.npy TABLE.npy OUT.npy LENGTH TOLERANCE
                     [--window LEFT] [--f16]

--window LEFT keeps only the LEFT keys before each query's own
(#attn.window<left = LEFT, right = 0>); --f16 rounds Q, K and V to f16 first,
as attn-run does for f16 operands. A query that keeps no key has output 0
(docs/Dialect.md).
"""
import math
import struct
import sys


def read(path):
    blob = open(path, "rb").read()
    header_length = struct.unpack("<H", blob[8:10])[0]
    header = blob[10:10 + header_length].decode()
    shape = [int(d) for d in header.split("(")[1].split(")")[0].split(",") if d.strip()]
    code = "i" if "'<i4'" in header else "f"
    data = blob[10 + header_length:]
    return shape, struct.unpack("<%d%s" % (len(data) // 4, code), data)


(_, heads, lq, dim), q = read(sys.argv[1])
(pages, kv_heads, page_rows, _), k_pool = read(sys.argv[2])
_, v_pool = read(sys.argv[3])
_, table = read(sys.argv[4])
_, out = read(sys.argv[5])
length, tolerance = int(sys.argv[6]), float(sys.argv[7])
options = sys.argv[8:]
window = int(options[options.index("--window") + 1]) if "--window" in options else None


def to_f16(values):
    return struct.unpack("<%de" % len(values), struct.pack("<%de" % len(values), *values))


if "--f16" in options:
    q, k_pool, v_pool = to_f16(q), to_f16(k_pool), to_f16(v_pool)


def row(pool, head, j):
    page = min(max(table[j // page_rows], 0), pages - 1)
    at = ((page * kv_heads + head) * page_rows + j % page_rows) * dim
    return pool[at:at + dim]


worst, largest = 0.0, 0.0
for h in range(heads):
    g = h // (heads // kv_heads)
    keys = [row(k_pool, g, j) for j in range(length)]
    values = [row(v_pool, g, j) for j in range(length)]
    for i in range(lq):
        query = q[(h * lq + i) * dim:(h * lq + i + 1) * dim]
        last = length - lq + i  # bottom-right causal: keys up to this one
        start = 0 if window is None else max(last - window, 0)
        kept = range(start, last + 1)
        scores = [sum(a * b for a, b in zip(query, keys[j])) / math.sqrt(dim)
                  for j in kept]
        top = max(scores, default=0.0)
        weights = [math.exp(s - top) for s in scores]
        total = sum(weights)
        for c in range(dim):
            ref = (sum(w * values[j][c] for j, w in zip(kept, weights)) / total
                   if weights else 0.0)
            got = out[(h * lq + i) * dim + c]
            worst = max(worst, abs(got - ref)) if math.isfinite(got) else math.inf
            largest = max(largest, abs(ref))
error = worst / largest if largest else worst
print("paged reference: max |out - ref| / max |ref| = %.2e: %s"
      % (error, "PASS" if error <= tolerance else "FAIL"))
sys.exit(0 if error <= tolerance else 1)
