#!/usr/bin/env bash
# eval_test.sh <shardtune binary> <case>: `shardtune eval` as users run it, against the metrics
# tests/reference/eval_fixtures.py computes independently (ST_EVAL_FIXTURES): on 1 and 3 ranks,
# from a checkpoint and its export alike, and refusing bad task files without writing anything.
# shellcheck source=harness.sh
source "$(dirname "$0")/harness.sh"
fix=${ST_EVAL_FIXTURES:?run through ctest}
python=${ST_REFERENCE_PYTHON:-python3}
compare="$python ${ST_SOURCE_DIR}/tests/reference/compare_eval.py"
tasks="$fix/mc.jsonl,$fix/mc_zero.jsonl,$fix/ppl.jsonl,$fix/gen.jsonl"

case "$case_name" in
  matches_reference_on_one_and_three_ranks)
    run --exit 0 "$bin" eval --model "$fix/model" --tasks "$tasks" --max-length 96 --output "$work/one.json" \
      --log-samples "$work/one.jsonl"
    expect_output 'eval: mc \(multiple_choice, 7 documents, 2-shot\): acc [0-9.]+ ± [0-9.]+  acc_bytes'
    expect_output 'eval: ppl \(loglikelihood_rolling, 4 documents, 0-shot\): bits_per_byte [0-9.]+  byte_perplexity'
    expect_output 'eval: 4 task\(s\) on .*/model \(fp32 on cpu, 1 rank\(s\)\)'
    $compare "$fix/expected.json" "$fix/expected_samples.jsonl" "$work/one.json" "$work/one.jsonl" 1e-4 ||
      fail "1 rank differs from the reference"
    run --exit 0 "$mpiexec" -np 3 --oversubscribe "$bin" eval --model "$fix/model" --tasks "$tasks" --max-length 96 \
      --output "$work/three.json" --log-samples "$work/three.jsonl" --batch-tokens 200 --batch-size 2
    $compare "$fix/expected.json" "$fix/expected_samples.jsonl" "$work/three.json" "$work/three.jsonl" 1e-4 ||
      fail "3 ranks differ from the reference"
    $compare "$work/one.json" "$work/one.jsonl" "$work/three.json" "$work/three.jsonl" 1e-5 || fail "3 ranks differ from 1"
    grep -q '"fingerprint": "' "$work/one.json" || fail "no model fingerprint in results.json"
    [ "$(wc -l <"$work/one.jsonl")" -eq 20 ] || fail "expected 20 sample lines (7 + 3 + 4 + 6)"
    ;;
  checkpoint_equals_export)
    synth_data --dir "$work/data" --pairs 200
    run --exit 0 "$bin" train --config "$ST_SOURCE_DIR/examples/demo.ini" --progress off --data.train="$work/data/train" \
      --data.val="$work/data/val" --train.output_dir="$work/run" --train.micro_batch=2 --train.grad_accum=1 \
      --train.global_batch=0 --train.max_steps=3 --ckpt.every=3 --ckpt.export=true --ckpt.export_dtype=fp32
    cp "$fix/model/tokenizer.json" "$fix/model/tokenizer_config.json" "$work/run/export/"
    run --exit 0 "$mpiexec" -np 2 "$bin" eval --checkpoint "$work/run/checkpoints" --tokenizer "$work/run/export" \
      --tasks "$fix/mc.jsonl,$fix/ppl.jsonl,$fix/gen.jsonl" --max-length 96 --output "$work/ckpt.json" --log-samples "$work/ckpt.jsonl"
    expect_output 'on checkpoint .*step_00000003'
    run --exit 0 "$mpiexec" -np 2 "$bin" eval --model "$work/run/export" --tasks "$fix/mc.jsonl,$fix/ppl.jsonl,$fix/gen.jsonl" \
      --max-length 96 --output "$work/export.json" --log-samples "$work/export.jsonl"
    cmp "$work/ckpt.jsonl" "$work/export.jsonl" || fail "the checkpoint's samples differ from its export's"
    $compare "$work/ckpt.json" "$work/ckpt.jsonl" "$work/export.json" "$work/export.jsonl" 1e-12 ||
      fail "the checkpoint's metrics differ from its export's"
    ;;
  during_training_equals_eval_command)
    # [eval] tasks at every evaluation on the training ranks: the metrics land in metrics.jsonl
    # (and TensorBoard), equal `shardtune eval` on the checkpoint of the same step, and a run
    # resumed from that checkpoint logs the same ones after it.
    synth_data --dir "$work/data" --pairs 200
    train_tasks() {
      local dir=$1
      shift
      run --exit 0 "$mpiexec" -np 2 "$bin" train --config "$ST_SOURCE_DIR/examples/demo.ini" --progress off \
        --data.train="$work/data/train" --data.val="$work/data/val" --train.output_dir="$dir" --train.micro_batch=2 \
        --train.grad_accum=1 --train.global_batch=0 --train.max_steps=4 --train.eval_every=2 --ckpt.every=2 \
        --eval.tasks="$fix/mc.jsonl, $fix/ppl.jsonl, $fix/gen.jsonl" --eval.tokenizer="$fix/model" --eval.max_length=96 "$@"
    }
    train_tasks "$work/run"
    expect_output 'eval step 2: mc \(7 documents, 2-shot\): acc [0-9.]+ ± [0-9.]+'
    expect_output 'eval step 4: gen \(6 documents, 1-shot\): exact_match [0-9.]+'
    expect_output 'eval step 2/4  loss [0-9.]+ .* mc/acc [0-9.]+  mc/acc_bytes [0-9.]+ .* gen/exact_match [0-9.]+'
    tensorboard_matches_metrics "$work/run"
    # The run's step-2 task metrics against `shardtune eval` on its checkpoint: same_as_eval_command RUN.
    same_as_eval_command() {
      run --exit 0 "$mpiexec" -np 3 --oversubscribe "$bin" eval --checkpoint "$1/checkpoints/step_00000002" \
        --tokenizer "$fix/model" --tasks "$fix/mc.jsonl,$fix/ppl.jsonl,$fix/gen.jsonl" --max-length 96 \
        --output "$1/step2.json"
      "$python" - "$1/metrics.jsonl" "$1/step2.json" <<'PY' || fail "$1: the run's step-2 task metrics differ from shardtune eval on its checkpoint"
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
run = next(r for r in records if r["step"] == 2 and "eval/mc/acc" in r)
results = json.load(open(sys.argv[2]))["results"]
exact = ("acc", "acc_norm", "acc_bytes", "exact_match")
bad = 0
for task, result in results.items():
    for name, metric in result["metrics"].items():
        mine = run["eval/%s/%s" % (task, name)]
        same = mine == metric["value"] if name in exact else abs(mine - metric["value"]) <= 1e-4 * abs(metric["value"])
        if metric["stderr"] is not None:
            same = same and abs(run["eval/%s/%s_stderr" % (task, name)] - metric["stderr"]) <= 1e-12
        if not same:
            print("eval/%s/%s: run %r, eval command %r" % (task, name, mine, metric["value"]))
            bad += 1
print("compared %d task metrics" % sum(len(r["metrics"]) for r in results.values()))
sys.exit(1 if bad else 0)
PY
    }
    same_as_eval_command "$work/run"
    # A LoRA run's generate tasks run too (refused before adapters could be gathered), its
    # metrics those of the eval command on its checkpoint (that the folded adapters decode as the
    # training forward computes is held to 1e-4 by grpo_run_test.sh sampled_learns).
    train_tasks "$work/lora" --train.method=lora --lora.target_modules=q,k,v,o,gate,up,down
    expect_output 'eval step 2: gen \(6 documents, 1-shot\): exact_match [0-9.]+'
    same_as_eval_command "$work/lora"
    train_tasks "$work/resumed" --train.resume="$work/run/checkpoints/step_00000002"
    "$python" - "$work/run/metrics.jsonl" "$work/resumed/metrics.jsonl" <<'PY' || fail "the resumed run's task metrics differ"
