"""The statistics of a black-box privacy audit: a lower bound on the privacy
loss of a mechanism from counts of one output event over many releases of two neighbouring
inputs, in the manner of DP-Sniper and StatDP.

For an event E, a mechanism that is epsilon-DP (or epsilon * d metric-private) between inputs x
and x' has Pr[M(x) in E] <= e^epsilon Pr[M(x') in E]. Count how often E happened in n releases of
each input; Clopper-Pearson gives a lower bound on the first probability and an upper bound on
the second, each at confidence 1 - alpha/2, so that both hold together at 1 - alpha (Bonferroni);
their log ratio is then a lower bound on the loss that holds with that confidence. A claim below
the bound is refuted. The event must be chosen on releases other than the counted ones (the
choice is then independent of the counts), which the experiment that calls this arranges.

The power of an audit (:func:`detectable_epsilon`) is the smallest loss it would have shown
above a claim, with the trials it ran, had the event been as likely as it was.

Pure arithmetic: scipy only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from textveil.errors import InvalidParameterError


def _check(successes: int, trials: int, confidence: float) -> None:
    if trials < 1 or not 0 <= successes <= trials:
        raise InvalidParameterError(f"counts must satisfy 0 <= successes <= trials and trials >= 1, got "
                                    f"{successes} of {trials}")
    if not 0 < confidence < 1:
        raise InvalidParameterError(f"confidence must lie strictly between 0 and 1, got {confidence}")


def clopper_pearson(successes: int, trials: int, confidence: float) -> tuple[float, float]:
    """The exact two-sided Clopper-Pearson interval for a binomial probability.

    >>> low, high = clopper_pearson(0, 10, 0.95)
    >>> low, round(high, 4)
    (0.0, 0.3085)
    """
    from scipy.stats import beta

    _check(successes, trials, confidence)
    alpha = 1 - confidence
    low = 0.0 if successes == 0 else float(beta.ppf(alpha / 2, successes, trials - successes + 1))
    high = 1.0 if successes == trials else float(beta.ppf(1 - alpha / 2, successes + 1, trials - successes))
    return low, high


def one_sided_bounds(successes: int, trials: int, confidence: float) -> tuple[float, float]:
    """(lower, upper) one-sided Clopper-Pearson bounds, each holding with ``confidence``.

    >>> low, high = one_sided_bounds(50, 100, 0.95)
    >>> round(low, 3), round(high, 3)
    (0.414, 0.586)
    """
    return clopper_pearson(successes, trials, 2 * confidence - 1)


@dataclass(frozen=True)
class LossBound:
    """What an event's counts prove about the privacy loss between two inputs."""

    epsilon: float
    """The loss proven: with probability at least ``confidence`` the true loss is at least this."""
    confidence: float
    event_first: int
    event_second: int
    trials: int


def loss_lower_bound(event_first: int, event_second: int, trials: int, confidence: float = 0.99) -> LossBound:
    """A lower bound on the privacy loss from the counts of one event in ``trials`` releases of
    each of two inputs (the larger ratio of the two directions; 0 when nothing is proven).

    The two directions are two tests: each gets half of 1 - confidence, and each test's two
    one-sided bounds half of that again, so the bound holds with ``confidence`` overall.

    >>> round(loss_lower_bound(900, 100, 1000).epsilon, 2)
    1.91
    >>> loss_lower_bound(500, 500, 1000).epsilon
    0.0
    """
    _check(event_first, trials, confidence)
    _check(event_second, trials, confidence)
    each = 1 - (1 - confidence) / 4  # two directions x two one-sided bounds
    best = 0.0
    for high_count, low_count in ((event_first, event_second), (event_second, event_first)):
        low = one_sided_bounds(high_count, trials, each)[0]
        high = one_sided_bounds(low_count, trials, each)[1]
        if low > 0 and high > 0:
            best = max(best, math.log(low / high))
    return LossBound(best, confidence, event_first, event_second, trials)


def detectable_epsilon(probability: float, trials: int, confidence: float = 0.99, above: float = 0.0) -> float:
    """The power of an audit: the smallest true loss epsilon whose expected counts (an event of
    ``probability`` under the first input and ``probability * e^-epsilon`` under the second)
    would give a lower bound above ``above`` (a claim) with these ``trials``; ``inf`` when no
    loss would, because the event is too rare for the trials to bound its ratio past the claim.

    >>> detectable_epsilon(0.5, 1000) < detectable_epsilon(0.5, 100)
    True
    >>> detectable_epsilon(0.5, 1000, above=50.0)
    inf
    """
    if not 0 < probability <= 1:
        raise InvalidParameterError(f"the event's probability must lie in (0, 1], got {probability}")
    first = max(1, round(probability * trials))
    if loss_lower_bound(first, 0, trials, confidence).epsilon <= above:
        return math.inf  # even an event that never happens under the second input proves no more
    low, high = above, above + 1.0
    while loss_lower_bound(first, round(probability * math.exp(-high) * trials), trials, confidence).epsilon <= above:
        low, high = high, high * 2
    for _ in range(50):  # bisection on epsilon: the bound grows with it
        middle = (low + high) / 2
        second = round(probability * math.exp(-middle) * trials)
        if loss_lower_bound(first, second, trials, confidence).epsilon > above:
            high = middle
        else:
            low = middle
    return high
