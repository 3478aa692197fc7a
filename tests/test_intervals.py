"""The 95% intervals and the paired test every report prints: checked against scipy and by
simulation (an interval that claims 95% must cover the true value about 95% of the time)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from textveil.errors import InvalidParameterError
from textveil.evaluation.intervals import (
    SMALL_COUNT,
    bootstrap_interval,
    hits_array,
    hits_string,
    mcnemar_bounds,
    mcnemar_exact,
    rate_interval,
)


def test_the_paired_test_is_scipys_exact_binomial_on_the_discordant_texts():
    # a constructed 2x2 table: 40 named by both, 9 by the first only, 2 by the second only, 99 by neither
    first = [True] * 40 + [True] * 9 + [False] * 2 + [False] * 99
    second = [True] * 40 + [False] * 9 + [True] * 2 + [False] * 99
    order = np.random.default_rng(3).permutation(len(first))  # the texts' order does not matter
    test = mcnemar_exact(hits_string(np.array(first)[order]), hits_string(np.array(second)[order]))
    assert (test.only_first, test.only_second) == (9, 2)
    assert test.p_value == pytest.approx(stats.binomtest(9, 11, 0.5, alternative="two-sided").pvalue, rel=1e-12)
    assert test.p_value == pytest.approx(0.0654296875)  # 2 * P[X <= 2], X ~ Binomial(11, 1/2)
    assert not test.told_apart
    # twice the table: now told apart
    assert mcnemar_exact(first * 2, second * 2).told_apart
    # agreement everywhere: nothing to tell apart
    assert mcnemar_exact(first, first).p_value == 1.0


def test_the_paired_test_refuses_two_releases_of_other_texts():
    with pytest.raises(InvalidParameterError, match="same texts"):
        mcnemar_exact("101", "10")
    with pytest.raises(InvalidParameterError, match="only 0 and 1"):
        hits_array("1x0")


def test_the_bounds_from_two_counts_are_the_least_and_largest_exact_test_over_every_pairing():
    """Every pair of hit vectors on 7 texts, grouped by the two counts: the bounds are exactly the
    least and the largest p-value of the exact test over the pairs of each group, and the verdict
    is an answer only where every pair of the group agrees on it."""
    import itertools

    texts = 7
    vectors = [hits_string(bits) for bits in itertools.product([False, True], repeat=texts)]
    found: dict[tuple[int, int], list[float]] = {}
    for first, second in itertools.product(vectors, repeat=2):
        found.setdefault((first.count("1"), second.count("1")), []).append(mcnemar_exact(first, second).p_value)
    assert len(found) == (texts + 1) ** 2
    for (named_first, named_second), p_values in found.items():
        bounds = mcnemar_bounds(named_first, named_second, texts)
        assert (bounds.p_low, bounds.p_high) == pytest.approx((min(p_values), max(p_values)), rel=1e-12)
        verdicts = {p < 0.05 for p in p_values}
        assert bounds.told_apart == (verdicts.pop() if len(verdicts) == 1 else None)
    # on 7 texts some groups are decided and some are not, so the check above has both kinds
    assert {mcnemar_bounds(7, 0, texts).told_apart, mcnemar_bounds(3, 3, texts).told_apart} == {True, False}
    with pytest.raises(InvalidParameterError, match="between 0 and the number of texts"):
        mcnemar_bounds(8, 0, texts)


def test_bounds_from_counts_can_leave_the_answer_to_the_pairing():
    # 12 against 4 of 150: at the least 8 texts named by the first only and none by the second
    # (p = 0.008, apart), at the most 12 and 4 (no text named by both: p = 0.077, not apart)
    bounds = mcnemar_bounds(12, 4, 150)
    assert bounds.told_apart is None
    assert bounds.p_low == pytest.approx(stats.binomtest(8, 8, 0.5).pvalue)
    assert bounds.p_high == pytest.approx(stats.binomtest(12, 16, 0.5).pvalue)


@pytest.mark.parametrize("rate, n", [(0.05, 150), (0.3, 150), (0.76, 150), (0.01, 150), (0.2, 25)])
def test_a_rates_interval_covers_the_true_rate_about_95_percent_of_the_time(rate, n):
    rng = np.random.default_rng(int(rate * 1000) + n)
    counts = rng.binomial(n, rate, size=4000)
    found = {int(k): rate_interval(int(k), n) for k in np.unique(counts)}
    covered = np.mean([found[int(k)].low <= rate <= found[int(k)].high for k in counts])
    # Wilson's coverage oscillates around 95% (93-97% at these n); the exact interval covers at least 95%
    assert 0.92 <= covered <= 0.995, covered


def test_small_counts_get_the_exact_clopper_pearson_interval():
    for successes in range(SMALL_COUNT):
        exact = rate_interval(successes, 150)
        assert exact.method == "exact"
        # Clopper-Pearson's upper bound at 0 of n solves (1 - p)^n = 0.025
        if successes == 0:
            assert exact.high == pytest.approx(1 - 0.025 ** (1 / 150))
    assert rate_interval(SMALL_COUNT, 150).method == "wilson"
    assert rate_interval(150 - SMALL_COUNT + 1, 150).method == "exact"  # few misses: exact too


def test_the_bootstrap_interval_covers_a_mean_about_95_percent_of_the_time():
    rng = np.random.default_rng(8)
    covered = []
    for _ in range(150):
        sample = rng.beta(2, 5, size=120)  # true mean 2/7
        found = bootstrap_interval(np.mean, sample, resamples=400)
        covered.append(found.low <= 2 / 7 <= found.high)
    assert 0.88 <= np.mean(covered) <= 0.99, np.mean(covered)


def test_a_ratio_of_sums_is_resampled_in_pairs():
    from textveil.evaluation.utility_tasks import ratio_of_sums

    words = np.array([10.0, 20.0, 30.0, 40.0, 50.0])
    inputs = words * 2  # every text half as long: every resample gives 0.5 exactly
    found = bootstrap_interval(ratio_of_sums, words, inputs)
    assert found is not None and found.low == pytest.approx(0.5) and found.high == pytest.approx(0.5)
    assert bootstrap_interval(np.mean, [0.3]) is None  # one text: no interval
    assert bootstrap_interval(np.mean, [0.3, 0.3, 0.3]) is None  # no spread to resample
