#!/usr/bin/env bash
# score_test.sh <shardtune binary> <case>: `shardtune score` as users run it, against the
# reference fixtures (ST_REFERENCE_DIR, written by tests/reference/make_fixtures.py).
# shellcheck source=harness.sh
source "$(dirname "$0")/harness.sh"
python=${ST_REFERENCE_PYTHON:-python3}
ref=${ST_REFERENCE_DIR:?run through ctest}
compare="$python ${ST_SOURCE_DIR}/tests/reference/compare_scores.py"

case "$case_name" in
  matches_reference)
    for model in llama_gqa qwen2_bias; do
      run --exit 0 "$bin" score --model "$ref/$model" --input "$ref/pairs.jsonl" --output "$work/$model.jsonl"
      expect_output "score: 11 lines from .* scored with .*$model \(fp32 on [a-z0-9:]+, 1 rank"
      $compare "$ref/expected_$model.jsonl" "$work/$model.jsonl" 1e-5 || fail "$model differs from the reference"
    done
    ;;
  two_ranks_same_as_one)
    run --exit 0 "$bin" score --model "$ref/qwen2_bias" --input "$ref/pairs.jsonl" --output "$work/one.jsonl"
    run --exit 0 "$mpiexec" -np 2 "$bin" score --model "$ref/qwen2_bias" --input "$ref/pairs.jsonl" \
      --output "$work/two.jsonl" --batch-tokens 40 --chunk-tokens 5
    # Other batches and chunks sum in other orders: judged in the roundings one rank's scores
    # carry (their distance from the float64 reference), as the mpi tier's ST_ROUNDINGS.
    $compare "$work/one.jsonl" "$work/two.jsonl" 50 "$ref/expected_qwen2_bias.jsonl" || fail "2 ranks differ from 1 rank"
    $compare "$ref/expected_qwen2_bias.jsonl" "$work/two.jsonl" 1e-5 || fail "2 ranks differ from the reference"
    ;;
  existing_output_kept)
    echo "precious" >"$work/out.jsonl"
    run --exit 2 "$bin" score --model "$ref/llama_gqa" --input "$ref/pairs.jsonl" --output "$work/out.jsonl"
    expect_output "--output $work/out.jsonl exists; pass --overwrite"
    [ "$(cat "$work/out.jsonl")" = precious ] || fail "existing output was touched"
    run --exit 0 "$bin" score --model "$ref/llama_gqa" --input "$ref/pairs.jsonl" --output "$work/out.jsonl" --overwrite
    [ "$(wc -l <"$work/out.jsonl")" -eq 11 ] || fail "--overwrite did not write 11 lines"
    ;;
  bad_token_named)
    cp "$ref/pairs.jsonl" "$work/pairs.jsonl"
    echo '{"prompt_ids": [1, 2], "completion_ids": [3, 97]}' >>"$work/pairs.jsonl"
    run --exit 1 "$mpiexec" -np 2 "$bin" score --model "$ref/llama_gqa" --input "$work/pairs.jsonl" --output "$work/out.jsonl"
    expect_output "$work/pairs.jsonl:12: token id 97 in 'completion_ids' is outside the model's vocabulary \[0, 97\)"
    [ ! -e "$work/out.jsonl" ] || fail "output written despite the error"
    ;;
  bad_model_named)
    run --exit 1 "$bin" score --model "$work/nothing" --input "$ref/pairs.jsonl" --output "$work/out.jsonl"
    expect_output "$work/nothing/config.json: cannot open"
    cp -r "$ref/llama_gqa" "$work/model"
    truncate -s 100000 "$work/model/model-00002-of-00002.safetensors"
    run --exit 1 "$mpiexec" -np 2 "$bin" score --model "$work/model" --input "$ref/pairs.jsonl" --output "$work/out.jsonl"
    expect_output "$work/model/model-00002-of-00002.safetensors: tensor '[^']+': data_offsets .* fall outside"
    [ ! -e "$work/out.jsonl" ] || fail "output written despite the error"
    ;;
  preset_and_bf16)
    run --exit 0 "$bin" score --preset debug --seed 3 --input "$ref/pairs.jsonl" --output "$work/p.jsonl" --dtype bf16
    expect_output "scored with preset debug \(seed 3\) \(bf16 on [a-z0-9:]+"
    [ "$(wc -l <"$work/p.jsonl")" -eq 11 ] || fail "expected 11 lines"
    run --exit 2 "$bin" score --input "$ref/pairs.jsonl" --output "$work/q.jsonl"
    expect_output "give exactly one of --model DIR, --checkpoint DIR or --preset NAME"
    # --routing: a dense model is refused by name; a mixture-of-experts model (debug-moe: layers 0
    # and 2 sparse, top-2 of 8) routes every token of prompt + completion in each sparse layer.
    run --exit 2 "$bin" score --preset debug --input "$ref/pairs.jsonl" --output "$work/r.jsonl" --routing
    expect_output "score --routing: preset debug .* has no experts \(config.json num_experts\); drop --routing"
    [ ! -e "$work/r.jsonl" ] || fail "output written despite the error"
    run --exit 0 "$bin" score --preset debug-moe --input "$ref/pairs.jsonl" --output "$work/moe.jsonl" --routing
    "$python" - "$ref/pairs.jsonl" "$work/moe.jsonl" <<'PY' || fail "the routing lines are not every token's top-2 per sparse layer"
import json, sys
pairs = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
scores = [json.loads(line) for line in open(sys.argv[2]) if line.strip()]
assert len(pairs) == len(scores) == 11, (len(pairs), len(scores))
for pair, score in zip(pairs, scores):
    tokens = len(pair["prompt_ids"]) + len(pair["completion_ids"])
    assert [entry["layer"] for entry in score["routing"]] == [0, 2], score["routing"]
    for entry in score["routing"]:
        assert len(entry["experts"]) == len(entry["weights"]) == tokens
        for experts, weights in zip(entry["experts"], entry["weights"]):
            assert len(set(experts)) == 2 and all(0 <= e < 8 for e in experts), experts
            assert abs(sum(weights) - 1) < 1e-6 and weights[0] >= weights[1], weights  # renormalised, in order
PY
    ;;
  *)
    fail "unknown case"
    ;;
esac
echo "PASS [$case_name]"
