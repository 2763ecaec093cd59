#!/usr/bin/env bash
# fuzz_test.sh <fuzz build dir>: the ctest entry fuzz_parsers_bounded. Every libFuzzer program of
# that clang build (./scripts/test.sh makes it) on its seeds and regression inputs, then a bounded
# run: ST_FUZZ_TOTAL_SECONDS (default 120) of one core in all, shared by the targets, one at a
# time (the entry claims one core beside the other tests). ST_FUZZ_SECONDS sets the time per
# target instead; 0, or no programs built, skips (77). New inputs go to a scratch folder.
set -euo pipefail
build=${1:?usage: fuzz_test.sh <fuzz build dir>}
seconds=${ST_FUZZ_SECONDS:-}
[ "${seconds:-1}" -gt 0 ] || { echo "SKIP: ST_FUZZ_SECONDS=0"; exit 77; }
targets=$( (find "$build/tests/fuzz" -maxdepth 1 -name 'fuzz_*' -type f -executable 2>/dev/null || true) | wc -l)
[ "$targets" -gt 0 ] || { echo "SKIP: no fuzz programs under $build/tests/fuzz (./scripts/test.sh builds them)"; exit 77; }
if [ -z "$seconds" ]; then
  seconds=$(( ${ST_FUZZ_TOTAL_SECONDS:-120} / targets ))
  [ "$seconds" -ge 3 ] || seconds=3
fi
ST_FUZZ_WORK=$(mktemp -d /tmp/st_fuzz_XXXXXX)
export ST_FUZZ_WORK ST_FUZZ_JOBS=1
status=0
"$(dirname "$0")/run_fuzzers.sh" "$build" "$seconds" || status=$?
# A finding's reproducer and log stay for the developer; a clean run leaves nothing.
[ $status -ne 0 ] && echo "fuzz_test: inputs and logs kept in $ST_FUZZ_WORK" || rm -rf "$ST_FUZZ_WORK"
exit $status
