#!/usr/bin/env bash
# Continuous batching against serving one sequence at a time, in one
# script (attn-run --serve, docs/Transformer.md "Serving"): the same trace
# of 32 sequences (prompts uniform 1..128 tokens, outputs 1..64), all
# arriving at the start, replayed with at most 1 live sequence (each
# sequence alone: its prompt, then one token per step) and with 8 and 32
# live (decode tokens of every live sequence plus prompt chunks, at most
# 512 tokens per step). Rounds alternate the configurations; quote the
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
trace=(--serve 32 --prompt-mean 64 --output-mean 32 --step-tokens 512 --seed 1)
for round in $(seq "$rounds"); do
  for live in 1 8 32; do
    echo "## round $round, --max-live $live"
    "$run" "$spec" --weights "$weights" "${trace[@]}" --max-live "$live" |
      grep -v 'vs decoding it alone'
  done
done
echo "## Poisson arrivals, 8/s, --max-live 32"
"$run" "$spec" --weights "$weights" "${trace[@]}" --max-live 32 \
  --arrival-rate 8 | grep -v 'vs decoding it alone'
