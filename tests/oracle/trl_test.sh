#!/usr/bin/env bash
# trl_test.sh <shardtune binary> <case> <vocabularies dir>: `shardtune train` against TRL's own
# DPOTrainer (trl_dpo.py) on the CPU in fp32: the same tiny model (the llama_gqa reference
# fixture: GQA, llama3 rope scaling), the same 128 pairs in file order, the same
# hyperparameters (AdamW with weight decay, warmup + schedule, gradient clipping, gradient
# accumulation, beta), 24 optimizer steps of 4 pairs; per step the loss, rewards, log-probs,
# grad norm and learning rate agree (trl_compare.py).
# - dpo_sigmoid: on 1 rank, 2 ranks, with packed rows and with shared prompts (TRL cannot pack
#   DPO: its unpacked run is the oracle of both);
# - dpo_ipo, dpo_hinge: the other losses (IPO averaged per token in both);
# - dpo_lora: LoRA against TRL + PEFT from the same adapter.
# shellcheck source=../e2e/harness.sh
source "$ST_SOURCE_DIR/tests/e2e/harness.sh"
# shellcheck source=../tokenizer/vocabularies.sh
source "$ST_SOURCE_DIR/tests/tokenizer/vocabularies.sh"
need_oracles "$3"
fixtures=${ST_REFERENCE_DIR:?the reference fixtures (ctest fixture reference)}
python=$ST_ORACLE_PYTHON
here=$ST_SOURCE_DIR/tests/oracle
steps=24 beta=0.1

run --exit 0 "$bin" synth --jsonl "$work/pairs.jsonl" --vocab 97 --pairs 128 --seed 3
run --exit 0 "$bin" prep --input "$work/pairs.jsonl" --vocab 97 --output "$work/data" --kind dpo

# trl <name> <trl_dpo.py options...>: TRL's log of the run in $work/<name>.trl.jsonl.
trl() {
  local name=$1
  shift
  "$python" "$here/trl_dpo.py" "$fixtures/llama_gqa" "$work/pairs.jsonl" "$work/$name.trl.jsonl" --steps "$steps" \
    --beta "$beta" --work "$work/trl-$name" "$@" >"$work/$name.trl.log" 2>&1 ||
    fail "TRL's DPOTrainer failed: $(grep -v -e kernels -e triton "$work/$name.trl.log" | tail -5)"
}
# ours <name> <ranks> <train options...>: shardtune's run of the same, in $work/<name>.
ours() {
  local name=$1 ranks=$2
  shift 2
  run --exit 0 "$mpiexec" -np "$ranks" "$bin" train --model.path="$fixtures/llama_gqa" --data.train="$work/data/train" \
    --data.shuffle=false --train.output_dir="$work/$name" --train.max_steps="$steps" --dpo.beta="$beta" \
    --train.log_every=1 --train.eval_every=0 --train.dtype=fp32 --progress off "$@"
}
# agree <ours> <trl name> <label> [--defined-otherwise NAMES WHY]
agree() {
  "$python" "$here/trl_compare.py" "$work/$1/metrics.jsonl" "$work/$2.trl.jsonl" "$beta" "$3" "${@:4}" ||
    fail "$3: shardtune and TRL differ"
}

# Shared by every case: 4 pairs per step as 2 micro-batches of 2 (or 2 ranks x 2 of 1).
common=(--lr 5e-3 --warmup-steps 2 --weight-decay 0.01 --grad-clip 1.0 --micro-batch 2 --grad-accum 2)
ours_common=(--optim.lr=5e-3 --optim.warmup_steps=2 --optim.weight_decay=0.01 --optim.grad_clip=1)
case "$case_name" in
  dpo_sigmoid)
    trl sigmoid "${common[@]}" --loss sigmoid --schedule cosine
    ours one 1 "${ours_common[@]}" --train.micro_batch=2 --train.grad_accum=2 --optim.schedule=cosine
    agree one sigmoid "sigmoid, 1 rank"
    ours two 2 "${ours_common[@]}" --train.micro_batch=1 --train.grad_accum=2 --optim.schedule=cosine
    agree two sigmoid "sigmoid, 2 ranks"
    ours packed 1 "${ours_common[@]}" --train.micro_batch=2 --train.grad_accum=2 --optim.schedule=cosine \
      --data.packing=true
    agree packed sigmoid "sigmoid, packed rows"
    ours shared 1 "${ours_common[@]}" --train.micro_batch=2 --train.grad_accum=2 --optim.schedule=cosine \
      --dpo.share_prompt=true
    agree shared sigmoid "sigmoid, shared prompts"
    ;;
  dpo_ipo)
    trl ipo "${common[@]}" --loss ipo --schedule linear
    ours one 1 "${ours_common[@]}" --train.micro_batch=2 --train.grad_accum=2 --optim.schedule=linear --dpo.loss=ipo
    # The loss, the gradients and so the training are the same; the logged log-probs and rewards
    # are per-token averages here (LlamaFactory's, the quantities IPO's loss uses) and sums in TRL.
    agree one ipo "ipo, 1 rank" --defined-otherwise logps/chosen,logps/rejected,rewards/chosen,rewards/rejected,rewards/margins \
      "logged as per-token averages, as LlamaFactory; TRL logs sums"
    ;;
  dpo_hinge)
    # transformers' "constant" has no warmup; shardtune's constant after its warmup is its
    # "constant_with_warmup".
    trl hinge "${common[@]}" --loss hinge --schedule constant_with_warmup
    ours one 1 "${ours_common[@]}" --train.micro_batch=2 --train.grad_accum=2 --optim.schedule=constant --dpo.loss=hinge
    agree one hinge "hinge, 1 rank" --loss-is-a-difference
    ;;
  dpo_lora)
    # TRL + PEFT train the adapter shardtune starts from (its seeded A, B = 0: the export of a
    # first step at learning rate 0, the warmup's), the reference being the model with adapters
    # off in both.
    lora=(--train.method=lora --lora.r=4 --lora.alpha=8 --lora.target_modules=q,v,down)
    steps=1 ours start 1 "${ours_common[@]}" --train.micro_batch=2 --train.grad_accum=2 "${lora[@]}" \
      --ckpt.export=true --ckpt.export_dtype=fp32
    trl lora "${common[@]}" --loss sigmoid --schedule cosine --adapter "$work/start/export"
    ours one 1 "${ours_common[@]}" --train.micro_batch=2 --train.grad_accum=2 --optim.schedule=cosine "${lora[@]}"
    agree one lora "LoRA (r 4, q v down), sigmoid, 1 rank"
    ;;
  *) fail "unknown case" ;;
esac
echo "PASS [$case_name]"
