# trl_harness.sh: what the TRL oracle scripts (trl_test.sh, grpo_test.sh) share, sourced after
# harness.sh and need_oracles: TRL's runs of a case in fp32 and float64 (from their peer record),
# shardtune's run of the same, and the per-step comparison. Uses $bin, $work, $mpiexec (harness.sh),
# $steps and $beta (the caller's).
# shellcheck source=peer_record.sh
source "$ST_SOURCE_DIR/tests/oracle/peer_record.sh"
fixtures=${ST_REFERENCE_DIR:?the reference fixtures (ctest fixture reference)}
python=$ST_ORACLE_PYTHON
here=$ST_SOURCE_DIR/tests/oracle
cd "$here" || fail "no $here"  # the TRL scripts import trl_dpo.py

# trl_runs <script> <name> <model> <data> <options...>: TRL's run of the case (tests/oracle/<script>)
# twice, in fp32 ($work/<name>.trl.jsonl, the oracle) and in float64 ($work/<name>.float64.trl.jsonl,
# the judge of values past trl_compare.py's 1e-5 screen: two correct fp32 runs can differ by more),
# one after the other in one process (trl_both_precisions.py: one import of TRL).
# Both logs come from their record where the run's inputs are unchanged (peer_record.sh).
trl_runs() {
  local script=$1 name=$2 model=$3 data=$4 fp32=$work/$2.trl.jsonl float64=$work/$2.float64.trl.jsonl
  shift 4
  recorded "$name" --output "$fp32:fp32=$float64" --output "$float64:float64" -- \
    "$python" "$here/trl_both_precisions.py" "$here/$script" "$model" "$data" "$fp32" "$float64" "$work/trl-$name" \
    "$@" >"$work/$name.trl.log" 2>&1 ||
    fail "TRL's $script failed: $(grep -v -e kernels -e triton "$work/$name.trl.log" | tail -5)"
  grep "^peer_record.py:" "$work/$name.trl.log"
}
# fp32_draws <script> <name> <model> <data> <options...>: two more fp32 runs of TRL's case, the
# same run under other micro-batch splits (1 x 4 and 4 x 1 sequences per step: the same sums in
# other orders), for the judge of a chaotic case (trl_compare.py --fp32-draws): trl_runs as
# <name>.mb1 and <name>.mb4 ($work/<name>.mb1.trl.jsonl, ...; each with its float64 run, which its
# record's check needs).
fp32_draws() {
  local script=$1 name=$2 model=$3 data=$4 split
  shift 4
  for split in "1 4" "4 1"; do
    trl_runs "$script" "$name.mb${split% *}" "$model" "$data" "$@" --micro-batch "${split% *}" --grad-accum "${split#* }"
  done
}
# trl <name> <trl_dpo.py options...>: TRL's DPO-family runs ($pairs: other pairs than the DPO
# cases'; $trl_model: another model).
trl() {
  trl_runs trl_dpo.py "$1" "${trl_model:-$fixtures/llama_gqa}" "${pairs:-$work/pairs.jsonl}" --steps "$steps" \
    --beta "$beta" "${@:2}"
}
# ours <name> <ranks> <train options...>: shardtune's run of the same, in $work/<name>
# ($model and $train_data: another model and data than the DPO cases'). A collective that waits
# 300 s stops every rank naming itself (the watchdog), before harness.sh's `run` limit.
ours() {
  local name=$1 ranks=$2
  shift 2
  run --exit 0 "$mpiexec" -np "$ranks" "$bin" train --model.path="${model:-$fixtures/llama_gqa}" \
    --data.train="${train_data:-$work/data/train}" \
    --data.shuffle=false --train.output_dir="$work/$name" --train.max_steps="$steps" --dpo.beta="$beta" \
    --train.log_every=1 --train.eval_every=0 --train.dtype=fp32 --dist.timeout_s=300 --progress off "$@"
}
# agree <ours> <trl name> <label> [--defined-otherwise NAMES WHY]: against TRL's fp32 run, its
# float64 run the judge past the screen.
agree() {
  "$python" "$here/trl_compare.py" "$work/$1/metrics.jsonl" "$work/$2.trl.jsonl" "$beta" "$3" "${@:4}" \
    --float64 "$work/$2.float64.trl.jsonl" || fail "$3: shardtune and TRL differ"
}

# differs <ours> <trl name> <label>: the two must NOT agree (the setting a case turns on matters).
differs() {
  # A control, not a tolerance: kept out of the tolerance table.
  if env -u ST_TOLERANCE_LOG "$python" "$here/trl_compare.py" "$work/$1/metrics.jsonl" "$work/$2.trl.jsonl" "$beta" "$3" >"$work/$1.differs" 2>&1
  then
    fail "$3: agrees with TRL, so the setting the case checks changes nothing"
  fi
  head -1 "$work/$1.differs"
}
