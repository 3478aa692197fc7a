"""A comparison's figures with their 95% intervals, and its releases tested in pairs: what a
report, the service page, the plot and the docs read beside each point figure.

Everything here is computed from a results.json (:func:`with_intervals`), so a comparison written
before intervals were kept is re-rendered with them: a risk's interval needs only its count of
texts named (top-1 of n); a utility's interval is the bootstrap over texts stored when it was
measured (absent on older results: the cell then shows the figure alone); a paired test needs each
text's outcome (``hits``, kept since this version). Where an older result kept only the counts, the
test is bounded over every pairing of them (:func:`~textveil.evaluation.intervals.mcnemar_bounds`):
"lower at 95% whatever the pairing", "cannot be told apart whatever the pairing", or "not recorded"
with the range of its p-value where the pairing would decide.

The reference a paired test compares each release with is the plan's ``reference`` (``compare
--reference emp:10``), else ``emp`` at 10 when the comparison holds it (textveil's long-standing
default, the bar the other releases are judged against), else none.

A release "reads" when its fluency ratio is at most :data:`READABLE_FLUENCY`: the "at a risk of at
most r" table names a release that does not read only as such, never as the most useful.
"""

from __future__ import annotations

from typing import Any

from textveil.evaluation.intervals import (Interval, PairedBounds, PairedTest, mcnemar_bounds, mcnemar_exact,
                                           named_count, rate_interval_of)
from textveil.evaluation.trainings import TRAINING_KEYS, attack_lines, is_content_only, result_of

READABLE_FLUENCY = 2.0
"""The largest fluency ratio (release perplexity over the originals') of a release that reads as
text; above it a release is word salad or close to it (paraphrase at 25 per token: 14.4)."""
DEFAULT_REFERENCE = ("emp", "10")


def risk_result(point: dict[str, Any], risk: dict[str, Any]) -> dict[str, Any] | None:
    """The attack result a release's risk names (its attack under its training)."""
    return result_of(point, risk["attack"], risk["training"]) if point and risk else None


def risk_interval(point: dict[str, Any], risk: dict[str, Any]) -> Interval | None:
    """The 95% interval of a release's risk (its named attack's top-1 of its unknown texts).

    >>> point = {"attacks": {"char3-svm": {"top1": 10 / 150, "n_unknown": 150}}}
    >>> risk_interval(point, {"attack": "char3-svm", "training": "clean", "top1": 10 / 150}).rounded(3)
    (0.037, 0.118, 'wilson')
    """
    result = risk_result(point, risk)
    return rate_interval_of(result) if result is not None else None


def content_interval(point: dict[str, Any]) -> Interval | None:
    """The 95% interval of a point's content-only risk (its best content-only line)."""
    lines = [result for attack, _, result in attack_lines(point) if is_content_only(attack)]
    return rate_interval_of(max(lines, key=lambda result: result["top1"])) if lines else None


def utility_interval(result: dict[str, Any] | None) -> Interval | None:
    """A utility's 95% interval as it was measured (bootstrap over texts), None where not kept."""
    found = (result or {}).get("interval")
    return Interval.from_dict(found) if found else None


def reads(release: dict[str, Any]) -> bool | None:
    """Whether a release reads as text (fluency ratio at most :data:`READABLE_FLUENCY`); None
    where its fluency was not measured.

    >>> reads({"utility": {"fluency": {"value": 14.4}}}), reads({"utility": {}})
    (False, None)
    """
    fluency = ((release.get("utility") or {}).get("fluency") or {}).get("value")
    return None if fluency is None else float(fluency) <= READABLE_FLUENCY


def reference_release(results: dict[str, Any]) -> dict[str, Any] | None:
    """The release every other is tested against: the plan's ``reference`` (``"NAME:SETTING"``,
    the name as the report labels the mechanism), else emp at 10 when present, else None."""
    wanted = (results.get("plan") or {}).get("reference")
    name, setting = wanted.rsplit(":", 1) if wanted else DEFAULT_REFERENCE
    for release in results.get("releases") or []:
        if release["mechanism"] == name and _same_setting(release, setting):
            return release
    return None


def _same_setting(release: dict[str, Any], setting: str) -> bool:
    parameter = release.get("parameter")
    try:
        return parameter is not None and float(parameter) == float(setting)
    except ValueError:
        return str(release.get("setting")) == setting


def paired_test(first: dict[str, Any], second: dict[str, Any]) -> PairedTest | None:
    """McNemar's exact test between two releases' risks, on which texts each one's risk line (its
    named attack and training) names: None where either lacks the per-text outcomes."""
    ours = risk_result(first.get("point") or {}, first.get("risk") or {})
    theirs = risk_result(second.get("point") or {}, second.get("risk") or {})
    if not ours or not theirs or not ours.get("hits") or not theirs.get("hits"):
        return None
    if len(ours["hits"]) != len(theirs["hits"]):
        return None
    return mcnemar_exact(ours["hits"], theirs["hits"])


