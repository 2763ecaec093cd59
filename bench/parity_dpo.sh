#!/usr/bin/env bash
# 200 bf16 DPO steps of a preset shape on both sides from the same initial weights and rows:
# shardtune (train) and transformers + torch (bench/peer_dpo_train.py). Speed must not come from
# different math: the final loss and reward accuracy (means of the last 20 steps) should agree
# within 2%. GPU machines only; prints both and the relative differences.
# Usage: bench/parity_dpo.sh BUILD_DIR [preset=llama-3.2-1b] [steps=200] [micro_batch=4] [lr=5e-5]
set -euo pipefail
build=${1:?usage: bench/parity_dpo.sh BUILD_DIR [preset] [steps] [micro_batch] [lr]}
preset=${2:-llama-3.2-1b} steps=${3:-200} micro_batch=${4:-4} lr=${5:-5e-5}
work=${ST_BENCH_WORK:-/tmp/shardtune-parity}
here=$(cd "$(dirname "$0")" && pwd)
bin="$build/app/shardtune"
mpirun=(mpirun --allow-run-as-root -np 1)
rm -rf "$work" && mkdir -p "$work"
"$bin" synth --output "$work/data" --pairs $((steps * micro_batch)) --min-len 64 --max-len 256 \
  --task copy --seed 3 >/dev/null
common=(--model.preset="$preset" --data.train="$work/data/train" --data.shuffle=false
        --data.cutoff_len=1024 --train.stage=dpo --train.micro_batch="$micro_batch" --train.grad_accum=1
        --train.global_batch=0 --train.dtype=bf16 --train.log_every=1 --train.eval_every=0 --dpo.loss=sigmoid
        --dpo.reference=online --dpo.beta=0.1 --optim.schedule=constant --optim.warmup_steps=0
        --optim.weight_decay=0 --optim.grad_clip=1.0 --ckpt.every=0 --progress off)
# The initial weights as an HF directory: one step at learning rate 1e-30 (0 is refused) leaves
# them as initialised to fp32 precision.
"${mpirun[@]}" "$bin" train "${common[@]}" --train.output_dir="$work/init" --train.max_steps=1 --optim.lr=1e-30 \
  --ckpt.export=true --ckpt.export_dtype=fp32 >/dev/null
rm -rf "$work/init/checkpoints"  # only the export is needed (a 1B checkpoint is 15 GB)
"${mpirun[@]}" "$bin" train "${common[@]}" --model.path="$work/init/export" --optim.lr="$lr" \
  --train.output_dir="$work/ours" --train.max_steps="$steps" >"$work/ours.log" 2>&1 || { tail "$work/ours.log"; exit 1; }
rm -rf "$work/ours/checkpoints"
[ "${ST_PARITY_OURS_ONLY:-0}" = 1 ] && { tail -2 "$work/ours.log"; exit 0; }  # the CPU check of this script
python3 "$here/peer_dpo_train.py" --model "$work/init/export" --data "$work/data/train" --steps "$steps" \
  --micro-batch "$micro_batch" --lr "$lr" >"$work/peer.log" 2>&1 || { tail "$work/peer.log"; exit 1; }
python3 - "$work/ours/metrics.jsonl" "$work/peer.log" <<'PY'
import json, re, sys
records = [json.loads(line) for line in open(sys.argv[1]) if '"loss"' in line and "eval/loss" not in line]
last = records[-20:]
ours_loss = sum(r["loss"] for r in last) / len(last)
ours_acc = sum(r["rewards/accuracies"] for r in last) / len(last)
peer = re.search(r"final loss ([0-9.]+) reward accuracy ([0-9.]+)", open(sys.argv[2]).read())
peer_loss, peer_acc = float(peer.group(1)), float(peer.group(2))
print(f"parity_dpo: {len(records)} steps; means of the last 20")
print(f"  {'':16} {'shardtune':>10} {'peer':>10} {'rel. diff':>10}")
print(f"  {'loss':16} {ours_loss:10.5f} {peer_loss:10.5f} {abs(ours_loss - peer_loss) / max(abs(peer_loss), 1e-12):9.2%}")
print(f"  {'reward accuracy':16} {ours_acc:10.4f} {peer_acc:10.4f} {abs(ours_acc - peer_acc) / max(peer_acc, 1e-12):9.2%}")
PY
