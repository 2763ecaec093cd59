#!/usr/bin/env bash
# data_test.sh <shardtune binary> <case>: `shardtune synth` and `shardtune prep` as users run them.
# shellcheck source=harness.sh
source "$(dirname "$0")/harness.sh"
manifest_value() { grep -E "\"$2\": " "$1" | head -1 | sed -E 's/.*: ([0-9]+).*/\1/'; }
# shellcheck source=byte_tokenizer.sh
source "$(dirname "$0")/byte_tokenizer.sh"
shapes_check() { /usr/bin/python3 "$(dirname "$0")/prep_shapes_check.py" "$@"; }

# gemma_tokenizer DIR: the byte-level tokenizer with Gemma's chat tokens (<bos>, <eos>,
# <start_of_turn>, <end_of_turn> after the bytes) and Gemma 3's own chat_template
# (tests/data/templates/google-gemma-3-it.jinja) in tokenizer_config.json.
gemma_tokenizer() {
  byte_tokenizer "$1" "<bos>" "<eos>" "<start_of_turn>" "<end_of_turn>"
  python3 - "$1" "$ST_SOURCE_DIR/tests/data/templates/google-gemma-3-it.jinja" <<'PY'
import json, sys
config = {"bos_token": "<bos>", "eos_token": "<eos>", "chat_template": open(sys.argv[2], encoding="utf-8").read()}
json.dump(config, open(sys.argv[1] + "/tokenizer_config.json", "w"))
PY
}
# gemma_pairs_check SHARD_DIR: every pair as Gemma 3's template writes it (its tokens by id):
# the prompt opens with <bos><start_of_turn>user, holds no system turn (Gemma folds it into the
# first user turn) and ends with the generation prompt; each completion ends Gemma's turn.
gemma_pairs_check() {
  /usr/bin/python3 - "$1" <<'PY'
import glob, sys
import h5py
names = {256: b"<bos>", 257: b"<eos>", 258: b"<start_of_turn>", 259: b"<end_of_turn>"}
def text(f, field, i):
    o = f[field + "_offsets"]
    return b"".join(names.get(int(t), bytes([int(t)]) if t < 256 else b"?") for t in f[field][int(o[i]):int(o[i + 1])])
n = 0
for path in sorted(glob.glob(sys.argv[1] + "/*.h5")):
    with h5py.File(path, "r") as f:
        for i in range(len(f["prompt_offsets"]) - 1):
            prompt = text(f, "prompt", i)
            assert prompt.startswith(b"<bos><start_of_turn>user\n"), prompt[:60]
            assert prompt.endswith(b"<end_of_turn>\n<start_of_turn>model\n"), prompt[-60:]
            assert b"<start_of_turn>system" not in prompt, prompt[:80]
            for field in ("chosen", "rejected"):
                assert text(f, field, i).endswith(b"<end_of_turn>\n"), text(f, field, i)[-40:]
            n += 1
print(f"{n} pairs as Gemma 3's template writes them")
PY
}

