#!/usr/bin/env bash
# slurm_test.sh <shardtune binary> <case>: `sbatch slurm/launch.slurm` (and slurm/chain.sh) on a
# real one-node Slurm started for the test, 4 ranks through `srun --mpi=pmix`, no GPUs
# (--gpus-per-node=0 switches the script's GPU request off, as on a CPU-only cluster).
# Skipped (exit 77) only where Slurm's daemons cannot be installed: not root, no slurm-wlm.
# shellcheck source=harness.sh
source "$(dirname "$0")/harness.sh"
# shellcheck source=slurm_cluster.sh
source "$(dirname "$0")/slurm_cluster.sh"
# shellcheck source=byte_tokenizer.sh
source "$(dirname "$0")/byte_tokenizer.sh"
if [ "$(id -u)" != 0 ] || ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  echo "SKIP [$case_name]: needs root and Debian's slurm-wlm + munge (scripts/install-deps.sh installs them)"
  exit 77
fi
bin=$(realpath "$bin")  # the job runs in another directory
trap 'slurm_stop; [ -n "${ST_KEEP_WORK:-}" ] || rm -rf "$work"' EXIT
slurm_start "$work/slurm"
synth_data --dir "$work/data" --pairs 1000
# The demo config on 4 ranks: 1 pair x 2 accumulation x 4 ranks = the demo's global batch of 8.
run_args=(--data.train="$work/data/train" --data.val="$work/data/val" --train.micro_batch=1 --train.grad_accum=2
          --train.eval_every=20 --progress off --ckpt.export=true --ckpt.export_dtype=fp32)

# job_options <run dir>: sbatch options of a 4-rank CPU job in $options; its launch.slurm
# arguments in $arguments.
job_options() {
  options=(--chdir="$work" --output="$1.out" --error="$1.out" --gpus-per-node=0 --ntasks-per-node=4
           --cpus-per-task=1 --export=ALL,CONFIG="$ST_SOURCE_DIR/examples/demo.ini",SHARDTUNE="${shardtune:-$bin}")
  arguments=(--train.output_dir="$1" "${run_args[@]}")
}

# submit <run dir> [launch.slurm arguments...]: prints the job id; $sbatch_extra holds more
# sbatch options (e.g. a short --time).
sbatch_extra=()
submit() {
  job_options "$1"
  shift
  sbatch --parsable "${options[@]}" "${sbatch_extra[@]}" "$ST_SOURCE_DIR/slurm/launch.slurm" "${arguments[@]}" "$@" ||
    fail "sbatch refused launch.slurm"
}

job_field() { scontrol show job "$1" | grep -o "$2=[^ ]*" | cut -d= -f2; }

# expect_cancelled_for_good <job> <run dir>: a scancel ended the job; it stays ended (a requeue
# would bring it back PENDING within AuthInfo's cred_expire=10 s), and the ranks saved first.
expect_cancelled_for_good() {
  local job=$1 dir=$2 restarts
  slurm_wait_job "$job" 120 'CANCELLED|COMPLETED|FAILED|TIMEOUT'
  restarts=$(job_field "$job" Restarts)
  # That nothing happens cannot be an event: polled until cred_expire (10 s) + 3 s have passed,
  # failing the moment the job leaves CANCELLED or counts a restart.
  local until=$((SECONDS + 13))
  while [ "$SECONDS" -lt "$until" ]; do
    [ "$(slurm_job_state "$job")" = CANCELLED ] || fail "job $job is $(slurm_job_state "$job") after scancel, expected CANCELLED"
    [ "$(job_field "$job" Restarts)" = "$restarts" ] || fail "job $job was requeued after scancel"
    sleep 0.5
  done
  wait_for_text "$dir.out" 'stop requested \(SIGTERM\) - checkpoint of step [0-9]+ saved' 30
  grep -q 'stopped by SIGTERM (scancel or preemption)' "$dir.out" || fail "launch.slurm did not say it stops"
  [ -f "$dir/checkpoints/latest/COMPLETE" ] || fail "no complete checkpoint after the scancel"
}

# wait_for_step <run dir> <step>: until metrics.jsonl has a train record of that step.
wait_for_step() {
  for _ in $(seq 1200); do
    [ -f "$1/metrics.jsonl" ] && grep -q "\"step\": *$2[,}]" "$1/metrics.jsonl" && return 0
    sleep 0.1
  done
  fail "no step $2 in $1/metrics.jsonl after 120 s: $(tail -5 "$1.out" 2>/dev/null)"
}

