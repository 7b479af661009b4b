"""Kernels from attn IR or specs: compiled once, cached in memory and on disk.

A kernel is the shared library `attn-compile --emit=so` makes of a module
(the same tool users run, so the Python package and the command line give
the same code). Libraries are kept under $ATTN_CACHE_DIR (default
~/.cache/attn), named by a hash of the source, the compiler binary and this
CPU, so a second process loads them without compiling.
"""

import atexit
import hashlib
import os
import re
import subprocess
import tempfile
import threading
import time

import numpy as np

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
        self.signature = self._read_signature()
        self.input_types, self.output_types = _parse_signature(self.signature)

    def _read_signature(self):
        return self._artifact.signature(self.function)

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


def compile_source(text, suffix=".mlir", function=None, extra_args=(), target="cpu"):
    """The Kernel of `text` (attn IR when suffix is .mlir, a spec when
    .yaml), compiled or taken from a cache. `target` is attn-compile's:
    cpu (this host), vulkan..., cuda-sm80 / cuda-sm90."""
    key = hashlib.sha256("\0".join(
        [text, suffix, " ".join(extra_args), target,
         _toolchain_identity()]).encode()).hexdigest()[:32]
    with _lock:
        kernel = _memory.get(key)
    if kernel is not None:
        return kernel
    if function is None:
        function = _function_name(text, suffix)
    directory = cache_dir()
    os.makedirs(directory, exist_ok=True)
    gpu = target != "cpu"
    extension = ".so" if not gpu else ".spv" if target.startswith("vulkan") else ".ptx"
    library = os.path.join(directory, key + extension)
    origin, seconds = "disk", 0.0
    if not os.path.exists(library):
        origin = "compiled"
        seconds = _run_compiler(text, suffix, library, extra_args, target)
    if gpu:
        artifact = _attn.GpuArtifact(library, library[:-len(extension)] + ".json")
        kernel = GpuKernel(artifact, function, text, origin, seconds, library)
    else:
        kernel = Kernel(_attn.Artifact(library), function, text, origin, seconds, library)
    if _log:
        print(f"attn: {function}: {origin}"
              + (f" in {seconds:.2f} s" if origin == "compiled" else "") + f" ({library})")
    with _lock:
        _memory.setdefault(key, kernel)
        return _memory[key]


def _run_compiler(text, suffix, library, extra_args, target="cpu"):
    """attn-compile into a temporary directory whose files are renamed into
    place (a GPU artifact's .json first, its code last), so processes
    sharing the cache never load a half-written artifact."""
    directory = os.path.dirname(library)
    name = os.path.basename(library)
    with tempfile.TemporaryDirectory(prefix="attn-") as work, \
            tempfile.TemporaryDirectory(prefix=".partial-", dir=directory) as partial:
        source = os.path.join(work, "kernel" + suffix)
        with open(source, "w") as f:
            f.write(text)
        output = os.path.join(partial, name)
        emit = ["--emit=so"] if target == "cpu" else [f"--target={target}"]
        start = time.perf_counter()
        result = subprocess.run([compiler_path(), source, *emit, "-o", output, *extra_args],
                                capture_output=True, text=True)
        if result.returncode != 0:
            message = result.stderr.strip().replace(source, "<attn source>")
            raise CompileError(message or "attn-compile failed")
        seconds = time.perf_counter() - start
        produced = sorted(os.listdir(partial), key=lambda f: f == name)
        for f in produced:
            os.replace(os.path.join(partial, f), os.path.join(directory, f))
        return seconds


class DeviceArray:
    """An array in a GPU kernel's device memory, kept there between calls:
    pass it as an input or an output of the kernel's calls and nothing is
    copied between host and device. Made by `to_device` / `empty_device`
    of a kernel compiled for a GPU (`attn.compile(..., device="vulkan")`);
    `to_host()` copies it back (NumPy, or a CPU tensor when it came from
    torch), `write(x)` copies a host array of its shape and dtype in."""

    def __init__(self, buffer, like):
        self._buffer = buffer
        self._like = like  # an empty host array of the shape and dtype
        self.shape = tuple(like.shape)
        self.dtype = like.dtype

    @property
    def nbytes(self):
        return self._buffer.nbytes

    def write(self, x):
        if tuple(x.shape) != self.shape or x.dtype != self.dtype:
            raise ValueError(f"write: got {tuple(x.shape)} {x.dtype}, the device array is "
                             f"{self.shape} {self.dtype}")
        self._buffer.write(x if not hasattr(x, "contiguous") else x.detach().contiguous())

    def to_host(self):
        host = self._like.clone() if hasattr(self._like, "clone") else self._like.copy()
        self._buffer.read(host)
        return host

    def __repr__(self):
        return f"<attn.DeviceArray {self.shape} {self.dtype}>"


class GpuKernel(Kernel):
    """A GPU artifact's function. Operands may be host arrays (copied to the
    device and results back), DeviceArrays (used in place) or, for a CUDA
    artifact, CUDA tensors (borrowed in place)."""

    def _read_signature(self):
        return None  # GPU artifacts export launch descriptors instead

    @property
    def device(self):
        return self._artifact.device()

    def to_device(self, x):
        """A DeviceArray holding a copy of the host array `x`."""
        array = DeviceArray(self._artifact.allocate(x.nbytes), _empty_host_like(x))
        array.write(x)
        return array

    def empty_device(self, shape, dtype="float32"):
        """A zero-filled DeviceArray of `shape` and `dtype` (a NumPy or torch
        dtype; to_host() answers in that library)."""
        like = _empty_host(tuple(shape), dtype)
        return DeviceArray(self._artifact.allocate(like.nbytes), like)

    def __call__(self, *inputs, out):
        outputs = list(out) if isinstance(out, (list, tuple)) else [out]
        unwrap = [x._buffer if isinstance(x, DeviceArray) else x for x in inputs]
        self._artifact.call(self.function, unwrap,
                            [x._buffer if isinstance(x, DeviceArray) else x for x in outputs])
        return out


def _empty_host_like(x):
    if hasattr(x, "detach"):  # torch
        import torch
        return torch.empty(tuple(x.shape), dtype=x.dtype)
    return np.empty(x.shape, dtype=x.dtype)


def _empty_host(shape, dtype):
    if type(dtype).__module__.startswith("torch"):
        import torch
        return torch.zeros(shape, dtype=dtype)
    return np.zeros(shape, dtype=dtype)


_forget_hooks = []  # other modules' caches of kernels


def clear_memory_cache():
    """Forgets the kernels of this process (the disk cache stays)."""
    with _lock:
        _memory.clear()
    for forget in _forget_hooks:
        forget()


# The caches hold extension objects; dropping them before the interpreter
# tears the extension down keeps nanobind's leak check quiet.
atexit.register(clear_memory_cache)
