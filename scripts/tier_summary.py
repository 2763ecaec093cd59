"""tier_summary.py CTEST_LOG TESTS_JSON [GTEST_REPORTS]: per ctest label (tier), how many tests passed,
failed and were skipped in the run that CTEST_LOG records, and their summed test time; TESTS_JSON is
`ctest -N --show-only=json-v1`, which gives each test's labels. GTEST_REPORTS is the folder of
GoogleTest's XML reports (one per unit executable's run, cmake/testing.cmake): the unit tier's
cases passed, failed and skipped, counted from the reports of the entries this run ran.
./scripts/test.sh prints it, so a CI log shows how many oracle tests ran (none may skip there)."""
import collections
import json
import os
import re
import sys
import xml.etree.ElementTree as ElementTree

log_path, tests_path = sys.argv[1:3]
reports_path = sys.argv[3] if len(sys.argv) > 3 else None
labels = {}
for test in json.load(open(tests_path))["tests"]:
    for prop in test.get("properties", []):
        if prop["name"] == "LABELS":
            labels[test["name"]] = prop["value"]
result = re.compile(r"Test +#\d+: (\S+) \.*\s*(\*\*\*)?(Passed|Skipped|Failed|Not Run|Timeout|Exception\S*)?.*?([0-9.]+) sec$")
tiers = collections.defaultdict(lambda: collections.Counter())
seconds = collections.defaultdict(float)
skipped_names = []
ran = []
for line in open(log_path, encoding="utf-8", errors="replace"):
    match = result.search(line.rstrip())
    if not match:
        continue
    ran.append(match.group(1))
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


def gtest_cases(report):
    """(passed, failed, skipped names) of one GoogleTest XML report."""
    passed, failed, skipped = 0, 0, []
    for case in ElementTree.parse(report).iter("testcase"):
        name = f"{case.get('classname')}.{case.get('name')}"
        if case.find("failure") is not None:
            failed += 1
        elif case.get("result") == "skipped" or case.find("skipped") is not None:
            skipped.append(name)
        elif case.get("status", "run") == "run":
            passed += 1
    return passed, failed, skipped


if reports_path:
    counts, executables, skipped_cases = collections.Counter(), 0, []
    for name in ran:
        report = os.path.join(reports_path, name + ".xml")
        if not os.path.exists(report):
            continue
        passed, failed, skipped = gtest_cases(report)
        executables += 1
        counts["passed"] += passed
        counts["failed"] += failed
        skipped_cases += skipped
    if executables:
        print(f"test.sh: unit cases (GoogleTest, {executables} runs): {counts['passed']} passed, "
              f"{counts['failed']} failed, {len(skipped_cases)} skipped")
        if skipped_cases:
            print("test.sh: unit cases skipped: " + " ".join(skipped_cases))
