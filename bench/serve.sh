#!/usr/bin/env bash
# Continuous batching against serving one sequence at a time, and the
# paged KV cache against each sequence keeping its own rows, in one script
# (attn-run --serve, docs/Transformer.md "Serving"): the same trace of 32
# sequences (prompts uniform 1..128 tokens, outputs 1..64), all arriving
# at the start, replayed with at most 1 live sequence (each alone: its
# prompt, then one token per step) and with 32 live (decode tokens of
# every live sequence plus prompt chunks, at most 512 tokens per step),
# paged (the default) and with per-sequence rows (paged=0). Rounds alternate the configurations; quote the
# medians. Then a Poisson trace (8 arrivals/s) for latency percentiles.
#   bench/serve.sh [build dir] [rounds] > bench/results-serve.txt
set -euo pipefail
build=${1:-build}
rounds=${2:-3}
run="$build/bin/attn-run"
spec=bench/serve_decoder.yaml
weights=$(mktemp --suffix=.safetensors)
trap 'rm -f "$weights"' EXIT
echo "# $(lscpu | grep 'Model name' | sed 's/ \+/ /g'), $(nproc) cores"
"$run" "$spec" --write-random-weights="$weights" > /dev/null
trace=prompt=64,output=32,step=512
for round in $(seq "$rounds"); do
  for config in "1 1" "32 0" "32 1"; do
    set -- $config
    echo "## round $round, live=$1 paged=$2"
    "$run" "$spec" --weights "$weights" --seed 1 \
      --serve="32,$trace,live=$1,paged=$2" | grep -v 'vs decoding it alone'
  done
done
for paged in 0 1; do
  echo "## Poisson arrivals, 8/s, live=32 paged=$paged"
  "$run" "$spec" --weights "$weights" --seed 1 \
    --serve="32,$trace,live=32,rate=8,paged=$paged" |
    grep -v 'vs decoding it alone'
done