expect_finished_run() {
  local dir=$1 job=$2
  [ "$(slurm_job_state "$job")" = COMPLETED ] || fail "job $job ended $(slurm_job_state "$job"): $(tail -20 "$dir.out")"
  [ -f "$dir/checkpoints/latest/COMPLETE" ] || fail "no COMPLETE checkpoint in $dir/checkpoints/latest"
  [ -f "$dir/export/model.safetensors" ] && [ -f "$dir/export/config.json" ] || fail "no export in $dir/export"
}

# usr1_requeue_matches_straight <straight job> <job>: the straight job ($work/straight) completes;
# the other ($work/job), given USR1 mid-run, is requeued by launch.slurm, resumes and completes
# with the straight job's weights.
usr1_requeue_matches_straight() {
  local straight=$1 job=$2 restarts
  scancel --signal=USR1 "$job" || fail "scancel --signal=USR1 failed"
  slurm_wait_job "$straight" 600 'COMPLETED|FAILED|CANCELLED|TIMEOUT'
  expect_finished_run "$work/straight" "$straight"
  for _ in $(seq 2400); do
    restarts=$(job_field "$job" Restarts)
    [ "${restarts:-0}" -ge 1 ] && [ "$(slurm_job_state "$job")" = COMPLETED ] && break
    [[ "$(slurm_job_state "$job")" =~ ^(FAILED|CANCELLED|TIMEOUT)$ ]] && break
    sleep 0.25
  done
  tail -n 12 "$work/job.out"
  [ "${restarts:-0}" -ge 1 ] || fail "job $job was not requeued (Restarts=${restarts:-?})"
  expect_finished_run "$work/job" "$job"
  grep -q 'requeueing job' "$work/job.out" || fail "launch.slurm did not requeue"
  grep -q 'resumed from .*step_' "$work/job.out" || fail "the requeued job did not resume"
  cmp "$work/straight/export/model.safetensors" "$work/job/export/model.safetensors" ||
    fail "preempted + requeued job ends with other weights than an uninterrupted one"
}

case "$case_name" in
  demo_job_completes)
    job=$(submit "$work/run")
    echo "submitted job $job"
    slurm_wait_job "$job" 600 'COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY'
    tail -n 8 "$work/run.out"
    expect_finished_run "$work/run" "$job"
    grep -q 'shardtune env: 4 ranks on 1 node' "$work/run.out" || fail "srun did not start 4 ranks"
    metrics="$work/run/metrics.jsonl"
    expect_learned --file "$metrics" --loss-drop 0.05 --at-least eval/rewards/accuracies=0.9
    ;;
  crashed_ranks_restart)
    # Every rank of the first training step dies by SIGSEGV as it starts (as a rank that crashes
    # in Open MPI's start-up does, after which Slurm may end the whole step): the step's status
    # is the signal's (139), and launch.slurm restarts it as it restarts killed ranks.
    shardtune=$work/crash_once.sh
    cat >"$shardtune" <<SCRIPT
