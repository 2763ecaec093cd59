#!/usr/bin/env bash
# models_test.sh <shardtune binary> <case> <vocabularies dir> <smollm2 dir>: shardtune's models
# against transformers (and PEFT) on the CPU in fp32, in the tests' Python environment
# (transformers_check.py: `score` log-probs to 1e-5, greedy `generate` token for token):
# - fixture_<llama_gqa|qwen2_bias|mistral_window|qwen3_qk_norm>: the reference fixtures
#   (tests/reference: GQA + llama3 rope scaling; Qwen2 biases + tied embeddings; Mistral's
#   sliding window; Qwen3's per-head q/k norms with head_dim apart from hidden / heads);
# - trained_export, qwen3_trained_export: the export of a DPO run trained from llama_gqa or
#   qwen3_qk_norm (its q/k norms trained too);
# - lora_adapter_in_peft: a LoRA run's adapter directory loaded by PEFT onto its base computes
#   what shardtune's merged export computes (tests/reference/peft_load_parity.py);
# - bnb_nf4_checkpoint: a checkpoint bitsandbytes quantized (as transformers saves it) is read
#   as a QLoRA base as bitsandbytes dequantizes it, and refused by score;
# - moe_qwen3_moe, moe_mixtral: tiny mixture-of-experts models transformers made, in both expert
#   layouts, a trained export of each, and a LoRA run's adapter on attention and experts that
#   PEFT loads as its merged export computes;
# - gemma3: a tiny Gemma 3 transformers made (sliding and full layers, sandwich norms, GeGLU,
#   scaled embeddings), read from Gemma3ForCausalLM and Gemma3ForConditionalGeneration
#   checkpoints; a trained export, a reward model and a LoRA adapter transformers and PEFT read;
#   a QLoRA run on it;
# - qwen3_5, qwen3_5_moe: a tiny Qwen3.5 transformers made (Gated DeltaNet and gated attention
#   layers; the MoE's every MLP routed, with a shared expert), read from Qwen3_5(Moe)ForCausalLM and
#   Qwen3_5(Moe)ForConditionalGeneration checkpoints; packed and prompt-shared training, an export
#   and a LoRA adapter transformers and PEFT read;
# - smollm2_*: the real pretrained SmolLM2-135M-Instruct (smollm2_fixture.sh): scores of
#   LlamaFactory's demo pairs, 20 real prompts generated through the model's own chat template,
#   a few DPO and SFT steps on LlamaFactory's demo data whose export transformers loads, and
#   `shardtune eval` against lm-evaluation-harness (multiple choice, rolling perplexity,
#   generate_until with a regex filter, few-shot).
# shellcheck source=../e2e/harness.sh
source "$ST_SOURCE_DIR/tests/e2e/harness.sh"
# shellcheck source=../tokenizer/vocabularies.sh
source "$ST_SOURCE_DIR/tests/tokenizer/vocabularies.sh"
# shellcheck source=peer_record.sh
source "$ST_SOURCE_DIR/tests/oracle/peer_record.sh"
need_oracles "$3"
smollm2=$4
fixtures=${ST_REFERENCE_DIR:?the reference fixtures (ctest fixture reference)}
python=$ST_ORACLE_PYTHON
here=$ST_SOURCE_DIR/tests/oracle
data=$ST_SOURCE_DIR/tests/data/llamafactory
# Quiet the oracles' import-time notes (bitsandbytes' optional kernels, triton).
oracle() { "$python" "$@" 2> >(grep -v -e "kernels" -e "triton" -e "Loading weights" >&2); }
check() { oracle "$here/transformers_check.py" "$@" || fail "transformers_check.py $*"; }

# need_smollm2: the fixture made the model, or the test skips (fails under ST_REQUIRE_ORACLES=1).
need_smollm2() {
  if [ -f "$smollm2/MISSING" ]; then
    [ "${ST_REQUIRE_ORACLES:-0}" = 1 ] && fail "$(cat "$smollm2/MISSING") (ST_REQUIRE_ORACLES=1: an oracle test may not skip here)"
    echo "skipped: $(cat "$smollm2/MISSING")"
    exit 77
  fi
  [ -f "$smollm2/.complete" ] || fail "no SmolLM2 checkpoint in $smollm2 (run through ctest: its fixture smollm2 makes it)"
}