case "$case_name" in
  prep_reports_and_splits)
    run --exit 0 "$bin" synth --jsonl "$work/pairs.jsonl" --pairs 500 --max-len 40 --seed 2
    echo '{"prompt_ids": [1, 2], "chosen_ids": [3], "rejected_ids": [512]}' >>"$work/pairs.jsonl"
    echo '{"prompt_ids": [1, 2], "chosen_ids": []' >>"$work/pairs.jsonl"
    echo '{"prompt_ids": [1, 2], "chosen_ids": [4], "rejected_ids": []}' >>"$work/pairs.jsonl"
    run --exit 0 "$mpiexec" -np 2 "$bin" prep --input "$work/pairs.jsonl" --output "$work/data" --vocab 512 \
      --val-size 0.2 --cutoff-len 32 --pairs-per-shard 100
    expect_output "prep: 503 lines -> 400 train \+ 100 val pairs in $work/data"
    expect_output "[0-9]+ truncated, 0 dropped as longer than 32 tokens, 3 malformed skipped \(bad json: 1, empty completion: 1, id out of vocab: 1\)"
    expect_output "skipped $work/pairs.jsonl:501: token id 512 in 'rejected_ids' is outside \[0, 512\)"
    [ "$(manifest_value "$work/data/train/manifest.json" total_pairs)" = 400 ] || fail "train manifest"
    [ "$(manifest_value "$work/data/val/manifest.json" total_pairs)" = 100 ] || fail "val manifest"
    run --exit 0 "$bin" prep --input "$work/pairs.jsonl" --output "$work/drop" --vocab 512 --cutoff-len 32 --truncation drop
    expect_output "0 truncated, [1-9][0-9]* dropped as longer than 32 tokens"
    ;;
  prep_strict_leaves_nothing)
    run --exit 0 "$bin" synth --jsonl "$work/pairs.jsonl" --pairs 50
    echo 'not json' >>"$work/pairs.jsonl"
    run --exit 1 "$mpiexec" -np 2 "$bin" prep --input "$work/pairs.jsonl" --output "$work/data" --vocab 512 --strict
    expect_output "prep --strict: $work/pairs.jsonl:51: not valid JSON"
    [ ! -e "$work/data" ] && [ ! -e "$work/data.tmp" ] || fail "a failed prep left files behind"
    # No record usable: the counts it refers to and the first problem, over every rank's lines.
    printf '%s\n' '{"prompt_ids": [1], "chosen_ids": [2]}' 'not json' \
      '{"prompt_ids": [1], "chosen_ids": [3], "rejected_ids": [3]}' >"$work/bad.jsonl"
    run --exit 1 "$mpiexec" -np 2 "$bin" prep --input "$work/bad.jsonl" --output "$work/none" --vocab 512
    expect_output "$work/bad.jsonl: no usable pairs from 3 records: 1 bad json, 1 chosen equals rejected, 1 missing field, 0 dropped as longer than --cutoff-len 1024; the first: $work/bad.jsonl:1: field 'rejected_ids' is missing"
    [ ! -e "$work/none" ] && [ ! -e "$work/none.tmp" ] || fail "a failed prep left files behind"
    ;;
  outputs_are_never_overwritten)
    mkdir "$work/data" && echo keep >"$work/data/file"
    run --exit 0 "$bin" synth --jsonl "$work/pairs.jsonl" --pairs 20
    run --exit 2 "$bin" prep --input "$work/pairs.jsonl" --output "$work/data" --vocab 512
    expect_output "output $work/data exists; pass --overwrite"
    run --exit 2 "$bin" synth --output "$work/data" --pairs 20
    [ "$(cat "$work/data/file")" = keep ] || fail "existing output touched"
    run --exit 2 "$bin" prep --input "$work/pairs.jsonl" --output "$work/new" --vocab 0
    expect_output "--vocab \(> 0\) are required"
    ;;
  prep_prompt_only)
    # TRL's prompt-only records (GRPO's data): messages rendered with the generation header,
    # nothing after them; a text prompt tokenized as written, no template (TRL's
    # processing_class(text=prompt): this tokenizer's post_processor adds nothing, so its bytes);
    # every column kept as the record the reward functions read; token-id records the same way; a
    # file of another shape refused by kind.
    byte_tokenizer "$work/model"
    {
      echo '{"prompt": "Hi", "answer": "4"}'
      echo '{"prompt": [{"role": "system", "content": "S"}, {"role": "user", "content": "2+2?"}], "solution": "\\boxed{4}", "level": 3}'
      echo '{"prompt": [{"role": "assistant", "content": "x"}]}'
      echo '{"answer": "no prompt"}'
    } >"$work/prompts.jsonl"
    run --exit 0 "$mpiexec" -np 2 "$bin" prep --kind prompt --input "$work/prompts.jsonl" --output "$work/data" \
      --tokenizer "$work/model" --template llama3
    expect_output "prep: 4 lines -> 2 train \+ 0 val pairs"
    expect_output "prompts.jsonl:3: message 0 has role 'assistant', expected 'user'"
    expect_output ' record: \{"answer":"4","prompt":"Hi"\}$'
    printf '%s\n' '{"prompt_ids": [1, 5, 9], "target": 7}' '{"prompt_ids": [], "target": 7}' >"$work/ids.jsonl"
    run --exit 0 "$bin" prep --kind prompt --input "$work/ids.jsonl" --output "$work/ids" --vocab 300
    expect_output "prep: 2 lines -> 1 train \+ 0 val pairs"
    /usr/bin/python3 - "$work/data/train" "$work/prompts.jsonl" "$work/ids/train" <<'PY' || fail "prompt shards differ from the llama3 rendering and the records"
