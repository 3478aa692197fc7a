"""The decoding modes of a vocabulary: which nearest-word index each one builds.

Kept apart from the indexes themselves so that every index module depends only on the shared
search helpers (:mod:`textveil.embeddings.neighbours`), never on each other.

>>> import numpy as np
>>> type(make_neighbour_index(np.eye(3, dtype=np.float32), "screened")).__name__
'ScreenedNeighbourIndex'
"""

from __future__ import annotations

import os

import numpy as np

from textveil.embeddings.neighbours import (
    ApproximateNeighbourIndex,
    CudaExactNeighbourIndex,
    ExactNeighbourIndex,
    NeighbourIndex,
)
from textveil.embeddings.screened import ScreenedNeighbourIndex
from textveil.errors import InvalidParameterError

DECODERS = ("exact", "screened", "approx")


def make_neighbour_index(vectors: np.ndarray, decode: str = "exact") -> NeighbourIndex:
    """The index for a decoding mode: ``"exact"``, ``"screened"`` (exact too) or ``"approx"``."""
    if decode == "exact":
        if os.environ.get("TEXTVEIL_DECODE_DEVICE", "cpu") == "cuda":
            return CudaExactNeighbourIndex(vectors)
        return ExactNeighbourIndex(vectors)
    if decode == "screened":
        return ScreenedNeighbourIndex(vectors)
    if decode == "approx":
        return ApproximateNeighbourIndex(vectors)
    raise InvalidParameterError(f"unknown decoder '{decode}'; use one of: {', '.join(DECODERS)}")