# qlora_base_is <4-bit checkpoint> <double quant> <fp32 model> <data> <micro batch> <label>: a QLoRA
# run's first step on the checkpoint (learning rate 0 in the warmup, the adapters' B = 0: the
# base's forward) gives the log-probs of a full run's on the fp32 model, to 1e-5.
qlora_base_is() {
  local step=(--data.train="$4/train" --data.shuffle=false --train.max_steps=1 --train.micro_batch="$5"
              --train.grad_accum=2 --optim.lr=5e-3 --optim.warmup_steps=2 --train.log_every=1 --train.eval_every=0
              --progress off)
  rm -rf "$work/qlora" "$work/full"
  run --exit 0 "$bin" train --model.path="$1" --train.method=qlora --lora.double_quant="$2" --lora.r=4 \
    --train.output_dir="$work/qlora" "${step[@]}"
  run --exit 0 "$bin" train --model.path="$3" --train.output_dir="$work/full" "${step[@]}"
  "$python" - "$work/qlora/metrics.jsonl" "$work/full/metrics.jsonl" "$6" <<'PY' || fail "$6: the QLoRA base reads otherwise"
import json, sys
qlora, full = (json.loads(open(path).readline()) for path in sys.argv[1:3])
worst = max(abs(qlora[k] - full[k]) / abs(full[k]) for k in ("logps/chosen", "logps/rejected"))
print(f"| {sys.argv[3]} | step-1 logps | chosen {qlora['logps/chosen']:.9g} vs {full['logps/chosen']:.9g}, rejected "
      f"{qlora['logps/rejected']:.9g} vs {full['logps/rejected']:.9g} | max rel {worst:.2g} |")
sys.exit(0 if worst <= 1e-5 else 1)
PY
}

# demo_pairs <out.jsonl> <count>: the first pairs of LlamaFactory's dpo_en_demo as token ids of
# SmolLM2's tokenizer and chat template (transformers'), chosen replies as completions, cut to
# 256 tokens in all.
demo_pairs() {
  oracle - "$smollm2" "$data/dpo_en_demo.json" "$1" "$2" <<'PY'
import json, sys
import transformers
model, source, out, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
tokenizer = transformers.AutoTokenizer.from_pretrained(model)
with open(out, "w") as f:
    for record in json.load(open(source))[:count]:
        messages = [{"role": "user" if turn["from"] == "human" else "assistant", "content": turn["value"]}
                    for turn in record["conversations"]]
        prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        prompt = list(prompt["input_ids"] if hasattr(prompt, "keys") else prompt)[-160:]
        completion = tokenizer(record["chosen"]["value"] + "<|im_end|>\n", add_special_tokens=False)["input_ids"]
        f.write(json.dumps({"prompt_ids": prompt, "completion_ids": completion[:256 - len(prompt)]}) + "\n")
PY
}

# real_prompts <out.jsonl> <count>: instructions of LlamaFactory's alpaca_en_demo as chat messages.
real_prompts() {
  oracle - "$data/alpaca_en_demo.json" "$1" "$2" <<'PY'
import json, sys
source, out, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(out, "w") as f:
    written = 0
    for record in json.load(open(source)):
        text = (record["instruction"] + ("\n" + record["input"] if record.get("input") else "")).strip()
        if len(text) > 300:
            continue
        f.write(json.dumps({"messages": [{"role": "user", "content": text}]}) + "\n")
        written += 1
        if written == count:
            break
PY
}

case "$case_name" in
  fixture_*)
    name=${case_name#fixture_}
    check score "$bin" "$fixtures/$name" "$fixtures/pairs.jsonl" "$work/score"
    check generate "$bin" "$fixtures/$name" "$fixtures/greedy_$name.jsonl" "$work/generate" 10
    ;;
  trained_export | qwen3_trained_export)
    # DPO from a fixture on ids within its vocabulary (97); the export is what transformers reads.
    base=llama_gqa
    [ "$case_name" = qwen3_trained_export ] && base=qwen3_qk_norm
    run --exit 0 "$bin" synth --output "$work/data" --vocab 97 --pairs 96
    run --exit 0 "$bin" train --model.path="$fixtures/$base" --data.train="$work/data/train" \
      --train.output_dir="$work/run" --train.max_steps=6 --train.micro_batch=2 --train.grad_accum=2 \
      --train.eval_every=0 --optim.lr=5e-3 --ckpt.export=true --ckpt.export_dtype=fp32 --progress off
    check score "$bin" "$work/run/export" "$fixtures/pairs.jsonl" "$work/score"
    check generate "$bin" "$work/run/export" "$fixtures/greedy_$base.jsonl" "$work/generate" 10
    # Training moved the weights: the export's scores are not the base's.
    run --exit 0 "$bin" score --model "$fixtures/$base" --input "$fixtures/pairs.jsonl" --output "$work/base.jsonl"
    ! cmp -s "$work/base.jsonl" "$work/score/scores.jsonl" || fail "the trained export scores as its base does"
    ;;
  reward_model_export)
    # A reward model of each family (train.stage = rm from its fixture), exported as
    # *ForSequenceClassification: transformers reads the rewards shardtune's scorer gives. Then
    # the same weights with pad_token_id = eos on completions ending in eos: both read the reward
    # at the token before (transformers' rule for TRL's default pad = eos).
    run --exit 0 "$bin" synth --output "$work/data" --vocab 97 --pairs 64
    for base in llama_gqa qwen2_bias mistral_window qwen3_qk_norm; do
      run --exit 0 "$bin" train --model.path="$fixtures/$base" --data.train="$work/data/train" --train.stage=rm \
        --train.output_dir="$work/$base" --train.max_steps=6 --train.micro_batch=2 --train.grad_accum=2 \
        --train.eval_every=0 --optim.lr=5e-3 --ckpt.export=true --ckpt.export_dtype=fp32 --progress off
      check reward "$bin" "$work/$base/export" "$fixtures/pairs.jsonl" "$work/reward-$base"
    done
    cp -r "$work/llama_gqa/export" "$work/pad_is_eos"
    oracle - "$work/pad_is_eos/config.json" "$fixtures/pairs.jsonl" "$work/ending_in_eos.jsonl" <<'PY' ||
