"""Read a sweep as a trade-off: at which parameter value has author identification halved, and
how much utility is left there?

Paper 001's claim is a shape: as epsilon falls, identification falls while topic accuracy
holds. :func:`halving_points` turns a sweep's results into that statement, per attack and per
utility task, and for the strongest attack at each point over both trainings (an attacker
uses whichever works best, trained on clean or on released text; see
:mod:`textveil.evaluation.trainings`). Two readings are given, because a grid is coarse:

- *measured*: the largest grid value at which identification is at most half its clean level,
  with the utility measured there;
- *interpolated*: the value where the straight line between the two grid points around the
  crossing meets half the clean level, with the utility interpolated the same way. It is an
  estimate; add grid points near it to measure it.

>>> points = [
...     {"label": "none", "parameter": None, "attacks": {"svm": {"top1": 0.8}}, "utility": {"topic": {"value": 0.9}}},
...     {"label": "20", "parameter": 20.0, "attacks": {"svm": {"top1": 0.6}}, "utility": {"topic": {"value": 0.9}}},
...     {"label": "10", "parameter": 10.0, "attacks": {"svm": {"top1": 0.2}}, "utility": {"topic": {"value": 0.7}}},
... ]
>>> point = halving_point(points, "svm", "topic")
>>> point["measured_parameter"], point["measured_utility"], point["interpolated_parameter"]
(10.0, 0.7, 15.0)
>>> round(point["interpolated_utility"], 3), round(point["interpolated_utility_change"], 3)
(0.8, -0.1)
"""

from __future__ import annotations

from typing import Any

from textveil.evaluation.trainings import TRAINING_KEYS, attack_lines, best_attack, result_of

BEST_ATTACK = "best attack"


def _risk(point: dict[str, Any], attack: str, training: str) -> float:
    if attack == BEST_ATTACK:
        return best_attack(point)["top1"]
    return float(point[TRAINING_KEYS[training]][attack]["top1"])


def halving_point(
    points: list[dict[str, Any]], attack: str, task: str, training: str = "clean"
) -> dict[str, Any] | None:
    """Where top-1 identification by ``attack`` trained as ``training`` (or by
    :data:`BEST_ATTACK`, the strongest over every attack and training at each point) falls to
    half its level on the unmodified text, and the value of utility ``task`` there.

    ``None`` when the sweep has no unmodified point or the attack never halves on the grid
    (then ``halves`` is False in the dict returned instead, to say so in a report). For the
    best attack, ``clean_best`` and ``measured_best`` name the attack and training that won
    on the unmodified text and where identification has halved.
    """
    if attack != BEST_ATTACK:  # a merged report may measure an attack at some points only
        points = [p for p in points if result_of(p, attack, training) is not None]
    clean = next((p for p in points if p.get("parameter") is None), None)
    graded = sorted((p for p in points if p.get("parameter") is not None), key=lambda p: -p["parameter"])
    if clean is None or not graded or task not in clean["utility"]:
        return None
    clean_risk, clean_utility = _risk(clean, attack, training), float(clean["utility"][task]["value"])
    half = clean_risk / 2
    result: dict[str, Any] = {
        "attack": attack, "training": None if attack == BEST_ATTACK else training, "task": task,
        "clean_top1": clean_risk, "half_top1": half, "clean_utility": clean_utility,
        "higher_is_better": clean["utility"][task].get("higher_is_better", True), "halves": False,
    }
    if attack == BEST_ATTACK:
        result["clean_best"] = best_attack(clean)
    # Walk from the mildest setting (largest epsilon) towards the strongest.
    previous_parameter, previous_risk, previous_utility = None, clean_risk, clean_utility
    for point in graded:
        risk, utility = _risk(point, attack, training), float(point["utility"][task]["value"])
        if risk <= half:
            result.update(halves=True, measured_parameter=float(point["parameter"]), measured_top1=risk,
                          measured_utility=utility, measured_utility_change=utility - clean_utility)
            if attack == BEST_ATTACK:
                result["measured_best"] = best_attack(point)
            if previous_parameter is not None and previous_risk > risk:
                share = (previous_risk - half) / (previous_risk - risk)
                parameter = previous_parameter + share * (point["parameter"] - previous_parameter)
                interpolated = previous_utility + share * (utility - previous_utility)
                result.update(interpolated_parameter=float(parameter), interpolated_utility=interpolated,
                              interpolated_utility_change=interpolated - clean_utility,
                              bracket=[float(point["parameter"]), float(previous_parameter)])
            return result
        previous_parameter, previous_risk, previous_utility = point["parameter"], risk, utility
    return result


def halving_points(results: dict[str, Any], tasks: list[str] | None = None) -> list[dict[str, Any]]:
    """:func:`halving_point` for the strongest attack (over both trainings) and every attack
    under every training, against each utility task (by default the topic tasks, paper 001's
    utility)."""
    points = results["points"]
    if not points:
        return []
    lines = [(BEST_ATTACK, "clean")] + [(attack, training) for attack, training, _ in attack_lines(points[0])]
    tasks = tasks or [t for t in points[0]["utility"] if t.startswith("topic")]
    found = [halving_point(points, attack, task, training) for attack, training in lines for task in tasks]
    return [f for f in found if f is not None]
