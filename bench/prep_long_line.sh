#!/usr/bin/env bash
# prep's cost on one very long record, per shape: `reply`, a DPO line whose chosen reply is N MB
# of text; `turns`, an SFT messages line of N MB of short user/assistant turns (every assistant
# turn trained, so each one is a span). Tokenized with a byte-level tokenizer and the llama3
# template (tests/fuzz/fixtures). N = 1 is the baseline: the cost is linear when the seconds per
# MB stay flat as N grows (the whole run, startup included, so small N reads high).
# Usage: bench/prep_long_line.sh BUILD_DIR [sizes_mb="1 10 50"] [shapes="reply turns"]
set -euo pipefail
build=${1:?usage: bench/prep_long_line.sh BUILD_DIR [sizes_mb] [shapes]}
sizes=${2:-1 10 50}
shapes=${3:-reply turns}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '%-6s %6s %8s %10s %10s %12s\n' shape MB turns seconds "s per MB" "peak RSS MB"
for shape in $shapes; do
  for mb in $sizes; do
    turns=$(python3 - "$shape" "$mb" "$work/line.jsonl" <<'PY'
import json, random, sys
shape, target, path = sys.argv[1], int(sys.argv[2]) << 20, sys.argv[3]
random.seed(0)
words = ["the", "model", "learns", "preference", "pairs,", "ünïcode", "日本語", "42", "tokens.", "\n", "  "]
parts, size, turns = [], 0, 0
if shape == "reply":
    while size < target:
        word = random.choice(words)
        parts.append(word + " ")
        size += len(word.encode()) + 1
    record = {"prompt": "Write a long answer.", "chosen": "".join(parts), "rejected": "No."}
else:
    while size < target:
        text = " ".join(random.choice(words) for _ in range(8))
        parts += [{"role": "user", "content": text}, {"role": "assistant", "content": text[::-1]}]
        size += 2 * len(text.encode()) + 60
        turns += 1
    record = {"messages": parts}
open(path, "w").write(json.dumps(record, ensure_ascii=False) + "\n")
print(turns)
PY
)
    kind=dpo
    [ "$shape" = turns ] && kind=sft
    rm -rf "$work/out"
    /usr/bin/time -f '%e %M' -o "$work/time" "$build/app/shardtune" prep --kind "$kind" \
      --tokenizer "$here/../tests/fuzz/fixtures" --template llama3 --input "$work/line.jsonl" --output "$work/out" >/dev/null
    read -r seconds kb <"$work/time"
    printf '%-6s %6s %8s %10s %10.3f %12d\n' "$shape" "$mb" "$turns" "$seconds" "$(echo "$seconds / $mb" | bc -l)" $((kb / 1024))
  done
done