import glob, h5py, json, os, sys
sys.path.insert(0, os.environ["ST_SOURCE_DIR"] + "/tests/e2e")
from llama3_bytes import prompt
lines = [json.loads(line) for line in open(sys.argv[2])]
def read(directory):
    got = []
    for path in sorted(glob.glob(directory + "/*.h5")):
        with h5py.File(path) as f:
            assert f.attrs["kind"] in ("prompt", b"prompt") and f.attrs["format_version"] == 3, dict(f.attrs)
            assert sorted(k for k in f.keys()) == ["prompt", "prompt_offsets", "record", "record_offsets"], list(f.keys())
            col = lambda name, i: f[name][f[name + "_offsets"][i]:f[name + "_offsets"][i + 1]]
            got += [(col("prompt", i).tolist(), json.loads(bytes(col("record", i)).decode()))
                    for i in range(f.attrs["num_pairs"])]
    return got
expected = [(list(b"Hi"), lines[0]), (prompt([("system", "S"), ("user", "2+2?")]), lines[1])]
got = read(sys.argv[1])
print("prompts:", got)
assert got == expected
ids = read(sys.argv[3])
assert ids == [([1, 5, 9], {"prompt_ids": [1, 5, 9], "target": 7})], ids
PY
    printf '%s\n' '{"conversations": [{"from": "human", "value": "Hi"}]}' >"$work/sharegpt.jsonl"
    run --exit 1 "$bin" prep --kind prompt --input "$work/sharegpt.jsonl" --output "$work/sharegpt" \
      --tokenizer "$work/model" --template llama3 --strict
    expect_output "prompt examples are TRL's prompt-only records \{\"prompt\": text or messages, ...\} or \{\"prompt_ids\": \[...\], ...\}; this record is sharegpt"
    [ ! -e "$work/sharegpt" ] || fail "a refused prep left a dataset"
    # A stage that trains on stored completions refuses a prompt dataset by name.
    run --exit 1 "$bin" train --model.preset=debug --data.train="$work/ids/train" --train.output_dir="$work/run" \
      --train.max_steps=1
    expect_output "holds prompt pairs but the stage trains on dpo pairs"
    ;;
  prep_from_text)
    byte_tokenizer "$work/model"
    {
      echo '{"prompt": "Hi", "chosen": "4", "rejected": "5"}'
      echo '{"system": "S", "prompt": [{"role": "user", "content": "é?"}], "chosen": [{"role": "assistant", "content": "ok"}], "rejected": [{"role": "assistant", "content": "no"}]}'
      echo '{"prompt": [{"role": "assistant", "content": "x"}], "chosen": "a", "rejected": "b"}'
      echo '{"prompt": "x", "chosen": [{"role": "user", "content": "a"}], "rejected": "b"}'
      echo '{"prompt": "x", "chosen": "a"}'
      echo '{"prompt": [{"role": "system", "content": "Sys"}], "chosen": "a", "rejected": "b"}'
      echo '{"prompt": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "x"}], "chosen": "a", "rejected": "b"}'
    } >"$work/text.jsonl"
    run --exit 2 "$bin" prep --input "$work/text.jsonl" --output "$work/none" --vocab 300 --strict
    expect_output "text.jsonl holds trl text records; tokenize them with --tokenizer MODEL_DIR"
    run --exit 2 "$bin" prep --input "$work/text.jsonl" --output "$work/data" --tokenizer "$work/model" --template vicuna
    expect_output "--template 'vicuna' is not one of llama3\|llama2\|chatml\|qwen\|qwen3\|qwen3_nothink\|mistral\|plain\|jinja\|auto"
    run --exit 1 "$bin" prep --input "$work/text.jsonl" --output "$work/data" --tokenizer "$work/model" --template chatml
    expect_output "template 'chatml' writes <\|im_start\|>, which this tokenizer does not have"
    run --exit 0 "$mpiexec" -np 2 "$bin" prep --input "$work/text.jsonl" --output "$work/data" --tokenizer "$work/model"
    expect_output "prep: --template auto: llama3"
    expect_output "prep: 7 lines -> 3 train \+ 0 val pairs"
    expect_output "4 malformed skipped \(bad field: 1, bad turns: 2, missing field: 1\)"
    expect_output "text.jsonl:7: the prompt ends with an assistant turn"
    expect_output "text.jsonl:3: message 0 has role 'assistant', expected 'user'"
    # The shards hold the llama3 rendering, prompt and completions tokenized apart.
    /usr/bin/python3 - "$work/data/train" <<'PY' || fail "tokenized pairs differ from the llama3 rendering"
