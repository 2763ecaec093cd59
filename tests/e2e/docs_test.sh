#!/usr/bin/env bash
# docs_test.sh <shardtune binary> <case>: generated documentation matches the binary.
# shellcheck source=harness.sh
source "$(dirname "$0")/harness.sh"
case "$case_name" in
  config_reference_is_current)
    "$ST_SOURCE_DIR/scripts/gen-config-reference.sh" "$bin" >"$work/configuration.md" || fail "the generator failed"
    diff -u "$ST_SOURCE_DIR/docs/configuration.md" "$work/configuration.md" ||
      fail "docs/configuration.md is stale: scripts/gen-config-reference.sh build/app/shardtune > docs/configuration.md"
    ;;
  *) fail "unknown case" ;;
esac
echo "PASS [$case_name]"
