#!/usr/bin/env bash
# grpo_run_test.sh <shardtune binary> <case>: `shardtune train --train.stage grpo` as users run
# it, on the debug preset and synthetic prompts: on a replay file, or sampling on its ranks.
# - resume_is_identical: a run stopped at step 3 and resumed to 8 on its 2 ranks writes the metrics
#   of an uninterrupted run to the bit; resumed on 1 rank (the global batch kept) it trains on the
#   same prompts and completions: the same generation statistics to the bit; an RLOO run
#   (train.stage = rloo) stopped and resumed writes its uninterrupted run's metrics to the bit.
# - entropy_quantile_spans_the_ranks: grpo.top_entropy_quantile's threshold is a quantile of every
#   rank's tokens of the micro-batch, as TRL's over its processes: 2 ranks of 2 completions score
#   the first step as 1 rank of the same 4 does.
# - sampled_learns: sampling on its rank with a reward program ("say token 7": the share of 7s),
#   the mean reward rises from under 0.05 to over 0.5 within 30 steps, under GRPO and under RLOO
#   (beta 0); on a LoRA and a QLoRA run, dense and with experts split over the ranks, the
#   sampler's log-probs are the training forward's (TRL's sampling/ metrics).
# - sampled_rollouts_are_rank_invariant: the completions sampled (completions.jsonl) are the same on
#   1, 2 and 4 ranks with the global batch kept, and a 2-rank run stopped at step 3 and resumed
#   writes the uninterrupted run's completions and metrics to the bit; a mixture-of-experts
#   model's are the same with its experts split 2 and 4 ways (dist.expert_parallel).
# - faults: what a user gets wrong is refused by the key or the file and line, with the fix, and
#   nothing is written: a short replay file, a line of the wrong shape, an unknown reward, groups
#   that do not fit the generation, packing, the entropy quantile on several ranks; a reward program that exits, answers another count, a value that
#   is not a number, or nothing in time stops the run naming it; a reward model that is missing, a
#   hub id, a causal LM, without a tokenizer or a pad/EOS token, or a policy without a tokenizer to
#   decode for it, refused at start naming reward.model.
# shellcheck source=harness.sh
source "$ST_SOURCE_DIR/tests/e2e/harness.sh"
# shellcheck source=byte_tokenizer.sh
source "$(dirname "$0")/byte_tokenizer.sh"

run --exit 0 "$bin" synth --output "$work/data" --kind prompt --pairs 64 --seed 4
/usr/bin/python3 - "$work/rollouts.jsonl" <<'PY' || fail "could not write the replay file"
import json, random, sys
random.seed(9)
with open(sys.argv[1], "w") as out:
    for row in range(64):
        group = [[random.randint(3, 500) for _ in range(random.randint(2, 12))] + ([2] if k % 2 else []) for k in range(4)]
        out.write(json.dumps({"completion_ids": group}) + "\n")
PY
grpo=(train --model.preset=debug --data.train="$work/data/train" --train.stage=grpo
      --train.micro_batch=2 --train.global_batch=8 --train.log_every=1 --train.dtype=fp32 --progress off --grpo.num_generations=4
      --grpo.reward_funcs=get_soft_overlong_punishment --grpo.overlong_max_length=10 --grpo.overlong_cache=6
      --optim.lr=1e-3 --optim.schedule=constant)  # constant: the learning rate is not a function of max_steps
replay=(--grpo.rollouts="$work/rollouts.jsonl")
# The reward program: the share of 7s among each completion's ids (a reward a policy learns fast).
cat >"$work/say7.py" <<'PY'
import json, sys
for line in sys.stdin:
    batch = json.loads(line)
    rewards = [sum(t == 7 for t in ids) / len(ids) for ids in batch["completion_ids"]]
    print(json.dumps({"rewards": rewards}), flush=True)
PY
# A reward that differs within every group (the mean id), so every step moves the adapters.
cat >"$work/mean_id.py" <<'PY'
import json, sys
for line in sys.stdin:
    batch = json.loads(line)
    print(json.dumps({"rewards": [sum(ids) / len(ids) / 512 for ids in batch["completion_ids"]]}), flush=True)
PY
sampling=(train --model.preset=debug --data.train="$work/data/train" --train.stage=grpo --train.log_every=1
          --train.dtype=fp32 --progress off --grpo.num_generations=8 --grpo.max_completion_length=8
          --optim.lr=1e-2 --optim.schedule=constant)
sampled=("${sampling[@]}" --reward.command="/usr/bin/python3 $work/say7.py")