import glob, h5py, os, sys
sys.path.insert(0, os.environ["ST_SOURCE_DIR"] + "/tests/e2e")
from llama3_bytes import EOT, prompt, text
expected = [(prompt([("user", "Hi")]), text("4") + [EOT], text("5") + [EOT]),
            (prompt([("system", "S"), ("user", "é?")]), text("ok") + [EOT], text("no") + [EOT]),
            (prompt([("system", "Sys")]), text("a") + [EOT], text("b") + [EOT])]  # system-only prompt
got = []
for path in sorted(glob.glob(sys.argv[1] + "/*.h5")):
    with h5py.File(path) as f:
        col = lambda name, i: f[name][f[name + "_offsets"][i]:f[name + "_offsets"][i + 1]].tolist()
        got += [(col("prompt", i), col("chosen", i), col("rejected", i)) for i in range(f.attrs["num_pairs"])]
        recorded = f.attrs["tokenizer"]
        recorded = recorded.decode() if isinstance(recorded, bytes) else recorded
        assert recorded == sys.argv[1].rsplit("/", 2)[0] + "/model", recorded
print("pairs:", got)
sys.exit(0 if got == expected else 1)
PY
    # SFT: one shape per file (messages here, detected from the first line): a prompt/completion
    # record among them is refused naming both shapes and the field.
    {
      echo '{"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}]}'
      echo '{"prompt": "Q", "completion": "A"}'
      echo '{"messages": [{"role": "user", "content": "Hi"}]}'
    } >"$work/sft.jsonl"
    run --exit 0 "$bin" prep --kind sft --input "$work/sft.jsonl" --output "$work/sft" --tokenizer "$work/model" --template llama3
    expect_output "prep: 3 lines -> 1 train \+ 0 val pairs"
    expect_output "sft.jsonl:2: record shape trl, but the file is messages \(detected from its first record\): field 'messages' is missing"
    expect_output "sft.jsonl:3: field 'messages' must end with the assistant's message"
    echo '[{"messages": [["user", "Hi"], ["assistant", "Yo"]]}]' >"$work/sft_expected.json"
    shapes_check "$work/sft/train" sft all "$work/sft_expected.json" || fail "SFT pairs differ from the llama3 rendering"
    ;;
  prep_jinja_gemma_dpo)
    # LlamaFactory's dpo_en_demo under Gemma 3's own Jinja template (no built-in template is
    # Gemma's: auto picks the template itself), then two DPO steps on it. Rendering parity with
    # transformers: tests/jinja.
    gemma_tokenizer "$work/gemma"
    run --exit 0 "$mpiexec" -np 2 "$bin" prep --kind dpo --dataset-info "$ST_SOURCE_DIR/tests/data/llamafactory" \
      --dataset dpo_en_demo --tokenizer "$work/gemma" --output "$work/gemma_dpo" --val-size 0.1
    expect_output "prep: --template auto: jinja \(the model's chat_template \($work/gemma/tokenizer_config.json\); its special tokens imply no built-in template\)"
    expect_output "prep: 300 lines -> 270 train \+ 30 val pairs"
    expect_output ", 0 malformed skipped"
    # Uncut (byte tokens: the longest record is 15,610), every pair as Gemma's template writes it.
    run --exit 0 "$bin" prep --kind dpo --dataset-info "$ST_SOURCE_DIR/tests/data/llamafactory" --dataset dpo_en_demo \
      --tokenizer "$work/gemma" --template jinja --output "$work/gemma_uncut" --cutoff-len 16384
    expect_output "300 lines -> 300 train \+ 0 val pairs .* 0 truncated"
    gemma_pairs_check "$work/gemma_uncut/train" || fail "the pairs are not Gemma's rendering"
    run --exit 0 "$mpiexec" -np 2 "$bin" train --config "$ST_SOURCE_DIR/examples/demo.ini" --progress off \
      --data.train="$work/gemma_dpo/train" --data.val="$work/gemma_dpo/val" --train.output_dir="$work/run" \
      --train.micro_batch=1 --train.grad_accum=1 --train.global_batch=0 --train.max_steps=2 --train.log_every=1 \
      --train.eval_every=0 --ckpt.export=false
    expect_output "train: 2 steps in"
    # A record the template refuses (its raise_exception) is skipped and counted, with its line.
    {
      echo '{"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}]}'
      echo '{"messages": [{"role": "user", "content": "Hi"}, {"role": "user", "content": "again"}, {"role": "assistant", "content": "Yo"}]}'
    } >"$work/turns.jsonl"
    run --exit 0 "$bin" prep --kind sft --input "$work/turns.jsonl" --output "$work/turns" --tokenizer "$work/gemma" --template jinja
    expect_output "2 lines -> 1 train \+ 0 val pairs"
    expect_output "1 malformed skipped \(template refused: 1\)"
    expect_output "turns.jsonl:2: chat template line 19: Conversation roles must alternate user/assistant/user/assistant/..."
    run --exit 1 "$bin" prep --kind sft --input "$work/turns.jsonl" --output "$work/turns_strict" --tokenizer "$work/gemma" \
      --template jinja --strict
    expect_output "Conversation roles must alternate"
    [ ! -e "$work/turns_strict" ] || fail "--strict left an output behind"
    # A template that does not parse is refused at start, naming its file, line and construct.
    python3 -c "import json,sys; c=json.load(open(sys.argv[1])); c['chat_template']='{% for m in messages %}\n{{ m | frobnicate }}{% endfor %}'; json.dump(c, open(sys.argv[1], 'w'))" "$work/gemma/tokenizer_config.json"
    run --exit 1 "$bin" prep --kind sft --input "$work/turns.jsonl" --output "$work/broken" --tokenizer "$work/gemma" --template jinja
    expect_output "$work/gemma/tokenizer_config.json: chat_template line 2: no filter named 'frobnicate'"
    ;;
  prep_record_shapes)
    # Every record shape, SFT and DPO, against an independent Llama 3 rendering
    # (prep_shapes_check.py): multi-turn SFT trains every assistant turn (or the last), DPO
    # keeps the history in the prompt; JSON arrays and dataset_info.json entries read the same.
    byte_tokenizer "$work/model"
    prep() { run --exit 0 "$mpiexec" -np 2 "$bin" prep --tokenizer "$work/model" --template llama3 "$@"; }
    # The SFT conversations: two turns with a system message, and one turn.
    cat >"$work/sft_expected.json" <<'JSON'