#!/usr/bin/env bash
if [ "\$1" = train ] && mkdir "$work/crashed.\${SLURM_PROCID:-0}" 2>/dev/null; then kill -SEGV \$\$; fi
exec "$bin" "\$@"
SCRIPT
    chmod +x "$shardtune"
    job=$(submit "$work/run" --train.max_steps=10)
    slurm_wait_job "$job" 600 'COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY'
    tail -n 8 "$work/run.out"
    grep -Eq 'training failed \(exit 139\) on 1 node\(s\); restarting' "$work/run.out" ||
      fail "launch.slurm did not restart the crashed step (job $(slurm_job_state "$job")): $(tail -5 "$work/run.out")"
    [ "$(ls -d "$work"/crashed.* | wc -l)" = 4 ] || fail "not every rank crashed once"
    expect_finished_run "$work/run" "$job"
    ;;
  usr1_requeues_and_resumes)
    # The uninterrupted run, the same job with a USR1 mid-run (scancel signals the ranks: they
    # save and exit 75, the script requeues the job), which must end with the same weights.
    straight=$(submit "$work/straight" --train.max_steps=30)
    job=$(submit "$work/job" --train.max_steps=30)
    wait_for_step "$work/job" 10
    usr1_requeue_matches_straight "$straight" "$job"
    ;;
  scancel_stops_for_good)
    # The reported bug: a user's scancel saved a checkpoint and then requeued the job itself.
    job=$(submit "$work/cancel" --train.max_steps=100000)
    wait_for_step "$work/cancel" 5
    scancel "$job" || fail "scancel failed"
    expect_cancelled_for_good "$job" "$work/cancel"
    grep -q 'requeueing' "$work/cancel.out" && fail "launch.slurm requeued a cancelled job"
    ;;
  time_limit_usr1_requeues_then_scancel_stops)
    # The path users get: Slurm itself sends USR1 to the batch script from --signal=B:USR1@90
    # before a 3-minute limit (up to 60 s early: between 30 and 90 s in); the ranks save, the
    # script requeues, the requeued job resumes; a scancel then ends it for good.
    sbatch_extra=(--time=3 --signal=B:USR1@90)
    job=$(submit "$work/limit" --train.max_steps=100000)
    wait_for_text "$work/limit.out" 'requeueing job' 180
    grep -q 'stop requested (SIGUSR1) - checkpoint of step' "$work/limit.out" || fail "the ranks did not save on USR1"
    wait_for_text "$work/limit.out" 'resumed from .*step_' 180
    [ "$(job_field "$job" Restarts)" = 1 ] || fail "job $job Restarts=$(job_field "$job" Restarts), expected 1"
    records=$(wc -l <"$work/limit/metrics.jsonl")
    for _ in $(seq 240); do  # the resumed job trains (a scancel during set-up is another path)
      [ "$(wc -l <"$work/limit/metrics.jsonl")" -ge $((records + 2)) ] && break
      sleep 0.25
    done
    scancel "$job" || fail "scancel failed"
    expect_cancelled_for_good "$job" "$work/limit"
    [ "$(grep -c 'requeueing job' "$work/limit.out")" = 1 ] || fail "requeued more than once"
    ;;
  chain_resumes_across_jobs)
    # Three chained jobs: the first gets USR1 at step 10 (as before its time limit), saves and
    # ends without requeueing itself; the second resumes and completes; the third finds the run
    # complete and ends at once. A fourth, eval.slurm, scores a task on the final checkpoint.
    # The config as launch.slurm's argument, after chain.sh's --.
    job_options "$work/chain"
    options=("${options[@]//CONFIG=*,SHARDTUNE=/SHARDTUNE=}")
    fix=${ST_EVAL_FIXTURES:?run through ctest}
    mapfile -t jobs < <(EVAL_TASKS="$fix/mc.jsonl" CHECKPOINTS="$work/chain/checkpoints" \
      EVAL_ARGS="--tokenizer $fix/model --max-length 96" \
      "$ST_SOURCE_DIR/slurm/chain.sh" 3 "${options[@]}" -- "$ST_SOURCE_DIR/examples/demo.ini" "${arguments[@]}" --train.max_steps=30)
    [ "${#jobs[@]}" = 4 ] || fail "chain.sh printed ${#jobs[@]} job ids: ${jobs[*]}"
    scontrol show job "${jobs[3]}" | grep -q "Dependency=afterok:${jobs[2]}" || fail "the eval job does not follow job 3"
    scontrol show job "${jobs[2]}" | grep -q "Dependency=afterany:${jobs[1]}" || fail "job 3 does not depend on job 2"
    wait_for_step "$work/chain" 10
    scancel --signal=USR1 "${jobs[0]}" || fail "scancel --signal=USR1 failed"
    slurm_wait_job "${jobs[2]}" 600 'COMPLETED|FAILED|CANCELLED|TIMEOUT'
    tail -n 12 "$work/chain.out"
    scontrol show job "${jobs[0]}" | grep -q 'ExitCode=75:0' || fail "job 1 did not end with the preemption status 75"
    scontrol show job "${jobs[0]}" | grep -q 'Restarts=0' || fail "job 1 was requeued inside a chain"
    [ "$(slurm_job_state "${jobs[1]}")" = COMPLETED ] || fail "job 2 ended $(slurm_job_state "${jobs[1]}")"
    expect_finished_run "$work/chain" "${jobs[2]}"
    grep -q 'the next job of the chain resumes' "$work/chain.out" || fail "job 1 did not hand over to the chain"
    grep -q 'resumed from .*step_' "$work/chain.out" || fail "job 2 did not resume"
    grep -q 'the run is already complete' "$work/chain.out" || fail "job 3 did not find the run complete"
    steps=$(metric --file "$work/chain/metrics.jsonl" --key loss --pick steps)
    [ "$steps" = "5 10 15 20 25 30" ] || fail "metrics.jsonl train records at steps '$steps', expected 5 10 ... 30 once each"
    slurm_wait_job "${jobs[3]}" 300 'COMPLETED|FAILED|CANCELLED|TIMEOUT'
    [ "$(slurm_job_state "${jobs[3]}")" = COMPLETED ] || fail "the eval job ended $(slurm_job_state "${jobs[3]}"): $(tail -5 "$work/chain.out")"
    grep -q 'eval: 1 task(s) on checkpoint .*step_00000030 (step 30) (fp32 on cpu, 4 rank(s))' "$work/chain.out" ||
      fail "the eval job did not score the final checkpoint on 4 ranks"
    grep -q '"acc_norm"' "$work/chain/eval/results.json" || fail "no eval/results.json beside the checkpoints"
    [ "$(wc -l <"$work/chain/eval/results.samples.jsonl")" = 7 ] || fail "expected 7 sample lines"
    ;;
  grpo_yaml_with_reward_program_requeues)
    # TRL's GRPO YAML as `sbatch launch.slurm grpo x.yaml`, 2 ranks sampling their rollouts and
    # scoring them with the user's program (reward.command after the YAML); a USR1 mid-run (the
    # ranks save, the script requeues, the job resumes) ends with the uninterrupted job's
    # completions, metrics and weights to the bit.
    tiny_model "$work/model"
    for i in 1 2 3 4 5 6 7 8; do
      echo "{\"prompt\": [{\"role\": \"user\", \"content\": \"What is $i + $i?\"}], \"solution\": \"$((i + i))\"}"
    done >"$work/prompts.jsonl"
    # The program checks it gets what TRL hands a reward function, and scores the digits' share.
    cat >"$work/reward.py" <<'PY'
