"""Kernels from attn IR or specs: compiled once, cached in memory and on disk.

A kernel is the shared library `attn-compile --emit=so` makes of a module
(the same tool users run, so the Python package and the command line give
the same code). Libraries are kept under $ATTN_CACHE_DIR (default
~/.cache/attn), named by a hash of the source, the compiler binary and this
CPU, so a second process loads them without compiling.
"""

import hashlib
import os
import re
import subprocess
import tempfile
import threading
import time

from . import _attn

try:
    from ._build_config import BUILD_DIR as _CONFIGURED_BUILD_DIR
except ImportError:  # a source tree without an installed package
    _CONFIGURED_BUILD_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "build")


class CompileError(ValueError):
    """attn-compile refused the source; the message is its diagnostics
    (file:line:col: error: ...)."""


def build_dir():
    return os.path.abspath(os.environ.get("ATTN_BUILD_DIR", _CONFIGURED_BUILD_DIR))


def compiler_path():
    path = os.path.join(build_dir(), "bin", "attn-compile")
    if not os.path.exists(path):
        raise RuntimeError(f"attn-compile not found at {path}: build attn "
                           "(scripts/setup.sh) or set ATTN_BUILD_DIR")
    return path


def cache_dir():
    return os.environ.get("ATTN_CACHE_DIR",
                          os.path.join(os.path.expanduser("~"), ".cache", "attn"))


def _cpu_identity():
    """The CPU's model and flags: kernels are compiled for this host."""
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        return ""
    wanted = [line for line in text.splitlines()
              if line.startswith(("model name", "flags"))]
    return "\n".join(wanted[:2])


_IDENTITY = None


def _toolchain_identity():
    """What a cached library depends on besides its source."""
    global _IDENTITY
    if _IDENTITY is None:
        tool = compiler_path()
        st = os.stat(tool)
        _IDENTITY = f"{tool}:{st.st_size}:{st.st_mtime_ns}\n{_cpu_identity()}"
    return _IDENTITY


class Kernel:
    """A compiled function: `kernel(*inputs, out=...)` runs it in place.

    `signature` is the artifact's "f32[1,8,64,64] ... -> f32[...]";
    `source` where it came from: "compiled", "disk" (the cache directory)
    or "memory"; `compile_seconds` the time attn-compile took (0 from the
    disk cache)."""

    def __init__(self, artifact, function, source_text, origin, seconds, path):
        self._artifact = artifact
        self.function = function
        self.source_text = source_text
        self.source = origin
        self.compile_seconds = seconds
        self.path = path
        self.signature = artifact.signature(function)
        self.input_types, self.output_types = _parse_signature(self.signature)

    def __call__(self, *inputs, out):
        outputs = list(out) if isinstance(out, (list, tuple)) else [out]
        if all(type(x) is _Tensor for x in inputs) and all(type(x) is _Tensor for x in outputs):
            # torch tensors (dense: the front ends made them so) by address.
            self._artifact.call_buffers(self.function, [_buffer(x) for x in inputs],
                                        [_buffer(x) for x in outputs])
        else:
            self._artifact.call(self.function, list(inputs), outputs)
        return out

    def __repr__(self):
        return f"<attn.Kernel {self.function}: {self.signature}>"


try:
    import torch
    _Tensor = torch.Tensor
    _DTYPES = {torch.float32: 0, torch.int32: 1, torch.float16: 2, torch.bfloat16: 3,
               torch.bool: 4}
except ImportError:
    class _Tensor:  # never matches
        pass
    _DTYPES = {}


def _buffer(t):
    """(address, C API dtype, sizes) of a torch tensor; its dtype and layout
    are checked here since the extension takes the address as it is."""
    code = _DTYPES.get(t.dtype)
    if code is None or t.device.type != "cpu" or not t.is_contiguous():
        raise ValueError(f"a kernel operand must be a dense CPU tensor of float32, float16, "
                         f"bfloat16, int32 or bool, got {t.dtype} on {t.device}"
                         + ("" if t.is_contiguous() else ", not contiguous"))
    return (t.data_ptr(), code, tuple(t.shape))


