#!/usr/bin/env bash
# DPO training with the reference online (a frozen sharded copy runs forward every step) next to
# precomputed (shardtune precompute-ref beforehand), same data, preset, ranks and steps, through
# the real `shardtune train`. Prints step time, throughput and peak memory per mode, and the
# one-off precompute time. Usage: bench/train_reference.sh BUILD_DIR [preset=bench-100m]
# [steps=8] [ranks=2] [pairs=400] [micro=8]
set -euo pipefail
build=${1:?usage: bench/train_reference.sh BUILD_DIR [preset] [steps] [ranks] [pairs]}
preset=${2:-bench-100m}
steps=${3:-8}
ranks=${4:-2}
pairs=${5:-400}
micro=${6:-8}
shardtune="$build/app/shardtune"
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d /tmp/st_bench_reference_XXXXXX)
trap 'rm -rf "$work"' EXIT

"$shardtune" synth --output "$work/data" --pairs "$pairs" --vocab 32000 >/dev/null
common=(--model.preset="$preset" --train.stage=dpo --train.micro_batch="$micro" --train.grad_accum=1
        --train.max_steps="$steps" --train.log_every=1 --train.eval_every=0 --optim.lr=1e-5
        --data.train="$work/data/train")
run() { mpirun -np "$ranks" --oversubscribe "$shardtune" "$@" >"$work/log" 2>&1 || { cat "$work/log"; exit 1; }; }

run train "${common[@]}" --progress off --dpo.reference=online --train.output_dir="$work/online"
start=$(date +%s.%N)
run precompute-ref "${common[@]}"
precompute_s=$(echo "$(date +%s.%N) - $start" | bc)
run train "${common[@]}" --progress off --dpo.reference=precomputed --train.output_dir="$work/precomputed"

python3 - "$work" "$preset" "$ranks" "$steps" "$precompute_s" "$pairs" "$micro" <<'PY'
import json, statistics, sys
work, preset, ranks, steps, precompute_s, pairs, micro = sys.argv[1:]
print(f"{preset}, {ranks} ranks, {steps} steps of {micro} pairs/rank, {pairs} synthetic pairs (vocab 32000)")
print(f"{'reference':<12} {'step_s (median)':>16} {'tokens/s':>10} {'peak MB/rank':>13} {'final loss':>11}")
for mode in ("online", "precomputed"):
    records = [json.loads(line) for line in open(f"{work}/{mode}/metrics.jsonl") if '"loss"' in line]
    timed = records[1:] or records  # the first step includes warm-up
    print(f"{mode:<12} {statistics.median(r['step_time_s'] for r in timed):>16.3f} "
          f"{statistics.median(r['tokens_per_s'] for r in timed):>10.0f} "
          f"{max(r['peak_memory_gib'] for r in records) * 1024:>13.0f} {records[-1]['loss']:>11.4f}")
print(f"precompute-ref over all {pairs} pairs, once: {float(precompute_s):.1f} s (model load included)")
PY
