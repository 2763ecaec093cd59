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
# ST_KEEP_WORK=1 keeps the scratch directory (and says where) to inspect a failure.
if [ "${ST_KEEP_WORK:-0}" = 1 ]; then trap 'echo "kept $work"' EXIT; else trap 'rm -rf "$work"' EXIT; fi

fail() { echo "FAIL [$case_name]: $*"; exit 1; }
# The bit-identity cases' second run (OPENBLAS_CORETYPE, cmake/testing.cmake) must really run
# that core, or it would only repeat the first run.
if [ -n "${OPENBLAS_CORETYPE:-}" ] && "$bin" --version | grep -q "BLAS: OpenBLAS"; then
  "$bin" --version | grep -qi "BLAS: OpenBLAS .*(core $OPENBLAS_CORETYPE)" ||
    fail "OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE, but $("$bin" --version | grep BLAS)"
fi
metrics_check="python3 $(dirname "${BASH_SOURCE[0]}")/metrics_check.py"
# scripts/tolerance_table.sh runs the tolerance tests under each BLAS core with ST_TOLERANCE_LOG
# set: every fixed-bound comparison is recorded there, and with ST_TOLERANCE_MEASURE=1 (that
# script only, never CI) a comparison past its bound is recorded and the test goes on, so one run
# measures all of them.
export ST_TEST_NAME="$(basename "$0" .sh)/$case_name"
# tolerance_verdict <checker's exit status> <failure message>: fails unless measuring.
tolerance_verdict() {
  [ "$1" = 0 ] && return 0
  if [ "${ST_TOLERANCE_MEASURE:-0}" = 1 ]; then
    echo "MEASURING [$case_name]: past the bound: $2"
    return 0
  fi
  fail "$2"
}
# Shell text for a shell where `module load shardtune` ran (the installed modulefile or Spack's):
# prints layout=ok when launch.slurm, the examples and the docs are where launch.slurm's comments say.
# shellcheck disable=SC2016
installed_layout_check='test -x "$SHARDTUNE_ROOT/share/shardtune/slurm/launch.slurm" &&
  test -f "$SHARDTUNE_ROOT/share/shardtune/examples/demo.ini" &&
  test -f "$SHARDTUNE_ROOT/share/doc/shardtune/README.md" && echo layout=ok'

# tensorboard_matches_metrics <run dir>: the run's TensorBoard event files, read back by
# independent code (tensorboard_check.py), hold metrics.jsonl's values and the resolved config.
tensorboard_matches_metrics() {
  "${ST_REFERENCE_PYTHON:-python3}" "$(dirname "${BASH_SOURCE[0]}")/tensorboard_check.py" "$1" \
    "$ST_SOURCE_DIR/lib/train/tensorboard_event.proto" || fail "TensorBoard files of $1 differ from metrics.jsonl"
}

# run --exit <code> <command...>: runs it, keeps the output in $out, checks the exit code.
# A command (not a shell function) that runs past ST_RUN_TIMEOUT_S (two thirds of the test's ctest
# TIMEOUT, cmake/testing.cmake; 600 s by hand) is stopped, so that a
# hung run fails with its own output (the tail shows where it stopped) instead of leaving ctest to
# kill the whole script silently at the test's timeout.
run() {
  [ "$1" = --exit ] || fail "run: usage: run --exit <code> <command...>"
  local expected=$2 limit=${ST_RUN_TIMEOUT_S:-600}
  shift 2
  if declare -F "$1" >/dev/null; then
    out=$("$@" 2>&1)
  else
    out=$(timeout -k 10 "$limit" "$@" 2>&1)
  fi
  local rc=$?
  echo "$out" | tail -n 30
  if [ "$rc" -eq 124 ] && [ "$expected" -ne 124 ] && ! declare -F "$1" >/dev/null; then
    fail "still running after $limit s (ST_RUN_TIMEOUT_S), stopped: $*"
  fi
  [ "$rc" -eq "$expected" ] || fail "exit code $rc, expected $expected: $*"
}
expect_output() { grep -Eq -- "$1" <<<"$out" || fail "output lacks /$1/"; }
# wait_for_text <file> <regex> <seconds>: until the file (a job's log, metrics.jsonl) shows it.
wait_for_text() {
  for _ in $(seq $(($3 * 10))); do
    grep -Eq -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  fail "no /$2/ in $1 after $3 s: $(tail -8 "$1" 2>/dev/null)"
}