case "$case_name" in
  resume_is_identical)
    run --exit 0 "$mpiexec" -np 2 "$bin" "${grpo[@]}" "${replay[@]}" --train.max_steps=8 --train.output_dir="$work/whole"
    run --exit 0 "$mpiexec" -np 2 "$bin" "${grpo[@]}" "${replay[@]}" --train.max_steps=3 --train.output_dir="$work/parts"
    cp -R "$work/parts" "$work/one"
    run --exit 0 "$mpiexec" -np 2 "$bin" "${grpo[@]}" "${replay[@]}" --train.max_steps=8 --train.output_dir="$work/parts" \
      --train.resume=auto
    same_metrics --expected "$work/whole/metrics.jsonl" --actual "$work/parts/metrics.jsonl" --tolerance 0
    # On 1 rank (grad_accum 4 keeps the global batch): the same prompts and completions, so the
    # same generation statistics to the bit (the losses differ by the order of fp32 sums).
    run --exit 0 "$bin" "${grpo[@]}" "${replay[@]}" --train.max_steps=8 --train.output_dir="$work/one" --train.resume=auto
    expect_output "grpo \(dapo, 4 completions per prompt, beta 0\) on 1 rank"
    /usr/bin/python3 - "$work/whole/metrics.jsonl" "$work/one/metrics.jsonl" <<'PY' || fail "the resumed 1-rank run saw other completions"
import json, sys
whole, one = ([json.loads(line) for line in open(path)] for path in sys.argv[1:3])
keys = [k for k in whole[0] if k.startswith(("reward", "completions/", "frac_reward"))]
assert len(keys) >= 10 and len(whole) == len(one) == 8, (keys, len(whole), len(one))
for a, b in zip(whole, one):
    assert all(a[k] == b[k] for k in keys), (a["step"], {k: (a[k], b[k]) for k in keys if a[k] != b[k]})
PY
    # RLOO on the same rollout phase (its own section; the KL penalty needs the reference, and
    # the generating policy's log-probs come from every generation): resumed to the bit too.
    rloo=("${grpo[@]/--train.stage=grpo/--train.stage=rloo}")
    rloo=("${rloo[@]//--grpo./--rloo.}")
    run --exit 0 "$mpiexec" -np 2 "$bin" "${rloo[@]}" --rloo.rollouts="$work/rollouts.jsonl" --train.max_steps=6 \
      --train.output_dir="$work/rloo-whole"
    expect_output "rloo \(4 completions per prompt, beta 0.05, reference online\) on 2 rank"
    run --exit 0 "$mpiexec" -np 2 "$bin" "${rloo[@]}" --rloo.rollouts="$work/rollouts.jsonl" --train.max_steps=3 \
      --train.output_dir="$work/rloo-parts"
    run --exit 0 "$mpiexec" -np 2 "$bin" "${rloo[@]}" --rloo.rollouts="$work/rollouts.jsonl" --train.max_steps=6 \
      --train.output_dir="$work/rloo-parts" --train.resume=auto
    same_metrics --expected "$work/rloo-whole/metrics.jsonl" --actual "$work/rloo-parts/metrics.jsonl" --tolerance 0
    ;;
  entropy_quantile_spans_the_ranks)
    # One group of 4 a step (global batch 4): 2 ranks of 2 completions, and 1 rank of all 4, in
    # one micro-batch each. TRL's threshold is over every process's masked entropies, so the same
    # 4 completions give one threshold, one mask and the first step's loss and gradient of 1 rank
    # (later steps drift by Adam's amplified rounding). Bound: relative 1e-5, the fp32 sums and
    # the gradient's reduction in another order (measured 1.1e-7 at worst on Cooperlake and
    # Haswell: 90x room); a threshold per rank keeps other tokens: the loss moves by 0.20 and the
    # grad norm by 0.038 relative.
    one_group=("${grpo[@]/--train.global_batch=8/--train.global_batch=4}")
    for n in 1 2; do
      run --exit 0 "$mpiexec" -np $n "$bin" "${one_group[@]/--train.micro_batch=2/--train.micro_batch=$((4 / n))}" \
        "${replay[@]}" --grpo.top_entropy_quantile=0.5 --train.max_steps=3 --train.output_dir="$work/q$n"
    done
    /usr/bin/python3 - "$work"/q{1,2}/metrics.jsonl "$ST_SOURCE_DIR/tests/support" <<'PY' || tolerance_verdict $? "2 ranks' entropy quantile differs from 1 rank's"
