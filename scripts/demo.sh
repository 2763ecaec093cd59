#!/usr/bin/env bash
# The README's main command: installs dependencies, builds shardtune, and runs its embedded
# default job on 2 MPI ranks: the startup consistency check (`shardtune env`) and a dry run of
# examples/demo.ini (config parsed, validated on 2 ranks, resolved config written).
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
run_dir=${ST_DEMO_DIR:-runs/demo}

echo "== mpirun -np 2 shardtune env"
mpirun -np 2 --oversubscribe "$build/app/shardtune" env
echo
echo "== mpirun -np 2 shardtune train --config examples/demo.ini --dry-run"
mpirun -np 2 --oversubscribe "$build/app/shardtune" train --config examples/demo.ini --dry-run \
  --train.output_dir="$run_dir"
echo
echo "resolved config: $run_dir/config.resolved.ini"
