"""The risk-utility frontier of a comparison: which releases are worth considering at all, and
which is the most useful one under a given risk.

A comparison (``textveil compare``) releases one corpus with several mechanisms at several
settings and measures each release twice: its *risk* (the best top-1 identification accuracy
over every attack and training; lower is better) and its *utility* under each measure (higher
or lower is better, as the measure says). A release is worth considering when no other release
is at least as safe and at least as useful, and strictly better in one of the two: the
releases left are the Pareto set. Pure functions, no I/O; the report
(:mod:`textveil.evaluation.comparison_report`) and the figure
(:func:`textveil.evaluation.plots.frontier_maps`) read what :func:`frontiers` returns.

>>> points = [(0.10, 0.5), (0.20, 0.9), (0.30, 0.7), (0.05, 0.2)]
>>> pareto_set(points)
[3, 0, 1]
>>> most_useful_under(points, [0.01, 0.15, 1.0])
[None, 0, 1]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from textveil.evaluation.intervals import Interval
from textveil.evaluation.release_intervals import reads, utility_interval

Point = tuple[float | None, float | None]


def _usable(point: Point) -> bool:
    """Whether a point can be placed at all: a measure that does not apply to a release (None)
    or failed (NaN) says nothing about how it trades risk for utility."""
    return all(value is not None and not math.isnan(value) for value in point)


def _goodness(utility: float, higher_is_better: bool) -> float:
    """The utility turned so that larger is always better, so one comparison serves both kinds of measure."""
    return utility if higher_is_better else -utility


def dominates(a: Point, b: Point, higher_is_better: bool = True) -> bool:
    """Whether ``a`` is at least as safe and at least as useful as ``b``, and strictly better in one.

    >>> dominates((0.1, 0.8), (0.2, 0.8)), dominates((0.1, 0.8), (0.1, 0.8))
    (True, False)
    >>> dominates((0.1, 0.3), (0.1, 0.5), higher_is_better=False)
    True
    """
    risk_a, good_a = a[0], _goodness(a[1], higher_is_better)
    risk_b, good_b = b[0], _goodness(b[1], higher_is_better)
    return risk_a <= risk_b and good_a >= good_b and (risk_a < risk_b or good_a > good_b)


def pareto_set(points: Sequence[Point], higher_is_better: bool = True) -> list[int]:
    """Indices of the ``(risk, utility)`` points no other point dominates (see :func:`dominates`),
    in order of increasing risk (ties: better utility first, then index). Equal points do not
    dominate each other, so all of them are kept. Points whose risk or utility is None or NaN
    are ignored.

    >>> pareto_set([(0.2, 0.9), (0.1, 0.5), (0.2, 0.4), (0.1, 0.5), (0.3, None)])
    [1, 3, 0]
    >>> pareto_set([(0.2, 30.0), (0.1, 50.0), (0.3, 20.0)], higher_is_better=False)
    [1, 0, 2]
    >>> pareto_set([(0.1, float("nan"))])
    []
    """
    usable = [i for i, point in enumerate(points) if _usable(point)]
    # Quadratic, and clearer than a sweep: a comparison has tens of releases, not thousands.
    kept = [i for i in usable if not any(dominates(points[j], points[i], higher_is_better) for j in usable if j != i)]
    return sorted(kept, key=lambda i: (points[i][0], -_goodness(points[i][1], higher_is_better), i))


def most_useful_under(
    points: Sequence[Point], thresholds: Sequence[float], higher_is_better: bool = True
) -> list[int | None]:
    """For each threshold ``r``, the index of the most useful point with risk <= ``r`` (ties: lower
    risk, then lower index), or None when no point is that safe. Points whose risk or utility is
    None or NaN are ignored.

    >>> points = [(0.3, 0.9), (0.1, 0.6), (0.05, 0.6), (0.2, None)]
    >>> most_useful_under(points, [0.01, 0.05, 0.2, 0.5])
    [None, 2, 2, 0]
    >>> most_useful_under(points, [0.5], higher_is_better=False)
    [2]
    """
    usable = [i for i, point in enumerate(points) if _usable(point)]
    best: list[int | None] = []
    for threshold in thresholds:
        qualifying = [i for i in usable if points[i][0] <= threshold]
        best.append(min(qualifying, key=lambda i: (-_goodness(points[i][1], higher_is_better), points[i][0], i))
                    if qualifying else None)
    return best


def release_point(release: dict[str, Any], measure: str) -> tuple[float, float] | None:
    """A release's ``(risk, utility)`` under one utility measure, or None where it cannot be placed:
    the measure does not apply to it (the release says why in ``not_applicable``), or its risk or
    utility was not measured or is NaN.

    >>> release_point({"risk": {"top1": 0.1}, "utility": {"sim": {"value": 0.8}}}, "sim")
    (0.1, 0.8)
    >>> release_point({"risk": {"top1": 0.1}, "utility": {}, "not_applicable": {"sim": "corpus-level"}}, "sim")
    """
    if measure in (release.get("not_applicable") or {}):
        return None
    risk = (release.get("risk") or {}).get("top1")
    utility = ((release.get("utility") or {}).get(measure) or {}).get("value")
    point = (risk, utility)
    return (float(risk), float(utility)) if _usable(point) else None


def frontiers(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per utility measure of a comparison's results: its metric and direction, the Pareto
    releases (ids, in order of increasing risk) and, for each of the plan's risk thresholds,
    the most useful release at most that risky among those that read
    (:func:`~textveil.evaluation.release_intervals.reads`), with the id of a more useful one that
    does not read (``more_useful_unreadable``) and the releases whose utility cannot be told apart
    from it at 95% (``cannot_be_told_apart``: their intervals overlap). Releases the measure does not apply to are
    left out of that measure's frontier; the unmodified text is not a release and is left out
    of every one.

    >>> results = {
    ...     "plan": {"thresholds": [0.05, 0.2]},
    ...     "utility_measures": {"sim": {"metric": "cosine", "higher_is_better": True}},
    ...     "releases": [
    ...         {"id": "a", "risk": {"top1": 0.1}, "utility": {"sim": {"value": 0.8}}},
    ...         {"id": "b", "risk": {"top1": 0.3}, "utility": {"sim": {"value": 0.7}}},
    ...         {"id": "c", "risk": {"top1": 0.02}, "utility": {}, "not_applicable": {"sim": "corpus-level"}},
    ...     ]}
    >>> frontier = frontiers(results)["sim"]
    >>> frontier["pareto"]
    ['a']
    >>> frontier["best_under"]  # doctest: +NORMALIZE_WHITESPACE
    [{'max_risk': 0.05, 'release': None, 'utility': None, 'risk': None},
     {'max_risk': 0.2, 'release': 'a', 'utility': 0.8, 'risk': 0.1, 'cannot_be_told_apart': []}]
    """
    thresholds = [float(r) for r in results["plan"].get("thresholds") or []]
    found: dict[str, dict[str, Any]] = {}
    for measure, info in results["utility_measures"].items():
        higher = bool(info["higher_is_better"])
        measured = [(release, point) for release in results["releases"]
                    if (point := release_point(release, measure)) is not None]
        points = [point for _, point in measured]
        # the most useful release is chosen among those that read; one that does not is only named as such
        readable = [(release, point) for release, point in measured if reads(release) is not False]
        best_under = []
        for threshold, index, anyway in zip(thresholds,
                                            most_useful_under([p for _, p in readable], thresholds, higher),
                                            most_useful_under(points, thresholds, higher)):
            release, (risk, utility) = readable[index] if index is not None else (None, (None, None))
            best: dict[str, Any] = {"max_risk": threshold, "release": None if release is None else release["id"],
                                    "utility": utility, "risk": risk}
            if anyway is not None and measured[anyway][0] is not release:
                best["more_useful_unreadable"] = measured[anyway][0]["id"]
            if release is not None:
                best["cannot_be_told_apart"] = [
                    other["id"] for other, (other_risk, _) in readable
                    if other is not release and other_risk <= threshold
                    and overlapping(utility_interval(release["utility"][measure]),
                                    utility_interval(other["utility"][measure]))]
            best_under.append(best)
        found[measure] = {
            "higher_is_better": higher,
            "metric": info.get("metric") or measure,
            "pareto": [measured[i][0]["id"] for i in pareto_set(points, higher)],
            "best_under": best_under,
        }
    return found


