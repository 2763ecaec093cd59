#!/usr/bin/env bash
# A CPU run under OpenBLAS's kernels side by side in one run: OpenBLAS's own pick (the baseline:
# SHARDTUNE_BLAS_GENERIC_CORE set empty, so shardtune keeps it), OpenBLAS's Haswell kernels
# (OPENBLAS_CORETYPE=Haswell, AVX2 + FMA), its SkylakeX kernels where the CPU has AVX-512,
# shardtune's own choice (nothing set: where OpenBLAS fell back to its generic Prescott kernels,
# shardtune restarts on the best the CPU runs; lib/util/blas_kernels.h), and that choice with
# OpenMP workers waiting passively (OMP_WAIT_POLICY=PASSIVE, which the tests' environment sets).
# Each row is `shardtune bench` (DPO, uniform rows, 1 rank) in a fresh process, since both
# variables are read as the libraries load. Prints tokens/s, each row's speed-up over the
# baseline and the OpenBLAS core each row ran.
# Usage: bench/cpu_environment.sh BUILD_DIR [preset=bench-100m] [seq=256] [micro_batch=2] [steps=3]
#        [-- extra bench args, e.g. --model.path=build/smollm2]
set -euo pipefail
build=${1:?usage: bench/cpu_environment.sh BUILD_DIR [preset] [seq] [micro_batch] [steps] [-- bench args]}
preset=${2:-bench-100m} seq=${3:-256} micro_batch=${4:-2} steps=${5:-3}
shift $(($# < 5 ? $# : 5))
[ "${1:-}" = -- ] && shift
work=${ST_BENCH_WORK:-/tmp/shardtune-cpu-environment}
# shellcheck source=bench/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo || { echo "this CPU has no AVX2 and FMA: no Haswell rows" >&2; exit 1; }
rows=("SHARDTUNE_BLAS_GENERIC_CORE=" "OPENBLAS_CORETYPE=Haswell")
grep -qw avx512f /proc/cpuinfo && grep -qw avx512bw /proc/cpuinfo && grep -qw avx512vl /proc/cpuinfo &&
  rows+=("OPENBLAS_CORETYPE=SkylakeX")
rows+=("shardtune's choice" "OMP_WAIT_POLICY=PASSIVE")
table="" base=""
for row in "${rows[@]}"; do
  settings=()
  [ "$row" != "shardtune's choice" ] && read -ra settings <<<"$row"
  out=$(env -u OMP_WAIT_POLICY -u OPENBLAS_CORETYPE -u SHARDTUNE_BLAS_GENERIC_CORE "${settings[@]}" \
    "$build/app/shardtune" bench --preset "$preset" --stage dpo --seq "$seq" --micro-batch "$micro_batch" \
    --steps "$steps" --warmup 1 --phase-times false --work "$work/${row//[ \']/_}" "$@" 2>&1) ||
    { echo "$out" | tail -20; exit 1; }
  tokens=$(figure "tokens/s" 0 "$out")
  core=$(env -u OPENBLAS_CORETYPE -u SHARDTUNE_BLAS_GENERIC_CORE "${settings[@]}" "$build/app/shardtune" --version |
    sed -nE 's/.*\(core ([A-Za-z0-9_]+).*/\1/p')
  [ "$row" = "SHARDTUNE_BLAS_GENERIC_CORE=" ] && row="OpenBLAS's own pick"
  [ "$row" = "OMP_WAIT_POLICY=PASSIVE" ] && row="shardtune's choice, OMP_WAIT_POLICY=PASSIVE"
  [ -z "$base" ] && base=$tokens
  table+=$(awk -v r="$row" -v c="$core" -v t="$tokens" -v b="$base" \
    'BEGIN { printf "\n| %-49s | %-11s | %9.1f | %6.2fx |", r, c, t, t / b }')
done
echo "cpu_environment: $preset $* dpo, $seq tokens x $micro_batch pairs, 1 rank, $(nproc) cores, median of $steps steps each"
printf '| %-49s | %-11s | %9s | %7s |\n' environment "BLAS core" "tokens/s" "vs own pick"
echo "|---|---|---|---|"
echo "${table#$'\n'}"
