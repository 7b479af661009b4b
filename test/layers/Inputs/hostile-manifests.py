"""Writes C sources of libraries that hold nothing but a layer manifest
(`_attn_layer_manifest`): the manifest of a real layer artifact with one
hostile edit each, as a foreign or tampered artifact could carry.

  hostile-manifests.py REAL.so OUT_DIR

Writes OUT_DIR/<case>.c for each case below; `copy` keeps the manifest as
it is (its library has no kernels: loading works, the first call fails).
"""
import os
import re
import sys

real, out = sys.argv[1:3]
data = open(real, "rb").read()
start = data.index(b"activation=")
manifest = data[start : data.index(b"\0", start)].decode()


def entry(key, value):
    """The manifest with `key`'s line set to `value`."""
    return re.sub(r"(?m)^%s=.*$" % key, "%s=%s" % (key, value), manifest)


def first_linear(edit):
    """The manifest with its first product line's fields edited."""
    lines = manifest.split("\n")
    at = next(i for i, l in enumerate(lines) if l.startswith("linear="))
    fields = lines[at].split(" ")
    edit(fields)
    lines[at] = " ".join(fields)
    return "\n".join(lines)


def set_field(index, value):
    def edit(fields):
        fields[index] = value
    return edit


cases = {
    "copy": manifest,
    # A panel width no allocation can have (std::length_error, abort).
    "width-huge": first_linear(set_field(4, "2000000000000000000")),
    # A panel width that asks for terabytes.
    "width-2p40": first_linear(set_field(4, str(1 << 40))),
    # A product the layer does not have: its panels would be sized wrong.
    "foreign-product": first_linear(set_field(2, "41")),
    "rope-nan": entry("rope_base", "nan"),
    "norm-eps-inf": entry("norm_eps", "inf"),
    "kind-bogus": entry("attention_kind", "bogus"),
    "layers-huge": entry("layers", "1048576").replace(
        "shared_weights=0", "shared_weights=1"
    ),
    "kernel-batch": manifest.replace(
        "kernel=self_attention self -1", "kernel=self_attention self -7"
    ),
}
os.makedirs(out, exist_ok=True)
for name, text in cases.items():
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    with open(os.path.join(out, name + ".c"), "w") as f:
        f.write('const char _attn_layer_manifest[] = "%s";\n' % escaped)
