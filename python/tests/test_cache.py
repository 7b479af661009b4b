"""The kernel cache: in memory within a process, on disk across processes."""

import json
import os
import subprocess
import sys

import numpy as np

import attn

SCRIPT = r"""
import json, time, numpy as np
start = time.perf_counter()
import attn
from attn import _compiler
q = np.ones((1, 2, 33, 16), np.float32)
out = attn.scaled_dot_product_attention(q, q, q, is_causal=True)
kernel = next(iter(_compiler._memory.values()))
print(json.dumps({"source": kernel.source, "seconds": kernel.compile_seconds,
                  "start": time.perf_counter() - start, "ok": bool(np.allclose(out, 1.0))}))
"""


def run(cache):
    env = dict(os.environ, ATTN_CACHE_DIR=str(cache))
    result = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                            text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_second_process_starts_without_compiling(tmp_path):
    first = run(tmp_path)
    second = run(tmp_path)
    assert first["source"] == "compiled" and first["seconds"] > 0
    assert second["source"] == "disk" and second["seconds"] == 0
    assert first["ok"] and second["ok"]
    assert any(name.endswith(".so") for name in os.listdir(tmp_path))
    # No half-written library is left behind.
    assert not any(".partial" in name for name in os.listdir(tmp_path))


def test_same_call_reuses_the_kernel_object():
    q = np.ones((1, 1, 9, 8), np.float32)
    from attn import _compiler
    call = attn._ir.AttentionCall((1, 1, 9, 8), (1, 1, 9, 8), (1, 1, 9, 8))
    a = _compiler.compile_source(call.module("same"))
    b = _compiler.compile_source(call.module("same"))
    assert a is b
    out = np.empty_like(q)
    a(q, q, q, out=out)
    assert np.allclose(out, 1.0)
