#!/usr/bin/env bash
# Chat templates in prep: `shardtune prep` (1 rank) of the same DPO records rendered by a built-in
# template and by the model's own Jinja template (`--template jinja`, lib/jinja), side by side
# in one run. Records: LlamaFactory's dpo_en_demo (tests/data/llamafactory) repeated to RECORDS.
# Rows: Qwen 2.5's template (built-in `qwen` is its twin: both write the same pairs, checked
# here) and Llama 3.1's (no built-in twin: `llama3` writes no dated system header; next to it for
# scale). Prints prep's own time for each and the interpreter's cost as a ratio.
# Needs a build with tests (BUILD_DIR/vocabularies: `ctest -R vocabularies` fills it).
# Usage: bench/template_speed.sh BUILD_DIR [records=6000]  (docs/performance.md, "Chat templates")
set -euo pipefail
build=${1:?usage: bench/template_speed.sh BUILD_DIR [records]}
records=${2:-6000}
here=$(cd "$(dirname "$0")" && pwd)
root=$here/..
[ -f "$build/vocabularies/.complete" ] || "$root/tests/tokenizer/vocabularies.sh" unpack "$build/vocabularies"
work=$(mktemp -d /tmp/st_template_speed_XXXXXX)
trap 'rm -rf "$work"' EXIT
python3 - "$root/tests/data/llamafactory" "$work" "$records" <<'PY'
import json, sys
source, work, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
records = json.load(open(f"{source}/dpo_en_demo.json", encoding="utf-8"))
json.dump([records[i % len(records)] for i in range(n)], open(f"{work}/dpo.json", "w", encoding="utf-8"), ensure_ascii=False)
entry = json.load(open(f"{source}/dataset_info.json", encoding="utf-8"))["dpo_en_demo"]
json.dump({"dpo": {**entry, "file_name": "dpo.json"}}, open(f"{work}/dataset_info.json", "w"))
PY
# model_dir VOCABULARY [TEMPLATE_FILE]: the vocabulary, with TEMPLATE_FILE as its chat_template.
model_dir() {
  local dir=$work/model_$1_${2:+$(basename "$2" .jinja)}
  mkdir -p "$dir"
  cp "$build/vocabularies/$1/tokenizer.json" "$dir/"
  python3 - "$build/vocabularies/$1/tokenizer_config.json" "$dir/tokenizer_config.json" "${2:-}" <<'PY'
import json, sys
config = json.load(open(sys.argv[1], encoding="utf-8"))
if sys.argv[3]:
    config["chat_template"] = open(sys.argv[3], encoding="utf-8").read()
json.dump(config, open(sys.argv[2], "w", encoding="utf-8"))
PY
  echo "$dir"
}
# prep_seconds MODEL TEMPLATE OUT [flags]: prep's own time.
prep_seconds() {
  local out
  out=$("$build/app/shardtune" prep --kind dpo --dataset-info "$work" --dataset dpo --tokenizer "$1" --template "$2" \
    --output "$work/$3" --cutoff-len 4096 --template-date 2026-11-29 2>&1) || { echo "$out" >&2; exit 1; }
  grep -oE '\(([0-9.]+) s, 1 rank' <<<"$out" | grep -oE '[0-9.]+' | head -1
}
same_pairs() { "${ST_REFERENCE_PYTHON:-/usr/bin/python3}" - "$work/$1/train" "$work/$2/train" <<'PY'
import glob, sys
import h5py, numpy
a, b = (sorted(glob.glob(d + "/*.h5")) for d in sys.argv[1:3])
same = len(a) == len(b) and all(
    all(numpy.array_equal(fa[k][()], fb[k][()]) for k in ("prompt", "chosen", "rejected"))
    for fa, fb in ((h5py.File(x, "r"), h5py.File(y, "r")) for x, y in zip(a, b)))
print("identical pairs" if same else "pairs differ")
PY
}
qwen=$(model_dir qwen2_5 "$root/tests/data/templates/Qwen-Qwen2.5-7B-Instruct.jinja")
llama=$(model_dir llama3 "$root/tests/data/templates/meta-llama-Llama-3.1-8B-Instruct.jinja")
printf '%-44s %12s %12s %8s  %s\n' "template ($records DPO records, 1 rank)" "built-in s" "jinja s" ratio pairs
builtin=$(prep_seconds "$qwen" qwen qwen_builtin) jinja=$(prep_seconds "$qwen" jinja qwen_jinja)
printf '%-44s %12s %12s %7.2fx  %s\n' "Qwen 2.5 (built-in qwen = its twin)" "$builtin" "$jinja" \
  "$(echo "$jinja / $builtin" | bc -l)" "$(same_pairs qwen_builtin qwen_jinja)"
builtin=$(prep_seconds "$llama" llama3 llama_builtin) jinja=$(prep_seconds "$llama" jinja llama_jinja)
printf '%-44s %12s %12s %7.2fx  %s\n' "Llama 3.1 (built-in llama3, no dated header)" "$builtin" "$jinja" \
  "$(echo "$jinja / $builtin" | bc -l)" "(different text)"