import json, sys
for line in sys.stdin:
    batch = json.loads(line)
    n = len(batch["completion_ids"])
    assert len(batch["prompts"]) == n and batch["prompts"][0][0]["role"] == "user", batch["prompts"][:1]
    assert len(batch["solution"]) == n and batch["completions"][0][0]["role"] == "assistant", batch
    texts = [c[0]["content"] for c in batch["completions"]]
    print(json.dumps({"rewards": [sum(ch.isdigit() for ch in t) / max(len(t), 1) for t in texts]}), flush=True)
PY
    cat >"$work/grpo.yaml" <<YAML
model_name_or_path: $work/model
dataset_name: $work/prompts.jsonl
num_generations: 4
per_device_train_batch_size: 4
gradient_accumulation_steps: 2
max_steps: 60
learning_rate: 1.0e-3
max_completion_length: 16
temperature: 0.9
log_completions: true
logging_steps: 1
save_steps: 1000
YAML
    grpo_job() {  # grpo_job <run dir>: prints the job id
      sbatch --parsable --chdir="$work" --output="$1.out" --error="$1.out" --gpus-per-node=0 --ntasks-per-node=2 \
        --cpus-per-task=1 --export=ALL,SHARDTUNE="$bin" "$ST_SOURCE_DIR/slurm/launch.slurm" grpo "$work/grpo.yaml" \
        --output_dir "$1" --reward.command="/usr/bin/python3 $work/reward.py" --progress off --ckpt.export=true \
        --ckpt.export_dtype=fp32 || fail "sbatch refused launch.slurm grpo"
    }
    straight=$(grpo_job "$work/straight")
    job=$(grpo_job "$work/job")
    wait_for_step "$work/job" 10
    usr1_requeue_matches_straight "$straight" "$job"
    grep -q 'train: grpo (dapo, 4 completions per prompt, beta 0) on 2 rank' "$work/job.out" || fail "not a 2-rank grpo run"
    cmp "$work/straight/completions.jsonl" "$work/job/completions.jsonl" || fail "the requeued job sampled other completions"
    same_metrics --expected "$work/straight/metrics.jsonl" --actual "$work/job/metrics.jsonl" --tolerance 0
    grep -q '"rewards/reward_program/mean"' "$work/job/metrics.jsonl" || fail "no reward program metrics"
    ;;
  *) fail "unknown case" ;;
esac
echo "PASS [$case_name]"
