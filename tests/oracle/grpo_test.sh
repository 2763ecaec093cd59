#!/usr/bin/env bash
# grpo_test.sh <shardtune binary> <case> <vocabularies dir> <smollm2 dir>: `shardtune train
# --train.stage grpo` on a replay file (grpo.rollouts) against TRL 1.16's own GRPOTrainer
# (trl_grpo.py: its rollout_func serves the same completions), on the CPU in fp32 with TRL's
# float64 run as the judge past the screen (trl_harness.sh), step for step: loss, grad norm,
# learning rate, the rewards' statistics, the completions' lengths, entropy, kl and the clip
# ratios (trl_compare.py). The tiny llama_gqa fixture, 32 prompts with 4 replayed completions
# each (2 to 10 tokens, half ending in EOS), the reward DAPO's soft overlong punishment on the
# ids (limit 8, cache 4: 0, a ramp, -1), 12 steps of 8 completions.
# - losses: each loss type (dapo on 1 rank and on 2, grpo, dr_grpo, bnpo), on-policy (a
#   generation per step);
# - updates: a generation feeding 2 steps of 2 micro-batches twice (steps_per_generation 4,
#   num_iterations 2: the generating policy's log-probs kept, clipping that bites), with
#   clip-higher and delta; GSPO's sequence-level ratio; the KL term (beta 0.04) with and without
#   the bias correction, and temperature 0.7; masked truncated completions; rewards scaled by the
#   batch's std and not at all.
# - lora: LoRA (r 4 on q, v, down), TRL + PEFT training the adapter shardtune starts from (its
#   seeded A, B = 0: the export of a first step at learning rate 0), with the KL term against the
#   model with its adapters off, on 1 rank and on 2.
# - rewards: two weighted rewards, the overlong rule and the user's program (reward.command,
#   even_share.py: the share of even ids, none for 3-id completions) against the same function in
#   TRL's reward_funcs, with each scale_rewards and both multi_objective_aggregations.
# - reward_model: a tiny Llama reward model (tiny_reward_model.py: its own tokenizer and chat
#   template, pad = EOS) before the overlong rule, weighted 1 and 0.5, against TRL's reward model
#   (read by TRL: the template over prompt and completion, chat_template_kwargs included, or the
#   text prompt and the completion as one text): conversational prompts on 1 rank and on 2 (the
#   reward model sharded over both), text prompts (tokenized as TRL does, with the BOS the
#   tokenizer's post_processor adds) on 1.
# - rloo: `--train.stage rloo` against TRL's RLOOTrainer (trl_rloo.py: the same replay served to
#   its generation): the KL penalty in the reward (beta 0.05, RLOO's default; old log-probs from
#   the generation, first step included) on 1 rank and on 2; a generation reused (steps_per_generation
#   4, num_iterations 2) with clipping that bites, normalised advantages and a reward clip range;
#   masked truncated completions at temperature 0.7 with the KL penalty; LoRA with the KL penalty
#   against the model with its adapters off.
# - moe: a tiny Qwen3-MoE (tiny_moe_model.py: 8 experts, top-2) with the router's load-balancing
#   loss as GRPOTrainer adds it (the config's router_aux_loss_coef, 0.001), on 1 rank and on 2
#   (TRL's one process accumulating the ranks' two micro-batches).
# shellcheck source=../e2e/harness.sh
source "$ST_SOURCE_DIR/tests/e2e/harness.sh"
# shellcheck source=../tokenizer/vocabularies.sh
source "$ST_SOURCE_DIR/tests/tokenizer/vocabularies.sh"
need_oracles "$3"
steps=12 beta=0.1  # beta: trl_harness.sh's DPO default (the KL metric's scale is 1 without log-probs)
# shellcheck source=trl_harness.sh
source "$ST_SOURCE_DIR/tests/oracle/trl_harness.sh"

"$python" - "$work/prompts.jsonl" "$work/rollouts.jsonl" <<'PY' || fail "could not write the prompts and rollouts"
import json, random, sys
random.seed(5)
with open(sys.argv[1], "w") as prompts, open(sys.argv[2], "w") as rollouts:
    for row in range(32):
        prompts.write(json.dumps({"prompt_ids": [1] + [random.randint(3, 96) for _ in range(random.randint(3, 8))]}) + "\n")
        group = []
        for _ in range(4):
            ids = [random.randint(3, 96) for _ in range(random.randint(2, 9))]
            group.append(ids + [2] if random.random() < 0.5 else ids)
        rollouts.write(json.dumps({"completion_ids": group}) + "\n")