[{"messages": [["system", "S"], ["user", "Hi"], ["assistant", "Yo"], ["user", "2+2?"], ["assistant", "4"]]},
 {"messages": [["user", "Q"], ["assistant", "A"]]}]
JSON
    {
      echo '{"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}, {"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]}'
      echo '{"messages": [{"role": "user", "content": "Q"}, {"role": "assistant", "content": "A"}]}'
    } >"$work/messages.jsonl"
    cat >"$work/sharegpt.json" <<'JSON'
[
  {"system": "S",
   "conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Yo"},
                     {"from": "human", "value": "2+2?"}, {"from": "gpt", "value": "4"}]},
  {"conversations": [{"from": "human", "value": "Q"}, {"from": "gpt", "value": "A"}]}
]
JSON
    {
      echo '{"system": "S", "history": [["Hi", "Yo"]], "instruction": "2+2?", "output": "4"}'
      echo '{"instruction": "Q", "input": "", "output": "A"}'
    } >"$work/alpaca.jsonl"
    for shape in messages.jsonl sharegpt.json alpaca.jsonl; do
      prep --kind sft --input "$work/$shape" --output "$work/sft_${shape%.*}"
      expect_output "prep: --format auto: ${shape%.*}"
      expect_output "-> 2 train \+ 0 val pairs"
      shapes_check "$work/sft_${shape%.*}/train" sft all "$work/sft_expected.json" || fail "$shape: SFT pairs"
    done
    # The masked multi-turn pairs (format version 2) train.
    run --exit 0 "$mpiexec" -np 2 "$bin" train --config "$ST_SOURCE_DIR/examples/demo.ini" --progress off \
      --train.stage=sft --data.train="$work/sft_messages/train" --data.val="$work/sft_sharegpt/train" \
      --train.output_dir="$work/run" --train.micro_batch=1 --train.grad_accum=1 --train.global_batch=0 \
      --train.max_steps=2 --train.log_every=1 --train.eval_every=0 --ckpt.export=false
    expect_output "train: 2 steps in"
    prep --kind sft --input "$work/messages.jsonl" --output "$work/sft_last" --train-on last
    shapes_check "$work/sft_last/train" sft last "$work/sft_expected.json" || fail "--train-on last"
    # TRL prompt/completion trains the completion alone, whatever --train-on says.
    {
      echo '{"prompt": [{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}, {"role": "user", "content": "2+2?"}], "completion": [{"role": "assistant", "content": "4"}]}'
      echo '{"prompt": "Q", "completion": "A"}'
    } >"$work/trl_sft.jsonl"
    prep --kind sft --input "$work/trl_sft.jsonl" --output "$work/sft_trl"
    shapes_check "$work/sft_trl/train" sft last "$work/sft_expected.json" || fail "trl prompt/completion"

    # DPO with history, and a system-only prompt.
    cat >"$work/dpo_expected.json" <<'JSON'
