"""The goodness-of-fit test the draws' statistical tests share."""

from __future__ import annotations

import numpy as np
from scipy import stats


def pooled_chi_square_pvalue(draws: np.ndarray, expected: np.ndarray) -> float:
    """Chi-square of ``draws`` (positions) against probabilities ``expected``: a position of
    probability 0 must never be drawn, and the cells expected fewer than 5 times are pooled into
    one (the test's approximation needs populated cells)."""
    observed = np.bincount(draws, minlength=expected.size)
    assert observed[expected == 0].sum() == 0, "a position of probability 0 was drawn"
    observed, expected = observed[expected > 0], expected[expected > 0]
    keep = expected * draws.size >= 5
    pooled_observed = np.append(observed[keep], observed[~keep].sum())
    pooled_expected = np.append(expected[keep], expected[~keep].sum()) * draws.size
    if not (~keep).any():
        pooled_observed, pooled_expected = pooled_observed[:-1], pooled_expected[:-1]
    return stats.chisquare(pooled_observed, pooled_expected).pvalue
