#!/usr/bin/env python3
"""attn-run reproduces PyTorch's nn.TransformerEncoderLayer and
nn.TransformerDecoderLayer (docs/Transformer.md, "Bringing PyTorch weights").

    python scripts/torch_compat.py [--attn-run build/bin/attn-run]

For each case it builds the PyTorch layer with seeded weights (eval mode,
no grad), writes the weights to safetensors under attn's names and a layer
spec matching the layer's options, runs PyTorch and `attn-run --input ...
--output ...` on the same input, and compares: max |attn - torch| / max
|torch| must be <= 1e-4. Needs torch and numpy (e.g. bench/.venv); not
part of the CI suite, which has no PyTorch.

`export_encoder` / `export_decoder` are the recipe for your own weights.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch


def write_safetensors(path, tensors):
    """Writes {name: float32 array} as safetensors (no extra dependency)."""
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        data = np.ascontiguousarray(tensors[name], dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def _attention(prefix, mha, out):
    """nn.MultiheadAttention -> q/k/v/o projections (in_proj is [3d, d])."""
    d = mha.embed_dim
    w, b = mha.in_proj_weight.detach().numpy(), mha.in_proj_bias.detach().numpy()
    for i, name in enumerate(["q_proj", "k_proj", "v_proj"]):
        out[f"{prefix}{name}.weight"] = w[i * d:(i + 1) * d]
        out[f"{prefix}{name}.bias"] = b[i * d:(i + 1) * d]
    out[f"{prefix}o_proj.weight"] = mha.out_proj.weight.detach().numpy()
    out[f"{prefix}o_proj.bias"] = mha.out_proj.bias.detach().numpy()


def _common(prefix, layer, out, norms):
    for name in ["linear1", "linear2"] + norms:
        module = getattr(layer, name)
        out[f"{prefix}{name}.weight"] = module.weight.detach().numpy()
        out[f"{prefix}{name}.bias"] = module.bias.detach().numpy()


def export_encoder(layers, path):
    """A list of nn.TransformerEncoderLayer -> attn weights."""
    out = {}
    for i, layer in enumerate(layers):
        _attention(f"layers.{i}.self_attn.", layer.self_attn, out)
        _common(f"layers.{i}.", layer, out, ["norm1", "norm2"])
    write_safetensors(path, out)


def export_decoder(layers, path):
    """A list of nn.TransformerDecoderLayer -> attn weights."""
    out = {}
    for i, layer in enumerate(layers):
        _attention(f"layers.{i}.self_attn.", layer.self_attn, out)
        _attention(f"layers.{i}.cross_attn.", layer.multihead_attn, out)
        _common(f"layers.{i}.", layer, out, ["norm1", "norm2", "norm3"])
    write_safetensors(path, out)


def layer_spec(kind, d, heads, ffn, activation, norm_first, eps):
    return (f"name: torch_{kind}\nlayer:\n  type: {kind}\n  d_model: {d}\n"
            f"  heads: {heads}\n  ffn_hidden: {ffn}\n  activation: {activation}\n"
            f"  norm: layernorm\n  norm_position: {'pre' if norm_first else 'post'}\n"
            f"  norm_eps: {eps}\n")


def run_case(attn_run, tmp, kind, d, heads, ffn, activation, norm_first, length,
             memory_length, seed):
    torch.manual_seed(seed)
    cls = torch.nn.TransformerEncoderLayer if kind == "encoder" else torch.nn.TransformerDecoderLayer
    layer = cls(d, heads, ffn, dropout=0.1, activation=activation,
                batch_first=True, norm_first=norm_first).eval()
    x = torch.randn(1, length, d)
    name = f"{kind}_{activation}_{'pre' if norm_first else 'post'}"
    spec = os.path.join(tmp, name + ".yaml")
    with open(spec, "w") as f:
        f.write(layer_spec(kind, d, heads, ffn, activation, norm_first, layer.norm1.eps))
    weights = os.path.join(tmp, name + ".safetensors")
    args = [attn_run, spec, "--weights", weights, "--input", os.path.join(tmp, "x.npy"),
            "--output", os.path.join(tmp, "y.npy")]
    np.save(os.path.join(tmp, "x.npy"), x.numpy())
    with torch.inference_mode():
        if kind == "encoder":
            export_encoder([layer], weights)
            expected = layer(x)
        else:
            export_decoder([layer], weights)
            memory = torch.randn(1, memory_length, d)
            np.save(os.path.join(tmp, "m.npy"), memory.numpy())
            args += ["--memory", os.path.join(tmp, "m.npy")]
            mask = torch.nn.Transformer.generate_square_subsequent_mask(length)
            expected = layer(x, memory, tgt_mask=mask, tgt_is_causal=True)
    subprocess.run(args, check=True)
    got = np.load(os.path.join(tmp, "y.npy"))
    expected = expected.numpy()
    error = np.abs(got - expected).max() / np.abs(expected).max()
    ok = error <= 1e-4
    print(f"{name:24s} L={length:4d}  max |attn - torch| / max |torch| = {error:.2e}  "
          f"{'OK' if ok else 'MISMATCH'}")
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--attn-run", default="build/bin/attn-run")
    args = parser.parse_args()
    print(f"torch {torch.__version__}")
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for kind, activation, norm_first in [("encoder", "gelu", False),
                                             ("encoder", "relu", True),
                                             ("decoder", "gelu", True),
                                             ("decoder", "relu", False)]:
            ok &= run_case(args.attn_run, tmp, kind, 768, 12, 3072, activation,
                           norm_first, 97, 61, seed=len(kind) + norm_first)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
