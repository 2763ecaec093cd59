#!/usr/bin/env bash
# missing_vocabularies_test.sh <tokenize_corpus binary>: where a clone has no vocabularies (no
# tests/data/tokenizers archive, no ../shared beside it, no ST_TOKENIZERS_DIR) a parity test says
# how to get them and exits 77, which ctest counts as skipped - or 1 where ST_REQUIRE_ORACLES=1;
# a clone with only its archive unpacks it; and a copy that differs from the pinned sums is
# refused by name.
set -u
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d /tmp/st_novocab_XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$dir/clone"  # a clone without the archive, nothing beside it
out=$(env -u ST_TOKENIZERS_DIR ST_SOURCE_DIR="$dir/clone" "$here/vocabularies.sh" unpack "$dir/vocabularies" 2>&1) ||
  fail "the fixture failed where it should leave MISSING: $out"
for required in 0 1; do
  out=$(ST_REQUIRE_ORACLES=$required "$here/tokenizer_parity.sh" "$1" gpt2 "$dir/vocabularies" 2>&1)
  rc=$?
  echo "ST_REQUIRE_ORACLES=$required: exit $rc: $(tail -n 1 <<<"$out")"
  expected=77 word=skipped
  [ "$required" = 1 ] && expected=1 word=FAIL
  [ "$rc" -eq "$expected" ] || fail "exit $rc, expected $expected"
  grep -q "^$word: the real vocabularies are not here: this clone lacks tests/data/tokenizers/vocabularies.tar.xz" <<<"$out" ||
    fail "no message saying how to get them"
done
# A clone with the archive and nothing beside it unpacks the archive.
mkdir -p "$dir/with_archive/tests/data/tokenizers"
ln -s "$here/../data/tokenizers/vocabularies.tar.xz" "$dir/with_archive/tests/data/tokenizers/"
out=$(env -u ST_TOKENIZERS_DIR ST_SOURCE_DIR="$dir/with_archive" "$here/vocabularies.sh" unpack "$dir/vocabularies" 2>&1) ||
  fail "the archive was refused: $out"
echo "$out"
grep -q "vocabularies: 10 files from $dir/with_archive/tests/data/tokenizers/vocabularies.tar.xz" <<<"$out" ||
  fail "not read from the archive"
[ -f "$dir/vocabularies/.complete" ] && [ -f "$dir/vocabularies/qwen3/tokenizer.json" ] || fail "nothing unpacked"
# A copy that is not the pinned one: the fixture fails naming where it came from.
mkdir -p "$dir/edited"
tar -C "$dir/edited" -xJf "$here/../data/tokenizers/vocabularies.tar.xz" gpt2/tokenizer_config.json llama2 llama3 qwen2_5 qwen3 gpt2/tokenizer.json
echo ' ' >>"$dir/edited/gpt2/tokenizer_config.json"
out=$(ST_TOKENIZERS_DIR="$dir/edited" "$here/vocabularies.sh" unpack "$dir/vocabularies" 2>&1)
rc=$?
echo "edited copy: exit $rc: $(tail -n 1 <<<"$out")"
[ "$rc" -eq 1 ] || fail "an edited copy was taken (exit $rc)"
grep -q "gpt2/tokenizer_config.json: FAILED" <<<"$out" || fail "the differing file is not named"
grep -q "FAIL: the vocabularies from ST_TOKENIZERS_DIR=$dir/edited differ from tests/data/tokenizers/SHA256SUMS" <<<"$out" ||
  fail "the source is not named"
[ ! -f "$dir/vocabularies/.complete" ] || fail "an edited copy was marked complete"
echo "PASS [missing_vocabularies_skip]"
