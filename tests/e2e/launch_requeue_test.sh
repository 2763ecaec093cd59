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
while [[ "\$1" == --* ]]; do shift; done  # --mpi=pmix, --nodes, --ntasks
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
  *) fail "unknown case" ;;
esac
echo "PASS [$case_name]"
