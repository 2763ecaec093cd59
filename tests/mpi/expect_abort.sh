#!/usr/bin/env bash
# expect_abort.sh <max_seconds> <regex> <command...>
# Passes when the command fails (non-zero exit) within max_seconds and its output has a line
# matching regex (grep -E). Used for failures that must end the whole MPI job, never hang it.
set -u
max_seconds=$1
pattern=$2
shift 2
start_ms=$(date +%s%3N)
output=$(timeout --kill-after=5 $((max_seconds * 3)) "$@" 2>&1)
rc=$?
elapsed_ms=$(( $(date +%s%3N) - start_ms ))
elapsed="$((elapsed_ms / 1000)).$(printf %03d $((elapsed_ms % 1000)))"
echo "$output" | tail -n 40
echo "---- exit code $rc after ${elapsed}s"
if [ "$rc" -eq 0 ]; then echo "FAIL: the command succeeded; expected an abort"; exit 1; fi
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then echo "FAIL: the command hung"; exit 1; fi
if [ "$elapsed_ms" -gt $((max_seconds * 1000)) ]; then
  echo "FAIL: took ${elapsed}s, limit ${max_seconds}s"; exit 1
fi
if ! grep -Eq -- "$pattern" <<<"$output"; then echo "FAIL: no line matches: $pattern"; exit 1; fi
echo "PASS: aborted with exit code $rc in ${elapsed}s"
