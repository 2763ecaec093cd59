#!/usr/bin/env bash
# Builds against the CUDA libtorch and runs the test tiers on a GPU machine that has no apt
# (see docs/testing.md): the Debian packages for MPI/HDF5/Boost/GoogleTest come in .deps-debs.
# Usage: scripts/gpu-test.sh [ctest args]; logs go to $OUT when it is set; ST_GPU_CMAKE_ARGS adds
# configure arguments (e.g. -DCMAKE_CXX_FLAGS=-g1 for backtraces with names).
set -euo pipefail
cd "$(dirname "$0")/.."
log_dir=${OUT:-build-gpu}
mkdir -p "$log_dir"
# shellcheck disable=SC1091
source scripts/gpu-env.sh
gpu_build "$log_dir" || exit 1
echo "gpu-test.sh: build ok"
build-gpu/app/shardtune --version
status=0
(cd build-gpu && ctest --output-on-failure -j8 "$@" 2>&1 | tee "$log_dir/ctest.log" | tail -15) || status=$?
# A follow-up command in this environment (e.g. the transformers parity check, the bench).
if [ -n "${ST_GPU_AFTER:-}" ]; then bash -c "$ST_GPU_AFTER" || status=$?; fi
exit "$status"
