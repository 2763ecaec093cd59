#!/usr/bin/env bash
# gated_delta.sh [BUILD=build] [TOKENS=2048]: one Gated DeltaNet layer's forward and backward on
# the CPU in fp32, shardtune's (bench_gated_delta) beside transformers' torch path on the same
# shape and threads. Prints both lines; needs the oracle Python (tests/python, ST_ORACLE_PYTHON).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
tokens=${2:-2048}
threads=$(nproc)
python=${ST_ORACLE_PYTHON:-$HOME/.cache/shardtune/python-env/bin/python}
shape=("$tokens" 1024 4 8 128 3)
OMP_NUM_THREADS=$threads "$build/bench/bench_gated_delta" "${shape[@]}"
"$python" bench/gated_delta_peer.py "${shape[@]}" "$threads"
