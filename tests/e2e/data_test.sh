#!/usr/bin/env bash
# data_test.sh <shardtune binary> <case>: `shardtune synth` and `shardtune prep` as users run them.
# shellcheck source=harness.sh
source "$(dirname "$0")/harness.sh"
manifest_value() { grep -E "\"$2\": " "$1" | head -1 | sed -E 's/.*: ([0-9]+).*/\1/'; }

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
  prep_from_text)
    # A byte-level tokenizer: ids 0-255 are the bytes (GPT-2's alphabet), then the special tokens.
    mkdir "$work/model"
    python3 - "$work/model" <<'PY'
import json, sys
printable = [b for b in range(256) if 33 <= b <= 126 or 0xA1 <= b <= 0xAC or b >= 0xAE]
extra = iter(range(256, 512))
vocab = {chr(b if b in printable else next(extra)): b for b in range(256)}
specials = ["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
tokenizer = {"model": {"type": "BPE", "vocab": vocab, "merges": []},
             "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
             "added_tokens": [{"id": 256 + i, "content": t, "special": True} for i, t in enumerate(specials)]}
json.dump(tokenizer, open(sys.argv[1] + "/tokenizer.json", "w"))
PY
    {
      echo '{"prompt": "Hi", "chosen": "4", "rejected": "5"}'
      echo '{"system": "S", "prompt": [{"role": "user", "content": "é?"}], "chosen": [{"role": "assistant", "content": "ok"}], "rejected": [{"role": "assistant", "content": "no"}]}'
      echo '{"prompt": [{"role": "assistant", "content": "x"}], "chosen": "a", "rejected": "b"}'
      echo '{"prompt": "x", "chosen": [{"role": "user", "content": "a"}], "rejected": "b"}'
      echo '{"prompt": "x", "chosen": "a"}'
      echo '{"prompt": [{"role": "system", "content": "Sys"}], "chosen": "a", "rejected": "b"}'
      echo '{"prompt": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "x"}], "chosen": "a", "rejected": "b"}'
    } >"$work/text.jsonl"
    run --exit 1 "$bin" prep --input "$work/text.jsonl" --output "$work/none" --vocab 300 --strict
    expect_output "text.jsonl:1: text fields need --tokenizer MODEL_DIR and --template NAME"
    run --exit 2 "$bin" prep --input "$work/text.jsonl" --output "$work/data" --tokenizer "$work/model" --template vicuna
    expect_output "--template 'vicuna' is not one of llama3\|llama2\|chatml\|qwen\|plain\|auto"
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
import glob, h5py, sys
BOT, SH, EH, EOT = 256, 257, 258, 259
text = lambda s: list(s.encode())
def prompt(messages):
    ids = [BOT]
    for role, content in messages:
        ids += [SH] + text(role) + [EH] + text("\n\n" + content) + [EOT]
    return ids + [SH] + text("assistant") + [EH] + text("\n\n")
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
    # SFT: a message list (the last one is the completion) or prompt/completion strings.
    {
      echo '{"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}]}'
      echo '{"prompt": "Q", "completion": "A"}'
      echo '{"messages": [{"role": "user", "content": "Hi"}]}'
    } >"$work/sft.jsonl"
    run --exit 0 "$bin" prep --kind sft --input "$work/sft.jsonl" --output "$work/sft" --tokenizer "$work/model" --template llama3
    expect_output "prep: 3 lines -> 2 train \+ 0 val pairs"
    expect_output "sft.jsonl:3: field 'messages' must end with the assistant's message"
    /usr/bin/python3 - "$work/sft/train" <<'PY' || fail "SFT pairs differ from the llama3 rendering"
import glob, h5py, sys
BOT, SH, EH, EOT = 256, 257, 258, 259
text = lambda s: list(s.encode())
prompt = lambda user: [BOT, SH] + text("user") + [EH] + text("\n\n" + user) + [EOT, SH] + text("assistant") + [EH] + text("\n\n")
expected = [(prompt("Hi"), text("Yo") + [EOT]), (prompt("Q"), text("A") + [EOT])]
got = []
for path in sorted(glob.glob(sys.argv[1] + "/*.h5")):
    with h5py.File(path) as f:
        col = lambda name, i: f[name][f[name + "_offsets"][i]:f[name + "_offsets"][i + 1]].tolist()
        got += [(col("prompt", i), col("completion", i)) for i in range(f.attrs["num_pairs"])]
print("sft pairs:", got)
sys.exit(0 if got == expected else 1)
PY
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