PY
run --exit 0 "$bin" prep --input "$work/prompts.jsonl" --vocab 97 --output "$work/prompts" --kind prompt

# grpo_trl <name> <trl_grpo.py options...>: TRL's run, 8 completions per step unless told ($lr: the
# learning rate, 5e-3 unless set; $model, $prompts, $rollouts: another model, prompts file and
# replay file than llama_gqa's).
grpo_trl() {
  trl_runs trl_grpo.py "$1" "${model:-$fixtures/llama_gqa}" "${prompts:-$work/prompts.jsonl}" \
    --rollouts "${rollouts:-$work/rollouts.jsonl}" \
    --steps "$steps" --num-generations 4 --overlong 8,4 --lr "${lr:-5e-3}" --schedule linear --weight-decay 0.01 \
    --grad-clip 1.0 "${@:2}"
}
# grpo_ours <name> <ranks> <train options...>: shardtune's run of the same ($train_data: the
# prompts prepped from $prompts).
grpo_ours() {
  train_data=${train_data:-$work/prompts/train} ours "$1" "$2" --train.stage=grpo --grpo.num_generations=4 \
    --grpo.rollouts="${rollouts:-$work/rollouts.jsonl}" --grpo.reward_funcs=get_soft_overlong_punishment \
    --grpo.overlong_max_length=8 --grpo.overlong_cache=4 --optim.lr="${lr:-5e-3}" --optim.schedule=linear \
    --optim.weight_decay=0.01 --optim.grad_clip=1 "${@:3}"
}
# The GRPO loss is a sum of advantage-weighted terms of order 1 with zero-mean advantages: its
# fp32 error is relative to those terms (1), not to the small sum. Adam at these learning rates
# turns rounding noise into lr-sized steps: TRL's own fp32 grad norms drift from its float64 run
# by 1e-4 relative within 10 steps (measured, dapo), so the judge's scale is the spread TRL's
# fp32 showed so far (trl_compare.py --noise-grows).
agree_grpo() { agree "$1" "$2" "$3" --loss-is-a-difference --noise-grows; }
# clip_bites <trl name>: TRL's run clipped some token (the case's clipping is exercised).
clip_bites() {
  "$python" - "$work/$1.trl.jsonl" <<'PY' || fail "$1: no step clipped a token; the case does not exercise clipping"
import json, sys
records = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
assert any(r.get("clip_ratio/region_mean", 0) > 0 for r in records)
PY
}

# rloo_trl / rloo_ours <name> ...: grpo_trl / grpo_ours for RLOO (trl_rloo.py, train.stage = rloo);
# agree_rloo: agree_grpo with RLOO's kl, a difference of log-probs, to 1e-5 nats (trl_compare.py).
rloo_trl() {
  trl_runs trl_rloo.py "$1" "$fixtures/llama_gqa" "$work/prompts.jsonl" --rollouts "$work/rollouts.jsonl" \
    --steps "$steps" --num-generations 4 --overlong 8,4 --lr "${lr:-5e-3}" --schedule linear --weight-decay 0.01 \
    --grad-clip 1.0 "${@:2}"
}
rloo_ours() {
  train_data=$work/prompts/train ours "$1" "$2" --train.stage=rloo --rloo.num_generations=4 \
    --rloo.rollouts="$work/rollouts.jsonl" --rloo.reward_funcs=get_soft_overlong_punishment \
    --rloo.overlong_max_length=8 --rloo.overlong_cache=4 --optim.lr="${lr:-5e-3}" --optim.schedule=linear \
    --optim.weight_decay=0.01 --optim.grad_clip=1 "${@:3}"
}

agree_rloo() { agree "$1" "$2" "$3" --loss-is-a-difference --noise-grows --kl-is-a-difference; }

