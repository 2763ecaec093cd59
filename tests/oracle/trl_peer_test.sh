#!/usr/bin/env bash
# trl_peer_test.sh <shardtune binary> <vocabularies dir>: the GPU lease's principal row
# (bench/vs_trl.sh: shardtune vs TRL's own DPOTrainer, bench/trl_peer.py, and the P0 loop) run
# through on the CPU, as scripts/gpu-check.sh's dry run does, so a lease never finds it broken: the
# rows and the goals come out (a TRL run that fails, here Liger's on the CPU, leaves its row "did
# not finish" and the rest goes on), and the logical tokens TRL's peer counts (its collator's
# attention masks over the measured steps) equal the real tokens of the pairs those steps draw,
# counted from the shards.
# shellcheck source=../e2e/harness.sh
source "$ST_SOURCE_DIR/tests/e2e/harness.sh"
# shellcheck source=../tokenizer/vocabularies.sh
source "$ST_SOURCE_DIR/tests/tokenizer/vocabularies.sh"
need_oracles "$2"
python=$ST_ORACLE_PYTHON
bench=$ST_SOURCE_DIR/bench
build=$(dirname "$(dirname "$bin")")
PATH=$(dirname "$python"):$PATH  # the scripts' python3: the oracles' (TRL, h5py)
export PATH

run --exit 0 env PEER_DEVICE=cpu LIGER="off on" TRL_LADDER=1,2 TRL_STEPS=2 TRL_WARMUP=1 BUDGET_PAIRS=4 \
  ST_BENCH_WORK="$work" "$bench/vs_trl.sh" "$build" debug ultrafeedback 2
expect_output '^\| debug \| dpo \| ultrafeedback \| shardtune packed\+shared, auto token budget \| 4 pairs/step \| [0-9.]+ \| 1\.00x \|'
expect_output '^\| debug \| dpo \| ultrafeedback \| TRL DPOTrainer, Liger off, its best micro-batch \| mb [12] \| [0-9.]+ \| [0-9.]+x \|'
expect_output '^\| debug \| dpo \| ultrafeedback \| P0 loop \(transformers \+ TRL-style loss, padded\) \| mb [12] \| [0-9.]+ \| [0-9.]+x \|'
# Liger needs a GPU: that run fails, its row says so and the rest goes on.
expect_output '^\| debug \| dpo \| ultrafeedback \| TRL DPOTrainer, Liger on \| - \| did not finish \|'
expect_output '^\| >= 40,000 logical tokens/s \| [0-9.]+ \| (met|not met) \|'
expect_output "^\| >= 2.0x TRL's best \(Liger off, mb [12]\) \| [0-9.]+x \|"
expect_output "^\| peak <= TRL's best's \|"

# Micro-batches of 3 pairs, one warm-up step: the measured steps draw pairs 3..8 in file order.
data=$work/debug-ultrafeedback/ours/data/train
run --exit 0 "$python" "$bench/trl_peer.py" --config "$work/debug-ultrafeedback/ours/config.json" --data "$data" \
  --device cpu --micro-batches 3 --steps 2 --warmup 1
counted=$(sed -n 's/.*micro-batch *3 .*(\([0-9]*\) logical tokens in.*/\1/p' <<<"$out")
expected=$("$python" - "$data" <<'PY'
import json, os, sys
import h5py
directory = sys.argv[1]
lengths = []
for shard in json.load(open(os.path.join(directory, "manifest.json")))["shards"]:
    with h5py.File(os.path.join(directory, shard["file"]), "r") as f:
        sizes = {name: f[name + "_offsets"][1:] - f[name + "_offsets"][:-1] for name in ("prompt", "chosen", "rejected")}
        lengths += [2 * int(p) + int(c) + int(r) for p, c, r in zip(sizes["prompt"], sizes["chosen"], sizes["rejected"])]
print(sum(lengths[3:9]))
PY
)
[ -n "$counted" ] || fail "trl_peer printed no token count: $out"
[ "$counted" = "$expected" ] || fail "TRL's peer counted $counted logical tokens, the shards hold $expected for pairs 3..8"
echo "PASS: vs_trl's rows and goals on the CPU; TRL's peer counted $counted logical tokens = the shards' pairs 3..8"