import json, sys
sys.path.insert(0, sys.argv[3])
import tolerance_log
one, two = ([json.loads(line) for line in open(path)] for path in sys.argv[1:3])
assert len(one) == len(two) == 3, (len(one), len(two))
worst = 0.0
for key in ("loss", "grad_norm", "entropy"):
    gap = abs(one[0][key] - two[0][key]) / max(abs(one[0][key]), 1e-30)
    print("step 1", key, one[0][key], two[0][key], "relative", gap)
    worst = max(worst, gap)
tolerance_log.record("step 1 loss, grad_norm, entropy", "1 rank", "2 ranks", worst, 1e-5)
sys.exit(0 if worst <= 1e-5 else 1)
PY
    ;;
  sampled_learns)
    # GRPO, then RLOO without its KL penalty: at lr 1e-2 the policy's per-token KL to its start
    # reaches 0.1-0.2 within 10 steps, and beta 0.05 x 8 tokens of it outweighs the 1/8 a 7 earns
    # while most groups score all 0 (their advantages are then the KL's alone; measured: the reward
    # stays under 0.03 in 30 steps with it, reaches 1.0 without). The penalty is held to TRL's in
    # oracle_grpo_rloo.
    run --exit 0 "$bin" "${sampled[@]}" --train.micro_batch=8 --train.global_batch=32 --train.max_steps=30 \
      --train.output_dir="$work/learn"
    rloo_sampled=("${sampled[@]/--train.stage=grpo/--train.stage=rloo}")
    run --exit 0 "$bin" "${rloo_sampled[@]//--grpo./--rloo.}" --rloo.beta=0 --train.micro_batch=8 \
      --train.global_batch=32 --train.max_steps=30 --train.output_dir="$work/learn-rloo"
    for run_dir in learn learn-rloo; do
      /usr/bin/python3 - "$work/$run_dir/metrics.jsonl" <<'PY' || fail "$run_dir: the mean reward did not rise"
import json, sys
rewards = [json.loads(line)["reward"] for line in open(sys.argv[1])]
first, last = sum(rewards[:3]) / 3, sum(rewards[-5:]) / 5
print(sys.argv[1], "mean reward, first 3 steps:", first, "last 5:", last)
assert len(rewards) == 30 and first < 0.05 and last > 0.5, rewards
PY
    done
    # The sampler computes what the training forward does: on a LoRA run (its adapters folded
    # into the gathered weights) at temperature 0.7 with top_k and the generating policy's
    # log-probs computed at generation (steps_per_generation 4 > grad_accum 2), TRL's
    # sampling_logp_difference/max stays within 1e-4: the log-probs are about -ln(512) = -6.2,
    # each carrying fp32 rounding of |logp| x 2^-24 per operation along a forward of under 256
    # roundings in depth (6.2 x 6e-8 x 256 = 9.5e-5). A wrong merge, temperature or position
    # shows at 1e-2 and more (the merge left out: 0.66). The reward is the mean id, which differs
    # within every group, so the adapters have moved by the generations at steps 3 and 5 (with
    # "say 7" most groups score all 0 and the adapters stayed 0: a merge left out went unseen).
    # The same on a QLoRA run: its NF4 base gathered as bytes and dequantized, its adapters folded
    # in, against the forward that dequantizes one unit at a time (the merge left out: 0.92). And
    # on debug-moe with its experts split over the 2 ranks (dist.expert_parallel = 2) and adapted
    # (every expert's gate, up, down): each rank gathers its experts, folds their adapters in, and
    # decodes through the expert exchange (the experts' adapters left out of the QLoRA merge: 0.14).
    moe=(--dist.expert_parallel=2 --lora.target_modules=q,k,v,o,gate,up,down)
    for method in lora qlora lora-moe qlora-moe; do
      model=("${sampling[@]}") extra=()
      [ "${method%-moe}" = "$method" ] || { model=("${sampling[@]/=debug/=debug-moe}"); extra=("${moe[@]}"); }
      run --exit 0 "$mpiexec" -np 2 "$bin" "${model[@]}" --reward.command="/usr/bin/python3 $work/mean_id.py" \
        --train.method="${method%-moe}" --grpo.temperature=0.7 --grpo.top_k=50 --grpo.steps_per_generation=4 \
        --train.micro_batch=2 --train.global_batch=8 --train.max_steps=6 --train.output_dir="$work/$method" "${extra[@]}"
      /usr/bin/python3 - "$work/$method/metrics.jsonl" "$ST_SOURCE_DIR/tests/support" <<'PY' || tolerance_verdict $? "$method: the sampler's log-probs differ from the training forward's"
