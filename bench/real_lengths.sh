#!/usr/bin/env bash
# Real preference/SFT lengths on one GPU, ours against the peer on the same pairs, one command:
# the P0 peer (bench/peer_transformers.py --data: transformers + TRL-style DPO or SFT, each
# micro-batch padded to its longest row) at its best micro-batch that fits (1, 2, 4, ... until
# it runs out of memory or PEER_MAX_MB), then `shardtune bench` on the same synthetic pairs:
# plain rows at that micro-batch, packed and packed+shared (DPO) rows cut by a token budget
# (TOKENS, default -1 = auto; BUDGET_PAIRS pairs per step, default 32). Prints markdown rows: logical tokens/s (real tokens only), the
# ratio to P0, MFU on logical tokens (ours; the bench's), peak memory. GPU machines only.
# Usage: bench/real_lengths.sh BUILD_DIR [preset=llama-3.2-1b] [stage=dpo] [lengths=ultrafeedback]
#        [steps=10] [-- extra shardtune bench arguments]
set -euo pipefail
build=${1:?usage: bench/real_lengths.sh BUILD_DIR [preset] [stage] [lengths] [steps] [-- bench args]}
preset=${2:-llama-3.2-1b} stage=${3:-dpo} lengths=${4:-ultrafeedback} steps=${5:-10}
shift $(($# < 5 ? $# : 5))
[ "${1:-}" = -- ] && shift
here=$(cd "$(dirname "$0")" && pwd)
work=${ST_BENCH_WORK:-/tmp/shardtune-real-lengths}/$preset-$stage-$lengths
# shellcheck source=bench/bench_lib.sh
source "$here/bench_lib.sh"

# The pairs: those of the plain run at micro-batch 1 (pair i depends only on the seed and i).
lengths_bench data 1 "$@" >/dev/null
data=$work/data/data/train

best_mb=0 best_tok=0 best_mem=0
for mb in 1 2 4 8 16 32; do
  [ "$mb" -gt "${PEER_MAX_MB:-32}" ] && break
  if ! out=$(python3 "$here/peer_transformers.py" --config "$work/data/config.json" --data "$data" --stage "$stage" \
      --micro-batch "$mb" --steps "$steps" --warmup 3 2>&1); then
    grep -q "out of memory\|OutOfMemoryError" <<<"$out" || { echo "$out" | tail -20; exit 1; }
    echo "peer: micro-batch $mb does not fit"
    break
  fi
  echo "$out"
  tok=$(figure "tokens/s" 0 "$out")
  if awk -v a="$tok" -v b="$best_tok" 'BEGIN { exit !(a > b) }'; then
    best_mb=$mb best_tok=$tok best_mem=$(figure "peak memory" 1 "$out")
  fi
done
[ "$best_mb" -gt 0 ] || { echo "real_lengths: the peer fits no micro-batch" >&2; exit 1; }

rows="| $preset | $stage | $lengths | P0 (padded to the longest row) | mb $best_mb | $best_tok | 1.00x | - | $best_mem |"
add_row() {  # add_row LABEL BATCH
  rows+=$'\n'"| $preset | $stage | $lengths | $1 | $2 | $tok | $(awk -v a="$tok" -v b="$best_tok" 'BEGIN { printf "%.2fx", a / b }') | $mfu | $mem |"
}
lengths_bench plain "$best_mb" --data.packing=false --dpo.share_prompt=false "$@"
add_row "plain rows" "mb $best_mb"
budget=${TOKENS:--1} budget_pairs=${BUDGET_PAIRS:-32}  # pairs per step, cut into micro-batches by the budget
lengths_bench packed "$budget_pairs" --data.packing=true --dpo.share_prompt=false --data.micro_batch_tokens="$budget" "$@"
add_row "packed, token budget" "$budget_pairs pairs/step, tokens $budget"
if [ "$stage" = dpo ]; then
  lengths_bench packed_shared "$budget_pairs" --data.packing=true --dpo.share_prompt=true --data.micro_batch_tokens="$budget" "$@"
  add_row "packed+shared, token budget" "$budget_pairs pairs/step, tokens $budget"
fi
echo "real_lengths: $preset $stage on $lengths lengths, median of $steps steps (logical tokens/s)"
echo "| model | stage | lengths | run | batch | tokens/s | vs P0 | MFU | peak GiB |"
echo "|---|---|---|---|---|---|---|---|---|"
echo "$rows"
