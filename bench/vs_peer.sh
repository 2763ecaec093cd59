#!/usr/bin/env bash
# `shardtune bench` and its transformers peer (bench/peer_transformers.py) on the same GPU, shape
# and batch, one after the other in one command; prints both and the ratios. GPU machines only.
# Usage: bench/vs_peer.sh BUILD_DIR [preset=llama-3.2-1b] [seq=2048] [micro_batch=1] [stage=dpo]
#        [steps=10] [-- extra shardtune bench arguments]
set -euo pipefail
build=${1:?usage: bench/vs_peer.sh BUILD_DIR [preset] [seq] [micro_batch] [stage] [steps] [-- bench args]}
preset=${2:-llama-3.2-1b} seq=${3:-2048} micro_batch=${4:-1} stage=${5:-dpo} steps=${6:-10}
shift $(($# < 6 ? $# : 6))
[ "${1:-}" = -- ] && shift
work=${ST_BENCH_WORK:-/tmp/shardtune-vs-peer}
here=$(cd "$(dirname "$0")" && pwd)
common=(--seq "$seq" --micro-batch "$micro_batch" --stage "$stage" --steps "$steps" --warmup 3)

ours=$("$build/app/shardtune" bench --preset "$preset" "${common[@]}" --work "$work" "$@" 2>&1 | grep -v '^\[r0') \
  || { echo "$ours"; exit 1; }
echo "$ours"
peer_status=0
peer=$(python3 "$here/peer_transformers.py" --config "$work/config.json" "${common[@]}" 2>&1) || peer_status=$?
echo "$peer"
[ "$peer_status" = 0 ] || { echo "vs_peer: the peer did not finish (exit $peer_status)"; exit 0; }

figure() { awk -v key="$1" -v back="$2" '$0 ~ "^  "key {print $(NF - back)}' <<<"$3" | head -1; }
our_step=$(figure "step time" 1 "$ours") peer_step=$(figure "step time" 1 "$peer")
our_mem=$(figure "peak memory" 1 "$ours") peer_mem=$(figure "peak memory" 1 "$peer")
our_tok=$(figure "tokens/s" 0 "$ours") peer_tok=$(figure "tokens/s" 0 "$peer")
our_mfu=$(awk '/^  MFU/ {sub("%", "", $2); print $2}' <<<"$ours")
# The same rows and FLOPs per step: the peer's MFU scales ours by the step-time ratio.
awk -v os="$our_step" -v ps="$peer_step" -v ot="$our_tok" -v pt="$peer_tok" -v om="$our_mem" -v pm="$peer_mem" \
    -v mfu="$our_mfu" -v what="$preset $stage seq $seq micro-batch $micro_batch" 'BEGIN {
  printf "vs_peer: %s\n", what
  printf "  %-14s %12s %12s %10s\n", "", "shardtune", "transformers", "ratio"
  printf "  %-14s %12.1f %12.1f %9.2fx\n", "tokens/s", ot, pt, ot / pt
  printf "  %-14s %12.4f %12.4f %9.2fx\n", "step time [s]", os, ps, os / ps
  printf "  %-14s %11.1f%% %11.1f%%\n", "MFU", mfu, mfu * os / ps
  printf "  %-14s %12.2f %12.2f %9.2fx\n", "peak mem [GiB]", om, pm, om / pm
}'
