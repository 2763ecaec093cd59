#!/usr/bin/env bash
# QLoRA next to LoRA on the same model, rows and ranks, in one command: `shardtune train` with
# train.method = lora and = qlora (same adapters), then per step from metrics.jsonl: the
# all-gather bytes per rank, tokens/s and peak memory, side by side with the ratios. On the CPU
# the bytes are the figure (the engine gathers what it gathers on any device); tokens/s and peak
# memory are the GPU's figures (scripts/gpu-check.sh bench-qlora runs the 8B row on one GPU).
# Usage: bench/qlora.sh BUILD_DIR [preset=bench-100m] [ranks=2] [seq=256] [steps=4] [r=16]
#        [targets=q,k,v,o,gate,up,down] [extra train keys...]
set -euo pipefail
build=${1:?usage: bench/qlora.sh BUILD_DIR [preset] [ranks] [seq] [steps] [r] [targets] [keys...]}
preset=${2:-bench-100m} ranks=${3:-2} seq=${4:-256} steps=${5:-4} r=${6:-16} targets=${7:-q,k,v,o,gate,up,down}
shift $(( $# < 7 ? $# : 7 ))
work=${ST_BENCH_WORK:-/tmp/shardtune-qlora-bench}
bin=$build/app/shardtune
rm -rf "$work" && mkdir -p "$work"
"$bin" synth --output "$work/data" --pairs $((64 * ranks)) --min-len $((seq / 3)) --max-len $((seq / 3)) --seed 5 >/dev/null

run_method() {  # run_method <method>: prints the last step's figures as "bytes tokens/s GiB"
  local method=$1 launch=()
  shift
  [ "$ranks" -gt 1 ] && launch=(mpiexec -np "$ranks" --oversubscribe)
  "${launch[@]}" "$bin" train --progress off --model.preset="$preset" \
    --data.train="$work/data/train" --data.cutoff_len="$seq" --train.output_dir="$work/$method" \
    --train.micro_batch=1 --train.grad_accum=1 --train.max_steps="$steps" --train.log_every=1 --train.eval_every=0 \
    --ckpt.every=0 --ckpt.export=false --train.method="$method" --lora.r="$r" --lora.target_modules="$targets" \
    "$@" >"$work/$method.log" 2>&1 || { tail -20 "$work/$method.log"; echo "qlora.sh: $method failed" >&2; exit 1; }
  python3 - "$work/$method/metrics.jsonl" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if '"comm/all_gather_bytes"' in line]
last = rows[-1]  # after warm-up
print(last["comm/all_gather_bytes"], last["tokens_per_s"], last["peak_memory_gib"])
PY
}

read -r lora_bytes lora_tok lora_mem < <(run_method lora "$@")
read -r qlora_bytes qlora_tok qlora_mem < <(run_method qlora "$@")
printf '%-34s %18s %12s %16s\n' "$preset seq $seq, $ranks rank(s), r $r" "all-gather B/step" "tokens/s" "peak memory GiB"
printf '%-34s %18.0f %12.1f %16.3f\n' "lora ($targets)" "$lora_bytes" "$lora_tok" "$lora_mem" \
  "qlora (nf4, double quant)" "$qlora_bytes" "$qlora_tok" "$qlora_mem"
awk -v a="$lora_bytes" -v b="$qlora_bytes" -v t="$lora_tok" -v u="$qlora_tok" -v m="$lora_mem" -v n="$qlora_mem" \
  'BEGIN { printf "qlora / lora: %.3fx all-gather bytes, %.2fx tokens/s, %.2fx peak memory\n", (a > 0 ? b / a : 0), u / t, n / m }'
