#!/usr/bin/env bash
# rule_rewards_test.sh <rule_reward_outputs binary> <case>: the rule rewards (train/reward_functions.h)
# against TRL 1.16's own trl.rewards functions on the same inputs (rule_reward_inputs.py): every
# reward equal, and the name TRL logs the overlong punishment under. TRL's results come from their
# record while the inputs and the peer are unchanged.
# shellcheck source=../e2e/harness.sh
source "$ST_SOURCE_DIR/tests/e2e/harness.sh"
# shellcheck source=peer_record.sh
source "$ST_SOURCE_DIR/tests/oracle/peer_record.sh"
inputs_peer_and_ours rule_reward_inputs.py trl rule_reward_peer.py exact
run --exit 0 python3 - "$work/peer.json" "$work/ours.json" <<'PY'
import json, sys
theirs, ours = (json.load(open(p)) for p in sys.argv[1:3])
inputs = json.load(open(sys.argv[1].replace("peer.json", "inputs.json")))
bad = [f"think_format_reward({inputs['completions'][i]!r}): TRL {a}, shardtune {b}"
       for i, (a, b) in enumerate(zip(theirs["think_format_reward"], ours["think_format_reward"])) if a != b]
bad += [f"soft_overlong_punishment(length {inputs['lengths'][i]}): TRL {a}, shardtune {b}"
        for i, (a, b) in enumerate(zip(theirs["soft_overlong_punishment"], ours["soft_overlong_punishment"])) if a != b]
if theirs["overlong_name"] != ours["overlong_name"]:
    bad.append(f"logged name: TRL {theirs['overlong_name']}, shardtune {ours['overlong_name']}")
for b in bad:
    print("DIFFERS:", b)
print(f"{len(theirs['think_format_reward'])} texts, {len(theirs['soft_overlong_punishment'])} lengths, "
      f"{sum(theirs['think_format_reward'])} texts in format; {len(bad)} differences")
sys.exit(1 if bad else 0)
PY
echo "PASS: the rule rewards equal TRL's own on every input"
