"""The tolerance tests' one writer of $ST_TOLERANCE_LOG (scripts/tolerance_table.sh): a
comparison with a fixed bound appends its worst value and the bound, one JSON line, when the
variable is set; nothing otherwise. Shared by tests/e2e/metrics_check.py and the oracle checks
(the gtest checks write the same lines: tests/support/relative_diff.h)."""
import json
import os


def record(check, expected, actual, worst, tolerance):
    log = os.environ.get("ST_TOLERANCE_LOG")
    if not log:
        return
    with open(log, "a") as out:
        out.write(json.dumps({"test": os.environ.get("ST_TEST_NAME", "?"), "check": check, "expected": expected,
                              "actual": actual, "worst": worst, "tolerance": tolerance}) + "\n")
