"""Select: a content plan of k items chosen from a public bank by the exponential mechanism, in two
stages (a cluster, then an item in it), with one fixed epsilon per document.

The bank (:class:`SelectionBank`) holds public items (sentences a language model wrote without any
private input), their unit vectors and a public clustering of them. A document is read once, as one
unit vector (its embedding by a public model); every score is a fixed function of that vector:

    item score      u(i) = clip((cos(doc, i) - lo) / (hi - lo), 0, 1)
    cluster score   u(c) = max of u(i) over the items i of cluster c still free

Both lie in [0, 1] whatever the document, so either changes by at most 1 when the whole document
is replaced (sensitivity 1), and each stage is the exponential mechanism (McSherry and Talwar 2007):
Pr[c] proportional to exp(epsilon_cluster * u(c) / 2), then Pr[i | c] proportional to
exp(epsilon_item * u(i) / 2) among the free items of c. A plan of k items drawn one after the other
(an item drawn once is not offered again: the plan so far is output) is, by sequential composition,
(k * (epsilon_cluster + epsilon_item))-differentially private against any other document, whatever
their lengths. lo and hi are public (calibrated once on public text, stored with the bank): they
stretch the cosines a document actually reaches over the score's whole range, so a budget buys a
sharp choice rather than a flat one.

>>> bank = SelectionBank.from_vectors(["rain", "storm", "sun"], np.eye(3), np.array([0, 0, 1]), lo=0.0, hi=1.0)
>>> p = item_probabilities(np.array([1.0, 0.0, 0.0]), bank, epsilon_cluster=4.0, epsilon_item=4.0)
>>> [round(float(x), 3) for x in p]   # cluster 0 up by e^2, then "rain" up by e^2 within it
[0.776, 0.105, 0.119]
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from textveil.errors import InvalidParameterError
from textveil.privacy.parameters import check_epsilon


@dataclass(frozen=True)
class SelectionBank:
    """A public bank: ``items`` (texts), their unit ``vectors`` (N, d), each item's ``cluster``
    (N,), and the public score scale ``lo`` < ``hi`` (cosines at or below lo score 0, at or above
    hi score 1). ``digest`` names the whole bank (a release's fingerprint holds it)."""

    items: tuple[str, ...]
    vectors: np.ndarray
    clusters: np.ndarray
    lo: float
    hi: float
    digest: str = ""
    members: tuple[np.ndarray, ...] = field(default=(), repr=False)

    @classmethod
    def from_vectors(cls, items: Sequence[str], vectors: np.ndarray, clusters: np.ndarray, *, lo: float,
                     hi: float) -> SelectionBank:
        """A bank of ``items`` with their vectors (normalised here) and cluster numbers 0..C-1."""
        vectors = np.asarray(vectors, dtype=np.float64)
        clusters = np.asarray(clusters, dtype=np.int64)
        if vectors.ndim != 2 or len(items) != vectors.shape[0] or clusters.shape != (len(items),) or not len(items):
            raise InvalidParameterError(f"a bank needs one vector and one cluster per item: {len(items)} item(s), "
                                        f"vectors {vectors.shape}, clusters {clusters.shape}")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        if (norms == 0).any() or not np.isfinite(vectors).all():
            raise InvalidParameterError("every bank vector must be finite and non-zero")
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise InvalidParameterError(f"the bank's score scale needs lo < hi, got lo={lo!r}, hi={hi!r}")
        count = int(clusters.max()) + 1
        members = tuple(np.flatnonzero(clusters == c) for c in range(count))
        if clusters.min() < 0 or any(m.size == 0 for m in members):
            raise InvalidParameterError("bank clusters must be numbered 0..C-1, each holding an item")
        vectors = vectors / norms
        digest = hashlib.sha256(repr((tuple(items), clusters.tolist(), round(lo, 9), round(hi, 9))).encode()
                                + np.round(vectors, 6).astype(np.float32).tobytes()).hexdigest()[:16]
        return cls(tuple(items), vectors, clusters, float(lo), float(hi), digest, members)

    @property
    def cluster_count(self) -> int:
        return len(self.members)

    def item_scores(self, document: np.ndarray) -> np.ndarray:
        """u(i) for every item: the document's cosine with it, stretched from [lo, hi] onto [0, 1]."""
        document = _unit(document, self.vectors.shape[1])
        return np.clip((self.vectors @ document - self.lo) / (self.hi - self.lo), 0.0, 1.0)


def _unit(vector: np.ndarray, dim: int) -> np.ndarray:
    vector = np.asarray(vector, dtype=np.float64).reshape(-1)
    norm = float(np.linalg.norm(vector))
    if vector.shape != (dim,) or not np.isfinite(vector).all():
        raise InvalidParameterError(f"a document vector must be {dim} finite numbers, got shape {vector.shape}")
    return vector / norm if norm > 0 else vector  # an empty document scores 0 everywhere


def exponential_probabilities(scores: np.ndarray, epsilon: float, sensitivity: float = 1.0) -> np.ndarray:
    """Pr[j] proportional to exp(epsilon * scores[j] / (2 * sensitivity)) (float64).

    >>> exponential_probabilities(np.array([1.0, 0.0]), 2.0).round(3).tolist()
    [0.731, 0.269]
    """
    epsilon = check_epsilon(epsilon)
    weights = epsilon * np.asarray(scores, dtype=np.float64) / (2.0 * sensitivity)
    weights = np.exp(weights - weights.max())
    return weights / weights.sum()


def cluster_scores(item_scores: np.ndarray, bank: SelectionBank, taken: Sequence[int] = ()) -> np.ndarray:
    """u(c): the best score among each cluster's free items (-inf for a cluster with none left)."""
    free = item_scores.astype(np.float64).copy()
    free[list(taken)] = -np.inf
    return np.array([free[m].max() for m in bank.members])


def item_probabilities(document: np.ndarray, bank: SelectionBank, epsilon_cluster: float, epsilon_item: float,
                       taken: Sequence[int] = (), sensitivity: float = 1.0) -> np.ndarray:
    """The exact probability of each item being the next one drawn (the two stages together),
    items in ``taken`` excluded: what the tests hold :func:`select_plan` to."""
    scores = bank.item_scores(document)
    by_cluster = cluster_scores(scores, bank, taken)
    open_clusters = np.isfinite(by_cluster)
    first = np.zeros(bank.cluster_count)
    first[open_clusters] = exponential_probabilities(by_cluster[open_clusters], epsilon_cluster, sensitivity)
    result = np.zeros(len(bank.items))
    blocked = set(int(t) for t in taken)
    for c, members in enumerate(bank.members):
        free = np.array([m for m in members if int(m) not in blocked], dtype=np.int64)
        if first[c] > 0 and free.size:
            result[free] = first[c] * exponential_probabilities(scores[free], epsilon_item, sensitivity)
    return result


def select_plan(document: np.ndarray, bank: SelectionBank, k: int, epsilon_cluster: float, epsilon_item: float,
                rng: np.random.Generator, sensitivity: float = 1.0) -> list[int]:
    """k items of ``bank`` for ``document`` (its unit vector), drawn one after the other in two
    stages each, no item twice; ``rng`` is the document's own stream. Returns item indices.

    >>> bank = SelectionBank.from_vectors(["rain", "storm", "sun"], np.eye(3), np.array([0, 0, 1]), lo=0.0, hi=1.0)
    >>> select_plan(np.array([0.0, 0.0, 1.0]), bank, 1, 1e6, 1e6, np.random.default_rng(0))
    [2]
    """
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or not 1 <= k <= len(bank.items):
        raise InvalidParameterError(f"a plan holds 1 to {len(bank.items)} items, got k={k!r}")
    scores = bank.item_scores(document)
    taken: list[int] = []
    for _ in range(int(k)):
        by_cluster = cluster_scores(scores, bank, taken)
        open_clusters = np.flatnonzero(np.isfinite(by_cluster))
        cluster = int(open_clusters[_draw(exponential_probabilities(by_cluster[open_clusters], epsilon_cluster,
                                                                    sensitivity), rng)])
        free = np.array([m for m in bank.members[cluster] if int(m) not in taken], dtype=np.int64)
        taken.append(int(free[_draw(exponential_probabilities(scores[free], epsilon_item, sensitivity), rng)]))
    return taken


def _draw(probabilities: np.ndarray, rng: np.random.Generator) -> int:
    """One index by the inverse CDF of ``probabilities`` with one uniform from ``rng``."""
    cumulative = np.cumsum(probabilities)
    return int(min(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"), probabilities.size - 1))