[{"messages": [["system", "S"], ["user", "Hi"], ["assistant", "Yo"], ["user", "2+2?"]], "chosen": "4", "rejected": "5"},
 {"messages": [["system", "Write a haiku."]], "chosen": "a", "rejected": "b"}]
JSON
    {
      echo '{"prompt": [{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}, {"role": "user", "content": "2+2?"}], "chosen": [{"role": "assistant", "content": "4"}], "rejected": "5"}'
      echo '{"prompt": [{"role": "system", "content": "Write a haiku."}], "chosen": "a", "rejected": "b"}'
    } >"$work/trl.jsonl"
    {  # TRL's implicit prompt: whole conversations
      echo '{"chosen": [{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}, {"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}], "rejected": [{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}, {"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "5"}]}'
      echo '{"chosen": [{"role": "system", "content": "Write a haiku."}, {"role": "assistant", "content": "a"}], "rejected": [{"role": "system", "content": "Write a haiku."}, {"role": "assistant", "content": "b"}]}'
    } >"$work/trl_implicit.jsonl"
    for shape in trl.jsonl trl_implicit.jsonl; do
      prep --input "$work/$shape" --output "$work/dpo_${shape%.*}"
      expect_output "prep: --format auto: trl"
      shapes_check "$work/dpo_${shape%.*}/train" dpo - "$work/dpo_expected.json" || fail "$shape: DPO pairs"
    done
    # A LlamaFactory dataset_info.json entry: ShareGPT ranking data with OpenAI-style tags and
    # renamed preference columns, as a JSON array.
    mkdir "$work/lf"
    cat >"$work/lf/dataset_info.json" <<'JSON'
{"prefs": {"file_name": "prefs.json", "formatting": "sharegpt", "ranking": true,
           "columns": {"messages": "messages", "system": "sys", "chosen": "good", "rejected": "bad"},
           "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user", "assistant_tag": "assistant"}},
 "alpaca_prefs": {"file_name": "alpaca_prefs.jsonl", "ranking": true}}
