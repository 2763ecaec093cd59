#!/usr/bin/env bash
# The optimizer-memory tables of docs/tuning.md, from `shardtune estimate`: per-GPU memory of
# Llama-3.1-8B and -70B full SFT and DPO (micro-batch 1, recompute full) at 2k/4k/8k tokens on
# four cluster shapes, with each optimizer choice. Usage: scripts/memory_table.sh SHARDTUNE
set -euo pipefail
shardtune=${1:?usage: scripts/memory_table.sh SHARDTUNE}
in_backward=(--optim.step_in_backward=true --optim.grad_clip=0 --train.grad_accum=1)
choices=("adamw|" "adamw8bit|--optim.name=adamw8bit" "step in backward|${in_backward[*]}"
         "adamw8bit + in backward|--optim.name=adamw8bit ${in_backward[*]}" "offload cpu|--optim.offload=cpu")
per_gpu() {  # per_gpu <nodes> <ranks per node> <gib> [keys...]: "<GiB>" or "<GiB> ✗" when it does not fit
  local nodes=$1 ranks=$2 gib=$3
  shift 3
  "$shardtune" estimate --world "${nodes}x${ranks}" --gpu-memory "$gib" --train.micro_batch 1 \
    --train.recompute=full "$@" | awk '/^per GPU:/ { printf "%.1f%s", $3, ($0 ~ /does NOT fit/ ? " ✗" : "") }'
}
for shape in "1 1 80" "1 8 40" "2 8 40" "2 8 80"; do
  read -r nodes ranks gib <<<"$shape"
  echo
  echo "**$nodes x $ranks x $gib GB** (GiB per GPU; ✗ = does not fit)"
  echo
  header="| model | stage | tokens |"
  rule="|---|---|---|"
  for choice in "${choices[@]}"; do header+=" ${choice%%|*} |"; rule+="---|"; done
  echo "$header"
  echo "$rule"
  for model in 8b 70b; do
    for stage in sft dpo; do
      for tokens in 2048 4096 8192; do
        row="| ${model^^} | $stage | $tokens |"
        for choice in "${choices[@]}"; do
          read -r -a keys <<<"${choice#*|}"
          row+=" $(per_gpu "$nodes" "$ranks" "$gib" --model.preset "llama-3.1-$model" --train.stage "$stage" \
            --data.cutoff_len "$tokens" "${keys[@]}") |"
        done
        echo "$row"
      done
    done
  done
done
