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

# synth_data <dir> [pairs] [more synth options...]: a small synthetic dataset (train/, val/).
synth_data() {
  local dir=$1 pairs=${2:-200}
  shift 2 || shift $#
  "$bin" synth --output "$dir" --pairs "$pairs" --val-size 0.1 --seed 3 "$@" >/dev/null ||
    fail "synth $dir failed"
}

# metric <metrics.jsonl> <key> <first|last|count>: one value of the train records (python3).
metric() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
path, key, which = sys.argv[1:]
values = [r[key] for r in map(json.loads, open(path)) if key in r]
print(len(values) if which == "count" else values[0 if which == "first" else -1])
PY
}
