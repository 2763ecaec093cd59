#!/usr/bin/env bash
# Two shardtune builds train the same numbers: for SFT, every DPO variant and KTO (packed and
# shared rows, LoRA, QLoRA; 1, 2 and 4 ranks), 8 steps of the demo config with an evaluation
# every 4, metrics.jsonl (every loss, reward, log-prob, grad norm and lr value; not timings)
# and the exported weights must be identical. For a refactor that claims no numerical change
# (docs/STYLE: show identical losses): build the commit before it in a git worktree.
# Usage: scripts/compare_builds.sh OLD_SHARDTUNE NEW_SHARDTUNE [work=/tmp/shardtune-compare]
set -uo pipefail
old=${1:?usage: scripts/compare_builds.sh OLD_SHARDTUNE NEW_SHARDTUNE [work]} new=${2:?NEW_SHARDTUNE}
work=${3:-/tmp/shardtune-compare}
src=$(cd "$(dirname "$0")/.." && pwd)
mpirun_args=(--oversubscribe)
[ "$(id -u)" = 0 ] && mpirun_args+=(--allow-run-as-root)
rm -rf "$work"; mkdir -p "$work"
"$new" synth --output "$work/data_dpo" --pairs 200 --val-size 0.1 --seed 3 >/dev/null
"$new" synth --output "$work/data_sft" --pairs 200 --val-size 0.1 --seed 3 --kind sft >/dev/null
"$new" synth --output "$work/data_kto" --pairs 200 --val-size 0.1 --seed 3 --kind kto >/dev/null
# name|ranks|overrides
cases=(
  "sft|2|--train.stage=sft --data.train=$work/data_sft/train --data.val=$work/data_sft/val"
  "sft_packed|2|--train.stage=sft --data.train=$work/data_sft/train --data.val=$work/data_sft/val --data.packing=true"
  "dpo_sigmoid|2|--data.train=$work/data_dpo/train --data.val=$work/data_dpo/val --dpo.loss=sigmoid"
  "dpo_ipo|2|--data.train=$work/data_dpo/train --data.val=$work/data_dpo/val --dpo.loss=ipo"
  "dpo_hinge_shared|2|--data.train=$work/data_dpo/train --data.val=$work/data_dpo/val --dpo.loss=hinge --dpo.share_prompt=true"
  "dpo_simpo_ftx|2|--data.train=$work/data_dpo/train --data.val=$work/data_dpo/val --dpo.loss=simpo --dpo.ftx=0.5"
  "dpo_orpo|2|--data.train=$work/data_dpo/train --data.val=$work/data_dpo/val --dpo.loss=orpo"
  "dpo_sigmoid_ls_packed|2|--data.train=$work/data_dpo/train --data.val=$work/data_dpo/val --dpo.loss=sigmoid --dpo.label_smoothing=0.1 --data.packing=true"
  "dpo_lora|2|--data.train=$work/data_dpo/train --data.val=$work/data_dpo/val --train.method=lora --lora.r=4"
  "dpo_qlora|2|--data.train=$work/data_dpo/train --data.val=$work/data_dpo/val --train.method=qlora --lora.r=4"
  "sft_1rank|1|--train.stage=sft --data.train=$work/data_sft/train --data.val=$work/data_sft/val"
  "dpo_4ranks|4|--data.train=$work/data_dpo/train --data.val=$work/data_dpo/val --train.micro_batch=1"
  "kto|2|--train.stage=kto --train.micro_batch=2 --kto.undesirable_weight=1.5 --data.train=$work/data_kto/train --data.val=$work/data_kto/val"
  "kto_packed_lora|2|--train.stage=kto --train.micro_batch=3 --data.packing=true --train.method=lora --lora.r=4 --data.train=$work/data_kto/train --data.val=$work/data_kto/val"
)
status=0
for entry in "${cases[@]}"; do
  IFS='|' read -r name ranks args <<<"$entry"
  mkdir -p "$work/$name"
  for side in old new; do
    bin=$old; [ $side = new ] && bin=$new
    # shellcheck disable=SC2086
    mpirun -np "$ranks" "${mpirun_args[@]}" "$bin" train --config "$src/examples/demo.ini" --progress off \
      --train.output_dir="$work/$name/$side" \
      --train.global_batch=0 --train.max_steps=8 --train.log_every=1 --train.eval_every=4 --ckpt.export=true --ckpt.export_dtype=fp32 \
      $args > "$work/$name/$side.log" 2>&1 || { echo "$name $side: run failed"; tail -3 "$work/$name/$side.log"; status=1; }
  done
  python3 - "$work/$name/old/metrics.jsonl" "$work/$name/new/metrics.jsonl" "$name" <<'PY' || status=1
import json, sys
skip = ("time", "tflops", "tokens_per_s", "samples_per_s", "mfu", "peak_memory", "seconds", "memory", "wall")
def load(p):
    return [{k: v for k, v in json.loads(l).items() if not any(s in k for s in skip)} for l in open(p)]
a, b = load(sys.argv[1]), load(sys.argv[2])
values = sum(len(r) for r in a)
print(f"{sys.argv[3]}: {len(a)} records, {values} values, identical: {a == b}")
sys.exit(a != b)
PY
  for f in "$work/$name/old/export/"*.safetensors; do
    if cmp -s "$f" "$work/$name/new/export/$(basename "$f")"; then echo "$name: $(basename "$f") identical"
    else echo "$name: $(basename "$f") DIFFERS"; status=1; fi
  done
done
exit $status
