#!/usr/bin/env bash
# The CPU attention benchmark in one run: attn vs. unfused OpenBLAS
# (attn-bench), then PyTorch's scaled_dot_product_attention on the same
# shapes and threads, joined into one table. PyTorch comes from PyPI into
# bench/.venv (created on first use; BENCH_NO_TORCH=1 skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=${SIZES:-512,1024,2048,4096,8192}
threads=${THREADS:-$(nproc)}
out=${OUT:-bench}
build/bin/attn-bench --sizes="$sizes" --num-threads="$threads" --repeat=5 \
  --csv="$out/results-cpu.csv" --svg="$out/results-cpu.svg" | tee "$out/results-cpu.txt"
torch_csv=""
if [ -z "${BENCH_NO_TORCH:-}" ]; then
  if [ ! -x bench/.venv/bin/python ]; then
    python3 -m venv bench/.venv
    bench/.venv/bin/pip install -q torch numpy
  fi
  bench/.venv/bin/python bench/torch_sdpa.py --sizes="$sizes" --threads="$threads" \
    --csv="$out/results-torch.csv" | tee -a "$out/results-cpu.txt"
  torch_csv="$out/results-torch.csv"
fi
python3 bench/report.py "$out/results-cpu.csv" $torch_csv | tee "$out/results-table.md"
