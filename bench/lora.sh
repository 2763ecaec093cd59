#!/usr/bin/env bash
# LoRA next to full fine-tuning of the same model, shape and batch, in one command: `shardtune
# bench` with train.method = full and = lora (r, targets below), step time, tokens/s and peak
# memory side by side, and the ratio. Runs on the CPU (rows for any machine) and on a GPU; the
# transformers + peft peer is bench/vs_peer.sh's job on GPU machines.
# Usage: bench/lora.sh BUILD_DIR [preset=bench-100m] [seq=256] [micro_batch=1] [stage=dpo] [steps=3]
#        [r=16] [targets=q,k,v,o]
set -euo pipefail
build=${1:?usage: bench/lora.sh BUILD_DIR [preset] [seq] [micro_batch] [stage] [steps] [r] [targets]}
preset=${2:-bench-100m} seq=${3:-256} micro_batch=${4:-1} stage=${5:-dpo} steps=${6:-3} r=${7:-16}
targets=${8:-q,k,v,o}
work=${ST_BENCH_WORK:-/tmp/shardtune-lora-bench}
common=(--preset "$preset" --seq "$seq" --micro-batch "$micro_batch" --stage "$stage" --steps "$steps" --warmup 1
        --work "$work")

run_bench() {  # run_bench <label> [config keys...]: prints the figures, sets step/tok/mem
  local label=$1 out
  shift
  out=$("$build/app/shardtune" bench "${common[@]}" "$@" 2>&1) || { echo "$out"; echo "lora.sh: $label failed" >&2; exit 1; }
  grep -v '^\[r0' <<<"$out" | sed "s/^bench:/bench ($label):/"
  step=$(awk '/^  step time +[0-9]/ {print $3}' <<<"$out")
  tok=$(awk '/^  tokens\/s/ {print $2}' <<<"$out")
  mem=$(awk '/^  peak memory/ {print $3}' <<<"$out")
}

run_bench "full" --train.method=full
full_step=$step full_tok=$tok full_mem=$mem
run_bench "lora r $r on $targets" --train.method=lora --lora.r="$r" --lora.target_modules="$targets"
printf '\n%-28s %12s %12s %16s\n' "$preset $stage seq $seq mb $micro_batch" "step s" "tokens/s" "peak memory GiB"
printf '%-28s %12s %12s %16s\n' full "$full_step" "$full_tok" "$full_mem" "lora r $r ($targets)" "$step" "$tok" "$mem"
awk -v a="$full_tok" -v b="$tok" -v m="$full_mem" -v n="$mem" \
  'BEGIN { printf "lora / full: %.2fx tokens/s, %.2fx peak memory\n", b / a, n / m }'
