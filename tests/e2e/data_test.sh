#!/usr/bin/env bash
# data_test.sh <shardtune binary> <case>: `shardtune synth` and `shardtune prep` as users run them.
# shellcheck source=harness.sh
source "$(dirname "$0")/harness.sh"
manifest_value() { grep -E "\"$2\": " "$1" | head -1 | sed -E 's/.*: ([0-9]+).*/\1/'; }

case "$case_name" in
  prep_reports_and_splits)
    run 0 "$bin" synth --jsonl "$work/pairs.jsonl" --pairs 500 --max-len 40 --seed 2
    echo '{"prompt_ids": [1, 2], "chosen_ids": [3], "rejected_ids": [512]}' >>"$work/pairs.jsonl"
    echo '{"prompt_ids": [1, 2], "chosen_ids": []' >>"$work/pairs.jsonl"
    echo '{"prompt_ids": [1, 2], "chosen_ids": [4], "rejected_ids": []}' >>"$work/pairs.jsonl"
    run 0 "$mpiexec" -np 2 "$bin" prep --input "$work/pairs.jsonl" --output "$work/data" --vocab 512 \
      --val-size 0.2 --cutoff-len 32 --pairs-per-shard 100
    expect_output "prep: 503 lines -> 400 train \+ 100 val pairs in $work/data"
    expect_output "[0-9]+ truncated, 0 dropped as longer than 32 tokens, 3 malformed skipped \(bad json: 1, empty completion: 1, id out of vocab: 1\)"
    expect_output "skipped $work/pairs.jsonl:501: token id 512 in 'rejected_ids' is outside \[0, 512\)"
    [ "$(manifest_value "$work/data/train/manifest.json" total_pairs)" = 400 ] || fail "train manifest"
    [ "$(manifest_value "$work/data/val/manifest.json" total_pairs)" = 100 ] || fail "val manifest"
    run 0 "$bin" prep --input "$work/pairs.jsonl" --output "$work/drop" --vocab 512 --cutoff-len 32 --truncation drop
    expect_output "0 truncated, [1-9][0-9]* dropped as longer than 32 tokens"
    ;;
  prep_strict_leaves_nothing)
    run 0 "$bin" synth --jsonl "$work/pairs.jsonl" --pairs 50
    echo 'not json' >>"$work/pairs.jsonl"
    run 1 "$mpiexec" -np 2 "$bin" prep --input "$work/pairs.jsonl" --output "$work/data" --vocab 512 --strict
    expect_output "prep --strict: $work/pairs.jsonl:51: not valid JSON"
    [ ! -e "$work/data" ] && [ ! -e "$work/data.tmp" ] || fail "a failed prep left files behind"
    ;;
  outputs_are_never_overwritten)
    mkdir "$work/data" && echo keep >"$work/data/file"
    run 0 "$bin" synth --jsonl "$work/pairs.jsonl" --pairs 20
    run 2 "$bin" prep --input "$work/pairs.jsonl" --output "$work/data" --vocab 512
    expect_output "output $work/data exists; pass --overwrite"
    run 2 "$bin" synth --output "$work/data" --pairs 20
    [ "$(cat "$work/data/file")" = keep ] || fail "existing output touched"
    run 2 "$bin" prep --input "$work/pairs.jsonl" --output "$work/new" --vocab 0
    expect_output "--vocab \(> 0\) are required"
    ;;
  synth_dataset)
    run 0 "$bin" synth --output "$work/synth" --pairs 1000 --val-size 0.1 --pairs-per-shard 300 --kind sft --task reverse
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
