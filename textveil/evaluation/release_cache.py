"""Releases cached by (mechanism, parameters, corpus content): re-running a report does not
release again. Only seeded releases are cached: an unseeded release is meant to be fresh."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textveil.corpus.labelled import LabelledCorpus
from textveil.corpus.writing import atomic_write_text


def release_key(mechanism: str, parameters: dict[str, Any], corpus: LabelledCorpus) -> str:
    """A digest of everything a release depends on, the textveil version included: a new
    version may release differently (a fixed mechanism), so it never reads an older release."""
    from textveil import __version__

    payload = json.dumps({"mechanism": mechanism, "parameters": parameters, "corpus": corpus.content_hash(),
                          "textveil": __version__}, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:24]


class ReleaseCache:
    """A folder of released corpora, one JSON file per release key."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self.hits = 0
        self.misses = 0

    def get_or_release(self, key: str | None, release: Callable[[], list[str]], expected: int) -> list[str]:
        """The cached texts for ``key``, or ``release()`` (then stored when ``key`` is given)."""
        path = self.folder / f"{key}.json" if (self.folder is not None and key is not None) else None
        if path is not None and path.is_file():
            try:
                texts = json.loads(path.read_text(encoding="utf-8"))
                if isinstance(texts, list) and len(texts) == expected:
                    self.hits += 1
                    return texts
            except (OSError, ValueError):
                pass  # a damaged cache entry is simply released again
        self.misses += 1
        texts = release()
        if path is not None:
            atomic_write_text(path, json.dumps(texts, ensure_ascii=False))
        return texts
