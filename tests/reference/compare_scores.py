"""compare_scores.py EXPECTED GOT [REL_TOL [FLOAT64_REFERENCE]]: exit 1 unless every line's
token_logps agree (|a - b| <= tol * max(1, |a|)) and num_tokens match; prints the worst relative
difference. With FLOAT64_REFERENCE (two fp32 runs compared, EXPECTED and GOT), REL_TOL counts in
the rounding EXPECTED carries: its own worst difference from the float64 reference, never under
fp32's 2^-24 (tests/support/relative_diff.h's ST_ROUNDINGS, kOtherOrderRoundings = 50)."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import tolerance_log  # noqa: E402



def read(path):
    return [json.loads(line) for line in open(path) if line.strip()]


def worst_difference(expected, got):
    if len(expected) != len(got):
        sys.exit("line count %d != %d" % (len(got), len(expected)))
    worst = 0.0
    for number, (e, g) in enumerate(zip(expected, got), 1):
        if e["num_tokens"] != g["num_tokens"] or len(g["token_logps"]) != g["num_tokens"]:
            sys.exit("line %d: num_tokens %d != %d" % (number, g["num_tokens"], e["num_tokens"]))
        for a, b in zip(e["token_logps"], g["token_logps"]):
            worst = max(worst, abs(a - b) / max(1.0, abs(a)))
        worst = max(worst, abs(e["logp"] - g["logp"]) / max(1.0, abs(e["logp"])))
    return worst


expected, got = read(sys.argv[1]), read(sys.argv[2])
tolerance = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-5
worst = worst_difference(expected, got)
check = "token log-probs"
if len(sys.argv) > 4:
    rounding = max(worst_difference(read(sys.argv[4]), expected), 2.0 ** -24)
    print("one rounding of %s: %.3g (its distance from %s)" % (sys.argv[1], rounding, sys.argv[4]))
    worst, check = worst / rounding, "token log-probs in fp32 roundings"
print("worst difference %.3g over %d lines (tolerance %g)" % (worst, len(got), tolerance))
tolerance_log.record(check, os.path.basename(sys.argv[1]), os.path.basename(sys.argv[2]), worst, tolerance)
sys.exit(0 if worst <= tolerance else 1)
