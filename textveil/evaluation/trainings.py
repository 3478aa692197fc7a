"""Attacks under several trainings, and how ``results.json`` holds them.

The attacker knows the mechanism (Kerckhoffs): mechanisms are public, so an attacker can run
one on texts of their own. Every attack is therefore measured twice at each grid point:

- ``"clean"``: fitted on the clean known texts (fitted once for the whole sweep);
- ``"release"``: fitted on the known texts released by the same mechanism and parameters,
  with a seed independent of the released unknown texts (paper 001's same-representation
  attacks are of this kind).

A release that encodes a corpus under one key (PIVOT) is measured a third way,
``"same-key"`` (:data:`SAME_KEY`): fitted on the known texts encoded together with the
unknown ones, as one corpus release, where code words agree across the two.

The risk at a point is the best top-1 over every attack and every training. A point of
``results.json`` holds each training's results under its own key (:data:`TRAINING_KEYS`:
``"attacks"`` for clean, as before this module, so older results read the same), each
result naming its ``"training"``, and ``"risk"``: the best of all, naming its attack and
training. Tables, figures and the risk all read the trainings through this module, so a
training held in a point is never left out of one of them.

>>> point = {"attacks": {"svm": {"top1": 0.5}, "knn": {"top1": 0.2}},
...          "attacks_release": {"svm": {"top1": 0.4}, "knn": {"top1": 0.6}}}
>>> [(attack, training) for attack, training, _ in attack_lines(point)]
[('svm', 'clean'), ('svm', 'release'), ('knn', 'clean'), ('knn', 'release')]
>>> best_attack(point)
{'attack': 'knn', 'training': 'release', 'top1': 0.6}
>>> line_label("knn", "release")
'knn (release-trained)'
>>> best_attack({"attacks": {"svm": {"top1": 0.2}}, "attacks_same_key": {"svm": {"top1": 0.9}}})
{'attack': 'svm', 'training': 'same-key', 'top1': 0.9}
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from textveil.errors import InvalidParameterError

TRAININGS = ("clean", "release")
"""The trainings a user chooses (``--trainings``)."""
SAME_KEY = "same-key"
"""The training of a keyed corpus release's attacks on known texts encoded under the release's own key."""
TRAINING_KEYS = {"clean": "attacks", "release": "attacks_release", SAME_KEY: "attacks_same_key"}
"""Where a point of ``results.json`` holds each training's results, in the order they are shown."""
SAME_KEY_RESULTS = TRAINING_KEYS[SAME_KEY]


def check_trainings(trainings: Sequence[str], option: str = "trainings") -> list[str]:
    """The trainings, checked: known names, at least one, none twice.

    >>> check_trainings(["release", "clean"])
    ['release', 'clean']
    >>> check_trainings(["dirty"])
    Traceback (most recent call last):
    ...
    textveil.errors.InvalidParameterError: unknown training 'dirty' in trainings; valid trainings: clean, release
    """
    if not trainings:
        raise InvalidParameterError(f"{option} is empty; give clean, release or both (clean,release)")
    for training in trainings:
        if training not in TRAININGS:
            raise InvalidParameterError(
                f"unknown training '{training}' in {option}; valid trainings: {', '.join(TRAININGS)}"
            )
    if len(set(trainings)) < len(trainings):
        raise InvalidParameterError(f"{option} names a training twice: {','.join(trainings)}")
    return list(trainings)


def parse_trainings(text: str, option: str = "--trainings") -> list[str]:
    """A comma-separated list of trainings, checked.

    >>> parse_trainings(" clean, release ")
    ['clean', 'release']
    """
    return check_trainings([item.strip() for item in text.split(",") if item.strip()], option)


def line_label(attack: str, training: str) -> str:
    """How tables and figures name one attack under one training."""
    return f"{attack} ({training}-trained)"


