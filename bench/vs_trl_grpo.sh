#!/usr/bin/env bash
# GRPO: shardtune against TRL's GRPOTrainer (its generate path) on one GPU, the same prompts, one
# command (issue 88's speed row): PROMPTS prompts x GENERATIONS completions per step, prompts of
# PROMPT_LEN tokens, completions up to COMPLETION tokens (a random model rarely says EOS: about
# all of them run to the limit), micro-batches of MICRO completions, beta 0, the reward TRL's
# get_soft_overlong_punishment on the ids; STEPS steps measured after WARMUP. Prints a markdown
# row per side: step seconds, each phase (rollout, reward, old log-probs + reference, train),
# tokens/s/GPU as NeMo-RL counts them (prompt + completion tokens of every completion over the
# step), peak GiB, and ours over TRL. Goal: >= 3x TRL's step time at <= its peak memory.
# Usage: bench/vs_trl_grpo.sh BUILD_DIR [preset=llama-3.2-1b] [steps=3]
# PROMPTS=16 GENERATIONS=8 PROMPT_LEN=256 COMPLETION=512 MICRO=16 WARMUP=1; PEER_DEVICE=cpu is the
# dry run on the CPU (fp32, no memory figures; give a small preset: debug).
set -euo pipefail
build=${1:?usage: bench/vs_trl_grpo.sh BUILD_DIR [preset] [steps]}
preset=${2:-llama-3.2-1b} steps=${3:-3}
prompts=${PROMPTS:-16} generations=${GENERATIONS:-8} prompt_len=${PROMPT_LEN:-256} completion=${COMPLETION:-512}
micro=${MICRO:-16} warmup=${WARMUP:-1} device=${PEER_DEVICE:-cuda}
here=$(cd "$(dirname "$0")" && pwd)
work=${ST_BENCH_WORK:-/tmp/shardtune-vs-trl-grpo}/$preset
rm -rf "$work"
mkdir -p "$work"
# shellcheck source=bench/bench_lib.sh
source "$here/bench_lib.sh"
shardtune=$build/app/shardtune
dtype=bf16
[ "$device" = cuda ] || dtype=fp32

# The prompts (BOS + PROMPT_LEN - 1 ids below 512: valid in every preset's vocabulary), and the
# preset's config.json for TRL's model (`shardtune bench` writes it).
"$shardtune" synth --jsonl "$work/prompts.jsonl" --kind prompt --pairs "$prompts" --min-len $((prompt_len - 1)) \
  --max-len $((prompt_len - 1)) --seed 1 >/dev/null
"$shardtune" prep --input "$work/prompts.jsonl" --output "$work/data" --kind prompt --vocab 512 \
  --cutoff-len $((prompt_len + completion)) >/dev/null
"$shardtune" bench --preset "$preset" --stage sft --steps 1 --warmup 0 --micro-batch 1 --seq 64 --work "$work/shape" \
  >/dev/null 2>&1 || { echo "vs_trl_grpo: shardtune bench could not write $preset's config.json" >&2; exit 1; }

echo "| model | side | step s | rollout s | reward s | old logps + reference s | train s | tokens/s/GPU | peak GiB | ours over TRL |"
echo "|---|---|---|---|---|---|---|---|---|---|"
status=0
our_step=""
per_step=$((prompts * generations))
if "$shardtune" train --model.preset="$preset" --data.train="$work/data/train" --data.shuffle=false \
    --train.stage=grpo --train.dtype="$dtype" --train.micro_batch="$micro" --train.grad_accum=$((per_step / micro)) \
    --train.max_steps=$((warmup + steps)) --train.log_every=1 --train.output_dir="$work/ours" --progress off \
    --optim.lr=1e-6 --optim.schedule=constant --grpo.num_generations="$generations" \
    --grpo.max_completion_length="$completion" --grpo.reward_funcs=get_soft_overlong_punishment \
    --grpo.overlong_max_length="$completion" --grpo.overlong_cache=$((completion / 4)) >"$work/ours.log" 2>&1; then
  read -r our_step rollout reward logps train tokens peak < <(python3 - "$work/ours/metrics.jsonl" "$warmup" <<'PY'
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])][int(sys.argv[2]):]
mean = lambda key: sum(r[key] for r in records) / len(records)
step = mean("step_time_s")
phases = mean("time/rollout_s") + mean("time/reward_s") + mean("time/old_logps_s") + mean("time/reference_s")
print(f'{step:.3f} {mean("time/rollout_s"):.3f} {mean("time/reward_s"):.3f} '
      f'{mean("time/old_logps_s") + mean("time/reference_s"):.3f} {step - phases:.3f} {mean("tokens") / step:.1f} '
      f'{max(r["peak_memory_gib"] for r in records):.2f}')
PY
  )
  echo "| $preset | shardtune | $our_step | $rollout | $reward | $logps | $train | $tokens | $peak | - |"
else
  tail -20 "$work/ours.log"
  echo "| $preset | shardtune | did not finish | - | - | - | - | - | - | - |"
  status=1
fi

if out=$(python3 "$here/trl_grpo_peer.py" --config "$work/shape/config.json" --prompts "$work/prompts.jsonl" \
    --prompts-per-step "$prompts" --num-generations "$generations" --completion "$completion" --micro-batch "$micro" \
    --steps "$steps" --warmup "$warmup" --device "$device" 2>&1); then
  grep -v '^ ' <<<"$out" | tail -1
  trl_step=$(figure "step time" 1 "$out")
  ratio=$(awk -v o="$our_step" -v t="$trl_step" 'BEGIN { print o == "" ? "-" : sprintf("%.2fx", t / o) }')
  echo "| $preset | TRL GRPOTrainer (generate) | $trl_step | $(figure rollout 1 "$out") | $(figure reward 1 "$out") |" \
       "$(figure "old logps" 1 "$out") | $(figure train 1 "$out") | $(figure "tokens/s" 0 "$out") |" \
       "$(figure "peak memory" 1 "$out") | $ratio |"
else
  tail -20 <<<"$out"
  echo "| $preset | TRL GRPOTrainer (generate) | did not finish | - | - | - | - | - | - | - |"
  status=1
fi
exit $status