import json, sys
config = json.load(open(sys.argv[1]))
config["pad_token_id"] = config["eos_token_id"]
json.dump(config, open(sys.argv[1], "w"), indent=2)
with open(sys.argv[2]) as f, open(sys.argv[3], "w") as out:
    for line in f:
        pair = json.loads(line)
        out.write(json.dumps({**pair, "completion_ids": pair["completion_ids"] + [config["eos_token_id"]]}) + "\n")
PY
      fail "could not write the pad = eos case"
    check reward "$bin" "$work/pad_is_eos" "$work/ending_in_eos.jsonl" "$work/reward-pad-is-eos"
    # LoRA: PEFT reads the exported adapter and its saved score (modules_to_save) onto the causal
    # LM read as a sequence classifier, and rewards as shardtune's checkpoint does.
    run --exit 0 "$bin" train --model.path="$fixtures/llama_gqa" --data.train="$work/data/train" --train.stage=rm \
      --train.method=lora --lora.r=4 --lora.alpha=8 --lora.target_modules=q,v,down --train.output_dir="$work/lora" \
      --train.max_steps=6 --train.micro_batch=2 --train.grad_accum=2 --train.eval_every=0 --optim.lr=5e-3 \
      --ckpt.export=true --ckpt.export_dtype=fp32 --progress off
    run --exit 0 "$bin" score --reward --checkpoint "$work/lora/checkpoints" --input "$fixtures/pairs.jsonl" \
      --output "$work/lora.jsonl"
    oracle - "$fixtures/llama_gqa" "$work/lora/export" "$fixtures/pairs.jsonl" "$work/lora.jsonl" <<'PY' ||
import json, sys
import peft, torch, transformers
base = transformers.AutoModelForSequenceClassification.from_pretrained(sys.argv[1], dtype=torch.float32, num_labels=1,
                                                                      pad_token_id=0)
model = peft.PeftModel.from_pretrained(base, sys.argv[2]).eval()
pairs = [json.loads(line) for line in open(sys.argv[3])]
ours = [json.loads(line)["reward"] for line in open(sys.argv[4])]
worst = 0.0
for pair, reward in zip(pairs, ours, strict=True):
    with torch.no_grad():
        theirs = model(torch.tensor([pair["prompt_ids"] + pair["completion_ids"]])).logits[0, 0].item()
    worst = max(worst, abs(reward - theirs) / max(1.0, abs(theirs)))
print(f"| LoRA reward model in PEFT {peft.__version__} | reward | {len(pairs)} sequences | max scaled {worst:.3g} | "
      f"{'ok (1e-5)' if worst <= 1e-5 else 'DIFFERS'} |")
sys.exit(worst > 1e-5)
PY
      fail "PEFT's reading of the LoRA reward model differs"
    ;;
  lora_adapter_in_peft)
    run --exit 0 "$bin" synth --output "$work/data" --vocab 97 --pairs 64
    run --exit 0 "$bin" train --model.path="$fixtures/llama_gqa" --data.train="$work/data/train" \
      --train.output_dir="$work/lora" --train.method=lora --lora.r=4 --lora.alpha=8 \
      --lora.target_modules=q,v,down --optim.lr=5e-3 --train.max_steps=5 --train.micro_batch=2 \
      --train.grad_accum=2 --train.eval_every=0 --ckpt.export=true --ckpt.export_dtype=fp32 --progress off
    run --exit 0 "$bin" export --checkpoint "$work/lora/checkpoints" --output "$work/merged" --merge --dtype fp32
    oracle "$ST_SOURCE_DIR/tests/reference/peft_load_parity.py" "$fixtures/llama_gqa" "$work/lora/export" \
      "$work/merged" || fail "PEFT's adapter and shardtune's merged export differ"
    ;;
  bnb_nf4_checkpoint)
    # bitsandbytes quantizes SmolLM2 to NF4 with double quantization as transformers saves it
    # (load_in_4bit). A QLoRA run reads it as stored: its first step (learning rate 0 in the
    # warmup, B = 0) is the forward of the base as shardtune dequantizes it, whose log-probs must
    # equal a full run's on the model bitsandbytes' own dequantize_4bit gives (written as fp32)
    # to 1e-5. `shardtune score` reads the checkpoint dequantized: its log-probs equal
    # transformers' on that fp32 model.
    need_smollm2
    made_once --output "$work/bnb" --output "$work/dequantized" -- "$python" - "$smollm2" "$work/bnb" "$work/dequantized" \
      <<'PY' || fail "bitsandbytes could not quantize SmolLM2"