one=(--micro-batch 4 --grad-accum 2)
ours_one=(--train.micro_batch=4 --train.grad_accum=2)
case "$case_name" in
  losses)
    for loss in dapo grpo dr_grpo bnpo; do
      grpo_trl "$loss" "${one[@]}" --loss-type "$loss" --max-completion-length 12
      grpo_ours "$loss" 1 "${ours_one[@]}" --grpo.loss_type="$loss" --grpo.max_completion_length=12
      agree_grpo "$loss" "$loss" "GRPO loss_type $loss, 1 rank, 2 micro-batches of 4"
    done
    differs grpo dapo "grpo's per-completion means against TRL's dapo"
    # 2 ranks of one 4-completion micro-batch: TRL's one process with one 8-completion micro-batch
    # holds the same completions in the step and in its one micro-batch (dapo: the loss does not
    # depend on how the step's completions are split).
    grpo_trl dapo-wide --micro-batch 8 --grad-accum 1 --loss-type dapo
    grpo_ours dapo-two 2 --train.micro_batch=4 --train.grad_accum=1
    agree_grpo dapo-two dapo-wide "GRPO dapo, 2 ranks x 4 completions"
    ;;
  updates)
    reuse=(--steps-per-generation 4 --num-iterations 2 --epsilon 0.05 --epsilon-high 0.07 --delta 1.5)
    ours_reuse=(--grpo.steps_per_generation=4 --grpo.num_iterations=2 --grpo.epsilon=0.05 --grpo.epsilon_high=0.07
                --grpo.delta=1.5)
    lr=1e-2 grpo_trl reuse "${one[@]}" "${reuse[@]}"
    clip_bites reuse
    lr=1e-2 grpo_ours reuse 1 "${ours_one[@]}" "${ours_reuse[@]}"
    agree_grpo reuse reuse "GRPO, a generation for 2 steps x 2 iterations, epsilon 0.05, clip-higher 0.07, delta 1.5"
    # GSPO at TRL's clip range and a smaller step: a whole completion near the clip boundary
    # changes the gradient by a jump that fp32 rounding decides (at lr 1e-2 a quarter of the
    # completions clip at step 2 and the runs part after step 5, TRL's fp32 too, measured); its
    # clipping is held to TRL's loss on given log-probs in oracle_grpo_loss.
    lr=2e-3 grpo_trl gspo "${one[@]}" --steps-per-generation 4 --num-iterations 2 --importance-sampling-level sequence \
      --loss-type grpo
    lr=2e-3 grpo_ours gspo 1 "${ours_one[@]}" --grpo.steps_per_generation=4 --grpo.num_iterations=2 \
      --grpo.importance_sampling_level=sequence \
      --grpo.loss_type=grpo
    agree_grpo gspo gspo "GSPO (sequence-level ratio), a generation reused"
    # A warmup step (lr 0 at the first): without one, Adam's first step g / (|g| + 1e-8) maps an
    # embedding gradient that is a 6.7e5-fold cancellation (1.1e-7 of terms 0.077 in magnitude)
    # to anywhere in (0, 1) of lr, so the runs part by how each kernel rounded one element
    # (Sandybridge 6x TRL's fp32 distance from float64 at step 2; docs/testing.md). Through a zero
    # step that gradient only enters Adam's moments, beside the later ones.
    grpo_trl kl "${one[@]}" --beta 0.04 --temperature 0.7 --warmup-steps 1
    grpo_ours kl 1 "${ours_one[@]}" --grpo.beta=0.04 --grpo.temperature=0.7 --optim.warmup_steps=1
    agree_grpo kl kl "GRPO with the KL term (beta 0.04), temperature 0.7"
    lr=1e-2 grpo_trl kl-corrected "${one[@]}" "${reuse[@]}" --beta 0.04 --bias-correction-kl
    lr=1e-2 grpo_ours kl-corrected 1 "${ours_one[@]}" "${ours_reuse[@]}" --grpo.beta=0.04 \
      --grpo.use_bias_correction_kl=true
    agree_grpo kl-corrected kl-corrected "GRPO with the bias-corrected KL term, a generation reused"
    # No top-entropy quantile here: a group's completions share their first token's context, so
    # its entropy comes G times, equal but for fp32 rounding, and a threshold on that value keeps
    # a share of them that rounding decides (on one BLAS core shardtune's loss left TRL's at step
    # 4). Its selection is held to TRL's on given entropies in oracle_grpo_loss.
    grpo_trl masked "${one[@]}" --mask-truncated --scale-rewards batch
    grpo_ours masked 1 "${ours_one[@]}" --grpo.mask_truncated_completions=true --grpo.scale_rewards=batch
    agree_grpo masked masked "GRPO, truncated completions masked, batch-scaled rewards"
    grpo_trl unscaled "${one[@]}" --scale-rewards none
    grpo_ours unscaled 1 "${ours_one[@]}" --grpo.scale_rewards=none
    agree_grpo unscaled unscaled "Dr. GRPO's unscaled rewards"
    ;;
  lora)
    lora=(--train.method=lora --lora.r=4 --lora.alpha=8 --lora.target_modules=q,v,down)
    steps=1 grpo_ours start 1 "${ours_one[@]}" "${lora[@]}" --optim.warmup_steps=2 --ckpt.export=true \
      --ckpt.export_dtype=fp32
    lr=1e-2 grpo_trl lora "${one[@]}" --beta 0.04 --adapter "$work/start/export"
    lr=1e-2 grpo_ours lora 1 "${ours_one[@]}" "${lora[@]}" --grpo.beta=0.04
    agree_grpo lora lora "GRPO with LoRA (r 4, q v down) and the KL term against the adapters off, 1 rank"
    lr=1e-2 grpo_ours lora-two 2 --train.micro_batch=4 --train.grad_accum=1 "${lora[@]}" --grpo.beta=0.04
    lr=1e-2 grpo_trl lora-wide --micro-batch 8 --grad-accum 1 --beta 0.04 --adapter "$work/start/export"
    agree_grpo lora-two lora-wide "GRPO with LoRA and the KL term, 2 ranks x 4 completions"
    ;;
  rewards)
    cat >"$work/even_share.py" <<'PY'