import json, sys
def task_records(path):
    return {r["step"]: {k: v for k, v in r.items() if k.count("/") == 2 and k.startswith("eval/")}
            for r in map(json.loads, open(path)) if "eval/mc/acc" in r}
straight, resumed = task_records(sys.argv[1]), task_records(sys.argv[2])
assert sorted(straight) == [2, 4] and sorted(resumed) == [4], (sorted(straight), sorted(resumed))
assert straight[4] == resumed[4], (straight[4], resumed[4])
print("step 4: %d task metrics equal" % len(resumed[4]))
PY
    ;;
  bad_task_files_write_nothing)
    cp "$fix/mc_zero.jsonl" "$work/good.jsonl"  # no few-shot file to carry along
    printf '%s\n' '{"task": {"kind": "multiple_choice"}}' '{"context": "a", "choices": ["x", "y"], "gold": 0}' \
      '{"context": "b", "choices": ["x", "y"]}' >"$work/no_gold.jsonl"
    run --exit 1 "$mpiexec" -np 2 "$bin" eval --model "$fix/model" --tasks "$work/good.jsonl,$work/no_gold.jsonl" \
      --output "$work/out.json" --log-samples "$work/out.jsonl"
    expect_output "$work/no_gold.jsonl:3: field 'gold' is missing; add the index of the correct choice"
    [ ! -e "$work/out.json" ] && [ ! -e "$work/out.jsonl" ] || fail "output written despite the error"
    printf '%s\n' '{"task": {"kind": "multiple_choice"}}' '{"context": "a", "choices": ["x", "y"], "gold": 7}' >"$work/range.jsonl"
    run --exit 1 "$bin" eval --model "$fix/model" --tasks "$work/range.jsonl" --output "$work/out.json"
    expect_output "range.jsonl:2: field 'gold' = 7 is outside the 2 choices; it is a 0-based index into 'choices'"
    printf '%s\n' '{"task": {"kind": "multiple_choice"}}' '{"context": "a", "choices": [], "gold": 0}' >"$work/empty.jsonl"
    run --exit 1 "$bin" eval --model "$fix/model" --tasks "$work/empty.jsonl" --output "$work/out.json"
    expect_output "empty.jsonl:2: field 'choices' is empty; give at least one choice"
    printf '%s\n' '{"task": {"kind": "ranking"}}' '{"context": "a"}' >"$work/kind.jsonl"
    run --exit 1 "$bin" eval --model "$fix/model" --tasks "$work/kind.jsonl" --output "$work/out.json"
    expect_output "kind.jsonl:1: task field 'kind' = 'ranking' is not one of multiple_choice\|loglikelihood_rolling\|generate_until"
    [ ! -e "$work/out.json" ] || fail "output written despite the error"
    echo precious >"$work/kept.json"
    run --exit 2 "$bin" eval --model "$fix/model" --tasks "$work/good.jsonl" --output "$work/kept.json"
    expect_output "eval: $work/kept.json exists; pass --overwrite"
    [ "$(cat "$work/kept.json")" = precious ] || fail "an existing output was touched"
    run --exit 2 "$bin" eval --preset debug --tasks "$work/good.jsonl" --output "$work/out.json"
    expect_output "tasks are text, which needs a tokenizer: pass --tokenizer DIR"
    ;;
  *)
    fail "unknown case"
    ;;
esac
echo "PASS [$case_name]"