import shutil, sys
import bitsandbytes.functional as F
import torch, transformers
source, quantized, dequantized = sys.argv[1:4]
config = transformers.BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                                         bnb_4bit_compute_dtype=torch.float32)
model = transformers.AutoModelForCausalLM.from_pretrained(source, quantization_config=config, device_map="cpu",
                                                          dtype=torch.float32)
model.save_pretrained(quantized)
plain = transformers.AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32)
modules = dict(plain.named_modules())
replaced = 0
for name, module in model.named_modules():
    if getattr(getattr(module, "weight", None), "quant_state", None) is not None:
        weight = F.dequantize_4bit(module.weight.data, module.weight.quant_state).to(torch.float32)
        modules[name].weight.data.copy_(weight.reshape(modules[name].weight.shape))
        replaced += 1
assert replaced == 7 * plain.config.num_hidden_layers, replaced
plain.save_pretrained(dequantized)
for name in ["tokenizer.json", "tokenizer_config.json", "chat_template.jinja"]:
    shutil.copy(f"{source}/{name}", f"{dequantized}/{name}")
print(f"bitsandbytes: {replaced} projections quantized, and dequantized into {dequantized}")
PY
    grep -q '"load_in_4bit": true' "$work/bnb/config.json" || fail "transformers wrote no 4-bit config"
    run --exit 0 "$bin" prep --kind dpo --tokenizer "$work/dequantized" --dataset-info "$data" --dataset dpo_en_demo \
      --output "$work/data" --cutoff-len 128
    qlora_base_is "$work/bnb" true "$work/dequantized" "$work/data" 1 \
      "SmolLM2 QLoRA base read from bitsandbytes' NF4 (double quant) checkpoint"
    # llama_gqa's down_proj rows (96) are no whole number of blocks (64): bitsandbytes 0.50.2's CPU
    # dequantize_4bit (and its CPU forward) read those per row and get them wrong, so there the
    # reference is the format itself - the codes and absmax bitsandbytes stored, blocks of 64 over
    # the flattened weight, as its quantize_4bit writes them (the test checks that round trip).
    made_once --output "$work/bnb_gqa" --output "$work/gqa_dequantized" -- "$python" - "$fixtures/llama_gqa" \
      "$work/bnb_gqa" "$work/gqa_dequantized" <<'PY' || fail "could not dequantize llama_gqa's NF4 checkpoint"
import sys
import bitsandbytes.functional as F
import torch, transformers
from safetensors import safe_open
source, quantized, dequantized = sys.argv[1:4]
config = transformers.BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=False,
                                         bnb_4bit_compute_dtype=torch.float32)
transformers.AutoModelForCausalLM.from_pretrained(source, quantization_config=config, device_map="cpu").save_pretrained(quantized)
plain = transformers.AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32)
worst_bnb = worst_format = 0.0
with safe_open(f"{quantized}/model.safetensors", "pt") as f:
    for name, module in plain.named_modules():
        key = name + ".weight"
        if key + ".absmax" not in f.keys():
            continue
        codes, absmax, table = f.get_tensor(key).flatten(), f.get_tensor(key + ".absmax"), f.get_tensor(key + ".quant_map")
        values = torch.stack([table[(codes >> 4).long()], table[(codes & 15).long()]], 1).flatten()
        weight = (values[:absmax.numel() * 64].reshape(-1, 64) * absmax[:, None]).flatten()[:module.weight.numel()]
        original = module.weight.data.clone()
        module.weight.data.copy_(weight.reshape(original.shape))
        # The format's reading is quantize_4bit's inverse (NF4 error only); bitsandbytes' CPU
        # dequantize_4bit of the same tensor, where rows are no whole blocks, is not.
        q, state = F.quantize_4bit(original, blocksize=64, quant_type="nf4")
        worst_format = max(worst_format, ((weight.reshape(original.shape) - original).abs().max() / absmax.max()).item())
        worst_bnb = max(worst_bnb, ((F.dequantize_4bit(q, state) - original).abs().max() / absmax.max()).item())
