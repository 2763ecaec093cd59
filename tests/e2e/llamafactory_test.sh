#!/usr/bin/env bash
# llamafactory_test.sh <shardtune binary> <case> <vocabularies dir>: `shardtune prep` on
# LlamaFactory's own demo data (tests/data/llamafactory, copied unchanged), as a user of
# LlamaFactory would run it, with the real Llama 3 tokenizer (tests/tokenizer/vocabularies.sh).
# Accepted files are checked pair by pair against llamafactory_check.py's independent reading,
# encoded by Hugging Face tokenizers (tests/tokenizer/hf_encode.py, the tests' Python environment).
# shellcheck source=harness.sh
source "$(dirname "$0")/harness.sh"
# shellcheck source=../tokenizer/vocabularies.sh
source "$ST_SOURCE_DIR/tests/tokenizer/vocabularies.sh"
need_oracles "$3"
data=$ST_SOURCE_DIR/tests/data/llamafactory
python=${ST_REFERENCE_PYTHON:-/usr/bin/python3}  # Debian's, with h5py
check="$python $(dirname "$0")/llamafactory_check.py"
model=$3/llama3

# prep_matches <name> <shape> <dpo|sft> <input> [prep flags...]: prep on 2 ranks accepts every
# record (none malformed), and the pairs equal the independent reading at the default cutoff.
prep_matches() {
  local name=$1 shape=$2 kind=$3 input=$4
  shift 4
  run --exit 0 "$mpiexec" -np 2 "$bin" prep --kind "$kind" --tokenizer "$model" --template llama3 \
    --output "$work/$name" "$@"
  local records
  records=$($python -c "import sys; sys.path.insert(0, '$(dirname "$0")'); import llamafactory_check as c; print(len(c.records('$input')))")
  expect_output "-> $records train \+ 0 val pairs"
  expect_output ", 0 malformed skipped"
  local truncated
  truncated=$(grep -oE '[0-9]+ truncated' <<<"$out" | grep -oE '^[0-9]+')
  mkdir -p "$work/$name.check"
  $check render "$shape" "$kind" "$input" "$work/$name.check" || fail "$name: render"
  "$ST_ORACLE_PYTHON" "$ST_SOURCE_DIR/tests/tokenizer/hf_encode.py" "$model" "$work/$name.check/texts.jsonl" \
    "$work/$name.check/ids.jsonl" >/dev/null || fail "$name: tokenizers encode"
  local compared
  compared=$($check compare "$kind" "$work/$name/train" "$work/$name.check" 1024) || { echo "$compared"; fail "$name: pairs differ"; }
  echo "$name: $compared"
  grep -q " $truncated truncated to 1024" <<<"$compared" || fail "$name: prep reported $truncated truncated: $compared"
}

case "$case_name" in
  dataset_info_entries)
    # Every entry of LlamaFactory's index: those whose file is here are prepped (SFT; DPO for
    # ranking data; KTO for a kto_tag column, each completion with its label) or refused naming
    # the column shardtune does not read; the rest are refused naming the missing file or the
    # hub they live on.
    prep_matches identity alpaca sft "$data/identity.json" --dataset-info "$data" --dataset identity
    prep_matches alpaca_en_demo alpaca sft "$data/alpaca_en_demo.json" --dataset-info "$data" --dataset alpaca_en_demo
    prep_matches dpo_en_demo sharegpt_ranking dpo "$data/dpo_en_demo.json" --dataset-info "$data" --dataset dpo_en_demo
    prep_matches kto_en_demo sharegpt_kto kto "$data/kto_en_demo.json" --dataset-info "$data" --dataset kto_en_demo
    # The listing names every entry: prepped as above, or refused with the field and the fix.
    run --exit 0 "$bin" prep --dataset-info "$data"
    expect_output "dataset_info.json: 104 entries, 4 that prep reads"
    expect_output "  identity +--kind sft, alpaca, $data/identity.json"
    expect_output "  dpo_en_demo +--kind dpo, sharegpt, $data/dpo_en_demo.json"
    expect_output "  kto_en_demo +--kind kto, sharegpt, $data/kto_en_demo.json"
    listing=$out
    refused=0
    while read -r name ranking file columns; do
      line=$(grep -E "^  $name +" <<<"$listing") || fail "the listing lacks $name"
      kind=sft
      [ "$ranking" = True ] && kind=dpo
      [ "$ranking" = kto ] && kind=kto
      if [ "$file" = - ]; then
        reason="refused: dataset '$name' field 'file_name' is missing: shardtune reads local files only"
      elif [ ! -f "$data/$file" ]; then
        reason="refused: dataset '$name' field 'file_name': $data/$file is not a file"
      elif [ "$columns" != - ]; then
        reason="refused: dataset '$name' field 'columns.$columns' is not supported"
      else
        reason="--kind $kind, "
      fi
      grep -qF -- "$reason" <<<"$line" || fail "$name: '$line' lacks '$reason'"
      case $reason in refused*) refused=$((refused + 1)) ;; esac
    done < <(python3 -c "
import json, sys
for name, entry in json.load(open(sys.argv[1])).items():
    unread = [c for c in entry.get('columns', {}) if c in ('tools', 'images', 'videos', 'audios')]
    kind = 'kto' if 'kto_tag' in entry.get('columns', {}) else entry.get('ranking', False)
    print(name, kind, entry.get('file_name', '-'), unread[0] if unread else '-')" \
      "$data/dataset_info.json")
    [ "$refused" = 100 ] || fail "$refused entries refused, expected 100 of 104"
    # And prep itself refuses them so, each kind of refusal once.
    prep_one() {
      run --exit 2 "$bin" prep --dataset-info "$data" --dataset "$1" --kind "$2" --output "$work/refused" \
        --tokenizer "$model" --template llama3
      expect_output "dataset '$1' field '$3"
    }
    prep_one glaive_toolcall_en_demo sft "columns.tools' is not supported \(images, videos, audios and tools"
    run --exit 2 "$bin" prep --dataset-info "$data" --dataset kto_en_demo --kind sft --output "$work/refused" \
      --tokenizer "$model" --template llama3
    expect_output "dataset 'kto_en_demo' is a kto dataset \(a kto_tag column\); prep it with --kind kto"
    prep_one alpaca_zh_demo sft "file_name': $data/alpaca_zh_demo.json is not a file"
    prep_one lima sft "file_name' is missing: shardtune reads local files only \(hf_hub_url"
    [ ! -e "$work/refused" ] || fail "a refused prep left an output"
    echo "listing: $refused of 104 entries refused, each naming its field"
    ;;
  v1_records)
    # LlamaFactory's newer shape: typed content parts and per-message loss_weight (SFT), and
    # chosen_messages / rejected_messages (DPO), detected by --format auto.
    prep_matches v1_sft v1 sft "$data/v1_sft_demo.jsonl" --input "$data/v1_sft_demo.jsonl"
    expect_output "prep: --format auto: messages"
    prep_matches v1_dpo v1 dpo "$data/v1_dpo_demo.jsonl" --input "$data/v1_dpo_demo.jsonl"
    # loss_weight 0 on an earlier assistant turn keeps it out of the loss (a copy of the first
    # record with two turns; the original data is not touched).
    python3 - "$data/v1_sft_demo.jsonl" "$work/two_turns.jsonl" <<'PY'
