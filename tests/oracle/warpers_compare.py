"""Compares warper_draws' results with transformers' warped distributions (warpers_peer.py):
per case, the same tokens kept (every cut token has probability 0 on both sides), each kept
token's probability within relative 1e-5, and the 100,000 draws a fit to transformers'
distribution by Pearson's chi-square (bins of expected count under 5 pooled; p-value by the
Wilson-Hilferty approximation), failing below p = 1e-4.

Bounds: both sides take the softmax of the same fp32 logits over at most 64 kept tokens; its
rounding is a few ulps per probability (6e-8 relative each), a sum over 64 terms at most 64 of
them (4e-6): 1e-5 leaves 2.5x over that worst case and over 10x over what a few ulps are. The
draws are seeded, so the chi-square verdict is the same on every run; a correct sampler passes
a given seed with probability 1 - 1e-4.

usage: warpers_compare.py TRANSFORMERS.json OURS.json DRAWS
"""
import json
import math
import sys


def chi_square_p(statistic, dof):
    """Upper tail of the chi-square distribution (Wilson-Hilferty)."""
    if dof <= 0:
        return 1.0
    z = ((statistic / dof) ** (1.0 / 3.0) - (1.0 - 2.0 / (9.0 * dof))) / math.sqrt(2.0 / (9.0 * dof))
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def main():
    theirs, ours, draws = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3])
    problems = []
    for name in sorted(theirs):
        p, q, counts = theirs[name]["probabilities"], ours[name]["probabilities"], ours[name]["counts"]
        kept_theirs = [i for i, v in enumerate(p) if v > 0]
        kept_ours = [i for i, v in enumerate(q) if v > 0]
        if kept_theirs != kept_ours:
            problems.append(f"{name}: transformers keeps tokens {kept_theirs}, shardtune {kept_ours}")
            continue
        worst = max(abs(p[i] - q[i]) / p[i] for i in kept_theirs)
        if worst > 1e-5:
            problems.append(f"{name}: a kept token's probability differs by {worst:.3g} relative")
        if any(counts[i] for i in range(len(p)) if p[i] == 0):
            problems.append(f"{name}: shardtune drew a token transformers cuts")
        bins, pooled_expected, pooled_count = [], 0.0, 0
        for i in kept_theirs:
            expected = draws * p[i]
            if expected < 5:
                pooled_expected += expected
                pooled_count += counts[i]
            else:
                bins.append((expected, counts[i]))
        if pooled_expected > 0:
            bins.append((pooled_expected, pooled_count))
        statistic = sum((c - e) ** 2 / e for e, c in bins)
        p_value = chi_square_p(statistic, len(bins) - 1)
        if p_value < 1e-4:
            problems.append(f"{name}: the draws do not fit transformers' distribution (chi-square {statistic:.1f}, "
                            f"{len(bins) - 1} dof, p {p_value:.2g})")
        print(f"{name}: {theirs[name]['processors']}: {len(kept_theirs)} tokens kept; probabilities within "
              f"{worst:.2g} relative; chi-square {statistic:.1f} on {len(bins) - 1} dof, p = {p_value:.3f}")
    for problem in problems:
        print("DIFFERS:", problem)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