assert worst_format <= 0.16, worst_format  # half the NF4 table's widest gap, 0.152 x absmax
plain.save_pretrained(dequantized)
print(f"llama_gqa: the format's reading is within {worst_format:.3f} x absmax of the fp32 weights; "
      f"bitsandbytes' CPU dequantize_4bit within {worst_bnb:.3f} x absmax")
PY
    run --exit 0 "$bin" synth --jsonl "$work/gqa_pairs.jsonl" --vocab 97 --pairs 16 --seed 3
    run --exit 0 "$bin" prep --input "$work/gqa_pairs.jsonl" --vocab 97 --output "$work/gqa_data" --kind dpo
    qlora_base_is "$work/bnb_gqa" false "$work/gqa_dequantized" "$work/gqa_data" 2 \
      "llama_gqa QLoRA base read from bitsandbytes' NF4 checkpoint (rows of 96)"
    demo_pairs "$work/pairs.jsonl" 4
    check score "$bin" "$work/bnb" "$work/pairs.jsonl" "$work/score" --transformers-reads "$work/dequantized"
    check score "$bin" "$work/bnb_gqa" "$fixtures/pairs.jsonl" "$work/score_gqa" --transformers-reads "$work/gqa_dequantized"
    # Training every weight of a 4-bit checkpoint is refused by name.
    run --exit 1 "$bin" train --model.path="$work/bnb" --data.train="$work/data/train" --train.output_dir="$work/refused" \
      --train.max_steps=1 --progress off
    expect_output "holds bitsandbytes 4-bit nf4 weights \\(config.json quantization_config\\): a run trains on them only as a QLoRA"
    ;;
  smollm2_score)
    need_smollm2
    demo_pairs "$work/pairs.jsonl" 12
    check score "$bin" "$smollm2" "$work/pairs.jsonl" "$work/score"
    ;;
  smollm2_generate)
    need_smollm2
    real_prompts "$work/prompts.jsonl" 20
    check generate "$bin" "$smollm2" "$work/prompts.jsonl" "$work/generate" 24
    ;;
  smollm2_template)
    need_smollm2
    "$ST_SOURCE_DIR/tests/tokenizer/template_parity.sh" "$ST_RENDER_TEMPLATE" "$smollm2" auto "$3" ||
      fail "SmolLM2's chat template renders otherwise"
    ;;
  smollm2_train_export)
    # A few DPO and SFT steps on LlamaFactory's demo data, prepped with the model's own tokenizer
    # and template; each export loads in transformers and scores as shardtune scores it.
    need_smollm2
    demo_pairs "$work/pairs.jsonl" 4
    for stage in dpo sft; do
      dataset=dpo_en_demo
      [ "$stage" = sft ] && dataset=alpaca_en_demo
      run --exit 0 "$bin" prep --kind "$stage" --tokenizer "$smollm2" --dataset-info "$data" --dataset "$dataset" \
        --output "$work/$stage-data" --cutoff-len 192
      run --exit 0 "$bin" train --model.path="$smollm2" --train.stage="$stage" --data.train="$work/$stage-data/train" \
        --train.output_dir="$work/$stage" --train.max_steps=2 --train.micro_batch=1 --train.grad_accum=2 \
        --train.global_batch=2 --train.eval_every=0 --optim.lr=1e-5 --optim.warmup_steps=0 \
        --ckpt.export=true --ckpt.export_dtype=fp32 --progress off
      expect_output "step 2/2"
      check score "$bin" "$work/$stage/export" "$work/pairs.jsonl" "$work/$stage-score"
    done
    ;;
  smollm2_lm_eval)
    # `shardtune eval` against lm-evaluation-harness itself on the real model (lm_eval_check.py).
    need_smollm2
    HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 oracle "$here/lm_eval_check.py" "$bin" "$smollm2" "$work/lm_eval" ||
      fail "shardtune eval and lm-evaluation-harness differ"
    ;;
  moe_qwen3_moe | moe_mixtral)
    # Mixture-of-experts models made by transformers (tiny_moe_model.py): scores, each token's
    # experts and weights, and greedy tokens as transformers' own Qwen3MoeForCausalLM /
    # MixtralForCausalLM give them, read from
    # save_pretrained's one tensor per expert and from transformers 5's stacked experts; then a
    # few DPO steps whose export (one tensor per expert) transformers reads and scores alike.
    family=${case_name#moe_}
    made_once --output "$work/model" --output "$work/stacked" -- "$python" "$here/tiny_moe_model.py" "$family" \
      "$work/model" "$work/stacked" || fail "could not make the tiny $family"
    check score "$bin" "$work/model" "$fixtures/pairs.jsonl" "$work/score"
    check routing "$bin" "$work/model" "$fixtures/pairs.jsonl" "$work/routing"
    check generate "$bin" "$work/model" "$fixtures/greedy_llama_gqa.jsonl" "$work/generate" 10
    check score "$bin" "$work/stacked" "$fixtures/pairs.jsonl" "$work/score-stacked"
    cmp -s "$work/score/scores.jsonl" "$work/score-stacked/scores.jsonl" || fail "the stacked layout scores otherwise"
    run --exit 0 "$bin" synth --output "$work/data" --vocab 97 --pairs 48
    run --exit 0 "$bin" train --model.path="$work/model" --data.train="$work/data/train" \
      --train.output_dir="$work/run" --train.max_steps=4 --train.micro_batch=2 --train.grad_accum=2 \
      --train.eval_every=0 --optim.lr=5e-3 --ckpt.export=true --ckpt.export_dtype=fp32 --progress off
    check score "$bin" "$work/run/export" "$fixtures/pairs.jsonl" "$work/score-export"
    ! cmp -s "$work/score/scores.jsonl" "$work/score-export/scores.jsonl" || fail "the trained export scores as its base does"
    # LoRA on attention and experts: the adapter PEFT loads (its stacked experts' pairs, as
    # target_parameters) computes what the merged export (one tensor per expert) computes.
    run --exit 0 "$bin" train --model.path="$work/model" --data.train="$work/data/train" \
      --train.output_dir="$work/lora" --train.method=lora --lora.r=4 --lora.alpha=8 \
      --lora.target_modules=q,v,gate,up,down --optim.lr=5e-3 --train.max_steps=3 --train.micro_batch=2 \
      --train.grad_accum=2 --train.eval_every=0 --ckpt.export=true --ckpt.export_dtype=fp32 --progress off
    run --exit 0 "$bin" export --checkpoint "$work/lora/checkpoints" --output "$work/lora-merged" --merge --dtype fp32
    oracle "$ST_SOURCE_DIR/tests/reference/peft_load_parity.py" "$work/model" "$work/lora/export" \
      "$work/lora-merged" || fail "PEFT's adapter on the experts and shardtune's merged export differ"
    ;;
  gemma3)
    # Gemma 3 (tiny_gemma3_model.py: 5 layers, sliding and full, a window of 4 tokens, its own
    # attention scale, rotary bases per kind; sandwich norms of 1 + w, GeGLU, scaled embeddings,
    # tied): scores and greedy tokens as transformers' Gemma3ForCausalLM gives them; the same
    # language model read from a Gemma3ForConditionalGeneration checkpoint in both of its naming
    # layouts scores identically; a DPO run's export and a reward model's
    # (Gemma3TextForSequenceClassification) that transformers reads as shardtune does; a LoRA
    # adapter PEFT loads as the merged export computes.
    made_once --output "$work/model" --output "$work/multimodal" --output "$work/renamed" -- \
      "$python" "$here/tiny_gemma3_model.py" "$work/model" "$work/multimodal" "$work/renamed" ||
      fail "could not make the tiny Gemma 3"
    check score "$bin" "$work/model" "$fixtures/pairs.jsonl" "$work/score"
    check generate "$bin" "$work/model" "$fixtures/greedy_llama_gqa.jsonl" "$work/generate" 10
    check score "$bin" "$work/multimodal" "$fixtures/pairs.jsonl" "$work/score-multimodal"
    run --exit 0 "$bin" score --model "$work/renamed" --input "$fixtures/pairs.jsonl" --output "$work/renamed.jsonl"
    cmp -s "$work/score/scores.jsonl" "$work/score-multimodal/scores.jsonl" || fail "the multimodal checkpoint scores otherwise"
    cmp -s "$work/score/scores.jsonl" "$work/renamed.jsonl" || fail "the renamed multimodal checkpoint scores otherwise"
    run --exit 0 "$bin" synth --output "$work/data" --vocab 97 --pairs 48
    run --exit 0 "$bin" train --model.path="$work/multimodal" --data.train="$work/data/train" \
      --train.output_dir="$work/run" --train.max_steps=4 --train.micro_batch=2 --train.grad_accum=2 \
      --train.eval_every=0 --optim.lr=5e-3 --ckpt.export=true --ckpt.export_dtype=fp32 --progress off
    expect_output "vision tower"
    check score "$bin" "$work/run/export" "$fixtures/pairs.jsonl" "$work/score-export"
    check generate "$bin" "$work/run/export" "$fixtures/greedy_llama_gqa.jsonl" "$work/generate-export" 10
    ! cmp -s "$work/score/scores.jsonl" "$work/score-export/scores.jsonl" || fail "the trained export scores as its base does"
    run --exit 0 "$bin" train --model.path="$work/model" --data.train="$work/data/train" --train.stage=rm \
      --train.output_dir="$work/rm" --train.max_steps=4 --train.micro_batch=2 --train.grad_accum=2 \
      --train.eval_every=0 --optim.lr=5e-3 --ckpt.export=true --ckpt.export_dtype=fp32 --progress off
    grep -q '"Gemma3TextForSequenceClassification"' "$work/rm/export/config.json" || fail "the reward model's class"
    check reward "$bin" "$work/rm/export" "$fixtures/pairs.jsonl" "$work/reward"
    run --exit 0 "$bin" train --model.path="$work/model" --data.train="$work/data/train" \
      --train.output_dir="$work/lora" --train.method=lora --lora.r=4 --lora.alpha=8 \
      --lora.target_modules=q,k,v,o,gate,up,down --optim.lr=5e-3 --train.max_steps=3 --train.micro_batch=2 \
      --train.grad_accum=2 --train.eval_every=0 --ckpt.export=true --ckpt.export_dtype=fp32 --progress off
    run --exit 0 "$bin" export --checkpoint "$work/lora/checkpoints" --output "$work/lora-merged" --merge --dtype fp32
    oracle "$ST_SOURCE_DIR/tests/reference/peft_load_parity.py" "$work/model" "$work/lora/export" \
      "$work/lora-merged" || fail "PEFT's adapter on Gemma 3 and shardtune's merged export differ"
    # QLoRA: the projections held in NF4 (the family's own rows: q..down), its first step at the
    # warmup's learning rate 0 the base's forward through the 4-bit weights; it trains.
    run --exit 0 "$bin" train --model.path="$work/multimodal" --data.train="$work/data/train" \
      --train.output_dir="$work/qlora" --train.method=qlora --lora.r=4 --lora.alpha=8 --optim.lr=5e-3 \
      --train.max_steps=3 --train.micro_batch=2 --train.grad_accum=2 --train.eval_every=0 --train.log_every=1 \
      --progress off
    expect_output "QLoRA r 4"
    grep -c '"loss"' "$work/qlora/metrics.jsonl" | grep -qx 3 || fail "the QLoRA run logged no 3 steps"
    ;;
  qwen3_5 | qwen3_5_moe)
    # Qwen3.5 (tiny_qwen3_5_model.py: three Gated DeltaNet layers, then a gated full-attention
    # layer with partial rotary; more value than key heads; A_log, dt_bias and every norm off its
    # identity): log-probs at lengths around and across the delta rule's 64-token chunk and greedy
    # tokens (prompts left-padded together) as transformers' Qwen3_5ForCausalLM gives them; the
    # same language model read from a Qwen3_5ForConditionalGeneration checkpoint (vision tower
    # and mtp tensors beside it) scores identically; a DPO run on packed, prompt-shared rows of
    # that checkpoint trains as on plain rows, and its export keeps the checkpoint's layout (the
    # vision and mtp tensors byte for byte) and scores in transformers as in shardtune; a LoRA
    # adapter on every projection (PEFT's all-linear: the attention layer's q, k, v, o, the Gated
    # DeltaNet layers' in_proj_qkv, in_proj_z, in_proj_b, in_proj_a, out_proj, every MLP) that PEFT
    # loads as the merged export computes.
    # qwen3_5_moe: the same with every MLP 4 routed experts (2 per token) and a shared expert behind
    # its sigmoid gate; each token's experts and weights as transformers' routers give them too; its
    # adapter on every projection as PEFT's all-linear wraps them there (gate, up, down: the shared
    # expert's; shared_expert_gate; the routed experts unadapted).
    moe=() architecture=Qwen3_5ForConditionalGeneration
    targets=q,k,v,o,gate,up,down,in_proj_qkv,in_proj_z,in_proj_b,in_proj_a,out
    if [ "$case_name" = qwen3_5_moe ]; then
      moe=(--moe) architecture=Qwen3_5MoeForConditionalGeneration targets=$targets,shared_expert_gate
    fi
    made_once --output "$work/model" --output "$work/multimodal" --output "$work/lengths" -- \
      "$python" "$here/tiny_qwen3_5_model.py" "${moe[@]}" "$work/model" "$work/multimodal" "$work/lengths" ||
      fail "could not make the tiny $case_name"
    check score "$bin" "$work/model" "$work/lengths/pairs.jsonl" "$work/score"
    [ -z "${moe[*]}" ] || check routing "$bin" "$work/model" "$work/lengths/pairs.jsonl" "$work/routing"
    check generate "$bin" "$work/model" "$fixtures/greedy_llama_gqa.jsonl" "$work/generate" 10
    run --exit 0 "$bin" score --model "$work/multimodal" --input "$work/lengths/pairs.jsonl" --output "$work/multimodal.jsonl"
    cmp -s "$work/score/scores.jsonl" "$work/multimodal.jsonl" || fail "the multimodal checkpoint scores otherwise"
    run --exit 0 "$bin" synth --output "$work/data" --vocab 97 --pairs 48
    dpo=(--data.train="$work/data/train" --train.max_steps=4 --train.micro_batch=2 --train.grad_accum=2
         --train.eval_every=0 --train.log_every=1 --optim.lr=5e-3 --progress off)
    run --exit 0 "$bin" train --model.path="$work/multimodal" --train.output_dir="$work/plain" "${dpo[@]}"
    run --exit 0 "$bin" train --model.path="$work/multimodal" --train.output_dir="$work/laid_out" "${dpo[@]}" \
      --data.packing=true --dpo.share_prompt=true --ckpt.export=true --ckpt.export_dtype=fp32
    expect_output "vision tower"
    # The first step compares the layouts at the same weights (loss, log-probs, rewards, grad
    # norm). Later steps drift apart chaotically on this 45k-parameter model: Adam moves every
    # weight by about lr whatever its gradient, so rounding noise in near-zero gradients becomes
    # lr-sized steps (at optim.eps = 1e-4, plain rows on 1 and 2 ranks: grad norms 4.3e-5 apart by
    # step 4, packed and shared 3.4e-4; farther at the default 1e-8). Every gradient is compared
    # in float64 by unit_model's HybridLayers tests.
    same_metrics --expected "$work/plain/metrics.jsonl" --actual "$work/laid_out/metrics.jsonl" \
      --tolerance "$other_order_metrics" --from-step 1 --to-step 1
    expect_output "copied into an export as they are"
    # The export keeps the checkpoint's layout: the trained language model under its
    # model.language_model. names, the vision tower and the mtp tensors byte for byte; transformers
    # loads it and scores as shardtune does.
    "$python" - "$work/multimodal" "$work/laid_out/export" "$architecture" <<'PY' || fail "the export's layout differs"
