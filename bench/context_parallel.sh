#!/usr/bin/env bash
# Context parallelism on long rows: one model and one row length, dist.context_parallel = C on
# C ranks for each C given, side by side in one run through `shardtune bench` (SFT, one row of
# SEQ tokens per micro-batch, full recompute, fp32 on the CPU). Prints per C: the engine's saved
# activations per rank (unit inputs kept from forward to backward), the peak resident set of the
# rank that peaked highest (host VmHWM: the runtime, the model states and the attention working
# set too), the step time, and each figure against C = 1.
# Usage: bench/context_parallel.sh BUILD_DIR [preset=debug] [seq=8192] [steps=2] [-- extra bench args]
# PARTS="1 2 4" by default. (docs/performance.md, "Context parallelism")
set -euo pipefail
build=${1:?usage: bench/context_parallel.sh BUILD_DIR [preset] [seq] [steps] [-- bench args]}
preset=${2:-debug} seq=${3:-8192} steps=${4:-2}
shift $(($# < 4 ? $# : 4))
[ "${1:-}" = -- ] && shift
work=${ST_BENCH_WORK:-/tmp/shardtune-context}
# shellcheck source=bench/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
table="" base_saved="" base_peak="" base_time=""
for parts in ${PARTS:-1 2 4}; do
  out=$(mpirun --allow-run-as-root --oversubscribe -np "$parts" "$build/app/shardtune" bench --preset "$preset" \
    --stage sft --seq "$seq" --micro-batch 1 --steps "$steps" --warmup 1 --phase-times false \
    --work "$work/c$parts" --dist.context_parallel="$parts" --train.recompute=full "$@" 2>&1) || { echo "$out"; exit 1; }
  grep -E '^(bench:|  )' <<<"$out"
  saved=$(awk '/^  saved activations/ {print $3}' <<<"$out") peak=$(figure "peak memory" 1 "$out")
  time=$(figure "step time" 1 "$out")
  [ -z "$base_saved" ] && base_saved=$saved base_peak=$peak base_time=$time
  table+=$(awk -v c="$parts" -v s="$saved" -v bs="$base_saved" -v p="$peak" -v bp="$base_peak" -v t="$time" -v bt="$base_time" \
    'BEGIN { printf "\n| %d | %.1f MiB | %.2fx | %.2f GiB | %.2fx | %.2f s | %.2fx |", c, s * 1024, s / bs, p, p / bp, t, t / bt }')
done
echo "context parallel: $preset sft, one row of $seq tokens per micro-batch, C ranks each, median of $steps steps"
echo "| C | saved activations per rank | vs C=1 | peak RSS (highest rank) | vs C=1 | step time | vs C=1 |"
echo "|---|---|---|---|---|---|---|"
echo "${table#$'\n'}"
