#!/usr/bin/env bash
# grpo_run_test.sh <shardtune binary> <case>: `shardtune train --train.stage grpo` on a replay
# file as users run it, on the debug preset and synthetic prompts.
# - resume_is_identical: a run stopped at step 3 and resumed to 8 on its 2 ranks writes the metrics
#   of an uninterrupted run to the bit; resumed on 1 rank (the global batch kept) it trains on the
#   same prompts and completions: the same generation statistics to the bit.
# - faults: what a user gets wrong is refused by the key or the file and line, with the fix, and
#   nothing is written: no replay file, a line of the wrong shape, an unknown reward, groups that
#   do not fit the generation, packing, the entropy quantile on several ranks.
# shellcheck source=harness.sh
source "$ST_SOURCE_DIR/tests/e2e/harness.sh"

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
    ;;
  faults)
    run --exit 2 "$bin" "${grpo[@]}" --train.max_steps=2 --train.output_dir="$work/f1"
    expect_output "grpo.rollouts is empty: sampling the completions on the training ranks is not built yet"
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
    run --exit 2 "$mpiexec" -np 2 "$bin" "${grpo[@]}" "${replay[@]}" --grpo.top_entropy_quantile=0.5 --train.max_steps=2 \
      --train.output_dir="$work/f7"
    expect_output "grpo.top_entropy_quantile = 0.500000 on 2 ranks"
    for f in 1 2 4 5 6 7; do  # refused before training: nothing written (f3 failed at its first generation)
      [ ! -e "$work/f$f/metrics.jsonl" ] || fail "refused run f$f wrote metrics"
    done
    ;;
  *) fail "unknown case" ;;
esac
echo "PASS [$case_name]"
