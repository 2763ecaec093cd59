"""compare_scores.py EXPECTED GOT [REL_TOL]: exit 1 unless every line's token_logps agree
(|a - b| <= tol * max(1, |a|)) and num_tokens match; prints the worst relative difference."""
import json
import sys

expected = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
got = [json.loads(line) for line in open(sys.argv[2]) if line.strip()]
tolerance = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-5
if len(expected) != len(got):
    sys.exit("line count %d != %d" % (len(got), len(expected)))
worst = 0.0
for number, (e, g) in enumerate(zip(expected, got), 1):
    if e["num_tokens"] != g["num_tokens"] or len(g["token_logps"]) != g["num_tokens"]:
        sys.exit("line %d: num_tokens %d != %d" % (number, g["num_tokens"], e["num_tokens"]))
    for a, b in zip(e["token_logps"], g["token_logps"]):
        worst = max(worst, abs(a - b) / max(1.0, abs(a)))
    worst = max(worst, abs(e["logp"] - g["logp"]) / max(1.0, abs(e["logp"])))
print("worst relative difference %.3g over %d lines" % (worst, len(got)))
sys.exit(0 if worst <= tolerance else 1)
