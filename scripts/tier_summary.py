"""tier_summary.py CTEST_LOG TESTS_JSON: per ctest label (tier), how many tests passed, failed and
were skipped in the run that CTEST_LOG records, and their summed test time; TESTS_JSON is
`ctest -N --show-only=json-v1`, which gives each test's labels. ./scripts/test.sh prints it, so a
CI log shows how many oracle tests ran (none may skip there)."""
import collections
import json
import re
import sys

log_path, tests_path = sys.argv[1:3]
labels = {}
for test in json.load(open(tests_path))["tests"]:
    for prop in test.get("properties", []):
        if prop["name"] == "LABELS":
            labels[test["name"]] = prop["value"]
result = re.compile(r"Test +#\d+: (\S+) \.*\s*(\*\*\*)?(Passed|Skipped|Failed|Not Run|Timeout|Exception\S*)?.*?([0-9.]+) sec$")
tiers = collections.defaultdict(lambda: collections.Counter())
seconds = collections.defaultdict(float)
skipped_names = []
for line in open(log_path, encoding="utf-8", errors="replace"):
    match = result.search(line.rstrip())
    if not match:
        continue
    name, outcome, took = match.group(1), match.group(3) or "Failed", float(match.group(4))
    outcome = {"Passed": "passed", "Skipped": "skipped"}.get(outcome, "failed")
    if outcome == "skipped" and "cuda" not in labels.get(name, []):  # cuda: skipped without a GPU
        skipped_names.append(name)
    for label in labels.get(name, ["(no label)"]):
        if label in ("bit_exact", "other_blas"):
            continue
        tiers[label][outcome] += 1
        seconds[label] += took
print("test.sh: tiers (tests passed / failed / skipped, summed test time)")
for label in sorted(tiers):
    counts = tiers[label]
    print(f"  {label:<8} {counts['passed']:4d} passed {counts['failed']:3d} failed {counts['skipped']:3d} skipped"
          f" {seconds[label]:8.0f} s")
if skipped_names:
    print("test.sh: skipped outside the cuda tier: " + " ".join(skipped_names))
