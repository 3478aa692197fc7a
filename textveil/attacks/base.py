"""The one face of every attack: fit on known texts with their authors, then rank candidates.

An attack turns unknown texts into a score per candidate label (higher = more likely);
:func:`evaluate_attack` turns the scores into top-1..k accuracy with the chance level beside
it. ``groups`` lets an attack judge a set of texts together (paper 004 collapses each user's
test vectors to their mean); vector attacks do it by averaging feature vectors, others by
joining the texts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

import numpy as np

from textveil.corpus.labelled import group_indices
from textveil.errors import InvalidParameterError


class Attack(Protocol):
    """Fit on known texts and labels; score unknown texts against every known label."""

    name: str
    classes_: list[str]

    def fit(self, texts: Sequence[str], labels: Sequence[str]) -> Attack:  # pragma: no cover - protocol
        ...

    def scores(self, texts: Sequence[str]) -> np.ndarray:  # pragma: no cover - protocol
        """``len(texts) x len(classes_)`` scores, higher meaning more likely."""
        ...


@dataclass(frozen=True)
class AttackResult:
    """Top-k identification accuracy of one attack on one set of unknown texts."""

    attack: str
    topk: list[float]  # topk[i] = accuracy at top-(i+1)
    chance: list[float]  # chance[i] = (i+1) / number of candidates
    n_unknown: int
    n_candidates: int
    hits: str = ""
    """Per unknown text (or author, judged per author), in order: ``1`` where the attack's first
    guess is right. Two releases of the same texts are compared on these (McNemar's test)."""

    @property
    def top1(self) -> float:
        return self.topk[0]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["top1"] = self.top1
        return data


def topk_accuracy(scores: np.ndarray, classes: Sequence[str], truth: Sequence[str], k: int) -> list[float]:
    """Fraction of rows whose true label is among the ``j`` best scores, for j = 1..k.

    >>> topk_accuracy(np.array([[0.9, 0.1], [0.8, 0.2]]), ["a", "b"], ["a", "b"], 2)
    [0.5, 1.0]
    """
    positions = true_positions(scores, classes, truth)
    return [float(np.mean(positions < j)) for j in range(1, k + 1)]


def true_positions(scores: np.ndarray, classes: Sequence[str], truth: Sequence[str]) -> np.ndarray:
    """Per row, the rank (0 = first guess) of its true label among the scores; infinity for a
    label that is not a candidate.

    >>> true_positions(np.array([[0.9, 0.1], [0.8, 0.2]]), ["a", "b"], ["a", "b"]).tolist()
    [0.0, 1.0]
    """
    if len(truth) == 0:
        raise InvalidParameterError("no unknown texts to attack")
    column = {label: i for i, label in enumerate(classes)}
    ranking = np.argsort(-scores, axis=1, kind="stable")
    positions = np.full(len(truth), np.inf)
    for row, label in enumerate(truth):
        if label in column:
            positions[row] = int(np.nonzero(ranking[row] == column[label])[0][0])
    return positions


def evaluate_attack(
    attack: Attack,
    known_texts: Sequence[str],
    known_labels: Sequence[str],
    unknown_texts: Sequence[str],
    unknown_labels: Sequence[str],
    *,
    top_k: int = 10,
    collapse_per_label: bool = False,
    fit: bool = True,
) -> AttackResult:
    """Fit ``attack`` on the known texts, rank the candidates for each unknown text (or, with
    ``collapse_per_label``, for each unknown author's texts taken together), and score it."""
    if top_k < 1:
        raise InvalidParameterError(f"top-k must be at least 1, got {top_k}")
    if fit:
        attack.fit(list(known_texts), list(known_labels))
    candidates = len(attack.classes_)
    k = min(top_k, candidates)
    if collapse_per_label:
        keys, members = group_indices(list(unknown_labels))
        scores = grouped_scores(attack, list(unknown_texts), members)
        truth = [str(key) for key in keys]
    else:
        scores = attack.scores(list(unknown_texts))
        truth = list(unknown_labels)
    positions = true_positions(scores, attack.classes_, truth)
    return AttackResult(
        attack=attack.name,
        topk=[float(np.mean(positions < j)) for j in range(1, k + 1)],
        chance=[min(1.0, (j + 1) / candidates) for j in range(k)],
        n_unknown=len(truth),
        n_candidates=candidates,
        hits="".join("1" if position == 0 else "0" for position in positions),
    )


def grouped_scores(attack: Attack, texts: list[str], members: list[list[int]]) -> np.ndarray:
    """Scores per group: the attack's own ``group_scores`` if it has one (vector attacks average
    feature vectors), else the scores of the group's texts joined into one."""
    own = getattr(attack, "group_scores", None)
    if own is not None:
        return own(texts, members)
    return attack.scores(["\n".join(texts[i] for i in group) for group in members])
