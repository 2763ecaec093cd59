#!/usr/bin/env bash
# Tokenizer throughput, MB of text per second on one core: shardtune's C++ tokenizer next to Hugging
# Face tokenizers (the Rust library, called per string from Python, as TRL and LlamaFactory
# tokenize) on the same generated corpus and real vocabulary, in one run; both must give identical
# ids (tests/tokenizer/tokenizer_parity.sh does the work). Needs a build with tests (the fixture
# folder BUILD_DIR/vocabularies: `ctest -R vocabularies` fills it) and the tests' Python
# environment (scripts/install-deps.sh --with-test-python).
# Usage: bench/tokenizer_throughput.sh BUILD_DIR [strings=50000] [vocabularies="llama3 gpt2 qwen2_5 qwen3 llama2"]
set -euo pipefail
build=${1:?usage: bench/tokenizer_throughput.sh BUILD_DIR [strings] [vocabularies]}
strings=${2:-50000}
vocabularies=${3:-llama3 gpt2 qwen2_5 qwen3 llama2}
here=$(cd "$(dirname "$0")" && pwd)
export ST_ORACLE_PYTHON=${ST_ORACLE_PYTHON:-$("$here/../scripts/python-env-path.sh")/bin/python}
[ -f "$build/vocabularies/.complete" ] || "$here/../tests/tokenizer/vocabularies.sh" unpack "$build/vocabularies"
printf '%-10s %16s %20s %8s\n' vocabulary "shardtune MB/s" "tokenizers (Rust)" ratio
for vocabulary in $vocabularies; do
  out=$(ST_CORPUS_STRINGS=$strings "$here/../tests/tokenizer/tokenizer_parity.sh" \
        "$build/tests/tokenizer/tokenize_corpus" "$vocabulary" "$build/vocabularies")
  ours=$(awk '/^c\+\+/ {print $(NF - 4)}' <<<"$out") theirs=$(awk '/^hf/ {print $(NF - 4)}' <<<"$out")
  printf '%-10s %16s %20s %7.1fx\n' "$vocabulary" "$ours" "$theirs" "$(echo "$ours / $theirs" | bc -l)"
done
