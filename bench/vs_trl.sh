#!/usr/bin/env bash
# shardtune against TRL itself on real preference lengths, one GPU, the same pairs, one command
# (issue 56's principal row): `shardtune bench` with packed + prompt-shared rows cut by the auto
# token budget (BUDGET_PAIRS pairs per step, default 32), then TRL's DPOTrainer at its best
# micro-batch that fits (bench/trl_peer.py climbs TRL_LADDER), Liger kernels off and on (LIGER),
# then the padded P0 loop (bench/peer_transformers.py --data) at TRL's best micro-batch. Prints a
# markdown row as each run ends (logical tokens/s, ours over it, MFU on logical tokens, peak GiB)
# and the goals: >= 40,000 logical tokens/s, >= 2.0x TRL's best, at <= its peak memory.
# MFU of a peer = ours x (its tokens/s / ours): the same rows, the same FLOPs per logical token.
# Usage: bench/vs_trl.sh BUILD_DIR [preset=llama-3.2-1b] [lengths=ultrafeedback] [steps=10] [-- bench args]
# TRL_LADDER=4,8,16,32,64,128 TRL_STEPS=4 TRL_WARMUP=2 LIGER="off on" (Liger's ladder starts at the best
# rung without it). PEER_DEVICE=cpu is the dry run of the GPU plan: TRL and the P0 loop on the CPU in
# fp32, Liger refused (its kernels are Triton): a run that fails leaves its row "did not finish".
set -euo pipefail
build=${1:?usage: bench/vs_trl.sh BUILD_DIR [preset] [lengths] [steps] [-- bench args]}
preset=${2:-llama-3.2-1b} lengths=${3:-ultrafeedback} steps=${4:-10}
shift $(($# < 4 ? $# : 4))
[ "${1:-}" = -- ] && shift
stage=dpo device=${PEER_DEVICE:-cuda}
here=$(cd "$(dirname "$0")" && pwd)
work=${ST_BENCH_WORK:-/tmp/shardtune-vs-trl}/$preset-$lengths
mkdir -p "$work"
# shellcheck source=bench/bench_lib.sh
source "$here/bench_lib.sh"

row() {  # row RUN BATCH TOKENS_PER_S MFU PEAK_GIB (ours over it: "-" when ours did not finish)
  awk -v p="$preset" -v l="$lengths" -v run="$1" -v batch="$2" -v t="$3" -v ours="$our_tok" -v mfu="$4" -v peak="$5" \
    'BEGIN { ratio = ours == "" ? "-" : sprintf("%.2fx", ours / t)
             printf "| %s | dpo | %s | %s | %s | %.1f | %s | %s | %s |\n", p, l, run, batch, t, ratio, mfu, peak }'
}
did_not_finish() { echo "| $preset | dpo | $lengths | $1 | $2 | did not finish | - | - | - |"; }
peer_mfu() {
  [ -n "$our_tok" ] || { echo -; return; }
  awk -v m="${our_mfu%\%}" -v t="$1" -v ours="$our_tok" 'BEGIN { printf "%.1f%%", m * t / ours }'
}

echo "| model | stage | lengths | run | batch | logical tokens/s | ours over it | MFU | peak GiB |"
echo "|---|---|---|---|---|---|---|---|---|"
budget_pairs=${BUDGET_PAIRS:-32}
ours_run="shardtune packed+shared, auto token budget" our_tok="" our_mem="" our_mfu="" status=0
if lengths_bench ours "$budget_pairs" --data.packing=true --dpo.share_prompt=true --data.micro_batch_tokens=-1 "$@" \
    >"$work.ours.log"; then
  grep -v '^|' "$work.ours.log"
  our_tok=$tok our_mem=$mem our_mfu=$mfu
  row "$ours_run" "$budget_pairs pairs/step" "$tok" "$mfu" "$mem"
else  # TRL still runs on the pairs the bench wrote before it failed
  cat "$work.ours.log"
  did_not_finish "$ours_run" "$budget_pairs pairs/step"
  status=1
fi
data=$work/ours/data/train config=$work/ours/config.json
if [ ! -f "$data/manifest.json" ] || [ ! -f "$config" ]; then echo "vs_trl: no pairs for TRL in $data" >&2; exit 1; fi

trl_best_tok=0 trl_best_mem=0 trl_best_mb=0 trl_best_run=""
ladder=${TRL_LADDER:-4,8,16,32,64,128}
for liger in ${LIGER:-off on}; do
  flags=(--config "$config" --data "$data" --device "$device" --micro-batches "$ladder"
         --steps "${TRL_STEPS:-4}" --warmup "${TRL_WARMUP:-2}")
  [ "$liger" = on ] && flags+=(--liger)
  if ! out=$(python3 "$here/trl_peer.py" "${flags[@]}" 2>&1); then
    echo "$out" | tail -20
    did_not_finish "TRL DPOTrainer, Liger $liger" -
    continue
  fi
  grep -E '^(trl_peer|  )' <<<"$out"
  tok=$(figure "tokens/s" 0 "$out") mem=$(figure "peak memory" 1 "$out") mb=$(figure "best micro-batch" 0 "$out")
  row "TRL DPOTrainer, Liger $liger, its best micro-batch" "mb $mb" "$tok" "$(peer_mfu "$tok")" "$mem"
  if awk -v a="$tok" -v b="$trl_best_tok" 'BEGIN { exit !(a > b) }'; then
    trl_best_tok=$tok trl_best_mem=$mem trl_best_mb=$mb trl_best_run="Liger $liger, mb $mb"
  fi
  # Liger's kernels take memory and time off each token, never add: its ladder starts at this best.
  ladder=$(tr , '\n' <<<"$ladder" | awk -v m="$mb" '$1 >= m' | paste -sd,)
done

if [ "$trl_best_mb" -gt 0 ]; then
  if out=$(python3 "$here/peer_transformers.py" --config "$config" --data "$data" --stage dpo --device "$device" \
      --micro-batch "$trl_best_mb" --steps "${TRL_STEPS:-4}" --warmup "${TRL_WARMUP:-2}" 2>&1); then
    grep -E '^(peer|  )' <<<"$out"
    tok=$(figure "tokens/s" 0 "$out") mem=$(figure "peak memory" 1 "$out")
    row "P0 loop (transformers + TRL-style loss, padded)" "mb $trl_best_mb" "$tok" "$(peer_mfu "$tok")" "$mem"
  else
    echo "$out" | tail -20
    did_not_finish "P0 loop" "mb $trl_best_mb"
  fi
fi

[ "$trl_best_run" != "" ] || { echo "vs_trl: TRL finished no run" >&2; exit 1; }
[ -n "$our_tok" ] || exit "$status"
verdict() { awk "BEGIN { exit !($1) }" && echo met || echo "not met"; }
echo "| goal | measured | |"
echo "|---|---|---|"
echo "| >= 40,000 logical tokens/s | $our_tok | $(verdict "$our_tok >= 40000") |"
echo "| >= 2.0x TRL's best ($trl_best_run) | $(awk -v a="$our_tok" -v b="$trl_best_tok" 'BEGIN { printf "%.2fx", a / b }') |" \
  "$(verdict "$our_tok >= 2 * $trl_best_tok") |"
echo "| peak <= TRL's best's | $our_mem vs $trl_best_mem GiB | $(verdict "$our_mem <= $trl_best_mem") |"
