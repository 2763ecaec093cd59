#!/usr/bin/env bash
# Where the test suite's CPU goes: runs `ctest` (arguments as given, e.g. -j2 -L e2e) in BUILD_DIR
# under Linux process accounting (Debian's `acct`; root), then prints the CPU of every process
# charged to the ctest entry it descends from (ranks that Slurm starts belong to no entry: they
# are counted by program), CPU by program, by tier, and the entries that used the most.
# docs/testing.md ("Issue 85, continued") has a whole run's figures.
# Usage: bench/suite_cpu.sh BUILD_DIR [ctest arguments...]
set -euo pipefail
build=${1:?usage: bench/suite_cpu.sh BUILD_DIR [ctest arguments...]}
shift
command -v accton >/dev/null || { echo "bench/suite_cpu.sh: needs process accounting: apt-get install acct" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "bench/suite_cpu.sh: process accounting needs root" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
records=$(mktemp /var/tmp/st_pacct_XXXXXX)
log=$(mktemp /tmp/st_suite_cpu_XXXXXX.log)
accton "$records" >/dev/null
trap 'accton off >/dev/null; rm -f "$records" "$log"' EXIT
status=0
(cd "$build" && ctest "$@") >"$log" 2>&1 || status=$?
accton off >/dev/null
tail -n 3 "$log"
dump-acct "$records" | python3 "$here/suite_cpu.py" "$log"
exit "$status"
