#!/usr/bin/env bash
# keep_finding.sh <fuzz build dir> <target> <input> <name>: after fixing a finding, keeps its
# input as regressions/<target>/<name> with the refusal it now gets (the message after the
# scratch path) in <name>.expect, which the unit tier then asserts (test_fuzz_regressions.cpp).
set -euo pipefail
build=$1 target=$2 input=$3 name=$4
here=$(cd "$(dirname "$0")" && pwd)
# The refusal's first line, or for a list of problems its first problem (the header names none).
refusal=$(ST_FUZZ_PRINT=1 "$build/tests/fuzz/fuzz_$target" "$input" 2>&1 | sed -n '/^refusal: /,$p' |
  sed -n 's/^refusal: //; s/^  - //; /problem/d; s/ (\/.*//; p' | head -1)
[ -n "$refusal" ] || { echo "keep_finding: fuzz_$target still fails on $input (fix it first)" >&2; exit 1; }
mkdir -p "$here/regressions/$target"
cp "$input" "$here/regressions/$target/$name"
if [ "$refusal" = "none (accepted)" ]; then
  echo accepted >"$here/regressions/$target/$name.expect"
else
  sed -E 's|^/[^ ]*/st_fuzz_[0-9]+/[^:]*(:[0-9]+)?: ||' <<<"$refusal" >"$here/regressions/$target/$name.expect"
fi
echo "regressions/$target/$name: $(cat "$here/regressions/$target/$name.expect")"
