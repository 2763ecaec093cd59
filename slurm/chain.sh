#!/bin/bash
# Submits N jobs of launch.slurm, each starting when the previous one has ended however it
# ended (--dependency=afterany), for a run longer than the partition's time limit. Every job
# resumes from the newest checkpoint (--resume auto); a job hit by its time limit saves
# (USR1 five minutes ahead) and ends instead of requeueing itself; a job that finds the run
# complete ends at once. Prints the job ids.
#   slurm/chain.sh N [sbatch options...] -- CONFIG [overrides...]   (launch.slurm's arguments)
#   slurm/chain.sh 4 --time=24:00:00 -- run.yaml
#   slurm/chain.sh 4 --time=24:00:00 -- dpo trl_dpo.yaml --learning_rate 1e-6
# SHARDTUNE_LAUNCH: the batch script (default: launch.slurm beside this file).
# EVAL_TASKS=a.jsonl,b.jsonl and CHECKPOINTS=<the run's checkpoint directory>: one more job,
# eval.slurm beside this file, scores those tasks on the final checkpoint once the last job
# succeeded (afterok); EVAL_ARGS are its `shardtune eval` options (e.g. "--tokenizer DIR").
# SHARDTUNE_MPI (srun's --mpi plugin) and the other launch.slurm variables reach every job.
set -euo pipefail
count=${1:?usage: chain.sh N [sbatch options...] -- CONFIG [overrides...]}
shift
[[ "$count" =~ ^[1-9][0-9]*$ ]] || { echo "chain.sh: N must be a positive number of jobs, got '$count'" >&2; exit 2; }
sbatch_args=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do sbatch_args+=("$1"); shift; done
[ $# -gt 0 ] && shift
script=${SHARDTUNE_LAUNCH:-$(dirname "$(realpath "$0")")/launch.slurm}
# The config: launch.slurm's first argument (after a TRL trainer word), else CONFIG in the
# environment the jobs get; without either every job would fail at once.
if [ $# -eq 0 ] && [ -z "${CONFIG:-}" ] && [[ " ${sbatch_args[*]} " != *CONFIG=* ]]; then
  echo "chain.sh: give the run's config after --: chain.sh $count ${sbatch_args[*]} -- run.yaml" >&2
  exit 2
fi
export SHARDTUNE_REQUEUE=0  # reaches the jobs through sbatch's default --export=ALL

previous=
for _ in $(seq "$count"); do
  dependency=()
  [ -n "$previous" ] && dependency=(--dependency=afterany:"$previous")
  previous=$(sbatch --parsable --no-requeue "${dependency[@]}" "${sbatch_args[@]}" "$script" "$@")
  previous=${previous%%;*}  # "id;cluster" on federated clusters
  echo "$previous"
done
if [ -n "${EVAL_TASKS:-}" ]; then
  : "${CHECKPOINTS:?chain.sh: EVAL_TASKS needs CHECKPOINTS, the checkpoint directory of the run}"
  export EVAL_TASKS CHECKPOINTS
  read -r -a eval_args <<<"${EVAL_ARGS:-}"
  job=$(sbatch --parsable --dependency=afterok:"$previous" "${sbatch_args[@]}" \
    "$(dirname "$(realpath "$0")")/eval.slurm" "${eval_args[@]}")
  echo "${job%%;*}"
fi
