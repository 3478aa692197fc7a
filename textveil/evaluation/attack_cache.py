"""Fitted attacks cached on disk, so that a comparison interrupted after hours of fitting
resumes without fitting again.

An attack is keyed by everything its fit depends on: its name, the texts and labels it was
fitted on (their digest), the seed, the embeddings' name and the textveil version. An attack
that holds the embeddings (``embedding-1nn``) is not stored: it would copy the whole table
into every entry, and it fits in about a second. Entries are joblib pickles written
atomically; a damaged entry is fitted again. They are read back only from the user's own
cache folder (a pickle runs code when loaded: never point this at a folder of someone else's).
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from textveil.atomic_files import atomic_write_bytes
from textveil.corpus.labelled import LabelledCorpus


def attack_key(name: str, texts: Sequence[str], labels: Sequence[str], seed: int | None, embeddings: str) -> str:
    """A digest of everything a fitted attack depends on.

    >>> attack_key("char3-svm", ["a b"], ["x"], 1, "toy") == attack_key("char3-svm", ["a b"], ["x"], 1, "toy")
    True
    >>> attack_key("char3-svm", ["a b"], ["x"], 1, "toy") != attack_key("char3-svm", ["a b"], ["y"], 1, "toy")
    True
    """
    from textveil.version import __version__

    corpus = LabelledCorpus(list(texts), list(labels)).content_hash()
    payload = json.dumps({"attack": name, "corpus": corpus, "seed": seed, "embeddings": embeddings,
                          "textveil": __version__}, sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:24]


class AttackCache:
    """A folder of fitted attacks, one joblib file per key; counts hits and fits."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.hits = 0
        self.fits = 0

    def get_or_fit(self, key: str, fit: Callable[[], Any]) -> Any:
        """The attack stored under ``key``, or ``fit()`` (then stored unless it holds embeddings)."""
        import joblib

        path = self.folder / f"{key}.joblib"
        if path.is_file():
            try:
                attack = joblib.load(path)
            except Exception:  # noqa: BLE001 - a damaged or outdated entry is fitted again
                attack = None
            if attack is not None:
                self.hits += 1
                return attack
        attack = fit()
        self.fits += 1
        if getattr(attack, "embeddings", None) is None:
            buffer = io.BytesIO()
            joblib.dump(attack, buffer)
            atomic_write_bytes(path, buffer.getvalue())
        return attack
