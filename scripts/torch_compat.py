#!/usr/bin/env python3
"""attn-run reproduces PyTorch's nn.TransformerEncoderLayer and
nn.TransformerDecoderLayer, and a Llama-style decoder layer written here in
plain PyTorch (LlamaLayer: RoPE, GQA, SwiGLU, RMSNorm; docs/Transformer.md,
"Bringing PyTorch weights").

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


class LlamaLayer(torch.nn.Module):
    """h = x + SA(RMSNorm1(x)), y = h + W2 (silu(Wg g) * W1 g), g = RMSNorm2(h):
    the pre-norm decoder layer of docs/Transformer.md without cross-attention,
    written independently of attn (PyTorch's own RMSNorm, SDPA, silu)."""

    def __init__(self, d, heads, kv_heads, ffn, eps=1e-5, base=10000.0,
                 export=False):
        super().__init__()
        self.heads, self.kv_heads, self.dim = heads, kv_heads, d // heads
        self.base, self.export = base, export
        linear = lambda i, o: torch.nn.Linear(i, o, bias=False)  # noqa: E731
        self.q_proj, self.o_proj = linear(d, d), linear(d, d)
        self.k_proj = linear(d, kv_heads * self.dim)
        self.v_proj = linear(d, kv_heads * self.dim)
        self.linear1, self.linear_gate = linear(d, ffn), linear(d, ffn)
        self.linear2 = linear(ffn, d)
        self.norm1 = torch.nn.RMSNorm(d, eps=eps)
        self.norm2 = torch.nn.RMSNorm(d, eps=eps)
        for norm in (self.norm1, self.norm2):  # not all ones: tests the scale
            torch.nn.init.uniform_(norm.weight, 0.5, 1.5)

    def rope(self, x, first=0):
        """NeoX / Llama "half" pairs (n, n + D/2), theta = t base^(-2n/D),
        positions t from `first`."""
        n = x.shape[-2]
        inv = self.base ** (-torch.arange(0, self.dim, 2, dtype=torch.float64) / self.dim)
        angles = torch.arange(first, first + n, dtype=torch.float64)[:, None] * inv[None, :]
        cos = torch.cat([angles.cos(), angles.cos()], -1).to(x.dtype)
        sin = torch.cat([angles.sin(), angles.sin()], -1).to(x.dtype)
        half = self.dim // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], -1)
        return x * cos + rotated * sin

    def forward(self, x, cache=None):
        """`cache`: a dict that keeps this layer's keys and values between
        calls (HF-style: appended with torch.cat); with keys already in it,
        x must be one token (decoding)."""
        b, n, d = x.shape
        h = self.norm1(x)
        split = lambda t, heads: t.view(b, n, heads, self.dim).transpose(1, 2)  # noqa: E731
        first = cache["k"].shape[-2] if cache and "k" in cache else 0
        q = self.rope(split(self.q_proj(h), self.heads), first)
        k = self.rope(split(self.k_proj(h), self.kv_heads), first)
        v = split(self.v_proj(h), self.kv_heads)
        if cache is not None:
            if first:
                assert n == 1, "decoding takes one token per call"
                k = torch.cat([cache["k"], k], -2)
                v = torch.cat([cache["v"], v], -2)
            cache["k"], cache["v"] = k, v
        if self.export:  # the exporter's SDPA has no enable_gqa
            group = self.heads // self.kv_heads
            k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
            a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            # One new token attends to every key: no mask.
            a = torch.nn.functional.scaled_dot_product_attention(
                q, k, v, is_causal=not first, enable_gqa=True)
        x = x + self.o_proj(a.transpose(1, 2).reshape(b, n, d))
        g = self.norm2(x)
        return x + self.linear2(torch.nn.functional.silu(self.linear_gate(g)) * self.linear1(g))


def llama_spec(d, heads, kv_heads, ffn):
    """The layer spec of LlamaLayer(d, heads, kv_heads, ffn)."""
    return ("name: llama_layer\nlayer:\n  type: decoder\n"
            f"  d_model: {d}\n  heads: {heads}\n"
            f"  kv_heads: {kv_heads}\n  ffn_hidden: {ffn}\n"
            "  activation: swiglu\n  norm: rmsnorm\n  norm_position: pre\n"
            "  norm_eps: 1.0e-5\n  bias: false\n  cross_attention: false\n"
            "  positions: rope\n  rope_base: 10000\n  rope_style: half\n")


def export_llama(layer, path):
    """A LlamaLayer -> attn weights (no biases, RMSNorm weights only)."""
    prefix = "layers.0."
    out = {}
    for name in ["q_proj", "k_proj", "v_proj", "o_proj"]:
        out[f"{prefix}self_attn.{name}.weight"] = getattr(layer, name).weight.detach().numpy()
    for name in ["linear1", "linear_gate", "linear2", "norm1", "norm2"]:
        out[f"{prefix}{name}.weight"] = getattr(layer, name).weight.detach().numpy()
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


def run_llama_case(attn_run, tmp, length, seed):
    """A Llama-style decoder layer (RoPE, GQA 8:2, SwiGLU, RMSNorm), causal."""
    torch.manual_seed(seed)
    shape = dict(d=256, heads=8, kv_heads=2, ffn=688)
    layer = LlamaLayer(**shape).eval()
    spec, weights = os.path.join(tmp, "llama.yaml"), os.path.join(tmp, "llama.safetensors")
    with open(spec, "w") as f:
        f.write(llama_spec(**shape))
    export_llama(layer, weights)
    x = torch.randn(1, length, shape["d"])
    np.save(os.path.join(tmp, "x.npy"), x.numpy())
    subprocess.run([attn_run, spec, "--weights", weights, "--input",
                    os.path.join(tmp, "x.npy"), "--output",
                    os.path.join(tmp, "y.npy")], check=True)
    with torch.inference_mode():
        expected = layer(x).numpy()
    got = np.load(os.path.join(tmp, "y.npy"))
    error = np.abs(got - expected).max() / np.abs(expected).max()
    ok = error <= 1e-4
    print(f"{'llama_swiglu_rope_gqa':24s} L={length:4d}  max |attn - torch| / max |torch| = "
          f"{error:.2e}  {'OK' if ok else 'MISMATCH'}")
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
        ok &= run_llama_case(args.attn_run, tmp, 97, seed=5)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
