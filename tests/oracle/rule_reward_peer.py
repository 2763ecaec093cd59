"""TRL 1.16's own rule rewards on rule_reward_inputs.py's completions: think_format_reward on the
texts (as conversational completions) and get_soft_overlong_punishment with trl grpo's registry
values (max_completion_len 1280, soft_punish_cache 256) on completions of the given lengths. The
peer of rule_rewards_test.sh.

usage: rule_reward_peer.py INPUTS.json OUT.json
"""
import json
import sys

from trl.rewards import get_soft_overlong_punishment, think_format_reward


def main():
    data = json.load(open(sys.argv[1]))
    overlong = get_soft_overlong_punishment(max_completion_len=1280, soft_punish_cache=256)
    out = {
        "think_format_reward": think_format_reward([[{"role": "assistant", "content": c}] for c in data["completions"]]),
        "soft_overlong_punishment": overlong([[7] * n for n in data["lengths"]]),
        "overlong_name": overlong.__name__,
    }
    with open(sys.argv[2], "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