def _parse_signature(signature):
    """([(element, sizes)...] inputs, [...] outputs): each size an int, a
    (input, dimension) pair it equals ("$a.d"), or None (unknown)."""
    if not signature:
        return [], []
    left, _, right = signature.partition("->")

    def size(text):
        if re.fullmatch(r"\d+", text):
            return int(text)
        tie = re.fullmatch(r"\$(\d+)\.(\d+)", text)
        return (int(tie.group(1)), int(tie.group(2))) if tie else None

    def operands(text):
        return [(element, [size(d) for d in dims.split(",")] if dims else [])
                for element, dims in re.findall(r"(\w+)\[([^\]]*)\]", text)]

    return operands(left), operands(right)


_memory = {}
_lock = threading.Lock()
_log = os.environ.get("ATTN_LOG_COMPILE", "") not in ("", "0")


def _function_name(text, suffix):
    if suffix == ".mlir":
        names = re.findall(r"func\.func\s+(?:public\s+)?@([A-Za-z_][\w$.]*)", text)
        private = set(re.findall(r"func\.func\s+private\s+@([A-Za-z_][\w$.]*)", text))
        names = [n for n in names if n not in private]
        if not names:
            raise CompileError("the module has no public func.func")
        return names[0]
    match = re.search(r"^name:\s*([A-Za-z_]\w*)", text, re.M)
    if not match:
        raise CompileError("the spec has no name: key")
    return match.group(1)


def compile_source(text, suffix=".mlir", function=None, extra_args=()):
    """The Kernel of `text` (attn IR when suffix is .mlir, a spec when
    .yaml), compiled or taken from a cache."""
    key = hashlib.sha256("\0".join(
        [text, suffix, " ".join(extra_args), _toolchain_identity()]).encode()).hexdigest()[:32]
    with _lock:
        kernel = _memory.get(key)
    if kernel is not None:
        return kernel
    if function is None:
        function = _function_name(text, suffix)
    directory = cache_dir()
    os.makedirs(directory, exist_ok=True)
    library = os.path.join(directory, f"{key}.so")
    origin, seconds = "disk", 0.0
    if not os.path.exists(library):
        origin = "compiled"
        seconds = _run_compiler(text, suffix, library, extra_args)
    kernel = Kernel(_attn.Artifact(library), function, text, origin, seconds, library)
    if _log:
        print(f"attn: {function}: {origin}"
              + (f" in {seconds:.2f} s" if origin == "compiled" else "") + f" ({library})")
    with _lock:
        _memory.setdefault(key, kernel)
        return _memory[key]


def _run_compiler(text, suffix, library, extra_args):
    """attn-compile into a temporary file renamed into place, so processes
    sharing the cache never load a half-written library."""
    directory = os.path.dirname(library)
    with tempfile.TemporaryDirectory(prefix="attn-") as work:
        source = os.path.join(work, "kernel" + suffix)
        with open(source, "w") as f:
            f.write(text)
        fd, partial = tempfile.mkstemp(suffix=".so.partial", dir=directory)
        os.close(fd)
        start = time.perf_counter()
        try:
            result = subprocess.run(
                [compiler_path(), source, "--emit=so", "-o", partial, *extra_args],
                capture_output=True, text=True)
            if result.returncode != 0:
                message = result.stderr.strip().replace(source, "<attn source>")
                raise CompileError(message or "attn-compile failed")
            os.replace(partial, library)
        finally:
            if os.path.exists(partial):
                os.remove(partial)
        return time.perf_counter() - start


def clear_memory_cache():
    """Forgets the kernels of this process (the disk cache stays)."""
    with _lock:
        _memory.clear()