JSON
    cat >"$work/lf/prefs.json" <<'JSON'
[{"sys": "S", "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}, {"role": "user", "content": "2+2?"}],
  "good": {"role": "assistant", "content": "4"}, "bad": {"role": "assistant", "content": "5"}},
 {"sys": "Write a haiku.", "messages": [], "good": {"role": "assistant", "content": "a"}, "bad": {"role": "assistant", "content": "b"}}]
JSON
    prep --dataset-info "$work/lf" --dataset prefs --output "$work/dpo_lf"
    shapes_check "$work/dpo_lf/train" dpo - "$work/dpo_expected.json" || fail "dataset_info sharegpt pairs"
    echo '{"system": "S", "history": [["Hi", "Yo"]], "instruction": "2+2?", "chosen": "4", "rejected": "5"}' >"$work/lf/alpaca_prefs.jsonl"
    prep --dataset-info "$work/lf" --dataset alpaca_prefs --output "$work/dpo_alpaca"
    python3 -c "import json,sys; json.dump(json.load(open(sys.argv[1]))[:1], open(sys.argv[2], 'w'))" \
      "$work/dpo_expected.json" "$work/dpo_first.json"
    shapes_check "$work/dpo_alpaca/train" dpo - "$work/dpo_first.json" || fail "dataset_info alpaca pairs"
    run --exit 2 "$bin" prep --dataset-info "$work/lf" --dataset prefs --kind sft --output "$work/none" --tokenizer "$work/model"
    expect_output "dataset 'prefs' is a ranking \(preference\) dataset; prep it with --kind dpo"

    # Refusals: a record of no known shape stops prep; a mixed file names line, shapes and field.
    echo '{"text": "free text"}' >"$work/unknown.jsonl"
    run --exit 1 "$bin" prep --kind sft --input "$work/unknown.jsonl" --output "$work/none" --tokenizer "$work/model"
    expect_output "unknown.jsonl:1: a record of no known shape \(fields: text\); expected prompt_ids"
    { head -1 "$work/messages.jsonl"; head -1 "$work/alpaca.jsonl"; } >"$work/mixed.jsonl"
    run --exit 1 "$bin" prep --kind sft --input "$work/mixed.jsonl" --output "$work/none" --tokenizer "$work/model" --strict
    expect_output "mixed.jsonl:2: record shape alpaca, but the file is messages \(detected from its first record\): field 'messages' is missing"
    run --exit 1 "$bin" prep --kind sft --input "$work/sharegpt.json" --format alpaca --output "$work/none" \
      --tokenizer "$work/model" --strict
    expect_output "sharegpt.json:2: record shape sharegpt, but the file is alpaca \(--format\): field 'instruction' is missing"
    [ ! -e "$work/none" ] || fail "a refused prep left an output"
    ;;
  synth_dataset)
    run --exit 0 "$bin" synth --output "$work/synth" --pairs 1000 --val-size 0.1 --pairs-per-shard 300 --kind sft --task reverse
    expect_output "synth: 1000 sft pairs \(task reverse, vocab 512\) written to $work/synth"
    [ "$(manifest_value "$work/synth/train/manifest.json" total_pairs)" = 900 ] || fail "train count"
    [ "$(manifest_value "$work/synth/val/manifest.json" total_pairs)" = 100 ] || fail "val count"
    [ "$(ls "$work/synth/train" | grep -c '\.h5$')" = 3 ] || fail "expected 3 train shards of <= 300 pairs"
    ;;
  *)
    fail "unknown case"
    ;;
esac
echo "PASS [$case_name]"
