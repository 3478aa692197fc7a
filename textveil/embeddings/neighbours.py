"""Nearest-vocabulary-word search behind one small interface.

Both indexes answer ``nearest(queries) -> row numbers`` by Euclidean distance. Decoding a noisy
vector to a word is post-processing of the mechanism's output, so it may be exact or
approximate without touching the privacy guarantee (paper 001, Lemma 3): an approximate index
changes utility and speed, never privacy, because it looks only at the noisy vector and the
public vocabulary.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from textveil.errors import InvalidParameterError

DECODERS = ("exact", "approx")


class NeighbourIndex(Protocol):
    def nearest(self, queries: np.ndarray) -> np.ndarray:  # pragma: no cover - protocol
        """Row of the nearest vocabulary vector for each query row."""
        ...


class ExactNeighbourIndex:
    """Exact Euclidean nearest neighbour: faiss ``IndexFlatL2``, i.e. blocked matrix products.

    The distances are computed as ``|q|^2 - 2 q.v + |v|^2`` in float32 with BLAS over blocks of
    queries and vocabulary rows, then reduced to the arg-min; no candidate is skipped.

    >>> index = ExactNeighbourIndex(np.array([[0, 0], [10, 0]], dtype=np.float32))
    >>> index.nearest(np.array([[9, 1], [-1, 2]], dtype=np.float32)).tolist()
    [1, 0]
    """

    def __init__(self, vectors: np.ndarray) -> None:
        import faiss

        self._index = faiss.IndexFlatL2(int(vectors.shape[1]))
        self._index.add(np.ascontiguousarray(vectors, dtype=np.float32))

    def nearest(self, queries: np.ndarray) -> np.ndarray:
        if len(queries) == 0:
            return np.empty(0, dtype=np.int64)
        _, rows = self._index.search(np.ascontiguousarray(queries, dtype=np.float32), 1)
        return rows[:, 0]


class ApproximateNeighbourIndex:
    """Approximate nearest neighbour with a faiss HNSW graph: faster on large vocabularies.

    ``ef_search`` trades speed for agreement with exact decoding (measured in
    ``benchmarks/bench_sanitize.py``).
    """

    def __init__(self, vectors: np.ndarray, links: int = 32, ef_construction: int = 80, ef_search: int = 64) -> None:
        import faiss

        self._index = faiss.IndexHNSWFlat(int(vectors.shape[1]), links)
        self._index.hnsw.efConstruction = ef_construction
        self._index.add(np.ascontiguousarray(vectors, dtype=np.float32))
        self._index.hnsw.efSearch = ef_search

    def nearest(self, queries: np.ndarray) -> np.ndarray:
        if len(queries) == 0:
            return np.empty(0, dtype=np.int64)
        _, rows = self._index.search(np.ascontiguousarray(queries, dtype=np.float32), 1)
        return rows[:, 0]


def make_neighbour_index(vectors: np.ndarray, decode: str = "exact") -> NeighbourIndex:
    """The index for a decoding mode: ``"exact"`` or ``"approx"``."""
    if decode == "exact":
        return ExactNeighbourIndex(vectors)
    if decode == "approx":
        return ApproximateNeighbourIndex(vectors)
    raise InvalidParameterError(f"unknown decoder '{decode}'; use one of: {', '.join(DECODERS)}")
