# -*- Python -*-
# Lit configuration of the attn regression suite.
import os

import lit.formats
import lit.util
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "attn"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test", ".yaml"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.attn_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "roundtrip.test.sh", "specs.test.sh",
                   "Inputs", "unittests", "make-npy.py", "check-npy.py", "max-rss.py", "aot-main.c", "compare-npy.py",
                   "make-matrix-npy.py", "consumer.test.mlir"]

config.substitutions.append(("%attn_src_root", config.attn_src_root))
config.substitutions.append(("%attn_obj_root", config.attn_obj_root))
config.substitutions.append(("%llvm_tools_dir", config.llvm_tools_dir))
# C programs that link attn's libraries need the sanitizer runtimes in the
# sanitizer build (scripts/sanitize.sh).
config.substitutions.append(
    ("%sanitize_flags", "-fsanitize=address,undefined" if config.attn_sanitize else ""))
if config.attn_sanitize:
    config.available_features.add("sanitize")
# The examples' full-size --check (N up to 4096 against the f64 reference)
# takes minutes each under ASan: the sanitizer build compiles them and runs
# the same kernels and readers at test sizes in e2e/ instead.
config.substitutions.append(
    ("%examples_mode", "compile" if config.attn_sanitize else "check"))

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.attn_tools_dir, append_path=True)

tool_dirs = [config.attn_tools_dir, config.llvm_tools_dir]
tools = ["attn-opt", "attn-run", "attn-compile", "AttnUnitTests",
         "attn-fuzz-spec", "attn-fuzz-ir", "attn-fuzz-npy",
         "attn-fuzz-safetensors", "attn-fuzz-capi"]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# Hardware features: tests that need them say `REQUIRES: avx512` (or vulkan,
# cuda) and are reported UNSUPPORTED elsewhere, so CI without them stays
# green and says what it skipped.
def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()

if "avx512f" in _cpu_flags():
    config.available_features.add("avx512")
# AMX tiles with bf16 products (Sapphire Rapids and later): attn-run's bf16
# kernels use them.
def _amx_permitted():
    # Linux grants AMX tile state on request (arch_prctl
    # ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), as attnrt::enableAmxTiles
    # asks; kernels before 5.16 refuse.
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.syscall(158, 0x1023, 18) == 0  # SYS_arch_prctl on x86-64
    except (OSError, AttributeError):
        return False

if {"amx_tile", "amx_bf16"} <= _cpu_flags() and _amx_permitted():
    config.available_features.add("amx")
# vdpbf16ps (Cooper Lake, Sapphire Rapids, Zen 4 and later).
if "avx512_bf16" in _cpu_flags():
    config.available_features.add("avx512bf16")
if os.path.exists("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json") or \
        lit.util.which("vulkaninfo"):
    config.available_features.add("vulkan")
if lit.util.which("spirv-val"):
    config.available_features.add("spirv-tools")
_cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
if os.path.exists(os.path.join(_cuda, "bin", "ptxas")):
    config.available_features.add("cuda")
    config.substitutions.append(("%cuda_home", _cuda))
# A CUDA driver (an NVIDIA GPU): attn-run --device=cuda runs its kernels.
try:
    import ctypes
    _libcuda = ctypes.CDLL("libcuda.so.1")
    config.available_features.add("cuda-driver")
    # A Hopper GPU (compute capability 9.x) runs sm_90a's warpgroup kernel.
    _device, _major = ctypes.c_int(), ctypes.c_int()
    if (_libcuda.cuInit(0) == 0 and
            _libcuda.cuDeviceGet(ctypes.byref(_device), 0) == 0 and
            _libcuda.cuDeviceGetAttribute(ctypes.byref(_major), 75,
                                          _device) == 0 and
            _major.value == 9):
        config.available_features.add("cuda-sm90a")
except OSError:
    pass
# MPI (Debian's Open MPI): the communicator and distributed tests run under
# mpirun on this machine alone (plm isolated: no ssh needed), oversubscribed,
# as root where CI is. Only when the build found MPI (the test exists).
if lit.util.which("mpirun") and os.path.exists(
        os.path.join(config.attn_tools_dir, "AttnCommunicatorTest")):
    config.available_features.add("mpi")
    config.substitutions.append(
        ("%mpirun", "mpirun --oversubscribe --allow-run-as-root "
                    "--mca plm isolated"))
