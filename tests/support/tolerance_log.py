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


def record_judged(check, expected, ours_off, theirs_off, floor=0.0):
    """A value past its screen, judged by float64 (float64_judge.no_farther_from_exact):
    |ours - float64| over what the rule allows (2 x the tool's own fp32 distance from float64, at
    least `floor`), against 1."""
    allowed = max(2 * theirs_off, floor)
    worst = ours_off / allowed if allowed > 0 else (0.0 if ours_off == 0 else float("inf"))
    record(f"{check} vs float64", expected, "", worst, 1.0)
