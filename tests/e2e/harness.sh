# Sourced by the e2e scripts: <binary> <case> arguments, a scratch directory, and the checks.
# run <expected exit code> <command...> captures the output in $out; expect_output <regex>.
set -uo pipefail
# The e2e tier checks the CPU path on every machine (fp32, the MPI backend, several ranks on one
# node), also where GPUs are visible; training on a GPU is the cuda tier's (tests/cuda).
export CUDA_VISIBLE_DEVICES=
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

# same_metrics <a.jsonl> <b.jsonl> <relative tolerance>: every record's loss-like values agree.
same_metrics() {
  python3 - "$@" <<'PY' || fail "metrics differ: $1 vs $2"
import json, sys
a, b, tolerance = sys.argv[1], sys.argv[2], float(sys.argv[3])
keys = ("loss", "eval/loss", "grad_norm", "rewards/margins", "logps/chosen", "eval/rewards/margins")
ra, rb = [list(map(json.loads, open(p))) for p in (a, b)]
assert len(ra) == len(rb) > 0, (len(ra), len(rb))
worst = 0.0
for x, y in zip(ra, rb):
    assert x["step"] == y["step"]
    for k in keys:
        if k in x:
            worst = max(worst, abs(x[k] - y[k]) / max(1.0, abs(x[k])))
print(f"largest relative difference {worst:.3g} (tolerance {tolerance:g})")
sys.exit(0 if worst <= tolerance else 1)
PY
}
