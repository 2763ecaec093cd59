#!/usr/bin/env bash
# Unpacked vs packed vs packed+shared rows (data.packing, dpo.share_prompt) on the two
# realistic length distributions of `shardtune synth --lengths` (ultrafeedback: short prompts,
# long responses; long_prompt: prompts ~1500 tokens, responses ~200), side by side in one run
# through `shardtune bench`: each laid-out row under the masked oracle (model.attention =
# masked, the baseline) and varlen attention, then packed+shared micro-batches cut by a token
# budget (data.micro_batch_tokens; TOKENS, default -1 = auto). Prints logical tokens/s (the
# tokens of the unpacked pairs, so every layout is compared on the same work), the padding
# fraction of the computed rows, the peak memory, and each layout's speed-up over unpacked.
# Usage: bench/packing.sh BUILD_DIR [preset=debug] [micro_batch=8] [steps=4] [-- extra bench args]
# STAGE=sft for SFT (no prompt sharing); LENGTHS="ultrafeedback long_prompt" by default.
# (GPU: bench/packing.sh build llama-3.2-1b 4 10; CPU: the defaults; docs/performance.md)
set -euo pipefail
build=${1:?usage: bench/packing.sh BUILD_DIR [preset] [micro_batch] [steps] [-- bench args]}
preset=${2:-debug} micro_batch=${3:-8} steps=${4:-4}
shift $(($# < 4 ? $# : 4))
[ "${1:-}" = -- ] && shift
work=${ST_BENCH_WORK:-/tmp/shardtune-packing}
# shellcheck source=bench/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
stage=${STAGE:-dpo} tokens_budget=${TOKENS:--1}
table=""
for lengths in ${LENGTHS:-ultrafeedback long_prompt}; do
  cutoff=$(lengths_cutoff "$lengths")
  base=""
  rows_list="unpacked packed:masked packed packed+shared:masked packed+shared packed+shared+budget"
  [ "$stage" = sft ] && rows_list="unpacked packed:masked packed packed+budget"
  for rows in $rows_list; do
    layout=(--data.packing=false --dpo.share_prompt=false)
    case "${rows%%:*}" in
      packed) layout=(--data.packing=true --dpo.share_prompt=false) ;;
      packed+shared) layout=(--data.packing=true --dpo.share_prompt=true) ;;
      packed+budget) layout=(--data.packing=true --data.micro_batch_tokens="$tokens_budget") ;;
      packed+shared+budget) layout=(--data.packing=true --dpo.share_prompt=true --data.micro_batch_tokens="$tokens_budget") ;;
    esac
    [ "${rows#*:}" = masked ] && layout+=(--model.attention=masked)
    out=$(mpirun --allow-run-as-root --oversubscribe -np "${NP:-1}" "$build/app/shardtune" bench --preset "$preset" \
      --stage "$stage" --lengths "$lengths" --seq "$cutoff" --micro-batch "$micro_batch" --steps "$steps" --warmup 2 \
      --phase-times false --work "$work/$stage-$lengths-${rows//:/-}" "${layout[@]}" "$@" 2>&1) || { echo "$out"; exit 1; }
    grep -E '^(bench:|  )|auto ->' <<<"$out"
    tokens=$(figure "tokens/s" 0 "$out") padding=$(figure "padding" 4 "$out") memory=$(figure "peak memory" 1 "$out")
    [ -z "$base" ] && base=$tokens
    table+=$(awk -v l="$lengths" -v r="$rows" -v t="$tokens" -v b="$base" -v p="$padding" -v m="$memory" \
      'BEGIN { printf "\n| %-14s | %-22s | %12.1f | %8.2fx | %9s | %9.2f |", l, r, t, t / b, p, m }')
  done
done
echo "packing: $preset $stage, micro-batch $micro_batch pairs (budget rows: data.micro_batch_tokens=$tokens_budget), ${NP:-1} rank(s), median of $steps steps each"
printf '| %-14s | %-22s | %12s | %9s | %9s | %9s |\n' lengths rows "tokens/s" "vs unpacked" padding "peak GiB"
echo "|---|---|---|---|---|---|"
echo "${table#$'\n'}"
