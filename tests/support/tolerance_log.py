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


def record_screen(check, expected, worst, tolerance):
    """An fp32 screen: values within `tolerance` pass; one past it is not failed but handed to
    the float64 judge (record_judged). `worst` is over the values the screen passed, so the
    screen's margin decides no verdict; the table marks the row as a screen."""
    record(f"{check} (screen)", expected, "", worst, tolerance)


def record_judged(check, expected, ratio):
    """A value past its screen, judged by float64: its float64_judge.judged_ratio (|ours -
    float64| over what the rule allows), against 1."""
    record(f"{check} vs float64", expected, "", ratio, 1.0)
