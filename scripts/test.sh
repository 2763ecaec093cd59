#!/usr/bin/env bash
# The README's test command: installs dependencies (the Debian packages and the tests' Python
# environment), configures, builds (the parsers' fuzz targets too), and runs every test tier that
# runs on CPU (unit, mpi, e2e, oracle; fuzz: the fuzz targets briefly); cuda tests are built and
# skip without a GPU. An oracle test may not skip here (ST_REQUIRE_ORACLES=1). Prints the time of each phase, how many tests ran
# and skipped in each tier (and the unit tier's GoogleTest cases), and the 20 slowest tests.
# The oracle tests compare shardtune with the peers' recorded results (tests/oracle/records/,
# re-derived where their inputs changed); --peers reruns every peer and fails where a record is not
# what its peer produces now (docs/testing.md, "Peer records").
# Extra arguments go to ctest (e.g. ./scripts/test.sh -L unit).
set -euo pipefail
if [ "${1:-}" = --peers ]; then
  export ST_PEERS=1
  shift
fi
cd "$(dirname "$0")/.."
root=$PWD
start=$(date +%s)
build=${ST_BUILD_DIR:-build}
phases=()
phase_start=$start
# phase_done <name>: records and prints how long the phase since the last one took.
phase_done() {
  local now
  now=$(date +%s)
  phases+=("$(printf '%-8s %5d s' "$1" $((now - phase_start)))")
  echo "test.sh: $1 done in $((now - phase_start)) s ($((now - start)) s so far)"
  phase_start=$now
}

./scripts/install-deps.sh --with-test-python
phase_done deps

# A compiler cache outside the clone (scripts/compiler-cache.sh): a clone in another folder, or a
# rerun after a clean, compiles only what changed.
# shellcheck source=compiler-cache.sh
source scripts/compiler-cache.sh
# Where the CUDA toolkit is installed the GPU backend must compile (CI checks this), else AUTO.
cuda=${ST_ENABLE_CUDA:-AUTO}
if [ "$cuda" = AUTO ] && [ -x /usr/local/cuda/bin/nvcc ]; then cuda=ON; fi
fuzz_build=$(realpath -m "$build-fuzz")

# Line tables only (-g1): backtraces and profiles keep file:line, and a from-scratch build (CI's
# largest phase after the tests) compiles each file 15-25% faster than with full debug info
# (measured, one core: lib/train/trainer.cpp 20 s -> 17 s, tests/unit/hf/test_safetensors.cpp
# 20-23 s -> 15 s).
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  -DST_BUILD_TESTS=ON -DST_ENABLE_CUDA="$cuda" -DST_FUZZ_BUILD_DIR="$fuzz_build" "${compiler_cache_flags[@]}"
compiler_cache_zero
cmake --build "$build" -j"$(nproc)"
compiler_cache_report
phase_done build

# The parsers' fuzz targets (tests/fuzz): a clang build of their sources alone under ASan and
# UBSan. The ctest entry fuzz_parsers_bounded runs each on its seeds and regression inputs for a
# short bounded time, 2 minutes of one core in all (ST_FUZZ_TOTAL_SECONDS), beside the other tests:
# a regression of a fixed finding, or a new one close to the seeds, fails the suite.
# ST_FUZZ_SECONDS sets the time per target instead; ST_FUZZ_SECONDS=0 skips them.
if [ "${ST_FUZZ_SECONDS:-1}" -gt 0 ]; then
  CC=clang-14 CXX=clang++-14 cmake -S . -B "$fuzz_build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DST_BUILD_TESTS=OFF \
    -DST_BUILD_FUZZERS=ON -DST_ENABLE_CUDA=OFF "${compiler_cache_flags[@]}" >/dev/null
  cmake --build "$fuzz_build" -j"$(nproc)" --target fuzzers
  phase_done fuzzers
fi

cd "$build"
# Printed after the run, passed or not: the phases, each tier's tests (ran, skipped, seconds of
# test time) and the 20 slowest tests. The report keeps the run's exit status, and reads its input
# to the end (head would close the pipe early, and pipefail would turn sort's SIGPIPE into a failed
# run).
report() {
  local status=$?
  phase_done tests
  echo "test.sh: phases"
  printf '  %s\n' "${phases[@]}"
  printf '  %-8s %5d s\n' total $(($(date +%s) - start))
  if [ -f ctest.log ]; then
    ctest -N --show-only=json-v1 >ctest-tests.json && python3 "$root/scripts/tier_summary.py" ctest.log ctest-tests.json gtest-reports || true
    echo "test.sh: the 20 slowest tests (seconds):"
    sed -nE 's/.*Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec$/\2 \1/p' ctest.log 2>/dev/null \
      | sort -rn | awk 'NR <= 20 { print "  " $0 }' || true
  fi
  if [ -s "$ST_PEER_RECORDS_LOG" ]; then
    echo "test.sh: $(sort -u "$ST_PEER_RECORDS_LOG" | wc -l) peer records refreshed (their inputs changed or they were missing): commit them"
    sort -u "$ST_PEER_RECORDS_LOG" | sed 's/^/  /'
  elif [ "${ST_PEERS:-0}" = 1 ] && [ "$status" = 0 ]; then
    echo "test.sh: every peer reran (--peers) and every record held"
  fi
  exit "$status"
}
export ST_PEER_RECORDS_LOG=$PWD/peer-records-refreshed.txt
# test-inputs: what the e2e cases make once per run and share (tests/e2e/harness.sh synth_data).
rm -rf "$ST_PEER_RECORDS_LOG" gtest-reports test-inputs
trap report EXIT
export ST_REQUIRE_ORACLES=1
# A slot per core (at least 2), and one more, for the CPU-bound tests, each claiming 1 or 2
# (cmake/testing.cmake st_claim_cores); the Slurm lane's one test at a time claims none and runs
# beside them. The slot more: a test holds its slot while it waits (mpirun's and Python's start-up,
# a rank waiting for the other), so with one slot per core the cores were 81% busy; with one more
# 86%, and the tests phase took 1,001 s instead of 1,085 s (2 cores, 2026-12-04; docs/testing.md).
# ST_TEST_SLOTS sets the number. -j only needs to leave room: an mpi test counts its ranks against
# it (PROCESSORS).
cores=$(nproc)
[ "$cores" -ge 2 ] || cores=2
slots=${ST_TEST_SLOTS:-$((cores + 1))}
printf '{"version": {"major": 1, "minor": 0}, "local": [{"cpus": [{"id": "0", "slots": %d}]}]}\n' "$slots" >ctest-cores.json
ctest --output-on-failure -j$((slots + 4)) --resource-spec-file ctest-cores.json "$@" | tee ctest.log
echo "test.sh: all tests passed in $(( $(date +%s) - start )) s"
