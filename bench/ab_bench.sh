#!/usr/bin/env bash
# Two builds of `shardtune bench` side by side on this machine, alternating runs so drift hits
# both: a baseline binary A (e.g. the commit before a change, built in a git worktree) and B,
# each with its own extra arguments. Prints step time, tokens/s and peak memory per run.
# Usage: bench/ab_bench.sh A_BIN B_BIN [rounds=2] -- [bench shape args] [-- B-only args ...]
# Example (docs/performance.md): bench/ab_bench.sh /tmp/old/build/app/shardtune build/app/shardtune 2 \
#   -- --preset bench-100m --seq 512 --micro-batch 2 --steps 6 --warmup 2 -- --train.recompute=full
set -uo pipefail
a=${1:?usage: bench/ab_bench.sh A_BIN B_BIN [rounds] -- [shape] [-- B-only args]} b=${2:?B_BIN}
rounds=${3:-2}
shift $(($# < 3 ? $# : 3))
[ "${1:-}" = -- ] && shift
shape=() b_only=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do shape+=("$1"); shift; done
[ "${1:-}" = -- ] && { shift; b_only=("$@"); }
work=${ST_BENCH_WORK:-/tmp/shardtune-ab}
for round in $(seq "$rounds"); do
  for side in A B; do
    if [ $side = A ]; then bin=$a extra=(); else bin=$b extra=("${b_only[@]}"); fi
    out=$(mpirun --allow-run-as-root --oversubscribe -np "${NP:-1}" "$bin" bench "${shape[@]}" \
      --work "$work/$side" "${extra[@]}" 2>&1 | grep -E '^  (step time|tokens/s|peak memory)' | tr -s ' ' | tr '\n' ';')
    echo "round $round $side ($bin ${extra[*]}):$out"
  done
done
