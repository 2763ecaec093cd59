#!/usr/bin/env bash
# The README's test command: installs dependencies, configures, builds, and runs every test tier
# that runs on CPU (unit, mpi, e2e); cuda tests are built and skip without a GPU.
# Extra arguments go to ctest (e.g. ./scripts/test.sh -L unit).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
build=${ST_BUILD_DIR:-build}

./scripts/install-deps.sh

# Where the CUDA toolkit is installed the GPU backend must compile (CI checks this), else AUTO.
cuda=${ST_ENABLE_CUDA:-AUTO}
if [ "$cuda" = AUTO ] && [ -x /usr/local/cuda/bin/nvcc ]; then cuda=ON; fi

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DST_BUILD_TESTS=ON -DST_ENABLE_CUDA="$cuda"
cmake --build "$build" -j"$(nproc)"
echo "test.sh: build done after $(( $(date +%s) - start )) s"

cd "$build"
# Where the time goes, printed after the run (passed or not): the 20 slowest tests. The report
# keeps the run's exit status, and reads its input to the end (head would close the pipe early, and
# pipefail would turn sort's SIGPIPE into a failed run).
slowest() {
  local status=$?
  echo "test.sh: the 20 slowest tests (seconds):"
  sed -nE 's/.*Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec$/\2 \1/p' ctest.log 2>/dev/null \
    | sort -rn | awk 'NR <= 20 { print "  " $0 }' || true
  exit "$status"
}
trap slowest EXIT
ctest --output-on-failure -j"$(nproc)" "$@" | tee ctest.log
echo "test.sh: all tests passed in $(( $(date +%s) - start )) s"