import json, sys
first, second = (json.loads(line) for line in list(open(sys.argv[1], encoding="utf-8"))[:2])
weighted = dict(first, messages=[dict(m) for m in first["messages"] + second["messages"]])
weighted["messages"][1]["loss_weight"] = 0.0
with open(sys.argv[2], "w", encoding="utf-8") as f:
    f.write(json.dumps(weighted) + "\n")
    f.write(json.dumps(dict(first, messages=first["messages"] + second["messages"])) + "\n")
PY
    prep_matches two_turns v1 sft "$work/two_turns.jsonl" --input "$work/two_turns.jsonl"
    # What cannot be honoured is skipped (or, with --strict, stops prep) naming the line, the
    # field and the fix: copies of the first records with one thing changed each.
    variants() {  # variants <source> <output> <edit>...: the source's first record edited each way
      python3 - "$@" <<'PY'
import json, sys
source, output, edits = sys.argv[1], sys.argv[2], sys.argv[3:]
first = json.loads(open(source, encoding="utf-8").readline())
with open(output, "w", encoding="utf-8") as f:
    f.write(json.dumps(first) + "\n")  # line 1 is good
    for edit in edits:
        record = json.loads(json.dumps(first))
        exec(edit)
        f.write(json.dumps(record) + "\n")
PY
    }
    variants "$data/v1_sft_demo.jsonl" "$work/bad_sft.jsonl" \
      'record["messages"][1]["loss_weight"] = 0.5' \
      'record["messages"][0]["loss_weight"] = 1.0' \
      'record["messages"][1]["content"].append({"type": "reasoning", "value": "hm"})' \
      'record["messages"][1]["loss_weight"] = 0.0' \
      'record = json.loads(open(sys.argv[1].replace("sft", "dpo")).readline())'
    run --exit 0 "$bin" prep --kind sft --input "$work/bad_sft.jsonl" --output "$work/some_sft" \
      --tokenizer "$model" --template llama3
    expect_output "6 lines -> 1 train \+ 0 val pairs"
    expect_output "5 malformed skipped \(bad field: 3, bad turns: 1, wrong kind: 1\)"
    expect_output "bad_sft.jsonl:2: field 'messages\[1\].loss_weight' is 0.5; shardtune trains a turn wholly or not at all"
    expect_output "bad_sft.jsonl:3: field 'messages\[0\].loss_weight' is 1 on a 'user' message; only assistant replies carry loss: set it to 0"
    expect_output "bad_sft.jsonl:4: field 'messages\[1\].content\[1\].type' is 'reasoning'; only text parts are read"
    expect_output "bad_sft.jsonl:5: no assistant message carries loss"
    expect_output "bad_sft.jsonl:6: a preference record \(chosen_messages / rejected_messages\); prep it with --kind dpo"
    variants "$data/v1_dpo_demo.jsonl" "$work/bad_dpo.jsonl" \
      'record["rejected_messages"][2]["loss_weight"] = 0.0' \
      'record["rejected_messages"][1]["content"][0]["value"] += "!"'
    run --exit 1 "$bin" prep --kind dpo --input "$work/bad_dpo.jsonl" --output "$work/refused" --strict \
      --tokenizer "$model" --template llama3
    expect_output "bad_dpo.jsonl:2: field 'rejected_messages\[2\].loss_weight' is 0 on the final reply"
    run --exit 0 "$bin" prep --kind dpo --input "$work/bad_dpo.jsonl" --output "$work/some_dpo" \
      --tokenizer "$model" --template llama3
    expect_output "bad_dpo.jsonl:3: field 'rejected_messages' differs from 'chosen_messages' before the last message"
    [ ! -e "$work/refused" ] || fail "a refused prep left an output"
    ;;
  *)
    fail "unknown case"
    ;;
esac
echo "PASS [$case_name]"
