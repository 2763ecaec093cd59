#!/usr/bin/env bash
# generate_test.sh <shardtune binary> <case>: `shardtune generate` as users run it: from a
# checkpoint (also a LoRA one, merged) and its export alike, split over ranks, with text prompts
# through a tokenizer and chat template, stop strings, --json-check, and refusals.
# shellcheck source=harness.sh
source "$(dirname "$0")/harness.sh"
demo="$ST_SOURCE_DIR/examples/demo.ini"
python=${ST_REFERENCE_PYTHON:-python3}

# train_run <dir> [overrides]: 4 steps of the demo on 1 rank, a checkpoint at the end, fp32 export.
train_run() {
  local dir=$1
  shift
  run --exit 0 "$bin" train --config "$demo" --progress off --data.train="$work/data/train" --data.val="$work/data/val" \
    --train.output_dir="$dir" --train.micro_batch=2 --train.grad_accum=1 --train.global_batch=0 --train.max_steps=4 \
    --ckpt.every=4 --ckpt.export=true --ckpt.export_dtype=fp32 "$@"
}

# A byte-level tokenizer over the debug preset's 512 ids: the 256 bytes, <s>, </s> and ChatML's
# markers (so the chat template is detected), beside the model as a Hugging Face one would be.
write_tokenizer() {
  "$python" -c 'import sys; sys.path.insert(0, sys.argv[1]); import eval_fixtures; eval_fixtures.tokenizer_files(sys.argv[2], eos="<|im_end|>")' \
    "$ST_SOURCE_DIR/tests/reference" "$1"
}

synth_data --dir "$work/data" --pairs 200
printf '%s\n' '{"prompt_ids": [1, 5, 9, 20]}' '{"id": "b", "prompt_ids": [1, 7]}' \
  '{"prompt_ids": [3, 4, 5, 6, 7, 8, 9, 10, 11]}' '{"prompt_ids": [42]}' '{"prompt_ids": [8, 8, 8]}' >"$work/ids.jsonl"
case "$case_name" in
  checkpoint_equals_export_on_any_ranks)
    train_run "$work/run"
    run --exit 0 "$bin" generate --checkpoint "$work/run/checkpoints" --input "$work/ids.jsonl" --output "$work/ckpt.jsonl" \
      --max-new-tokens 12
    expect_output 'generate: 5 prompts from .* with checkpoint .*step_00000004 \(step 4\) \(fp32 on cpu, 1 rank\(s\), greedy\)'
    run --exit 0 "$bin" generate --model "$work/run/export" --input "$work/ids.jsonl" --output "$work/export.jsonl" \
      --max-new-tokens 12 --batch-size 2
    cmp "$work/ckpt.jsonl" "$work/export.jsonl" || fail "the checkpoint and its export generate differently"
    [ "$(grep -c '"num_tokens":12' "$work/export.jsonl")" = 5 ] || fail "expected 12 tokens per prompt"
    grep -q '"id":"b","index":1' "$work/export.jsonl" || fail "the prompt's id was not carried"
    for sampling in "" "--temperature 0.9 --top-p 0.9 --seed 5"; do
      # shellcheck disable=SC2086
      run --exit 0 "$bin" generate --model "$work/run/export" --input "$work/ids.jsonl" --output "$work/one.jsonl" \
        --max-new-tokens 12 --overwrite $sampling
      # shellcheck disable=SC2086
      run --exit 0 "$mpiexec" -np 3 --oversubscribe "$bin" generate --checkpoint "$work/run/checkpoints" \
        --input "$work/ids.jsonl" --output "$work/three.jsonl" --max-new-tokens 12 --overwrite $sampling
      expect_output '3 rank\(s\)'
      cmp "$work/one.jsonl" "$work/three.jsonl" || fail "3 ranks differ from 1 ($sampling)"
    done
    ;;
  lora_checkpoint_is_merged)
    train_run "$work/lora" --train.method=lora --lora.r=4 --optim.lr=0.05
    run --exit 0 "$bin" generate --checkpoint "$work/lora/checkpoints" --input "$work/ids.jsonl" --output "$work/lora.jsonl"
    expect_output 'with LoRA checkpoint .*step_00000004 \(step 4\) merged onto preset debug'
    run --exit 0 "$bin" export --checkpoint "$work/lora/checkpoints" --output "$work/merged" --merge --dtype fp32
    run --exit 0 "$bin" generate --model "$work/merged" --input "$work/ids.jsonl" --output "$work/merged.jsonl"
    cmp "$work/lora.jsonl" "$work/merged.jsonl" || fail "the LoRA checkpoint generates unlike its merged export"
    run --exit 0 "$bin" generate --preset debug --input "$work/ids.jsonl" --output "$work/base.jsonl"
    ! cmp -s "$work/lora.jsonl" "$work/base.jsonl" || fail "the adapters changed nothing"
    ;;
  text_prompts_stop_strings_and_json_check)
    train_run "$work/run"
    write_tokenizer "$work/run/export"
    printf '%s\n' '{"prompt": "Say hi"}' '{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}]}' \
      '{"prompt": "{\"a\": 1}"}' >"$work/text.jsonl"
    run --exit 0 "$bin" generate --model "$work/run/export" --input "$work/text.jsonl" --output "$work/text_out.jsonl" \
      --max-new-tokens 16 --json-check
    expect_output 'greedy, template chatml\)'
    expect_output 'json-check: [0-3] of 3 outputs \([0-9.]+%\) parse as JSON'
    # The first completion's text again, stopped at a string from its middle: cut before it.
    stop=$("$python" -c 'import json,sys; t=json.loads(open(sys.argv[1]).readline())["text"]; print(t[5:8])' "$work/text_out.jsonl")
    [ -n "$stop" ] || fail "no text to take a stop string from"
    run --exit 0 "$bin" generate --model "$work/run/export" --input "$work/text.jsonl" --output "$work/stopped.jsonl" \
      --max-new-tokens 16 --stop "$stop"
    "$python" - "$work/text_out.jsonl" "$work/stopped.jsonl" "$stop" <<'PY' || fail "stop string not honoured"
