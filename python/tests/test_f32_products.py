"""f32 attention on CUDA's tensor cores from Python: which products a
compile asks for (torch.get_float32_matmul_precision(), or attn.compile's
f32_products), and that the PTX has them. Compiles only: no GPU needed."""

import pytest
import torch

import attn
from attn import _tensors as T

IR = """
func.func @f32_d64(%q: tensor<1x2x70x64xf32>, %k: tensor<1x2x70x64xf32>,
                   %v: tensor<1x2x70x64xf32>) -> tensor<1x2x70x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x2x70x64xf32>, tensor<1x2x70x64xf32>, tensor<1x2x70x64xf32>)
      -> tensor<1x2x70x64xf32>
  return %o : tensor<1x2x70x64xf32>
}
"""
TF32_MMA = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"


@pytest.fixture
def precision():
    saved = torch.get_float32_matmul_precision()
    yield torch.set_float32_matmul_precision
    torch.set_float32_matmul_precision(saved)


def test_products_follow_torchs_matmul_precision(precision):
    for setting, flags in (("highest", ()), ("high", ("--gpu-3xtf32",)),
                           ("medium", ("--gpu-tf32",))):
        precision(setting)
        assert T.f32_products("cuda-sm90", "float32") == flags
        # Only f32 attention on CUDA targets has tensor-core f32 products.
        assert T.f32_products("cuda-sm90", "float16") == ()
        assert T.f32_products("vulkan", "float32") == ()
    # An explicit request wins over torch's setting.
    assert T.f32_products("cuda-sm80", "float32", "exact") == ()
    with pytest.raises(ValueError, match="f32_products must be one of"):
        T.f32_products("cuda-sm80", "float32", "fp8")


def test_compiled_ptx_has_the_products_asked_for(precision):
    precision("highest")
    counts = {}
    for products in ("exact", "tf32", "3xtf32"):
        f = attn.compile(IR, device="cuda-sm80", f32_products=products)
        with open(f.kernel.path) as ptx:
            counts[products] = ptx.read().count(TF32_MMA)
    assert counts["exact"] == 0
    assert counts["tf32"] > 0
    assert counts["3xtf32"] == 3 * counts["tf32"]  # three products per mma
    # None follows torch: "medium" is TF32.
    precision("medium")
    f = attn.compile(IR, device="cuda-sm80")
    with open(f.kernel.path) as ptx:
        assert ptx.read().count(TF32_MMA) == counts["tf32"]
