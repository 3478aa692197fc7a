"""A combination of attacks: each member ranks the candidates, the ensemble averages them.

Members score on scales of their own (SVM margins, log-likelihoods, vote fractions), so each
member's scores are first standardised per row: for one unknown text, minus the mean over
the candidates, divided by their standard deviation. What is left says how far above the
rest a member puts each candidate, on a scale every member shares; the ensemble score is the
(weighted) mean of these. Members that see different things (characters, words, typed
n-grams) err on different texts, so the mean ranks better than most members alone.

The default members were chosen on validation splits of the known texts only (C50: the
first 35 of each author's 50 training stories known, the other 15 unknown; blog_short: the
first 50 posts known, the next 20 unknown and collapsed per user), among 18 suite attacks and
their combinations. The n-gram SVMs are the strongest single attacks there (C50 0.75 to 0.78
top-1; blog_short 0.91 to 0.93); writeprints-svm is weak alone (0.53, 0.77) but errs on other
texts, and adding it to the n-gram SVMs gave the best combinations on C50 (0.80 against 0.78
for the n-gram SVMs alone). On blog_short every strong combination ties (0.93): the users it
misses are the 11 whose posts also appear under another user's id (group blogs: five groups
sharing 6 to 100 identical posts), which no attack can tell apart. Equal weights did as well
as any other tried.

Groups of texts (paper 004's per-user collapse) are scored by each member its own way
(:func:`textveil.attacks.base.grouped_scores`) and then combined the same way.

>>> from textveil.attacks.ensemble import standardise_rows
>>> standardise_rows(np.array([[1.0, 2.0, 3.0], [5.0, 5.0, 5.0]])).round(3).tolist()
[[-1.225, 0.0, 1.225], [0.0, 0.0, 0.0]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from textveil.attacks.base import grouped_scores
from textveil.attacks.registry import ATTACKS, make_attack
from textveil.errors import InvalidParameterError

DEFAULT_MEMBERS = ("char3-svm", "char4-svm", "typed-svm", "word2-svm", "writeprints-svm")
"""The members unless told otherwise, chosen on validation splits (module notes)."""


def standardise_rows(scores: np.ndarray) -> np.ndarray:
    """Each row minus its mean, over its standard deviation (a row of equal scores becomes 0)."""
    scores = np.asarray(scores, dtype=np.float64)
    centred = scores - scores.mean(axis=1, keepdims=True)
    spread = centred.std(axis=1, keepdims=True)
    return centred / np.where(spread > 0, spread, 1.0)


class EnsembleAttack:
    """The mean of the members' row-standardised scores (see the module notes).

    ``members``: registry names of the attacks to combine. ``weights``: one per member
    (default equal). ``random_state`` and ``embeddings`` are passed on to the members that
    take them, as :func:`textveil.attacks.registry.make_attack` passes them to any attack.

    >>> known = ["colour honour, flavour!"] * 3 + ["color honor; flavor?"] * 3
    >>> attack = EnsembleAttack(["char2-svm", "word1-nb"]).fit(known, ["uk"] * 3 + ["us"] * 3)
    >>> attack.classes_, attack.scores(["the colour of honour!", "my color; my flavor?"]).argmax(axis=1).tolist()
    (['uk', 'us'], [0, 1])
    """

    name = "ensemble"

    def __init__(self, members: Sequence[str] = DEFAULT_MEMBERS, weights: Sequence[float] | None = None, *,
                 random_state: int | None = 0, embeddings: Any = None) -> None:
        members = list(members)
        if not members:
            raise InvalidParameterError("an ensemble needs at least one member attack")
        if self.name in members:
            raise InvalidParameterError("an ensemble cannot be a member of itself; list the attacks to combine")
        unknown = [name for name in members if name not in ATTACKS]
        if unknown:
            raise InvalidParameterError(
                f"unknown ensemble member(s) {', '.join(unknown)}; run 'textveil attack --list' for the valid names")
        if weights is not None:
            weights = [float(w) for w in weights]
            if len(weights) != len(members) or min(weights) < 0 or sum(weights) <= 0:
                raise InvalidParameterError(
                    f"give one non-negative weight per member ({len(members)}), not all zero; got {weights}")
        self.members = members
        self.weights = weights
        self.random_state = random_state
        self.embeddings = embeddings
        self.classes_: list[str] = []

    def fit(self, texts: Sequence[str], labels: Sequence[str]) -> EnsembleAttack:
        """Fit every member on the same known texts."""
        shared = {"random_state": self.random_state}
        if self.embeddings is not None:
            shared["embeddings"] = self.embeddings
        self.classes_ = sorted({str(label) for label in labels})
        self.attacks_ = [make_attack(name, shared).fit(list(texts), list(labels)) for name in self.members]
        # Members may order their candidates differently; columns are taken in classes_ order.
        self.columns_ = []
        for attack in self.attacks_:
            position = {label: i for i, label in enumerate(attack.classes_)}
            if set(position) != set(self.classes_):
                raise InvalidParameterError(f"member '{attack.name}' knows other candidates than the ensemble")
            self.columns_.append([position[label] for label in self.classes_])
        return self

    def scores(self, texts: Sequence[str]) -> np.ndarray:
        """``len(texts) x len(classes_)`` mean standardised scores, higher meaning more likely."""
        self._check_fitted()
        return self.combine([attack.scores(list(texts)) for attack in self.attacks_])

    def group_scores(self, texts: Sequence[str], members: Sequence[Sequence[int]]) -> np.ndarray:
        """Each member's scores of the groups (its own ``group_scores`` where it has one), combined."""
        self._check_fitted()
        groups = [list(group) for group in members]
        return self.combine([grouped_scores(attack, list(texts), groups) for attack in self.attacks_])

    def combine(self, member_scores: Sequence[np.ndarray]) -> np.ndarray:
        """The weighted mean of the members' row-standardised scores, in ``classes_`` order."""
        standardised = [standardise_rows(s)[:, columns] for s, columns in zip(member_scores, self.columns_)]
        return np.average(np.stack(standardised), axis=0, weights=self.weights)

    def _check_fitted(self) -> None:
        if not hasattr(self, "attacks_"):
            raise InvalidParameterError("the ensemble is not fitted: call fit(known texts, labels) first")