import json, sys
for line in sys.stdin:
    ids = json.loads(line)["completion_ids"]
    print(json.dumps({"rewards": [None if len(c) == 3 else sum(t % 2 == 0 for t in c) / len(c) for c in ids]}), flush=True)
PY
    program=(--reward.command="$python $work/even_share.py" --reward.name=even_share --grpo.reward_weights=1.0,0.5)
    # Larger advantages than the overlong rule's alone: grad norms of about 5, clipped to 1, whose
    # fp32 noise grows to 1e-5 of float64 within 7 steps in TRL's own runs (measured); the judge's
    # scale is TRL's spread over three draws (this split, 8 x 1 and 2 x 4: the same dapo loss).
    two_rewards() {  # two_rewards <name> <label> <trl options> -- <our options>
      local name=$1 label=$2 split trl_options=() our_options=()
      shift 2
      while [ "$1" != -- ]; do trl_options+=("$1"); shift; done
      our_options=("${@:2}")
      grpo_trl "$name" "${one[@]}" --even-share --reward-weights 1.0,0.5 "${trl_options[@]}"
      for split in "8 1" "2 4"; do
        grpo_trl "$name.mb${split% *}" --micro-batch "${split% *}" --grad-accum "${split#* }" --even-share \
          --reward-weights 1.0,0.5 "${trl_options[@]}"
      done
      grpo_ours "$name" 1 "${ours_one[@]}" "${program[@]}" "${our_options[@]}"
      agree "$name" "$name" "$label" --loss-is-a-difference --noise-grows \
        --fp32-draws "$work/$name.mb8.trl.jsonl,$work/$name.mb2.trl.jsonl"
    }
    for scale in group batch none; do
      two_rewards "two-$scale" "GRPO, the overlong rule and a reward program weighted 1 and 0.5, scale_rewards $scale" \
        --scale-rewards "$scale" -- --grpo.scale_rewards="$scale"
    done
    two_rewards two-gdpo "GRPO, the two rewards each normalised in its group, then summed (GDPO)" \
      --multi-objective-aggregation normalize_then_sum -- --grpo.multi_objective_aggregation=normalize_then_sum
    grep -q '"rewards/even_share/mean"' "$work/two-group/metrics.jsonl" || fail "no rewards/even_share/mean logged"
    ;;
  reward_model)
    made_once --output "$work/policy" --output "$work/reward-model" -- \
      "$python" "$here/tiny_reward_model.py" "$work/policy" "$work/reward-model" >/dev/null ||
      fail "could not make the tiny policy and reward model"
    # TRL's conversational prompts, and completions of the bytes' printable ids, half ending in
    # the tokenizer's EOS (<|eot_id|>, 259: dropped from the text the reward model reads).
    "$python" - "$work/chat-prompts.jsonl" "$work/chat-rollouts.jsonl" "$work/text-prompts.jsonl" <<'PY' ||
