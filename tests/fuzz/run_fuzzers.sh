#!/usr/bin/env bash
# run_fuzzers.sh <fuzz build dir> <seconds per target> [target ...]: each libFuzzer program of a
# -DST_BUILD_FUZZERS=ON build (all, or the ones named) on its seeds (corpus/<target>) and the
# regression inputs, with the limits that make a finding: any crash or sanitizer report, an
# input slower than 1 s, a single allocation over 128 MiB (inputs are at most 64 KiB) or 2 GiB
# resident. $ST_FUZZ_JOBS targets (default 2) run at a time. New inputs and artifacts go to
# $ST_FUZZ_WORK (default <build dir>/fuzz-work); a finding prints its reproducer and fails the
# run. Per target it prints the executions, the coverage (edges) reached and the corpus size.
set -euo pipefail
build=${1:?usage: run_fuzzers.sh <fuzz build dir> <seconds per target> [target ...]}
seconds=${2:?seconds per target}
shift 2
here=$(cd "$(dirname "$0")" && pwd)
work=${ST_FUZZ_WORK:-$build/fuzz-work}
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for program in "$build"/tests/fuzz/fuzz_*; do targets+=("${program##*/fuzz_}"); done
fi
[ ${#targets[@]} -gt 0 ] || { echo "run_fuzzers: no fuzz_* programs under $build/tests/fuzz" >&2; exit 2; }
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

fuzz_one() {
  local target=$1 program=$build/tests/fuzz/fuzz_$1
  local corpus=$work/corpus/$target artifacts=$work/artifacts/$target/ log=$work/$target.log
  mkdir -p "$corpus" "$artifacts"
  # The first corpus directory receives the new inputs: the work one, never the source tree.
  local options=() inputs=("$corpus" "$here/corpus/$target")
  [ -f "$here/dict/$target.dict" ] && options+=("-dict=$here/dict/$target.dict")
  [ -d "$here/regressions/$target" ] && inputs+=("$here/regressions/$target")
  # A timeout may be the machine's load: it counts once it also happens alone. One that does not
  # is dropped and the target goes on for the rest of its time (libFuzzer stops at a timeout).
  local status=0 started=$SECONDS left=$seconds slow
  : >"$log"
  while [ "$left" -gt 0 ]; do
    status=0
    "$program" -max_total_time="$left" -timeout=1 -malloc_limit_mb=128 -rss_limit_mb=2048 -max_len=65536 \
      -print_final_stats=1 -artifact_prefix="$artifacts" "${options[@]}" "${inputs[@]}" >>"$log" 2>&1 || status=$?
    slow=$(ls "$artifacts"timeout-* 2>/dev/null | head -1 || true)
    [ $status -ne 0 ] && [ -n "$slow" ] && "$program" -timeout=1 "$slow" >"$log.rerun" 2>&1 || break
    echo "$target: $slow took over 1 s under load but not alone; dropped" >>"$log"
    rm -f "$slow"
    status=0
    left=$((seconds - (SECONDS - started)))
  done
  local last execs
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log" | awk '{n += $1} END {print n}')
  printf '%-20s %s  execs %s  %s\n' "$target" "$([ $status -eq 0 ] && echo ok || echo FINDING)" "${execs:-?}" \
    "$(sed -nE 's/.*(cov: [0-9]+ ft: [0-9]+ corp: [0-9]+).*/\1/p' <<<"$last")"
  if [ $status -ne 0 ]; then
    grep -E 'ERROR|runtime error|==[0-9]+==|Test unit written|uncaught|terminate called|what\(\)' "$log" | head -8 | sed 's/^/    /'
    echo "    reproduce: $program <artifact> ; log: $log"
    return 1
  fi
}

failed=0
running=0
for target in "${targets[@]}"; do
  [ -x "$build/tests/fuzz/fuzz_$target" ] || { echo "run_fuzzers: no program fuzz_$target" >&2; exit 2; }
  fuzz_one "$target" &
  running=$((running + 1))
  if [ $running -ge "${ST_FUZZ_JOBS:-2}" ]; then
    wait -n || failed=1
    running=$((running - 1))
  fi
done
while [ $running -gt 0 ]; do
  wait -n || failed=1
  running=$((running - 1))
done
[ $failed -eq 0 ] || { echo "run_fuzzers: findings above (fix them, then keep each input under tests/fuzz/regressions/)"; exit 1; }
echo "run_fuzzers: ${#targets[@]} targets, ${seconds} s each, no findings"
