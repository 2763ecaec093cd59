#!/usr/bin/env bash
# `shardtune bench` and its transformers peers (bench/peer_transformers.py, the ladder P0 P1 P2 or
# PEER_LEVELS) on the same GPU, shape and batch, one after the other in one command; prints all
# and the ratios. Throughput runs: no phase syncs on either side (the bench's breakdown is
# `shardtune bench --phase-times true`, a separate run). GPU machines only.
# Usage: bench/vs_peer.sh BUILD_DIR [preset=llama-3.2-1b] [seq=2048] [micro_batch=1] [stage=dpo]
#        [steps=20] [-- extra shardtune bench arguments]; PEER_ARGS: extra peer arguments. LoRA:
#        PEER_ARGS="--lora-r 16" bench/vs_peer.sh build llama-3.1-8b 2048 2 dpo 20 -- --train.method=lora
set -euo pipefail
build=${1:?usage: bench/vs_peer.sh BUILD_DIR [preset] [seq] [micro_batch] [stage] [steps] [-- bench args]}
preset=${2:-llama-3.2-1b} seq=${3:-2048} micro_batch=${4:-1} stage=${5:-dpo} steps=${6:-20}
shift $(($# < 6 ? $# : 6))
[ "${1:-}" = -- ] && shift
work=${ST_BENCH_WORK:-/tmp/shardtune-vs-peer}
here=$(cd "$(dirname "$0")" && pwd)
common=(--seq "$seq" --micro-batch "$micro_batch" --stage "$stage" --steps "$steps" --warmup 3)

# On failure the whole output, the rank-prefixed log lines (where the reason is) included.
ours=$("$build/app/shardtune" bench --preset "$preset" "${common[@]}" --phase-times false --work "$work" "$@" 2>&1) ||
  { echo "$ours"; echo "vs_peer: shardtune bench failed" >&2; exit 1; }
ours=$(grep -v '^\[r0' <<<"$ours")
echo "$ours"
# shellcheck source=bench/bench_lib.sh
source "$here/bench_lib.sh"
our_step=$(figure "step time" 1 "$ours") our_mem=$(figure "peak memory" 1 "$ours") our_tok=$(figure "tokens/s" 0 "$ours")
our_mfu=$(awk '/^  MFU/ {sub("%", "", $2); print $2}' <<<"$ours")
# Above the peak means the step time missed device work: a timing bug, not a result.
if awk -v m="$our_mfu" 'BEGIN { exit !(m > 100) }'; then
  echo "vs_peer: MFU $our_mfu% is above the GPU's peak; the step time misses device work" >&2
  exit 1
fi
table=""
for level in ${PEER_LEVELS:-P0 P1 P2}; do
  peer_status=0
  # shellcheck disable=SC2086 # PEER_ARGS: extra peer arguments, e.g. "--lora-r 16" beside -- --train.method=lora
  peer=$(python3 "$here/peer_transformers.py" --config "$work/config.json" "${common[@]}" --level "$level" ${PEER_ARGS:-} 2>&1) ||
    peer_status=$?
  echo "$peer"
  if [ "$peer_status" != 0 ]; then
    table+=$(printf '\n  %-4s did not finish (exit %s)' "$level" "$peer_status")
    continue
  fi
  peer_step=$(figure "step time" 1 "$peer") peer_mem=$(figure "peak memory" 1 "$peer") peer_tok=$(figure "tokens/s" 0 "$peer")
  # The same rows and FLOPs per step: a peer's MFU scales ours by the step-time ratio.
  table+=$(awk -v l="$level" -v os="$our_step" -v ps="$peer_step" -v ot="$our_tok" -v pt="$peer_tok" \
    -v om="$our_mem" -v pm="$peer_mem" -v mfu="$our_mfu" 'BEGIN {
    printf "\n  %-4s %10.1f %10.1f %7.2fx %6.1f%% %6.1f%% %8.2f %8.2f", l, ot, pt, ot / pt, mfu, mfu * os / ps, om, pm }')
done
echo "vs_peer: $preset $stage seq $seq micro-batch $micro_batch (median of $steps steps each)"
printf '  %-4s %10s %10s %8s %7s %7s %8s %8s' peer "ours tok/s" "peer tok/s" ratio "MFU us" "MFU pr" "GiB us" "GiB pr"
echo "$table"
