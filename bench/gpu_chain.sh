#!/usr/bin/env bash
# A GPU layer stack's self-attention as one chain on the device against the
# same stack with Q, K and V crossing to the host and back
# (--gpu-chains=false), in alternating rounds of one script: BERT-base
# (examples/bert_encoder_layer.yaml, random weights) at a few lengths,
# `attn-run --device=DEVICE --repeat 5` per run (a warm-up forward and 5
# timed), the median of each run's median, and the bytes each form moves
# between host and device per forward (products' and attention kernels'
# operands in and results out).
#
#   bench/gpu_chain.sh [DEVICE] [ROUNDS]     # DEVICE: vulkan (default) | cuda
#
# Then decoding: examples/decoder_layer_rope.yaml without its
# cross-attention, a prompt and 32 steps (`--decode-steps 32`), the median
# step's time (attn-run's "median": steps that compile a kernel left out),
# chained (the step's keys and values appended to the KV cache on the
# device) against --gpu-chains=false (Q, K and V to the host and back, the
# new rows copied to the device's cache).
#
# On lavapipe the "device" is this CPU and its memory the host's: the
# chain saves copies and host passes but runs the split and merge as
# llvmpipe shaders, so the ratio there says little of a discrete GPU,
# where the bytes that no longer cross PCIe are the point.
set -euo pipefail
cd "$(dirname "$0")/.."
device=${1:-vulkan}
rounds=${2:-3}
run=${ATTN_RUN:-build/bin/attn-run}  # a copy, to rebuild meanwhile
spec=examples/bert_encoder_layer.yaml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
$run $spec --write-random-weights="$tmp/bert.safetensors" --seed=3 >/dev/null
for length in 128 512; do
  for round in $(seq "$rounds"); do
    for chains in true false; do
      $run $spec --weights "$tmp/bert.safetensors" --length $length \
        --repeat 5 --device="$device" --gpu-chains=$chains >"$tmp/out"
      ms=$(sed -n 's/^time: median of [0-9]* runs \([0-9.]*\) ms.*/\1/p' "$tmp/out")
      echo "$length $chains $ms" >>"$tmp/times"
      # Products' bytes in and out, and the attention kernels' (host
      # operands copied in, results out), per forward.
      python3 - "$tmp/out" "$length $chains" >>"$tmp/bytes" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
inp, out = map(float, re.search(r"([0-9.]+) MiB of operands in and ([0-9.]+) MiB of results out", text).groups())
attention = float(re.search(r"operands and results: ([0-9.]+) MiB", text).group(1))
print("%s: %.2f MiB" % (sys.argv[2], (inp + out + attention) / 6))
PY
    done
  done
done
python3 - "$tmp/times" "$tmp/bytes" <<'PY'
import statistics, sys
times = {}
for line in open(sys.argv[1]):
    length, chains, ms = line.split()
    times.setdefault((int(length), chains), []).append(float(ms))
moved = {}
for line in open(sys.argv[2]):
    key, text = line.split(": ", 1)
    moved[tuple(key.split())] = text.strip()
print("length  chained ms  unchained ms  unchained/chained  host<->device per forward: chained | unchained")
for length in sorted({l for l, _ in times}):
    on = statistics.median(times[(length, "true")])
    off = statistics.median(times[(length, "false")])
    print("%6d  %10.1f  %12.1f  %17.2f  %s | %s" % (
        length, on, off, off / on, moved[(str(length), "true")],
        moved[(str(length), "false")]))
PY

# Decoding steps.
sed 's/^  cross_attention: true/  cross_attention: false/' \
  examples/decoder_layer_rope.yaml >"$tmp/decoder.yaml"
$run "$tmp/decoder.yaml" --write-random-weights="$tmp/dec.safetensors" \
  --seed=3 >/dev/null
for length in 128 512; do
  for round in $(seq "$rounds"); do
    for chains in true false; do
      $run "$tmp/decoder.yaml" --weights "$tmp/dec.safetensors" \
        --length $length --decode-steps 32 --device="$device" \
        --gpu-chains=$chains >"$tmp/out"
      ms=$(sed -n 's/.*ms per step, median \([0-9.]*\);.*/\1/p' "$tmp/out")
      echo "$length $chains $ms" >>"$tmp/steps"
    done
  done
done
python3 - "$tmp/steps" <<'PY'
import statistics, sys
times = {}
for line in open(sys.argv[1]):
    length, chains, ms = line.split()
    times.setdefault((int(length), chains), []).append(float(ms))
print("decoding: prompt + 32 steps, median step")
print("length  chained ms  unchained ms  unchained/chained")
for length in sorted({l for l, _ in times}):
    on = statistics.median(times[(length, "true")])
    off = statistics.median(times[(length, "false")])
    print("%6d  %10.2f  %12.2f  %17.2f" % (length, on, off, off / on))
PY
