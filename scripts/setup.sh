#!/usr/bin/env bash
# Installs every Debian package attn needs, configures and builds it into
# build/, then runs the main job on an example. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

PACKAGES=(
  # LLVM/MLIR 22 and the tools the lit suite uses (FileCheck, lit, not).
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  # Compiler, linker and build tools.
  clang-22 lld-22 cmake ninja-build ccache
  # Sanitizer and libFuzzer runtimes (the fuzz targets, scripts/sanitize.sh).
  libclang-rt-22-dev
  # OpenMP runtime the compiled kernels run their parallel loops on.
  libomp-22-dev
  # Unit tests; OpenBLAS runs the layer runtime's matmuls and is the
  # benchmark baseline (bench/).
  libgtest-dev libopenblas-dev
  # FFTs of attn.fourier_mix (FNet), called by compiled kernels.
  libfftw3-dev
  # JSON headers of safetensors weights, read by the runtime (header-only).
  nlohmann-json3-dev
  # GPU kernels: Vulkan headers (the loader is opened at run time), the
  # loader itself, lavapipe (Mesa's Vulkan device on the CPU: the suite runs
  # every GPU kernel on it) and spirv-val (tests validate the SPIR-V).
  libvulkan-dev libvulkan1 mesa-vulkan-drivers spirv-tools
  # Distributed attention: Open MPI (libattn_mpi; tests run mpirun -np 2..4
  # on this machine).
  libopenmpi-dev openmpi-bin
  # The Python package (python/): a virtual environment, and the headers
  # its extension builds against.
  python3 python3-venv python3-dev
)
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
  "${PACKAGES[@]}" > /dev/null

LLVM_BIN=/usr/lib/llvm-22/bin
cmake -G Ninja -S . -B build \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER="$LLVM_BIN/clang" \
  -DCMAKE_CXX_COMPILER="$LLVM_BIN/clang++" \
  -DLLVM_USE_LINKER=lld \
  -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DLLVM_EXTERNAL_LIT="$LLVM_BIN/lit"
cmake --build build

# The main job: compile an example spec to a shared library and C header,
# then compile it in process, run it and check it against the reference.
echo "== attn-compile examples/causal_gqa.yaml"
mkdir -p build/examples
build/bin/attn-compile examples/causal_gqa.yaml --emit=so -o build/examples/libcausal_gqa.so
build/bin/attn-compile examples/causal_gqa.yaml --emit=header -o build/examples/causal_gqa.h
ls -l build/examples
echo "== attn-run examples/causal_gqa.yaml --check --repeat=5"
build/bin/attn-run examples/causal_gqa.yaml --check --repeat=5
echo "== attn-run examples/bert_encoder_layer.yaml (random weights) --check"
build/bin/attn-run examples/bert_encoder_layer.yaml --write-random-weights=build/examples/bert_layer.safetensors
build/bin/attn-run examples/bert_encoder_layer.yaml --weights build/examples/bert_layer.safetensors --length 128 --check --repeat=3

# The Python package (python/, docs/Python.md): a virtual environment at
# .venv with NumPy, PyTorch (PyPI's wheel, used on the CPU), transformers
# and pytest for the tests, and attn installed editable against build/.
echo "== Python: .venv with the attn package"
if [ ! -x .venv/bin/python ]; then /usr/bin/python3 -m venv .venv; fi
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q numpy torch transformers safetensors pytest \
  nanobind scikit-build-core
.venv/bin/pip install -q --no-build-isolation -e python
echo "== .venv/bin/python python/examples/quickstart.py"
.venv/bin/python python/examples/quickstart.py
