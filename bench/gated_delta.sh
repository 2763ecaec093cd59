#!/usr/bin/env bash
# gated_delta.sh [BUILD=build] [TOKENS=2048] [DEVICE=cpu|cuda]: one Gated DeltaNet layer's forward
# and backward in fp32, shardtune's (bench_gated_delta) beside transformers' torch path on the same
# shape, device and threads; on cuda also the rule alone, cuda/'s kernels vs the libtorch ops.
# Prints the lines; needs the oracle Python (tests/python, ST_ORACLE_PYTHON) or, on a GPU
# machine, a python with torch and transformers.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
tokens=${2:-2048}
device=${3:-cpu}
threads=$(nproc)
python=${ST_ORACLE_PYTHON:-$HOME/.cache/shardtune/python-env/bin/python}
shape=("$tokens" 1024 4 8 128 3)
OMP_NUM_THREADS=$threads "$build/bench/bench_gated_delta" "${shape[@]}" "$device"
"$python" bench/gated_delta_peer.py "${shape[@]}" "$threads" "$device"
