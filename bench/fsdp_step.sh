#!/usr/bin/env bash
# Step time and memory of the FSDP engine on 1, 2 and 4 ranks next to plain libtorch training
# of the same model, same global batch, in one run. Usage: bench/fsdp_step.sh BUILD_DIR
# [presets="debug bench-100m"] [steps=4] [pairs=8]
set -euo pipefail
build=${1:?usage: bench/fsdp_step.sh BUILD_DIR [presets] [steps] [pairs]}
presets=${2:-debug bench-100m}
steps=${3:-4}
pairs=${4:-8}
bench="$build/bench/bench_fsdp_step"
mpirun_args=(--oversubscribe)
[ "$(id -u)" = 0 ] && mpirun_args+=(--allow-run-as-root)
printf '%-12s %-16s %5s %10s %12s %16s %18s\n' preset mode ranks step_s tokens/s "peak RSS/rank MB" "states/rank MB"
for preset in $presets; do
  "$bench" "$preset" plain "$steps" "$pairs"
  for ranks in 1 2 4; do
    mpirun -np "$ranks" "${mpirun_args[@]}" "$bench" "$preset" fsdp "$steps" "$pairs" full
  done
done
