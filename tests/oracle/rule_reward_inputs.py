"""The inputs of the rule-reward oracle (rule_rewards_test.sh): completions that probe TRL's
think_format_reward pattern (^<think>(?!.*<think>)(.*?)</think>.*$, DOTALL | MULTILINE) at its
edges, and completion lengths around get_soft_overlong_punishment's registry values (1280, 256).
Standard library only: the same file on every machine.

usage: rule_reward_inputs.py OUT.json
"""
import json
import random
import sys

FIXED = [
    "<think>\nThis is my reasoning.\n</think>\nThis is my answer.",
    "<think>\nThis is my reasoning.\nThis is my answer.",
    "<think></think>", "<think>", "</think>", "", " <think>a</think>", "\n<think>a</think>",
    "<think>a<think>b</think>", "<think>a</think>b<think>", "<think>a</think></think>",
    "<think>a\n\nb</think>\n\nline\n", "<THINK>a</THINK>", "<think >a</think>", "<think>a</ think>",
    "<think><think></think>", "<think>é 漢字 🙂</think>ok", "<think>\r\n</think>\r\n",
    "<think>a</think>\n<think>", "<think>line1\nline2</think>", "<think>a</think", "think>a</think>",
    "<think></think><think></think>", "<think>\n\n\n", "<think>x</think>\n" * 3,
]


def main():
    rng = random.Random(88)
    pieces = ["<think>", "</think>", "a", "\n", " ", "<", ">", "/", "think", "é"]
    generated = ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 8))) for _ in range(200)]
    lengths = [0, 1, 1023, 1024, 1025, 1100, 1279, 1280, 1281, 2000]
    with open(sys.argv[1], "w") as f:
        json.dump({"completions": FIXED + generated, "lengths": lengths}, f)


if __name__ == "__main__":
    main()
