"""attn.compile: specs and attn IR of several families as Python callables,
checked against plain float64 NumPy."""

import numpy as np
import pytest

import attn
from reference import attention_f64

TOL = 1e-5  # f32 kernels against f64 math on O(1) outputs (see test_sdpa.py)


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_spec_text_causal_gqa():
    f = attn.compile("""
name: py_causal_gqa
attention:
  q_heads: 4
  kv_heads: 2
  q_len: 37
  kv_len: 37
  head_dim: 40
  pattern: causal
""")
    assert f.name == "py_causal_gqa"
    assert f.signature.startswith("f32[1,4,37,40] f32[1,2,37,40]")
    q, k, v = rand(1, 4, 37, 40), rand(1, 2, 37, 40, seed=1), rand(1, 2, 37, 40, seed=2)
    out = f(q, k, v)
    ref = attention_f64(q, k, v, keep=np.tril(np.ones((37, 37), dtype=bool)))
    assert np.abs(out - ref).max() < TOL


def test_linformer_spec():
    f = attn.compile("""
name: py_linformer
attention:
  kind: linformer
  q_heads: 2
  q_len: 64
  head_dim: 32
  rank: 16
""")
    q, k, v = (rand(1, 2, 64, 32, seed=s) for s in range(3))
    e, fp = rand(16, 64, seed=3) * 0.1, rand(16, 64, seed=4) * 0.1
    out = f(q, k, v, e, fp)
    kp = np.einsum("tj,bhjd->bhtd", e.astype(np.float64), k)
    vp = np.einsum("tj,bhjd->bhtd", fp.astype(np.float64), v)
    ref = attention_f64(q, kp, vp)
    assert np.abs(out - ref).max() < TOL


def test_fourier_mix_mlir():
    f = attn.compile("""func.func @fnet(%x: tensor<2x16x8xf32>) -> tensor<2x16x8xf32> {
  %y = attn.fourier_mix %x : tensor<2x16x8xf32> -> tensor<2x16x8xf32>
  return %y : tensor<2x16x8xf32>
}
""")
    x = rand(2, 16, 8)
    ref = np.real(np.fft.fft2(x.astype(np.float64), axes=(1, 2)))
    # FFTW in f32 over 128 points: ~1e-6 relative to |y| ~ 10.
    assert np.abs(f(x) - ref).max() < 1e-4


def test_dynamic_sizes_follow_the_inputs():
    f = attn.compile("""func.func @dyn(%q: tensor<?x2x?x32xf32>, %k: tensor<?x2x?x32xf32>,
                %v: tensor<?x2x?x32xf32>) -> tensor<?x2x?x32xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<?x2x?x32xf32>, tensor<?x2x?x32xf32>, tensor<?x2x?x32xf32>)
      -> tensor<?x2x?x32xf32>
  return %o : tensor<?x2x?x32xf32>
}
""")
    for length in (5, 77):
        q, k, v = (rand(1, 2, length, 32, seed=s) for s in range(3))
        out = f(q, k, v)
        assert out.shape == (1, 2, length, 32)
        ref = attention_f64(q, k, v, keep=np.tril(np.ones((length, length), dtype=bool)))
        assert np.abs(out - ref).max() < TOL


def test_example_file(tmp_path):
    import os
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    f = attn.compile(os.path.join(root, "examples", "causal_gqa.yaml"))
    assert f.name == "causal_gqa"
    assert "->" in f.signature