import json, os, struct, sys
def tensors(directory):
    path = os.path.join(directory, "model.safetensors")
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        header.pop("__metadata__", None)
        data = f.read()
    return {name: (entry["dtype"], entry["shape"], data[entry["data_offsets"][0]:entry["data_offsets"][1]])
            for name, entry in header.items()}
base, export = tensors(sys.argv[1]), tensors(sys.argv[2])
assert set(base) == set(export), sorted(set(base) ^ set(export))[:5]
copied = [n for n in base if not n.startswith(("model.language_model.", "lm_head."))]
assert any(n.startswith("model.visual.") for n in copied) and any(n.startswith("mtp.") for n in copied), copied[:5]
same = [n for n in copied if base[n] == export[n]]
assert len(same) == len(copied), sorted(set(copied) - set(same))[:5]
trained = [n for n in base if n.startswith("model.language_model.layers.") and base[n][2] != export[n][2]]
assert trained, "no language-model tensor changed"
config = json.load(open(os.path.join(sys.argv[2], "config.json")))
assert config["architectures"] == [sys.argv[3]], config["architectures"]
print(f"| export of {sys.argv[3]} | layout kept | {len(copied)} vision and mtp tensors "
      f"byte-identical, {len(trained)} language-model tensors trained |")
PY
    check score "$bin" "$work/laid_out/export" "$work/lengths/pairs.jsonl" "$work/score-export"
    ! cmp -s "$work/score/scores.jsonl" "$work/score-export/scores.jsonl" || fail "the trained export scores as its base does"
    run --exit 0 "$bin" train --model.path="$work/model" --data.train="$work/data/train" \
      --train.output_dir="$work/lora" --train.method=lora --lora.r=4 --lora.alpha=8 \
      --lora.target_modules="$targets" --optim.lr=5e-3 \
      --train.max_steps=3 --train.micro_batch=2 --train.grad_accum=2 --train.eval_every=0 --ckpt.export=true \
      --ckpt.export_dtype=fp32 --progress off
    grep -q '"in_proj_qkv"' "$work/lora/export/adapter_config.json" || fail "the adapter names no in_proj_qkv"
    run --exit 0 "$bin" export --checkpoint "$work/lora/checkpoints" --output "$work/lora-merged" --merge --dtype fp32
    oracle "$ST_SOURCE_DIR/tests/reference/peft_load_parity.py" "$work/model" "$work/lora/export" \
      "$work/lora-merged" || fail "PEFT's adapter on $case_name and shardtune's merged export differ"
    ;;
  *) fail "unknown case" ;;
esac
echo "PASS [$case_name]"
