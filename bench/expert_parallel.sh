#!/usr/bin/env bash
# Expert parallelism on the CPU: one mixture-of-experts model (bench-moe-16: 16 experts of 512,
# top 2, 4 layers) on RANKS ranks, dist.expert_parallel = P for each P given, side by side in one
# run through `shardtune bench` (DPO, fp32, full recompute). Prints per P: the peak resident set
# of the rank that peaked highest (host VmHWM: the runtime, the model states, the gathered units
# and their gradient buffers, the activations), the step time, and each against P = 1. The model
# states are the same at every P (every unit stays sharded over all ranks); what P removes is
# each rank's gather of the other ranks' experts and their gradient buffers.
# Usage: bench/expert_parallel.sh BUILD_DIR [ranks=4] [seq=256] [steps=3] [-- extra bench args]
# PARTS="1 2 4" by default. (docs/performance.md, "Expert parallelism")
set -euo pipefail
build=${1:?usage: bench/expert_parallel.sh BUILD_DIR [ranks] [seq] [steps] [-- bench args]}
ranks=${2:-4} seq=${3:-256} steps=${4:-3}
shift $(($# < 4 ? $# : 4))
[ "${1:-}" = -- ] && shift
work=${ST_BENCH_WORK:-/tmp/shardtune-experts}
# shellcheck source=bench/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
table="" base_peak="" base_time=""
for parts in ${PARTS:-1 2 4}; do
  out=$(mpirun --allow-run-as-root --oversubscribe -np "$ranks" "$build/app/shardtune" bench --preset bench-moe-16 \
    --stage dpo --seq "$seq" --micro-batch 2 --steps "$steps" --warmup 1 --phase-times false \
    --work "$work/p$parts" --dist.expert_parallel="$parts" --train.recompute=full "$@" 2>&1) || { echo "$out"; exit 1; }
  grep -E '^(bench:|  )' <<<"$out"
  peak=$(figure "peak memory" 1 "$out") time=$(figure "step time" 1 "$out")
  [ -z "$base_peak" ] && base_peak=$peak base_time=$time
  table+=$(awk -v p="$parts" -v m="$peak" -v bm="$base_peak" -v t="$time" -v bt="$base_time" \
    'BEGIN { printf "\n| %d | %.3f GiB | %.2fx | %.3f s | %.2fx |", p, m, m / bm, t, t / bt }')
done
echo "expert parallel: bench-moe-16 dpo on $ranks ranks, rows of $seq tokens, micro-batch 2 pairs, median of $steps steps"
echo "| P | peak RSS (highest rank) | vs P=1 | step time | vs P=1 |"
echo "|---|---|---|---|---|"
echo "${table#$'\n'}"
