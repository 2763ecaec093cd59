"""The rule every oracle here applies past its fp32 tolerance: two correct fp32 computations
of a deep model (other summation orders) can differ by more than it, so the judge is the
reference tool itself run in float64. shardtune passes where its fp32 value is no farther from
float64's than the tool's own fp32 value is, times 2 (at least `floor` off is always allowed).
"""


def judged_ratio(ours_off, theirs_off, floor=0.0):
    """ours_off, theirs_off: |shardtune - float64| and |tool fp32 - float64| (same scale).
    ours_off over what the rule allows (2 x theirs_off, at least floor): 1 or less passes."""
    allowed = max(2 * theirs_off, floor)
    if allowed > 0:
        return ours_off / allowed
    return 0.0 if ours_off == 0 else float("inf")


def no_farther_from_exact(ours_off, theirs_off, floor=0.0):
    return judged_ratio(ours_off, theirs_off, floor) <= 1.0
