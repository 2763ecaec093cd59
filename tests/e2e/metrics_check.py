#!/usr/bin/env python3
"""The e2e scripts' one reader of metrics.jsonl (called through harness.sh's helpers).

  metrics_check.py value FILE KEY first|last|count|steps   a value of the records with KEY
  metrics_check.py same EXPECTED ACTUAL TOLERANCE [FROM [TO]]  every record's loss-like values agree;
                                                           FROM (TO): only train records from (up
                                                           to) that step, with all their loss,
                                                           reward and lr values
  metrics_check.py learned FILE DROP [KEY=MIN ...]         loss fell by more than DROP (finite),
                                                           and each KEY's last value >= MIN
"""
import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import tolerance_log  # noqa: E402

SAME_KEYS = ("loss", "eval/loss", "grad_norm", "rewards/margins", "logps/chosen", "eval/rewards/margins")
TRAIN_KEYS = ("loss", "grad_norm", "lr", "rewards/chosen", "rewards/rejected", "rewards/margins", "logps/chosen",
              "logps/rejected", "rewards/accuracies", "epoch")


def records(path):
    with open(path) as lines:
        return [json.loads(line) for line in lines]


def values(path, key):
    return [r[key] for r in records(path) if key in r]


def value(path, key, pick):
    found = values(path, key)
    if pick == "count":
        return str(len(found))
    if pick == "steps":
        return " ".join(str(r["step"]) for r in records(path) if key in r)
    if not found:
        sys.exit(f"{path}: no record has {key}")
    return str(found[0] if pick == "first" else found[-1])


def same(expected, actual, tolerance, first=None, last=None):
    ra, rb = records(expected), records(actual)
    keys = SAME_KEYS
    if first is not None:
        keys = TRAIN_KEYS
        end = last if last is not None else math.inf
        ra, rb = [[r for r in rs if "loss" in r and first <= r["step"] <= end] for rs in (ra, rb)]
    if not len(ra) == len(rb) > 0:
        print(f"{len(ra)} records vs {len(rb)}")
        return False
    worst = 0.0
    for x, y in zip(ra, rb):
        if x["step"] != y["step"]:
            print(f"step {x['step']} vs {y['step']}")
            return False
        for k in keys:
            if k in x:
                worst = max(worst, abs(x[k] - y[k]) / max(1.0, abs(x[k])))
    print(f"{len(ra)} records: largest relative difference {worst:.3g} (tolerance {tolerance:g})")
    run_of = lambda path: os.path.basename(os.path.dirname(path))  # <run>/metrics.jsonl
    tolerance_log.record("metrics", run_of(expected), run_of(actual), worst, tolerance)
    return worst <= tolerance


def learned(path, drop, minimums):
    losses = values(path, "loss")
    first, last = losses[0], losses[-1]
    ok = math.isfinite(last) and last < first - drop
    report = [f"loss {first:.4f} -> {last:.4f} (must fall by more than {drop:g})"]
    for item in minimums:
        key, minimum = item.split("=")
        got = values(path, key)[-1]
        ok = ok and got >= float(minimum)
        report.append(f"{key} {got:.4f} (>= {minimum})")
    print("; ".join(report))
    return ok


def main(argv):
    command, args = argv[1], argv[2:]
    if command == "value":
        print(value(*args))
        return 0
    if command == "same":
        first = int(args[3]) if len(args) > 3 else None
        last = int(args[4]) if len(args) > 4 else None
        return 0 if same(args[0], args[1], float(args[2]), first, last) else 1
    if command == "learned":
        return 0 if learned(args[0], float(args[1]), args[2:]) else 1
    sys.exit(f"unknown command {command}")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
