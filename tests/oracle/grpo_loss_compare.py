"""Compares policy_gradient_outputs' results with TRL's (grpo_loss_peer.py), case by case: the
micro-batch's loss, its gradient in every per-token log-prob, and each metric TRL logs.

Bounds: both sides compute in float64 over at most 54 tokens with exp of |x| < 5, so the
rounding of either is a few hundred ulps at most (< 1e-13 relative); TRL's side comes from its
peer record, which keeps 12 significant digits (off by up to 5e-12 relative). 5e-11 relative (plus
1e-15 absolute for exact zeros) leaves 10x over the two. TRL casts its clip indicators to float32 before
averaging them (clip_ratio/*): a ratio of small counts stored in float32 is off by at most 2^-24
(6e-8) relative, so those take 1e-6, 16x that.

usage: grpo_loss_compare.py TRL.json OURS.json
"""
import json
import math
import sys

FLOAT64, FLOAT32_METRIC = 5e-11, 1e-6


def close(a, b, relative):
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return abs(a - b) <= relative * max(abs(a), abs(b)) + 1e-15


def main():
    theirs, ours = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
    problems = []
    if sorted(theirs) != sorted(ours):
        problems.append(f"cases differ: TRL {sorted(theirs)}, shardtune {sorted(ours)}")
    worst = 0.0
    for name in sorted(set(theirs) & set(ours)):
        t, o = theirs[name], ours[name]
        if not close(t["loss"], o["loss"], FLOAT64):
            problems.append(f"{name}: loss TRL {t['loss']!r}, shardtune {o['loss']!r}")
        worst = max(worst, abs(t["loss"] - o["loss"]) / max(abs(t["loss"]), 1e-300))
        for s, (trow, orow) in enumerate(zip(t["grad"], o["grad"])):
            for k, (a, b) in enumerate(zip(trow, orow)):
                if not close(a, b, FLOAT64):
                    problems.append(f"{name}: d loss / d logp[{s}][{k}] TRL {a!r}, shardtune {b!r}")
        for key, value in t["metrics"].items():
            if key not in o["metrics"]:
                problems.append(f"{name}: TRL logs {key}, shardtune has no value for it")
                continue
            bound = FLOAT32_METRIC if key.startswith("clip_ratio/") else FLOAT64
            if not close(value, o["metrics"][key], bound):
                problems.append(f"{name}: {key} TRL {value!r}, shardtune {o['metrics'][key]!r}")
        print(f"{name}: loss {o['loss']:.12g} (TRL {t['loss']:.12g}), metrics {sorted(t['metrics'])}")
    print(f"largest relative loss difference: {worst:.3g} (bound {FLOAT64:g})")
    for problem in problems:
        print("DIFFERS:", problem)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
