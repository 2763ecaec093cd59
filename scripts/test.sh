#!/usr/bin/env bash
# The README's test command: installs dependencies, configures, builds, runs the parsers' fuzz
# targets briefly, and runs every test tier that runs on CPU (unit, mpi, e2e); cuda tests are
# built and skip without a GPU.
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

# The parsers' fuzz targets (tests/fuzz), a clang build of their sources alone under ASan and
# UBSan, each run for a short fixed time on its corpus: a regression of a fixed finding, or a new
# one close to the seeds, fails here. ST_FUZZ_SECONDS=0 skips it.
fuzz_seconds=${ST_FUZZ_SECONDS:-20}
if [ "$fuzz_seconds" -gt 0 ]; then
  CC=clang-14 CXX=clang++-14 cmake -S . -B "$build-fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DST_BUILD_TESTS=OFF \
    -DST_BUILD_FUZZERS=ON -DST_ENABLE_CUDA=OFF >/dev/null
  cmake --build "$build-fuzz" -j"$(nproc)" --target fuzzers
  rm -rf "$build-fuzz/fuzz-work"
  tests/fuzz/run_fuzzers.sh "$build-fuzz" "$fuzz_seconds"
  echo "test.sh: fuzz targets done after $(( $(date +%s) - start )) s"
fi

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