import json, sys
sys.path.insert(0, sys.argv[2])
import tolerance_log
records = [json.loads(line) for line in open(sys.argv[1])]
worst = max(r["sampling/sampling_logp_difference/max"] for r in records)
assert len(records) == 6 and all(r["sampling/importance_sampling_ratio/mean"] > 0 for r in records), records
tolerance_log.record("sampling/sampling_logp_difference/max", "training forward", "sampler", worst, 1e-4)
print(sys.argv[1], "sampling_logp_difference/max, worst over 6 steps:", worst)
sys.exit(0 if worst <= 1e-4 else 1)
PY
    done
    ;;
  sampled_rollouts_are_rank_invariant)
    for n in 1 2 4; do
      run --exit 0 "$mpiexec" -np $n --oversubscribe "$bin" "${sampled[@]}" --train.micro_batch=2 --train.global_batch=16 \
        --train.max_steps=6 --grpo.log_completions=true --train.output_dir="$work/r$n"
    done
    /usr/bin/python3 - "$work"/r{1,2,4}/completions.jsonl <<'PY' || fail "the rollouts depend on the rank count"
import json, sys
runs = [[json.loads(line) for line in open(path)] for path in sys.argv[1:]]
assert len(runs[0]) == 6 * 16 and sum(any(t == 7 for t in c["completion_ids"]) for c in runs[0]) > 0, len(runs[0])
for other in runs[1:]:
    assert [(c["step"], c["row"], c["completion_ids"]) for c in other] == \
           [(c["step"], c["row"], c["completion_ids"]) for c in runs[0]]
