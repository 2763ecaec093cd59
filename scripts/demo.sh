#!/usr/bin/env bash
# The README's main command: installs dependencies, builds shardtune, and runs its embedded
# default job on 2 MPI ranks: a synthetic DPO dataset, then DPO of the tiny debug preset from
# examples/demo.ini (fully sharded), printing the reward accuracy and loss as it learns, and
# the loss curves as an SVG. A few minutes on 2 cores, most of it the build.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${ST_BUILD_DIR:-build}

./scripts/install-deps.sh
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target shardtune -j"$(nproc)"

if [ "$(id -u)" -eq 0 ]; then  # containers often run as root; Open MPI refuses that by default
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_btl_vader_single_copy_mechanism=none  # no ptrace-based copies in containers
shardtune="$build/app/shardtune"
data_dir=${ST_DEMO_DATA:-runs/demo-data}
run_dir=${ST_DEMO_DIR:-runs/demo}

echo "== shardtune synth: 2000 synthetic preference pairs (chosen = copy of the prompt)"
"$shardtune" synth --output "$data_dir" --pairs 2000 --val-size 0.1 --seed 1 --overwrite
echo
echo "== mpirun -np 2 shardtune train --config examples/demo.ini"
mpirun -np 2 --oversubscribe "$shardtune" train --config examples/demo.ini \
  --data.train="$data_dir/train" --data.val="$data_dir/val" \
  --train.output_dir="$run_dir" --train.overwrite=true --progress off
echo
"$shardtune" plot "$run_dir/metrics.jsonl" -o "$run_dir/loss.svg" --overwrite
echo "metrics: $run_dir/metrics.jsonl; curves: $run_dir/loss.svg; resolved config: $run_dir/config.resolved.ini"
