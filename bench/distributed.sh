#!/usr/bin/env bash
# Context-parallel attention on 1, 2 and 4 ranks of this machine (Open MPI,
# loopback): time, bytes sent and K/V held per rank next to the model of
# docs/Distributed.md. Each configuration runs on one rank first; its
# attention rate is the model's compute rate for the runs that follow.
# A 2-core machine gives no speed-up past 2 ranks (and that is not the
# point): the figures check the volumes and the model.
#   bench/distributed.sh [build dir] > bench/results-distributed.txt
set -euo pipefail
build=${1:-build}
bench="$build/bin/attn-cp-bench"
mpi=(mpirun --oversubscribe --allow-run-as-root --mca plm isolated)
echo "# $(lscpu | grep 'Model name' | sed 's/ \+/ /g'), $(nproc) cores"
run() { # ranks, then attn-cp-bench options
  local ranks=$1; shift
  "${mpi[@]}" -np "$ranks" "$bench" "$@"
}
single_gflops() { # options: the one-rank run's attention GFLOP/s
  run 1 "$@" | awk -F, '$1 !~ /^#|scheme/ {print $14}'
}
config() { # label, then options
  local label=$1; shift
  echo "## $label"
  local gflops
  gflops=$(single_gflops "$@")
  for ranks in 1 2 4; do
    run "$ranks" "$@" --single-gflops="$gflops"
  done
}
config "dense, ring" --tokens=8192 --heads=8 --pattern=dense --scheme=ring
config "dense, Ulysses" --tokens=8192 --heads=8 --pattern=dense --scheme=ulysses
config "causal, ring (contiguous: unbalanced)" --tokens=8192 --heads=8 --pattern=causal --scheme=ring
config "causal, zigzag ring" --tokens=8192 --heads=8 --pattern=causal --scheme=zigzag
config "sliding window 512, ring" --tokens=16384 --heads=8 --pattern=window:512 --scheme=ring
# Memory: one long causal sequence, one call per rank count (8 ranks too:
# the ring holds its own block and two arriving ones, 3 N / P).
echo "## memory: causal N = 65536, zigzag ring, one call"
memory=(--tokens=65536 --heads=2 --pattern=causal --scheme=zigzag --repeat=1)
gflops=$(single_gflops "${memory[@]}")
for ranks in 1 2 4 8; do
  run "$ranks" "${memory[@]}" --single-gflops="$gflops"
done