# synth_data --dir <dir> [--pairs N] [other `shardtune synth` flags]: a small synthetic dataset
# (train/, val/). Made once per binary and arguments in a test run: many cases train on the same
# datasets, and each `shardtune synth` is a process start. The first case to ask makes it with
# synth as before and keeps a copy under $ST_TEST_INPUTS_DIR/synth/<key> (the binary's path,
# inode, size and time, and the arguments); the others get a copy of that. test.sh empties the
# folder before each run; the synth tests themselves (data_test.sh) call synth directly.
synth_data() {
  local dir="" pairs=200
  local extra=()
  while [ $# -gt 0 ]; do
    case $1 in
      --dir) dir=$2; shift 2 ;;
      --pairs) pairs=$2; shift 2 ;;
      *) extra+=("$1"); shift ;;
    esac
  done
  [ -n "$dir" ] || fail "synth_data: --dir is required"
  local kept=""
  if [ -n "${ST_TEST_INPUTS_DIR:-}" ] && [ ! -e "$dir" ]; then
    kept=$ST_TEST_INPUTS_DIR/synth/$(printf '%s\n' "$bin" "$(stat -L -c '%i %s %Y' "$bin")" "$pairs" "${extra[@]}" |
      sha256sum | cut -c1-16)
    if [ -d "$kept" ]; then
      mkdir -p "$dir" && cp -R "$kept/." "$dir/" || fail "synth_data: copying $kept to $dir"
      return 0
    fi
  fi
  "$bin" synth --output "$dir" --pairs "$pairs" --val-size 0.1 --seed 3 "${extra[@]}" >/dev/null ||
    fail "synth $dir failed"
  [ -n "$kept" ] || return 0
  # Published whole or not at all: another case may be making the same one.
  mkdir -p "$ST_TEST_INPUTS_DIR/synth"
  local partial
  partial=$(mktemp -d "$ST_TEST_INPUTS_DIR/synth/.partial_XXXXXX")
  cp -R "$dir/." "$partial/" && mv -T "$partial" "$kept" 2>/dev/null || rm -rf "$partial"
}

# metric --file <metrics.jsonl> --key <key> --pick first|last|count|steps: from the records
# that have the key.
metric() {
  local file="" key="" pick=""
  while [ $# -gt 0 ]; do
    case $1 in
      --file) file=$2; shift 2 ;;
      --key) key=$2; shift 2 ;;
      --pick) pick=$2; shift 2 ;;
      *) fail "metric: unknown flag $1" ;;
    esac
  done
  $metrics_check value "$file" "$key" "$pick"
}

# The bounds of two runs of the same training whose fp32 sums run in other orders (other rank
# counts, context-parallel splits, row layouts, micro-batches, a resharded resume), from the
# rounding the compared values carry, not from one machine. The values with the least room are
# the rewards: beta (0.1) x a difference of log-prob sums of magnitude 64-256, whose fp32 spacing
# is 7.6e-6 to 1.5e-5, so one unit in the last place of one sum is up to 1.5e-6 of a reward
# (metrics_check compares them absolutely, |reward| < 1). Each run lands some units from exact and
# the other perhaps a few times farther: 50 units (7.5e-5) is 10x over five, as the mpi tier's
# kOtherOrderRoundings (tests/support/relative_diff.h). The final weights, relative to each
# tensor's largest magnitude: 1e-5 (docs/testing.md has what every BLAS core shows). A real
# error is of another order: a token that loses a key or gets another position changes its
# log-prob by more than 1e-3 of a sum, a reward by 6e-3 or more, 80x over the bound.
other_order_metrics=7.5e-5
other_order_weights=1e-5

# same_metrics --expected <a.jsonl> --actual <b.jsonl> --tolerance <relative> [--from-step N
#              [--to-step M]]: every record's loss-like values agree (0 = bit-identical); with
# --from-step, the train records from step N on (up to M), with all their loss, reward,
# log-prob and lr values.
same_metrics() {
  local expected="" actual="" tolerance="" from=() to=()
  while [ $# -gt 0 ]; do
    case $1 in
      --expected) expected=$2; shift 2 ;;
      --actual) actual=$2; shift 2 ;;
      --tolerance) tolerance=$2; shift 2 ;;
      --from-step) from=("$2"); shift 2 ;;
      --to-step) to=("$2"); shift 2 ;;
      *) fail "same_metrics: unknown flag $1" ;;
    esac
  done
  [ ${#to[@]} = 0 ] || [ ${#from[@]} = 1 ] || fail "same_metrics: --to-step needs --from-step"
  $metrics_check same "$expected" "$actual" "$tolerance" "${from[@]}" "${to[@]}"
  tolerance_verdict $? "metrics differ: $expected vs $actual"
}

# expect_learned --file <metrics.jsonl> --loss-drop <d> [--at-least <key>=<min> ...]: the loss
# fell by more than d, and each key's last value is at least its minimum.
expect_learned() {
  local file="" drop=""
  local minimums=()
  while [ $# -gt 0 ]; do
    case $1 in
      --file) file=$2; shift 2 ;;
      --loss-drop) drop=$2; shift 2 ;;
      --at-least) minimums+=("$2"); shift 2 ;;
      *) fail "expect_learned: unknown flag $1" ;;
    esac
  done
  $metrics_check learned "$file" "$drop" "${minimums[@]}" || fail "did not learn ($file)"
}