def attack_lines(point: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """``(attack, training, result)`` for every attack and training a point holds, each
    attack's trainings side by side (in :data:`TRAININGS` order)."""
    held = [(training, point[key]) for training, key in TRAINING_KEYS.items() if key in point]
    attacks = list(dict.fromkeys(name for _, results in held for name in results))
    return [(name, training, results[name]) for name in attacks for training, results in held if name in results]


def best_attack(point: dict[str, Any]) -> dict[str, Any]:
    """The strongest attack at a point over every training (an attacker uses whichever works
    best): its name, training and top-1. Ties go to the first in :func:`attack_lines` order."""
    lines = attack_lines(point)
    if not lines:
        raise InvalidParameterError(f"point {point.get('label', '?')} holds no attack results")
    attack, training, result = max(lines, key=lambda line: line[2]["top1"])
    return {"attack": attack, "training": training, "top1": float(result["top1"])}


def is_content_only(attack: str) -> bool:
    """Whether an attack reads content words only (``topic-svm`` and the other ``topic-*``
    attacks): what a text is about, not how it is written, so no release that keeps the meaning
    can take it away.

    >>> is_content_only("topic-svm"), is_content_only("char3-svm")
    (True, False)
    """
    return attack.split("-", 1)[0] == "topic"


def best_top1(point: dict[str, Any], keep: Callable[[str], bool] = lambda attack: True,
              trainings: Sequence[str] | None = None) -> float | None:
    """The best top-1 at a point over the attacks ``keep`` admits and the ``trainings`` given
    (default: every training it holds); None where none of them was measured.

    >>> point = {"attacks": {"topic-svm": {"top1": 0.3}, "char3-svm": {"top1": 0.5}},
    ...          "attacks_release": {"topic-svm": {"top1": 0.4}}}
    >>> best_top1(point), best_top1(point, is_content_only), best_top1(point, is_content_only, ["clean"])
    (0.5, 0.4, 0.3)
    >>> best_top1(point, lambda attack: attack == "length") is None
    True
    """
    scores = [float(result["top1"]) for attack, training, result in attack_lines(point)
              if keep(attack) and (trainings is None or training in trainings)]
    return max(scores) if scores else None


def risk_apart(point: dict[str, Any]) -> dict[str, float | None]:
    """The risk at a point taken apart: ``risk`` (the best top-1 over every attack and
    training), ``content`` (of the content-only attacks, :func:`is_content_only`), ``style``
    (of the others) and ``style_adds``: risk minus content only, what the writer's style adds to
    what the subject gives away (None where no content-only attack was measured).

    >>> risk_apart({"attacks": {"topic-svm": {"top1": 0.3}, "char3-svm": {"top1": 0.5}}})
    {'risk': 0.5, 'content': 0.3, 'style': 0.5, 'style_adds': 0.2}
    """
    risk = best_top1(point)
    content = best_top1(point, is_content_only)
    style = best_top1(point, lambda attack: not is_content_only(attack))
    adds = None if risk is None or content is None else round(risk - content, 12)
    return {"risk": risk, "content": content, "style": style, "style_adds": adds}


def trainings_in(results: dict[str, Any]) -> list[str]:
    """The trainings a sweep's results hold (results from before release training: clean).

    >>> trainings_in({"points": [{"attacks": {}}, {"attacks": {}, "attacks_same_key": {}}]})
    ['clean', 'same-key']
    """
    points = results.get("points") or []
    return [t for t, key in TRAINING_KEYS.items() if any(key in p for p in points)]


def result_of(point: dict[str, Any], attack: str, training: str) -> dict[str, Any] | None:
    """One attack's result under one training at a point, or None where it was not measured
    there (a report merged from pieces may measure some attacks at some points only).

    >>> result_of({"attacks": {"svm": {"top1": 0.5}}}, "svm", "clean"), result_of({}, "svm", "release")
    ({'top1': 0.5}, None)
    """
    return point.get(TRAINING_KEYS[training], {}).get(attack)


def lines_of(points: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    """``(attack, training)`` of every line measured at any of ``points``: attacks in first-seen
    order, each attack's trainings side by side (clean, release, same-key).

    >>> lines_of([{"attacks": {"svm": {}}}, {"attacks": {"svm": {}}, "attacks_same_key": {"svm": {}}}])
    [('svm', 'clean'), ('svm', 'same-key')]
    """
    seen = list(dict.fromkeys((attack, training) for point in points for attack, training, _ in attack_lines(point)))
    attacks = list(dict.fromkeys(attack for attack, _ in seen))
    order = list(TRAINING_KEYS)
    return sorted(seen, key=lambda line: (attacks.index(line[0]), order.index(line[1])))
