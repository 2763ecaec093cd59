#!/usr/bin/env bash
# The real vocabularies the oracle tests read (llama3, llama2, gpt2, qwen2_5, qwen3: tokenizer.json
# and tokenizer_config.json each), pinned by tests/data/tokenizers/SHA256SUMS.
#   vocabularies.sh unpack <dest>: the ctest fixture. Fills <dest>/<name>/ from $ST_TOKENIZERS_DIR,
#     else ../shared/data/tokenizers beside the clone, else the clone's compressed copy, and
#     refuses (exit 1) a copy that differs from the pinned sums. With none of them it leaves
#     <dest>/MISSING, and the tests skip.
#   source vocabularies.sh; need_oracles <dest>: what a test calls first. Exits 77 (skipped) with
#     how to get what is missing - the vocabularies or the Python environment - or 1 (failed) where
#     ST_REQUIRE_ORACLES=1 (./scripts/test.sh sets it: there nothing may skip).
pinned=$(cd "$(dirname "${BASH_SOURCE[0]}")/../data/tokenizers" && pwd)/SHA256SUMS

need_oracles() {
  local dest=$1 missing=""
  if [ -f "$dest/MISSING" ]; then
    missing=$(cat "$dest/MISSING")
  elif [ ! -f "$dest/.complete" ]; then
    missing="the vocabularies were not unpacked into $dest (run the test through ctest: its fixture 'vocabularies' does it)"
  elif [ ! -x "${ST_ORACLE_PYTHON:-}" ]; then
    missing="the tests' Python environment ('${ST_ORACLE_PYTHON:-}' is not there): run scripts/install-deps.sh --with-test-python"
  fi
  [ -z "$missing" ] && return 0
  if [ "${ST_REQUIRE_ORACLES:-0}" = 1 ]; then
    echo "FAIL: $missing (ST_REQUIRE_ORACLES=1: an oracle test may not skip here)"
    exit 1
  fi
  echo "skipped: $missing"
  exit 77
}

# unpack_vocabularies <dest>
unpack_vocabularies() {
  local dest=$1 source_dir=${ST_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
  local archive=$source_dir/tests/data/tokenizers/vocabularies.tar.xz shared=$source_dir/../shared/data/tokenizers
  rm -rf "$dest"
  mkdir -p "$dest"
  local from
  if [ -n "${ST_TOKENIZERS_DIR:-}" ]; then
    from="ST_TOKENIZERS_DIR=$ST_TOKENIZERS_DIR"
    (cd "$ST_TOKENIZERS_DIR" && cut -c67- "$pinned" | xargs cp --parents -t "$dest") || from=""
  elif [ -d "$shared" ]; then
    from=$(cd "$shared" && pwd)
    (cd "$shared" && cut -c67- "$pinned" | xargs cp --parents -t "$dest") || from=""
  elif [ -f "$archive" ]; then
    from=$archive
    tar -C "$dest" -xJf "$archive" || from=""
  else
    echo "the real vocabularies are not here: this clone lacks tests/data/tokenizers/vocabularies.tar.xz" \
         "(git checkout origin/main -- tests/data/tokenizers) and ST_TOKENIZERS_DIR is not set to a folder" \
         "holding <llama3|llama2|gpt2|qwen2_5|qwen3>/tokenizer.json and tokenizer_config.json" >"$dest/MISSING"
    echo "vocabularies: $(cat "$dest/MISSING")"
    return 0
  fi
  [ -n "$from" ] || { echo "FAIL: could not read the vocabularies from ${ST_TOKENIZERS_DIR:-${shared}} / $archive"; return 1; }
  (cd "$dest" && sha256sum --quiet -c "$pinned") ||
    { echo "FAIL: the vocabularies from $from differ from tests/data/tokenizers/SHA256SUMS"; return 1; }
  touch "$dest/.complete"
  echo "vocabularies: $(wc -l <"$pinned") files from $from into $dest, each as pinned"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  [ "${1:-}" = unpack ] && [ -n "${2:-}" ] || { echo "usage: vocabularies.sh unpack <dest>"; exit 2; }
  unpack_vocabularies "$2"
fi
