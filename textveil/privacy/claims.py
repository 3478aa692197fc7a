"""What a Guarantee claims about one pair of inputs: the largest privacy loss (log-likelihood
ratio of any release) that it allows between them, or that it claims nothing for them.

A mechanism describes each input as a :class:`ReleaseView`: the units that go through it (the
tokens it privatises) and what its release copies from the input unprotected (the layout of
``--layout keep``, tokens passed through by a policy, the number of tokens). Two inputs whose
copied parts differ are not covered: the Guarantee names that difference as unprotected, so it
claims nothing for the pair. Otherwise the claim follows from the Guarantee's kind:

* metric privacy in order (``composition="sequence"``): ``epsilon * sum_i d(t_i, t'_i)``;
* metric privacy of a bag (``composition="bag"``): ``epsilon * N * E``, E the Earth Mover's
  distance between the two bags (paper 001, Theorem 4);
* epsilon-DP text generation (``composition="sequential"``): ``epsilon * N`` for two texts of N
  units; for a generator that draws at most L output tokens whatever the input
  (:attr:`ReleaseView.draws`: ``paraphrase``), ``epsilon * L`` for any two inputs it reads
  differently, 0 for two it reads alike (the same text within its input cut);
* no formal guarantee, or l-privacy (not a likelihood-ratio claim): nothing.

Pure arithmetic over the Guarantees and the units' vectors; the audit experiment
(:mod:`textveil.evaluation.audit`) measures a lower bound on the loss and compares.

>>> from textveil.privacy.guarantee import Guarantee
>>> g = Guarantee("emp", 2.0, "d", 1)
>>> view_a, view_b = ReleaseView(("cat",), ("*",)), ReleaseView(("dog",), ("*",))
>>> pair_claim(g, g, view_a, view_b, np.array([[0.0, 0.0]]), np.array([[3.0, 4.0]])).epsilon
10.0
>>> pair_claim(g, g, view_a, ReleaseView(("dog",), ("*", "*")), None, None).epsilon is None
True
>>> dp = Guarantee("paraphrase", 4.0, kind="dp", unit="token", composition="sequential", words_protected=64)
>>> read = ReleaseView(("The cat sat.",), ("*",), draws=64), ReleaseView(("The dog sat.",), ("*",), draws=64)
>>> pair_claim(dp, dp, *read, None, None).epsilon
256.0
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from textveil.privacy.guarantee import Guarantee


@dataclass(frozen=True)
class ReleaseView:
    """One input as a mechanism's release sees it."""

    units: tuple[str, ...]
    """The units that go through the mechanism, in order (what the Guarantee covers)."""
    copied: tuple[str, ...]
    """What the release copies from the input unprotected, position by position (a placeholder
    where a unit goes): two inputs that differ here differ in something the Guarantee does not
    cover."""
    draws: int | None = None
    """How many draws the Guarantee composes over when the mechanism fixes it whatever the input
    (a generator writing at most L tokens: L; none for an input it releases without reading);
    ``None``: one per unit."""


@dataclass(frozen=True)
class Claim:
    """The largest privacy loss a Guarantee allows between two inputs."""

    epsilon: float | None
    """The bound on the log-likelihood ratio of any release; ``None``: no claim for this pair."""
    reason: str
    """How the claim follows from the Guarantee, in words."""

    @property
    def made(self) -> bool:
        return self.epsilon is not None


def pair_claim(first: Guarantee, second: Guarantee, view_first: ReleaseView, view_second: ReleaseView,
               vectors_first: np.ndarray | None, vectors_second: np.ndarray | None) -> Claim:
    """The claim the Guarantees of two inputs make for the pair (see the module's docstring).

    ``vectors_*`` are the units' vectors under the Guarantee's metric (metric privacy only)."""
    if first.kind != second.kind or first.epsilon != second.epsilon:
        return Claim(None, "the two inputs get different guarantees")
    if first.kind == "none":
        return Claim(None, "no formal guarantee")
    if first.kind == "l-privacy":
        return Claim(None, "l-privacy bounds frequency analysis, not a likelihood ratio between two inputs")
    if view_first.copied != view_second.copied:
        return Claim(None, "the inputs differ in what the release copies unprotected: "
                     + "; ".join(first.unprotected or ("their layout",)))
    if len(view_first.units) != len(view_second.units):  # pragma: no cover - copied holds one place per unit
        return Claim(None, "the inputs have different numbers of tokens (released unprotected)")
    n = len(view_first.units)
    epsilon = float(first.epsilon or 0.0)
    if first.kind == "dp":
        if view_first.units == view_second.units:
            return Claim(0.0, "the same units: the release distributions must be identical")
        if view_first.draws is not None or view_second.draws is not None:
            draws = max(view_first.draws or 0, view_second.draws or 0)
            return Claim(epsilon * draws, f"epsilon * L = {epsilon:g} * {draws} (sequential composition over at most "
                         f"L = {draws} output tokens, whatever the inputs)")
        return Claim(epsilon * n, f"epsilon * N = {epsilon:g} * {n} (sequential composition)")
    if vectors_first is None or vectors_second is None:
        raise ValueError("a metric-privacy claim needs the units' vectors")
    if n == 0:
        return Claim(0.0, "no unit goes through the mechanism: the release distributions must be identical")
    a = np.asarray(vectors_first, dtype=np.float64)
    b = np.asarray(vectors_second, dtype=np.float64)
    if first.composition == "bag":
        from textveil.privacy.earth_movers import earth_movers_distance

        distance = earth_movers_distance(a, b)
        return Claim(epsilon * n * distance, f"epsilon * N * E = {epsilon:g} * {n} * {distance:.4g} (Theorem 4)")
    total = float(np.linalg.norm(a - b, axis=1).sum())
    return Claim(epsilon * total, f"epsilon * sum_i d(t_i, t'_i) = {epsilon:g} * {total:.4g}")
