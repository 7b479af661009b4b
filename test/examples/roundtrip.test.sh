#!/usr/bin/env bash
# Round-trips each example through attn-opt twice and compares the prints.
set -eu
examples=$1
work=$2
mkdir -p "$work"
count=0
for file in "$examples"/*.mlir; do
  name=$(basename "$file" .mlir)
  attn-opt "$file" > "$work/$name.1.mlir"
  attn-opt "$work/$name.1.mlir" > "$work/$name.2.mlir"
  diff "$work/$name.1.mlir" "$work/$name.2.mlir"
  count=$((count + 1))
done
# Guard against an empty glob passing silently.
[ "$count" -ge 5 ] || { echo "only $count examples found in $examples"; exit 1; }
