"""The inputs of the sampling oracle (warpers_test.sh): one next-token logit vector over 64
tokens (a few likely tokens, a long tail, two exact ties at the top-k boundary) and one case per
warper and their combination as generate(do_sample=True) applies them. Standard library only,
seeded: the same file on every machine.

usage: warpers_inputs.py OUT.json
"""
import json
import random
import sys

V, DRAWS = 64, 100000


def main():
    rng = random.Random(4099)
    logits = [rng.gauss(0.0, 1.0) for _ in range(V)]
    logits[:4] = [5.0, 4.2, 3.9, 3.1]
    logits[10] = logits[11] = 2.5  # tied: top_k 6 keeps both
    cases = [
        {"name": "temperature", "temperature": 0.7},
        {"name": "top_k", "temperature": 1.0, "top_k": 6},
        {"name": "top_p", "temperature": 1.0, "top_p": 0.9},
        {"name": "min_p", "temperature": 1.0, "min_p": 0.05},
        {"name": "all_four", "temperature": 1.3, "top_k": 20, "top_p": 0.95, "min_p": 0.02},
    ]
    for i, case in enumerate(cases):
        case["seed"] = 1000 + i
    with open(sys.argv[1], "w") as f:
        json.dump({"logits": [round(x, 6) for x in logits], "draws": DRAWS, "cases": cases}, f)


if __name__ == "__main__":
    main()
