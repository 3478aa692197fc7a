"""How far a measured figure can move on the next draw: 95% intervals of rates and of utility
means, and the exact paired test between two releases judged on the same texts. One place, used by
``compare``, ``evaluate``, ``attack``, the reports, the service page and the docs.

- A rate (an attack's top-1 accuracy: k of n unknown texts or authors named) gets Wilson's score
  interval; where fewer than :data:`SMALL_COUNT` were named or missed, where Wilson's normal
  approximation is poor, the exact Clopper-Pearson interval. The method used is stated with it.
- A utility (a mean over texts, or a ratio of sums) gets a percentile bootstrap over texts:
  :data:`RESAMPLES` resamples of the texts, the statistic recomputed on each, with a fixed seed so
  that one results.json always renders the same interval.
- Two releases of the same texts are compared by McNemar's exact test on which texts each lets the
  attack name: under "no difference", the texts named by one release only are split half and
  half, so the p-value is the two-sided binomial test of one count against the discordant total.
  Where only each release's count of texts named was kept (an older results.json), the test is
  bounded instead: every pairing of the two counts on the same texts is possible, so the p-value
  lies between its least and its largest over them (:func:`mcnemar_bounds`); when both sides of
  95% agree, that is the answer whatever the pairing was.

>>> rate_interval(10, 150).rounded(3)
(0.037, 0.118, 'wilson')
>>> rate_interval(1, 150).method
'exact'
>>> test = mcnemar_exact("1100000000", "0000000001")
>>> test.only_first, test.only_second, round(test.p_value, 3)
(2, 1, 1.0)
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from textveil.errors import InvalidParameterError

LEVEL = 0.95
# Below this many successes (or failures), Wilson's interval leans on a normal approximation that
# is poor; the exact interval is used instead (conservative: it covers at least the level).
SMALL_COUNT = 5
RESAMPLES = 2000
BOOTSTRAP_SEED = 20251
# McNemar's p-value at or above which two releases "cannot be told apart at 95%"
SIGNIFICANCE = 1.0 - LEVEL


@dataclass(frozen=True)
class Interval:
    """A 95% interval and how it was computed (``wilson``, ``exact`` or ``bootstrap``)."""

    low: float
    high: float
    method: str

    def rounded(self, digits: int) -> tuple[float, float, str]:
        return round(self.low, digits), round(self.high, digits), self.method

    def to_dict(self) -> dict[str, Any]:
        return {"low": float(self.low), "high": float(self.high), "method": self.method, "level": LEVEL}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Interval:
        return cls(float(data["low"]), float(data["high"]), str(data["method"]))


def rate_interval(successes: int, n: int, level: float = LEVEL) -> Interval:
    """The interval of a rate of ``successes`` in ``n``: Wilson's, or exact at small counts.

    >>> rate_interval(0, 20).rounded(3)
    (0.0, 0.168, 'exact')
    >>> rate_interval(5, 0)
    Traceback (most recent call last):
    ...
    textveil.errors.InvalidParameterError: a rate needs at least one trial, got 0
    """
    if n < 1:
        raise InvalidParameterError(f"a rate needs at least one trial, got {n}")
    if not 0 <= successes <= n:
        raise InvalidParameterError(f"successes must lie in [0, {n}], got {successes}")
    method = "exact" if min(successes, n - successes) < SMALL_COUNT else "wilson"
    found = stats.binomtest(int(successes), int(n)).proportion_ci(confidence_level=level, method=method)
    return Interval(float(found.low), float(found.high), method)


def named_count(result: dict[str, Any]) -> tuple[int, int] | None:
    """How many unknown texts an attack result's first guess named, and of how many (``top1`` of
    ``n_unknown``); None for a result averaged over repeated releases or one without counts.

    >>> named_count({"top1": 10 / 150, "n_unknown": 150}), named_count({"top1": 0.1})
    ((10, 150), None)
    """
    n = result.get("n_unknown")
    if not n or "top1_values" in result or result.get("top1") is None:
        return None
    return int(round(float(result["top1"]) * int(n))), int(n)


def rate_interval_of(result: dict[str, Any]) -> Interval | None:
    """The interval of an attack result's top-1 accuracy (:func:`named_count`); None for a
    result averaged over repeated releases (its spread is stated instead) or one without counts.

    >>> rate_interval_of({"top1": 10 / 150, "n_unknown": 150}).rounded(3)
    (0.037, 0.118, 'wilson')
    """
    counted = named_count(result)
    return rate_interval(*counted) if counted is not None else None


def bootstrap_interval(statistic: Callable[..., float], *samples: Sequence[float], level: float = LEVEL,
                       resamples: int = RESAMPLES) -> Interval | None:
    """The percentile bootstrap interval of ``statistic(*samples)`` over texts: the samples are
    per-text values resampled together (paired: a ratio of sums keeps each text's two parts). None
    with fewer than two texts or where every resample gives the same value.

    >>> texts = [0.1, 0.4, 0.3, 0.5, 0.2, 0.35, 0.25, 0.45]
    >>> found = bootstrap_interval(np.mean, texts)
    >>> found.method, found.low < float(np.mean(texts)) < found.high
    ('bootstrap', True)
    """
    arrays = [np.asarray(sample, dtype=float) for sample in samples]
    if not arrays or len(arrays[0]) < 2 or any(len(a) != len(arrays[0]) for a in arrays):
        return None
    if all(np.all(a == a[0]) for a in arrays):
        return None

    with warnings.catch_warnings():
        # a resample without any word or paragraph has no ratio (NaN): scipy warns, and a NaN bound
        # is answered below by no interval
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        found = stats.bootstrap(tuple(arrays), statistic, paired=True, vectorized=False, n_resamples=resamples,
                                confidence_level=level, method="percentile",
                                rng=np.random.default_rng(BOOTSTRAP_SEED))
    low, high = float(found.confidence_interval.low), float(found.confidence_interval.high)
    if not (np.isfinite(low) and np.isfinite(high)):
        return None
    return Interval(low, high, "bootstrap")


@dataclass(frozen=True)
class PairedTest:
    """McNemar's exact test of two releases on the same texts: how many texts the attack named in
    the first release only, in the second only, and the two-sided p-value."""

    only_first: int
    only_second: int
    p_value: float

    @property
    def told_apart(self) -> bool:
        """Whether the two rates differ at 95%."""
        return self.p_value < SIGNIFICANCE

    def to_dict(self) -> dict[str, Any]:
        return {"only_first": self.only_first, "only_second": self.only_second, "p_value": float(self.p_value),
                "told_apart": self.told_apart, "test": "McNemar exact (two-sided binomial on the discordant texts)"}


def mcnemar_exact(first: str | Sequence[bool], second: str | Sequence[bool]) -> PairedTest:
    """McNemar's exact test on two aligned hit vectors (``"0110..."`` or booleans, one per text).

    >>> mcnemar_exact("111111111100", "000000000011").p_value < 0.05
    True
    >>> mcnemar_exact("10", "1")
    Traceback (most recent call last):
    ...
    textveil.errors.InvalidParameterError: paired test: the two releases were judged on 2 and 1 texts; a paired test needs the same texts
    """
    a, b = hits_array(first), hits_array(second)
    if len(a) != len(b):
        raise InvalidParameterError(f"paired test: the two releases were judged on {len(a)} and {len(b)} texts; "
                                    "a paired test needs the same texts")
    only_first, only_second = int(np.sum(a & ~b)), int(np.sum(~a & b))
    discordant = only_first + only_second
    p_value = 1.0 if discordant == 0 else float(stats.binomtest(only_first, discordant, 0.5).pvalue)
    return PairedTest(only_first, only_second, p_value)


@dataclass(frozen=True)
class PairedBounds:
    """What McNemar's exact test can say of two releases judged on the same ``texts`` when only how
    many each named was kept: the least and the largest p-value over every way the two counts
    could fall on the texts (:func:`mcnemar_bounds`)."""

    named_first: int
    named_second: int
    texts: int
    p_low: float
    p_high: float

    @property
    def told_apart(self) -> bool | None:
        """True where every pairing tells the two apart at 95%, False where none does, None where
        it depends on the pairing (the per-text outcomes would decide)."""
        if self.p_high < SIGNIFICANCE:
            return True
        if self.p_low >= SIGNIFICANCE:
            return False
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"named_first": self.named_first, "named_second": self.named_second, "texts": self.texts,
                "p_low": float(self.p_low), "p_high": float(self.p_high), "told_apart": self.told_apart,
                "test": "McNemar exact, bounded over every pairing of the counts (per-text outcomes not kept)"}


def mcnemar_bounds(named_first: int, named_second: int, texts: int) -> PairedBounds:
    """McNemar's exact test bounded from two counts alone: the first release let the attack name
    ``named_first`` of ``texts``, the second ``named_second`` of the same texts. The texts named by
    the first only (b) and by the second only (c) are unknown, but b - c is the difference of the
    counts and each is bounded by them (b at most the first's count and the second's misses), so
    the p-value is taken at every pairing possible.

    >>> found = mcnemar_bounds(130, 78, 250)  # 52% against 31%: apart whatever the pairing
    >>> found.told_apart, found.p_high < 0.05
    (True, True)
    >>> mcnemar_bounds(9, 7, 150).told_apart  # 6.0% against 4.7%: apart under no pairing
    False
    >>> mcnemar_bounds(12, 4, 150).told_apart is None  # the pairing decides
    True
    """
    if not 0 <= named_first <= texts or not 0 <= named_second <= texts:
        raise InvalidParameterError(f"paired bounds: {named_first} and {named_second} named of {texts} texts; "
                                    "each count is between 0 and the number of texts")
    difference = named_first - named_second
    # b: texts the first names and the second misses (at most the first's count and the second's
    # misses); c = b - difference, the reverse, is then within its own bounds too
    lowest = max(0, difference)
    highest = min(named_first, texts - named_second)
    p_values = [1.0 if 2 * b == difference else float(stats.binomtest(b, 2 * b - difference, 0.5).pvalue)
                for b in range(lowest, highest + 1)]
    return PairedBounds(named_first, named_second, texts, min(p_values), max(p_values))


def hits_array(hits: str | Sequence[bool]) -> np.ndarray:
    """A hit vector as booleans, from its stored string (``"0110"``) or a sequence."""
    if isinstance(hits, str):
        if set(hits) - {"0", "1"}:
            raise InvalidParameterError("a hit vector holds only 0 and 1")
        return np.frombuffer(hits.encode("ascii"), dtype=np.uint8) == ord("1")
    return np.asarray(hits, dtype=bool)


def hits_string(hits: Sequence[bool] | np.ndarray) -> str:
    """A hit vector as results.json keeps it: one character per text, ``1`` where it was named.

    >>> hits_string([True, False, True])
    '101'
    """
    return "".join("1" if hit else "0" for hit in hits)