import json, random, sys
random.seed(7)
words = ["two", "plus", "seven", "why", "sky", "blue", "add", "list", "name", "three"]
with open(sys.argv[1], "w") as prompts, open(sys.argv[2], "w") as rollouts, open(sys.argv[3], "w") as texts:
    for row in range(32):
        text = f"row {row}: " + " ".join(random.choice(words) for _ in range(random.randint(1, 4)))
        prompts.write(json.dumps({"prompt": [{"role": "user", "content": text}]}) + "\n")
        texts.write(json.dumps({"prompt": text + " ="}) + "\n")
        group = []
        for _ in range(4):
            ids = [random.randint(32, 126) for _ in range(random.randint(2, 9))]
            group.append(ids + [259] if random.random() < 0.5 else ids)
        rollouts.write(json.dumps({"completion_ids": group}) + "\n")
PY
      fail "could not write the prompts"
    run --exit 0 "$bin" prep --input "$work/chat-prompts.jsonl" --tokenizer "$work/policy" --output "$work/chat" \
      --kind prompt --template-kwargs '{"mode": "fast"}'
    # The reward model first, then the overlong rule, weighted 1 and 0.5 (TRL's order); the
    # template's `mode` reaches the prompts and the reward model's template (chat_template_kwargs).
    rm_trl=(--tokenizer "$work/policy" --reward-model "$work/reward-model" --chat-template-kwargs '{"mode": "fast"}'
            --reward-weights 1.0,0.5)
    rm_ours=(--reward.model="$work/reward-model" --prep.template_kwargs='{"mode": "fast"}' --grpo.reward_weights=1.0,0.5)
    model=$work/policy prompts=$work/chat-prompts.jsonl rollouts=$work/chat-rollouts.jsonl \
      grpo_trl rm-chat "${one[@]}" "${rm_trl[@]}"
    model=$work/policy train_data=$work/chat/train rollouts=$work/chat-rollouts.jsonl \
      grpo_ours rm-chat-one 1 "${ours_one[@]}" "${rm_ours[@]}"
    agree_grpo rm-chat-one rm-chat "GRPO with a reward model and the overlong rule, conversational prompts, 1 rank"
    grep -q '"rewards/reward-model/mean"' "$work/rm-chat-one/metrics.jsonl" || fail "no rewards/reward-model/mean logged"
    # 2 ranks, the reward model sharded over both: TRL's 1-rank run accumulates their micro-batches.
    model=$work/policy train_data=$work/chat/train rollouts=$work/chat-rollouts.jsonl \
      grpo_ours rm-chat-two 2 --train.micro_batch=4 --train.grad_accum=1 "${rm_ours[@]}"
    agree rm-chat-two rm-chat "GRPO with a reward model and the overlong rule, conversational prompts, 2 ranks" \
      --loss-is-a-difference --noise-grows --defined-otherwise entropy \
      "a token mean over both ranks' micro-batch here, the mean of TRL's two micro-batches' token means there"
    # TRL's text prompts: tokenized as written with the tokenizer's BOS (no template), and the reward
    # model reading prompt + completion as one text, without special tokens.
    run --exit 0 "$bin" prep --input "$work/text-prompts.jsonl" --tokenizer "$work/policy" --output "$work/text" \
      --kind prompt
    model=$work/policy prompts=$work/text-prompts.jsonl rollouts=$work/chat-rollouts.jsonl \
      grpo_trl rm-text "${one[@]}" "${rm_trl[@]}"
    model=$work/policy train_data=$work/text/train rollouts=$work/chat-rollouts.jsonl \
      grpo_ours rm-text-one 1 "${ours_one[@]}" "${rm_ours[@]}"
    agree_grpo rm-text-one rm-text "GRPO with a reward model and the overlong rule, text prompts, 1 rank"
    ;;
  rloo)
    rloo_trl kl "${one[@]}"
    rloo_ours kl 1 "${ours_one[@]}"
    agree_rloo kl kl "RLOO, the KL penalty in the reward (beta 0.05), 1 rank, 2 micro-batches of 4"
    grep -q '"kl"' "$work/kl/metrics.jsonl" || fail "RLOO logged no kl"
    # 2 ranks of one 4-completion micro-batch: TRL's one process with one 8-completion micro-batch
    # (the loss is each micro-batch's completion mean: the same mean of the same 8).
    rloo_trl kl-wide --micro-batch 8 --grad-accum 1
    rloo_ours kl-two 2 --train.micro_batch=4 --train.grad_accum=1
    agree_rloo kl-two kl-wide "RLOO with the KL penalty, 2 ranks x 4 completions"
    # The overlong rule's rewards lie in [-1, 0]: clipped to [-0.5, 0], every completion past the
    # ramp's middle gets the same reward.
    reuse=(--steps-per-generation 4 --num-iterations 2 --epsilon 0.05 --epsilon-high 0.07 --beta 0
           --normalize-advantages --reward-clip-range=-0.5,0)
    ours_reuse=(--rloo.steps_per_generation=4 --rloo.num_iterations=2 --rloo.epsilon=0.05 --rloo.epsilon_high=0.07
                --rloo.beta=0 --rloo.normalize_advantages=true --rloo.reward_clip_range=-0.5,0)
    lr=1e-2 rloo_trl reuse "${one[@]}" "${reuse[@]}"
    clip_bites reuse
    lr=1e-2 rloo_ours reuse 1 "${ours_one[@]}" "${ours_reuse[@]}"
    agree_rloo reuse reuse "RLOO, a generation for 2 steps x 2 iterations, clipped ratios, normalised advantages, reward clip range"
    rloo_trl masked "${one[@]}" --mask-truncated --temperature 0.7
    rloo_ours masked 1 "${ours_one[@]}" --rloo.mask_truncated_completions=true --rloo.temperature=0.7
    agree_rloo masked masked "RLOO with the KL penalty, truncated completions masked, temperature 0.7"
    # LoRA from the adapter shardtune starts from (its export after a step at learning rate 0),
    # the KL penalty's reference the model with its adapters off (TRL's way for a PEFT model).
    lora=(--train.method=lora --lora.r=4 --lora.alpha=8 --lora.target_modules=q,v,down)
    steps=1 rloo_ours start 1 "${ours_one[@]}" "${lora[@]}" --optim.warmup_steps=2 --ckpt.export=true \
      --ckpt.export_dtype=fp32
    lr=1e-2 rloo_trl lora "${one[@]}" --adapter "$work/start/export"
    lr=1e-2 rloo_ours lora 1 "${ours_one[@]}" "${lora[@]}"
    agree_rloo lora lora "RLOO with LoRA (r 4, q v down) and the KL penalty against the adapters off"
    ;;
  moe)
    made_once --output "$work/moe" --output "$work/moe-stacked" -- "$python" "$here/tiny_moe_model.py" qwen3_moe \
      "$work/moe" "$work/moe-stacked" || fail "could not make the tiny Qwen3-MoE"
    trl_runs trl_grpo.py moe "$work/moe" "$work/prompts.jsonl" --rollouts "$work/rollouts.jsonl" --steps "$steps" \
      --num-generations 4 --overlong 8,4 --lr 5e-3 --schedule linear --weight-decay 0.01 --grad-clip 1.0 "${one[@]}"
    grep -q '"aux_loss"' "$work/moe.trl.jsonl" || fail "TRL logged no aux_loss: its router loss was off"
    # Our runs' names are not the model's directory ($work/moe): a run writes its own directory.
    model=$work/moe grpo_ours moe-one 1 "${ours_one[@]}"
    agree_grpo moe-one moe "GRPO on Qwen3-MoE with the router loss, 1 rank"
    # 2 ranks of one 4-completion micro-batch: TRL's 1-rank run above accumulates the same two.
    model=$work/moe grpo_ours moe-two 2 --train.micro_batch=4 --train.grad_accum=1
    # Each rank's router loss is over its own micro-batch, as each of TRL's accumulated ones; the
    # per-micro-batch metrics (entropy) are over both ranks' tokens at once here, over each of
    # TRL's two micro-batches there (the same terms, another mean).
    agree moe-two moe "GRPO on Qwen3-MoE with the router loss, 2 ranks (TRL's micro-batches the ranks')" \
      --loss-is-a-difference --noise-grows --defined-otherwise entropy \
      "a token mean over both ranks' micro-batch here, the mean of TRL's two micro-batches' token means there"
    ;;
  *) fail "unknown case" ;;
esac
echo "PASS [$case_name]"