def paired_bounds(first: dict[str, Any], second: dict[str, Any]) -> PairedBounds | None:
    """The paired test bounded from the two releases' counts alone (their risk lines' top-1 of the
    same number of texts), for releases whose per-text outcomes were not kept; None where either
    lacks its count or the two were judged on different numbers of texts.

    >>> line = lambda top1: {"point": {"attacks": {"svm": {"top1": top1, "n_unknown": 250}}},
    ...                      "risk": {"attack": "svm", "training": "clean", "top1": top1}}
    >>> paired_bounds(line(0.52), line(0.312)).told_apart
    True
    """
    ours = risk_result(first.get("point") or {}, first.get("risk") or {})
    theirs = risk_result(second.get("point") or {}, second.get("risk") or {})
    ours_counted, theirs_counted = (named_count(found) if found else None for found in (ours, theirs))
    if ours_counted is None or theirs_counted is None or ours_counted[1] != theirs_counted[1]:
        return None
    return mcnemar_bounds(ours_counted[0], theirs_counted[0], ours_counted[1])


def paired_entry(release: dict[str, Any], reference: dict[str, Any]) -> dict[str, Any]:
    """A release's ``paired`` record against ``reference``: the exact test, else its bounds (the
    ``paired`` of results.json, and what a quoted ``paired=SETTING`` renders)."""
    test = paired_test(release, reference)
    if test is not None:
        return {"reference": reference["id"], **test.to_dict()}
    entry: dict[str, Any] = {"reference": reference["id"], "not_recorded": "the per-text outcomes were not kept"}
    bounds = paired_bounds(release, reference)
    if bounds is not None:
        entry["bounds"] = bounds.to_dict()
    return entry


def with_intervals(results: dict[str, Any]) -> dict[str, Any]:
    """``results`` with every release's (and the unmodified text's) risk interval, content-only
    interval and paired test against the reference added (``risk["interval"]``,
    ``risk_content_interval``, ``paired``); nothing else changes. Idempotent."""
    reference = reference_release(results)

    def entry(release: dict[str, Any], is_release: bool) -> dict[str, Any]:
        point = release.get("point") or release
        risk = dict(release.get("risk") or {})
        found = risk_interval(point, risk)
        if found is not None:
            risk["interval"] = found.to_dict()
        content = content_interval(point)
        added: dict[str, Any] = {"risk": risk}
        if content is not None:
            added["risk_content_interval"] = content.to_dict()
        if is_release and reference is not None and release is not reference:
            added["paired"] = paired_entry(release, reference)
        return {**release, **added}

    return {**results, "unmodified": entry(results["unmodified"], False),
            "releases": [entry(release, True) for release in results["releases"]],
            "reference": reference["id"] if reference is not None else None}


def with_attack_intervals(point: dict[str, Any]) -> dict[str, Any]:
    """A sweep's point (``textveil evaluate``) with each attack result's top-1 interval added
    (``top1_interval``), for its report and the service's results page.

    >>> found = with_attack_intervals({"attacks": {"svm": {"top1": 0.1, "n_unknown": 150}}})
    >>> Interval.from_dict(found["attacks"]["svm"]["top1_interval"]).rounded(3)
    (0.062, 0.158, 'wilson')
    """
    added = dict(point)
    for key in TRAINING_KEYS.values():
        if isinstance(point.get(key), dict):
            added[key] = {name: _with_interval(result) for name, result in point[key].items()}
    return added


def _with_interval(result: dict[str, Any]) -> dict[str, Any]:
    found = rate_interval_of(result) if isinstance(result, dict) else None
    return {**result, "top1_interval": found.to_dict()} if found is not None else result


def paired_verdict(release: dict[str, Any]) -> str:
    """A release's paired test against the reference in words: lower, higher, or cannot be told
    apart (the reports' column and "Which mechanism?"'s).

    >>> paired_verdict({"paired": {"only_first": 2, "only_second": 9, "p_value": 0.065, "told_apart": False}})
    'cannot be told apart (p = 0.065; 2 named only here, 9 only there)'
    >>> paired_verdict({"paired": {"bounds": {"named_first": 130, "named_second": 78, "texts": 250,
    ...                                       "p_low": 1e-15, "p_high": 4e-4, "told_apart": True}}})
    'higher at 95% whatever the pairing (p at most 0.0004; 130 named here, 78 there, of 250; per-text outcomes not kept)'
    """
    paired = release.get("paired")
    if not paired:
        return "the reference" if release.get("is_reference") else "–"
    if "p_value" not in paired:
        return _bounded_verdict(paired.get("bounds"))
    verdict = ("cannot be told apart" if not paired["told_apart"]
               else "lower at 95%" if paired["only_first"] < paired["only_second"] else "higher at 95%")
    return (f"{verdict} (p = {paired['p_value']:.3g}; {paired['only_first']} named only here, "
            f"{paired['only_second']} only there)")


def _bounded_verdict(bounds: dict[str, Any] | None) -> str:
    """The paired verdict of a release whose per-text outcomes were not kept, from its bounds."""
    if not bounds:
        return "not recorded (per-text outcomes not kept)"
    counts = f"{bounds['named_first']} named here, {bounds['named_second']} there, of {bounds['texts']}"
    if bounds["told_apart"] is True:
        direction = "lower" if bounds["named_first"] < bounds["named_second"] else "higher"
        return (f"{direction} at 95% whatever the pairing (p at most {bounds['p_high']:.3g}; {counts}; "
                "per-text outcomes not kept)")
    if bounds["told_apart"] is False:
        return (f"cannot be told apart whatever the pairing (p at least {bounds['p_low']:.3g}; {counts}; "
                "per-text outcomes not kept)")
    return (f"not recorded: the pairing would decide (p between {bounds['p_low']:.3g} and "
            f"{bounds['p_high']:.3g}; {counts}; per-text outcomes not kept)")
