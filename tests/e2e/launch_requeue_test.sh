#!/usr/bin/env bash
# launch_requeue_test.sh <shardtune binary> <case>: slurm/launch.slurm's preemption flow with
# srun and scontrol stubbed (srun -> mpirun on 2 ranks; scontrol records the requeue): USR1 to
# the batch script reaches the ranks, the job exits 75 and requeues itself, and the second run
# of the script resumes and ends with the weights of an uninterrupted run. The same script
# under a real Slurm is exercised by the Slurm e2e test.
# shellcheck source=harness.sh
source "$(dirname "$0")/harness.sh"
script="$ST_SOURCE_DIR/slurm/launch.slurm"
mkdir -p "$work/bin"
cat >"$work/bin/srun" <<STUB
#!/bin/bash
while [[ "\$1" == --* ]]; do echo "\$1" >>"$work/srun.log"; shift; done  # --mpi=pmix, --nodes, --ntasks
exec "$mpiexec" -np 2 --oversubscribe "\$@"
STUB
cat >"$work/bin/scontrol" <<STUB
#!/bin/bash
echo "\$*" >>"$work/scontrol.log"
STUB
chmod +x "$work/bin/srun" "$work/bin/scontrol"
synth_data --dir "$work/data" --pairs 400
cat >"$work/run.ini" <<INI
[model]
preset = debug
[data]
train = $work/data/train
val = $work/data/val
[train]
micro_batch = 2
grad_accum = 2
max_steps = 150
log_every = 1
[ckpt]
export = true
export_dtype = fp32
INI

# launch <output dir>: the batch script as Slurm runs it (exec: signals reach the script itself).
launch() {
  exec env PATH="$work/bin:$PATH" CONFIG="$work/run.ini" SHARDTUNE="$bin" SLURM_JOB_ID=4242 \
    bash "$script" --train.output_dir="$1" --progress off >"$1.log" 2>&1
}

case "$case_name" in
  usr1_requeues_and_resumes)
    (launch "$work/straight") || fail "uninterrupted run failed: $(tail -5 "$work/straight.log")"
    (launch "$work/job") &
    job=$!
    for _ in $(seq 600); do
      [ -f "$work/job/metrics.jsonl" ] && [ "$(wc -l <"$work/job/metrics.jsonl")" -ge 5 ] && break
      sleep 0.05
    done
    kill -USR1 "$job"
    wait "$job"
    rc=$?
    tail -n 5 "$work/job.log"
    [ "$rc" -eq 75 ] || fail "the preempted job exited $rc, expected 75"
    grep -q '^requeue 4242$' "$work/scontrol.log" || fail "no scontrol requeue"
    grep -q 'requeueing job 4242' "$work/job.log" || fail "the script did not say it requeues"
    (launch "$work/job") || fail "the requeued job failed: $(tail -5 "$work/job.log")"
    grep -q 'resumed from .*step_' "$work/job.log" || fail "the requeued job did not resume"
    cmp "$work/straight/export/model.safetensors" "$work/job/export/model.safetensors" ||
      fail "preempted + requeued run ends with other weights than an uninterrupted one"
    ;;
  config_argument_and_changed_config_refused)
    # The config as the script's argument (a YAML of LlamaFactory's keys and shardtune's own),
    # srun's MPI plugin from SHARDTUNE_MPI (eval.slurm's too; chain.sh wants the config); then
    # the same run directory under a changed config:
    # --resume auto continues the same run only, so it is refused with the fix.
    cat >"$work/run.yaml" <<YAML
stage: dpo
finetuning_type: full
model.preset: debug
data.train: $work/data/train
learning_rate: 1.0e-3
per_device_train_batch_size: 2
max_steps: 4
logging_steps: 1
output_dir: $work/yaml_run
YAML
    cd "$work" || fail "cd"
    env PATH="$work/bin:$PATH" SHARDTUNE="$bin" SHARDTUNE_MPI=pmi2 SLURM_JOB_ID=4243 \
      bash "$script" run.yaml --progress off >"$work/yaml.log" 2>&1 || fail "the YAML job failed: $(tail -5 "$work/yaml.log")"
    grep -q '^--mpi=pmi2$' "$work/srun.log" || fail "srun did not get --mpi=pmi2: $(cat "$work/srun.log")"
    grep -q "train: 4 steps in" "$work/yaml.log" || fail "the YAML job did not train 4 steps"
    grep -q "lr = 0.001  # run.yaml:5 (learning_rate)" "$work/yaml_run/config.resolved.ini" || fail "resolved config"
    sed -i 's/learning_rate: 1.0e-3/learning_rate: 2.0e-3/; s/max_steps: 4/max_steps: 6/' "$work/run.yaml"
    env PATH="$work/bin:$PATH" SHARDTUNE="$bin" SLURM_JOB_ID=4244 \
      bash "$script" run.yaml --progress off >"$work/changed.log" 2>&1
    rc=$?
    tail -n 8 "$work/changed.log"
    [ "$rc" -eq 2 ] || fail "a changed config over the run exited $rc, expected 2"
    grep -q "holds a run of another config, which --resume auto does not continue" "$work/changed.log" ||
      fail "the refusal does not say why"
    grep -q "optim.lr = 0.001 there, 0.002 now" "$work/changed.log" || fail "the refusal does not name the key"
    [ "$(wc -l <"$work/yaml_run/metrics.jsonl")" -eq 4 ] || fail "the refused job touched the run's metrics"
    # More steps of the same run are its continuation.
    sed -i 's/learning_rate: 2.0e-3/learning_rate: 1.0e-3/' "$work/run.yaml"
    env PATH="$work/bin:$PATH" SHARDTUNE="$bin" SLURM_JOB_ID=4245 \
      bash "$script" run.yaml --progress off >"$work/more.log" 2>&1 || fail "more steps failed: $(tail -5 "$work/more.log")"
    grep -q "resumed from .*step_00000004" "$work/more.log" || fail "more steps did not resume the run"
    # eval.slurm takes the checkpoints and the tasks as arguments, and srun's plugin from
    # SHARDTUNE_MPI as launch.slurm does (shardtune stubbed by echo: the command it runs).
    : >"$work/srun.log"
    env PATH="$work/bin:$PATH" SHARDTUNE=/bin/echo SHARDTUNE_MPI=pmi2 bash "$ST_SOURCE_DIR/slurm/eval.slurm" \
      "$work/yaml_run/checkpoints" a.jsonl,b.jsonl --limit 5 >"$work/eval.log" 2>&1 || fail "eval.slurm: $(tail -3 "$work/eval.log")"
    grep -q '^--mpi=pmi2$' "$work/srun.log" || fail "eval.slurm did not pass SHARDTUNE_MPI: $(cat "$work/srun.log")"
    grep -q "^eval --checkpoint $work/yaml_run/checkpoints --tasks a.jsonl,b.jsonl --output $work/yaml_run/eval/results.json .* --limit 5$" \
      "$work/eval.log" || fail "eval.slurm ran: $(cat "$work/eval.log")"
    # chain.sh without a config refuses before it submits anything.
    bash "$ST_SOURCE_DIR/slurm/chain.sh" 2 --time=1:00:00 >"$work/chain.log" 2>&1 && fail "chain.sh without a config submitted"
    grep -q "give the run's config after --: chain.sh 2 --time=1:00:00 -- run.yaml" "$work/chain.log" ||
      fail "chain.sh's refusal: $(cat "$work/chain.log")"
    ;;
  *) fail "unknown case" ;;
esac
echo "PASS [$case_name]"
