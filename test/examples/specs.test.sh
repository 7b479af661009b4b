#!/usr/bin/env bash
# attn-compile --emit=mlir on each example spec, then attn-opt re-verifies,
# and attn-run --check runs it against the f64 reference.
set -eu
examples=$1
work=$2
mode=${3:-check} # check, or compile only (the sanitizer build: see lit.cfg.py)
mkdir -p "$work"
count=0
for spec in "$examples"/*.yaml; do
  name=$(basename "$spec" .yaml)
  # Layer specs run with attn-run (test/layers/).
  if grep -q '^layer:' "$spec"; then continue; fi
  attn-compile "$spec" --emit=mlir -o "$work/$name.mlir"
  attn-opt "$work/$name.mlir" > /dev/null
  # Each example passes its own --check at the default tolerance (1e-5).
  if [ "$mode" = check ]; then
    attn-run "$spec" --check > "$work/$name.check"
    grep -q ': PASS$' "$work/$name.check" || { cat "$work/$name.check"; exit 1; }
  fi
  count=$((count + 1))
done
[ "$count" -ge 3 ] || { echo "only $count specs found in $examples"; exit 1; }
