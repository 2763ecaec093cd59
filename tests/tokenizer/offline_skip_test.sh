#!/usr/bin/env bash
# offline_skip_test.sh <tokenize_corpus binary>: with the npm registry out of reach (an address
# nothing listens on), a parity test reports "skipped: needs the npm registry" and exits 77,
# which ctest counts as skipped; ./scripts/test.sh on an offline machine thus does not fail.
set -u
dir=$(mktemp -d /tmp/st_offline_XXXXXX)
trap 'rm -rf "$dir"' EXIT
out=$(npm_config_registry=http://127.0.0.1:9/ "$(dirname "$0")/js_parity.sh" "$1" gpt2 "$dir/npm" 2>&1)
rc=$?
echo "$out" | tail -n 3
[ "$rc" -eq 77 ] || { echo "FAIL: exit $rc, expected 77 (skipped)"; exit 1; }
grep -q 'skipped: needs the npm registry (http://127.0.0.1:9/ cannot be reached)' <<<"$out" ||
  { echo "FAIL: no skip message"; exit 1; }
echo "PASS [offline_skip]"
