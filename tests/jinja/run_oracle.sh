#!/usr/bin/env bash
# run_oracle.sh <script.py> [args...]: one of this folder's transformers checks in the tests'
# Python environment; skips (77) or fails as every oracle test does without it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../tokenizer/vocabularies.sh
source "$here/../tokenizer/vocabularies.sh"
need_oracles "$ST_VOCABULARIES"
script=$1
shift
exec "$ST_ORACLE_PYTHON" "$here/$script" "$@"
