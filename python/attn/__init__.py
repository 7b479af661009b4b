"""attn from Python: attention compiled by attn's MLIR compiler.

    import attn
    o = attn.scaled_dot_product_attention(q, k, v, is_causal=True)
    o = attn.flex_attention(q, k, v, score_mod=alibi, block_mask=mask)
    f = attn.compile("examples/linformer.yaml")
    with attn.replace_sdpa():
        model(**inputs)

Entry points take NumPy arrays and CPU PyTorch tensors (float32, float16,
bfloat16) without copying them; kernels are compiled on first use by the
attn-compile of the build the package was made against and cached in
$ATTN_CACHE_DIR (default ~/.cache/attn). ATTN_LOG_COMPILE=1 reports each
kernel's compile time or cache hit. The package imports with NumPy alone;
replace_sdpa and the torch.library ops need torch.
"""

import os as _os

# attn's kernels run on LLVM's OpenMP runtime, whose threads spin for
# KMP_BLOCKTIME (200 ms by default) after each kernel. Between PyTorch
# operations (replace_sdpa in a model's forward) that spinning takes the
# cores from PyTorch's own threads: a BERT-base forward ran 1.5x slower.
# 1 ms keeps them warm across back-to-back calls. Set before the first
# kernel loads the runtime; a value in the environment wins.
_os.environ.setdefault("KMP_BLOCKTIME", "1")

from ._compiler import CompileError, DeviceArray, Kernel, cache_dir, clear_memory_cache
from ._trace import TraceError
from .compiled import CompiledFunction, compile
from .flex import BlockMask, create_block_mask, flex_attention, traced_ir
from .functional import scaled_dot_product_attention
from .models import TransformerStack, UnsupportedModel

__all__ = ["BlockMask", "CompileError", "CompiledFunction", "DeviceArray", "Kernel", "TraceError",
           "cache_dir", "clear_memory_cache", "compile", "create_block_mask",
           "flex_attention", "replace_sdpa", "scaled_dot_product_attention", "traced_ir",
           "TransformerStack", "UnsupportedModel"]


def __getattr__(name):
    # torch is imported only when its integration is asked for.
    if name == "replace_sdpa":
        from .torch_integration import replace_sdpa
        return replace_sdpa
    raise AttributeError(f"module 'attn' has no attribute {name!r}")
