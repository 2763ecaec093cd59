#!/usr/bin/env bash
# smollm2_fixture.sh <dest>: the ctest fixture `smollm2`, SmolLM2-135M-Instruct as a Hugging Face
# checkpoint (smollm2_fixture.py) in <dest>, made once per build folder and kept while the pinned
# Python environment is the same. Without that environment it leaves <dest>/MISSING and the tests
# that read the model skip (or fail where ST_REQUIRE_ORACLES=1).
set -euo pipefail
dest=$1
# The contents only: a clone in another folder makes the same stamp (the peer records hash this
# folder, .complete included).
stamp=$(cat "$(dirname "$0")/../python/requirements.txt" "$(dirname "$0")/smollm2_fixture.py" | sha256sum | cut -c1-16)
if [ ! -x "${ST_ORACLE_PYTHON:-}" ]; then
  mkdir -p "$dest"
  echo "the tests' Python environment ('${ST_ORACLE_PYTHON:-}' is not there): run scripts/install-deps.sh --with-test-python" >"$dest/MISSING"
  echo "smollm2: $(cat "$dest/MISSING")"
  exit 0
fi
if [ -f "$dest/.complete" ] && [ "$(cat "$dest/.complete")" = "$stamp" ]; then
  echo "smollm2: $dest is complete"
  exit 0
fi
rm -rf "$dest"
"$ST_ORACLE_PYTHON" "$(dirname "$0")/smollm2_fixture.py" "$dest" 2> >(grep -v -e "kernels" -e "triton" -e "Converting" -e "Loading" >&2)
echo "$stamp" >"$dest/.complete"