def overlapping(first: Interval | None, second: Interval | None) -> bool:
    """Whether two utilities' 95% intervals overlap (the two cannot be told apart on it); False
    where either was not kept.

    >>> overlapping(Interval(0.2, 0.3, "bootstrap"), Interval(0.25, 0.4, "bootstrap"))
    True
    """
    return first is not None and second is not None and first.low <= second.high and second.low <= first.high


def with_off_axis(frontier: dict[str, dict[str, Any]], releases: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The frontier with, per utility measure, the releases it does not apply to (``off_axis``: each
    one's id, guarantee, risk and the reason): they have no place on that axis, and no number is
    made up for them, but a reader weighing risks still sees them.

    >>> frontier = {"sim": {"pareto": ["a"], "best_under": []}}
    >>> releases = [{"id": "a", "guarantee": "dp", "risk": {"top1": 0.3}, "not_applicable": {}},
    ...             {"id": "p", "guarantee": "l-privacy", "risk": {"top1": 0.2}, "not_applicable": {"sim": "code words"}}]
    >>> with_off_axis(frontier, releases)["sim"]["off_axis"]
    [{'release': 'p', 'guarantee': 'l-privacy', 'risk': 0.2, 'reason': 'code words'}]
    """
    return {measure: {**found, "off_axis": [
        {"release": r["id"], "guarantee": r.get("guarantee"), "risk": float(r["risk"]["top1"]),
         "reason": r["not_applicable"][measure]}
        for r in releases if measure in (r.get("not_applicable") or {})]} for measure, found in frontier.items()}


def frontier_of(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The frontier of a comparison's results, with each measure's off-axis releases: computed
    afresh, not read from the results (one written by an older version chose differently)."""
    return with_off_axis(frontiers(results), results["releases"])
