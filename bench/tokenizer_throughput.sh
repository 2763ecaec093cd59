#!/usr/bin/env bash
# Tokenizer throughput, MB of text per second on one core: shardtune's C++ tokenizer next to
# tokenizers.js (Node) on the same generated corpus and vocabulary, in one run; both must give
# identical ids (tests/tokenizer/js_parity.sh does the work). Needs node/npm and the npm registry.
# Usage: bench/tokenizer_throughput.sh BUILD_DIR [strings=50000] [vocabularies="llama3 gpt2 qwen2_5 llama2"]
set -euo pipefail
build=${1:?usage: bench/tokenizer_throughput.sh BUILD_DIR [strings] [vocabularies]}
strings=${2:-50000}
vocabularies=${3:-llama3 gpt2 qwen2_5 llama2}
here=$(cd "$(dirname "$0")" && pwd)
printf '%-10s %16s %16s %8s\n' vocabulary "shardtune MB/s" "tokenizers.js" ratio
for vocabulary in $vocabularies; do
  out=$(ST_CORPUS_STRINGS=$strings "$here/../tests/tokenizer/js_parity.sh" "$build/tests/tokenizer/tokenize_corpus" \
        "$vocabulary" "$build/tests/tokenizer/npm-$vocabulary")
  ours=$(awk '/^c\+\+/ {print $(NF - 4)}' <<<"$out") theirs=$(awk '/^js/ {print $(NF - 4)}' <<<"$out")
  printf '%-10s %16s %16s %7.1fx\n' "$vocabulary" "$ours" "$theirs" "$(echo "$ours / $theirs" | bc -l)"
done
