# Sourced by the e2e scripts: <binary> <case> arguments, a scratch directory, and the checks.
# run <expected exit code> <command...> captures the output in $out; expect_output <regex>.
set -uo pipefail
bin=$1
case_name=$2
mpiexec=${ST_MPIEXEC:-mpirun}
work=$(mktemp -d /tmp/st_e2e_XXXXXX)
trap 'rm -rf "$work"' EXIT

fail() { echo "FAIL [$case_name]: $*"; exit 1; }
run() {
  local expected=$1
  shift
  out=$("$@" 2>&1)
  local rc=$?
  echo "$out" | tail -n 30
  [ "$rc" -eq "$expected" ] || fail "exit code $rc, expected $expected: $*"
}
expect_output() { grep -Eq -- "$1" <<<"$out" || fail "output lacks /$1/"; }