import json, sys
free, stopped = (json.loads(open(p).readline()) for p in sys.argv[1:3])
stop = sys.argv[3]
assert stopped["finish_reason"] == "stop", stopped
assert stopped["text"] == free["text"][:free["text"].index(stop)], (stopped["text"], free["text"], stop)
assert stopped["completion_ids"] == free["completion_ids"][:len(stopped["completion_ids"])]
PY
    ;;
  refusals)
    echo '{"prompt_ids": [1, 512]}' >>"$work/ids.jsonl"
    run --exit 1 "$mpiexec" -np 2 "$bin" generate --preset debug --input "$work/ids.jsonl" --output "$work/out.jsonl"
    expect_output "$work/ids.jsonl:6: token id 512 is outside the model's vocabulary \[0, 512\)"
    [ ! -e "$work/out.jsonl" ] || fail "output written despite the error"
    echo '{"prompt": "text"}' >"$work/text.jsonl"
    run --exit 1 "$bin" generate --preset debug --input "$work/text.jsonl" --output "$work/out.jsonl"
    expect_output "text.jsonl:1: text prompts need a tokenizer: pass --tokenizer DIR"
    echo precious >"$work/out.jsonl"
    run --exit 2 "$bin" generate --preset debug --input "$work/ids.jsonl" --output "$work/out.jsonl"
    expect_output "--output $work/out.jsonl exists; pass --overwrite"
    [ "$(cat "$work/out.jsonl")" = precious ] || fail "existing output was touched"
    run --exit 2 "$bin" generate --preset debug --model "$work" --input "$work/ids.jsonl" --output "$work/o.jsonl"
    expect_output "give exactly one of --model DIR, --checkpoint DIR or --preset NAME"
    run --exit 2 "$bin" generate --preset debug --input "$work/ids.jsonl" --output "$work/o.jsonl" --top-p 0
    expect_output "--top-p in \(0, 1\]"
    ;;
  *) fail "unknown case $case_name" ;;
esac
echo "PASS [$case_name]"
