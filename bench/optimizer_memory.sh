#!/usr/bin/env bash
# Peak memory and step time of the FSDP step with each optimizer choice, side by side in one run:
# fp32 AdamW (the baseline), 8-bit AdamW, the step inside backward, and both; optim.grad_clip = 0
# in every row so they train the same. CPU, full sharding.
# Usage: bench/optimizer_memory.sh BUILD_DIR [preset=bench-100m] [ranks="1 2"] [steps=3] [pairs=4]
set -euo pipefail
build=${1:?usage: bench/optimizer_memory.sh BUILD_DIR [preset] [ranks] [steps] [pairs]}
preset=${2:-bench-100m}
ranks_list=${3:-1 2}
steps=${4:-3}
pairs=${5:-4}
bench="$build/bench/bench_fsdp_step"
mpirun_args=(--oversubscribe)
[ "$(id -u)" = 0 ] && mpirun_args+=(--allow-run-as-root)
printf '%-12s %-16s %5s %10s %12s %16s %18s\n' preset optimizer ranks step_s tokens/s "peak RSS/rank MB" "states/rank MB"
for ranks in $ranks_list; do
  for choice in "adamw 0" "adamw8bit 0" "adamw 1" "adamw8bit 1"; do
    read -r optimizer in_backward <<<"$choice"
    mpirun -np "$ranks" "${mpirun_args[@]}" "$bench" "$preset" fsdp "$steps" "$pairs" full "$optimizer" "$in_backward"
  done
done
