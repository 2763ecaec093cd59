#!/usr/bin/env bash
# prep's cost on one very long record: a DPO JSONL line whose chosen reply is N MB of text,
# tokenized with a byte-level tokenizer and the llama3 template (tests/fuzz/fixtures), for
# N = 1 (the baseline) and larger; the cost is linear when seconds per MB stay flat.
# Usage: bench/prep_long_line.sh BUILD_DIR [sizes_mb="1 10 50"]
set -euo pipefail
build=${1:?usage: bench/prep_long_line.sh BUILD_DIR [sizes_mb]}
sizes=${2:-1 10 50}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '%8s %10s %10s %12s\n' MB seconds "s per MB" "peak RSS MB"
for mb in $sizes; do
  python3 - "$mb" >"$work/line.jsonl" <<'PY'
import json, random, sys
random.seed(0)
words = ["the", "model", "learns", "preference", "pairs,", "ünïcode", "日本語", "42", "tokens.", "\n", "  "]
target, parts, size = int(sys.argv[1]) << 20, [], 0
while size < target:
    word = random.choice(words)
    parts.append(word + " ")
    size += len(word.encode()) + 1
print(json.dumps({"prompt": "Write a long answer.", "chosen": "".join(parts), "rejected": "No."}, ensure_ascii=False))
PY
  rm -rf "$work/out"
  /usr/bin/time -f '%e %M' -o "$work/time" "$build/app/shardtune" prep --kind dpo --tokenizer "$here/../tests/fuzz/fixtures" \
    --template llama3 --input "$work/line.jsonl" --output "$work/out" >/dev/null
  read -r seconds kb <"$work/time"
  printf '%8s %10s %10.3f %12d\n' "$mb" "$seconds" "$(echo "$seconds / $mb" | bc -l)" $((kb / 1024))
done