PY
    run --exit 0 "$mpiexec" -np 2 "$bin" "${sampled[@]}" --train.micro_batch=2 --train.global_batch=16 \
      --train.max_steps=3 --grpo.log_completions=true --train.output_dir="$work/parts"
    run --exit 0 "$mpiexec" -np 2 "$bin" "${sampled[@]}" --train.micro_batch=2 --train.global_batch=16 \
      --train.max_steps=6 --grpo.log_completions=true --train.output_dir="$work/parts" --train.resume=auto
    cmp "$work/r2/completions.jsonl" "$work/parts/completions.jsonl" || fail "the resumed run sampled other completions"
    same_metrics --expected "$work/r2/metrics.jsonl" --actual "$work/parts/metrics.jsonl" --tolerance 0
    # debug-moe with its experts split over the ranks (each rank decoding through the expert
    # exchange, in step with its group): the completions of the experts on every rank.
    moe_sampled=("${sampled[@]/=debug/=debug-moe}" --train.micro_batch=2 --train.global_batch=16 --train.max_steps=6
                 --grpo.log_completions=true)
    run --exit 0 "$mpiexec" -np 2 "$bin" "${moe_sampled[@]}" --train.output_dir="$work/moe"
    for split in 2x2 4x2 4x4; do
      run --exit 0 "$mpiexec" -np "${split%x*}" --oversubscribe "$bin" "${moe_sampled[@]}" \
        --dist.expert_parallel="${split#*x}" --train.output_dir="$work/moe-$split"
      cmp "$work/moe/completions.jsonl" "$work/moe-$split/completions.jsonl" ||
        fail "experts split ${split#*x} ways on ${split%x*} ranks sampled other completions"
    done
    ;;
  faults)
    printf '%s\n' '{"completion_ids": [[5, 6], [7]]}' >"$work/short.jsonl"
    run --exit 1 "$bin" "${grpo[@]}" --grpo.rollouts="$work/short.jsonl" --train.max_steps=2 --train.output_dir="$work/f2"
    expect_output "short.jsonl: 1 lines for the 64 rows of data.train .*; the replay file \(grpo.rollouts\) needs one line per dataset row"
    for _ in $(seq 64); do echo '{"completion_ids": [[5, 6], [7]]}'; done >"$work/short.jsonl"
    run --exit 1 "$bin" "${grpo[@]}" --grpo.rollouts="$work/short.jsonl" --data.shuffle=false --train.max_steps=2 \
      --train.output_dir="$work/f3"
    expect_output "short.jsonl: line 1: completion_ids holds 2 completions: each line is \{\"completion_ids\": \[\[ids...\], ...\]\} with grpo.num_generations = 4"
    run --exit 2 "$bin" "${grpo[@]/=get_soft_overlong_punishment/=accuracy_reward}" "${replay[@]}" --train.max_steps=2 \
      --train.output_dir="$work/f4"
    expect_output "grpo.reward_funcs: no reward function 'accuracy_reward'"
    run --exit 2 "$bin" "${grpo[@]/--grpo.num_generations=4/--grpo.num_generations=3}" "${replay[@]}" --train.max_steps=2 \
      --train.output_dir="$work/f5"
    expect_output "not a multiple of grpo.num_generations = 3"
    run --exit 2 "$bin" "${grpo[@]}" "${replay[@]}" --data.packing=true --train.max_steps=2 --train.output_dir="$work/f6"
    expect_output "data.packing = true with train.stage = grpo"
    for f in 1 2 4 5 6; do  # refused before training: nothing written (f3 failed at its first generation)
      [ ! -e "$work/f$f/metrics.jsonl" ] || fail "refused run f$f wrote metrics"
    done
    # Reward programs that fail: the run stops at the first generation, naming the program.
    short=(--train.micro_batch=2 --train.global_batch=8 --train.max_steps=2)
    run --exit 1 "$bin" "${sampling[@]}" "${short[@]}" --reward.command="exit 3" \
      --train.output_dir="$work/p1"
    expect_output "reward.command: .exit 3. (closed its output before answering|stopped reading its input).* \(it exited with status 3\)"
    echo 'import sys; [print("{\"rewards\": [1]}", flush=True) for _ in sys.stdin]' >"$work/one.py"
    run --exit 1 "$bin" "${sampling[@]}" "${short[@]}" --reward.command="/usr/bin/python3 $work/one.py" \
      --train.output_dir="$work/p2"
    expect_output "reward program .*one.py. \(reward.command\) answered 1 rewards for 8 completions: one per completion"
    echo 'import sys; [print("{\"rewards\": [\"x\"" + ", 1" * 7 + "]}", flush=True) for _ in sys.stdin]' >"$work/text.py"
    run --exit 1 "$bin" "${sampling[@]}" "${short[@]}" --reward.command="/usr/bin/python3 $work/text.py" \
      --train.output_dir="$work/p3"
    expect_output "answered \"x\" for completion 0 of this rank's 8 \(dataset row [0-9]+\): each reward is a finite number or null"
    run --exit 1 "$bin" "${sampling[@]}" "${short[@]}" --reward.command="sleep 30" --reward.timeout_s=1 \
      --train.output_dir="$work/p4"
    expect_output "reward.command: .sleep 30. gave no answer line within 1s \(killed\)"
    run --exit 2 "$bin" "${sampling[@]}" "${short[@]}" --train.output_dir="$work/p5"
    expect_output "grpo.reward_funcs is empty and neither reward.model nor reward.command is given"
    # Reward models that cannot score: refused at start naming reward.model and the fix.
    run --exit 2 "$bin" "${sampling[@]}" "${short[@]}" --reward.model="$work/nowhere" --train.output_dir="$work/r1"
    expect_output "reward.model = $work/nowhere: no such directory"
    run --exit 2 "$bin" "${sampling[@]}" "${short[@]}" --reward.model=OpenAssistant/rm --train.output_dir="$work/r2"
    expect_output "reward.model = OpenAssistant/rm: a Hugging Face hub id.*hf download OpenAssistant/rm --local-dir models/rm.*then set reward.model = models/rm"
    tiny_model "$work/lm"
    run --exit 2 "$bin" "${sampling[@]}" "${short[@]}" --reward.model="$work/lm" --train.output_dir="$work/r3"
    expect_output "reward.model = $work/lm: a causal LM \(LlamaForCausalLM\), not a reward model"
    mkdir -p "$work/rm" && cp "$work/lm/config.json" "$work/lm/model.safetensors" "$work/rm/"
    /usr/bin/python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c.update(architectures=["LlamaForSequenceClassification"], num_labels=1); json.dump(c, open(sys.argv[1], "w"))' "$work/rm/config.json"
    run --exit 2 "$bin" "${sampling[@]}" "${short[@]}" --reward.model="$work/rm" --train.output_dir="$work/r4"
    expect_output "reward.model = $work/rm: holds no tokenizer \(tokenizer.json\)"
    cp "$work/lm/tokenizer.json" "$work/rm/"
    run --exit 1 "$bin" "${sampling[@]}" "${short[@]}" --reward.model="$work/rm" --train.output_dir="$work/r5"
    expect_output "reward.model = $work/rm: its tokenizer_config.json names no pad_token or eos_token"
    echo '{"eos_token": "<|eot_id|>"}' >"$work/rm/tokenizer_config.json"
    run --exit 2 "$bin" "${sampling[@]}" "${short[@]}" --reward.model="$work/rm" --train.output_dir="$work/r6"
    expect_output "the rewards read the completions' text .* but model.path \(\) holds no tokenizer"
    for f in 1 2 3 4 5 6; do
      [ ! -e "$work/r$f/metrics.jsonl" ] || fail "refused run r$f wrote metrics"
    done
    ;;
  *) fail "unknown case" ;;
esac
echo "PASS [$case_name]"
