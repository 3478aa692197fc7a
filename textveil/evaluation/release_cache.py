"""Releases cached by (mechanism fingerprint, seed, corpus content): re-running a report does
not release again. Only seeded releases are cached: an unseeded release is meant to be fresh.

An entry holds the released texts, their labels, whether they are aligned with the input, the
release's statistics and its budget (what its Guarantees state), so a release read back reports
what it protected and at what epsilon."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from textveil.atomic_files import atomic_write_text
from textveil.corpus.labelled import LabelledCorpus
from textveil.mechanisms.base import CorpusRelease
from textveil.privacy.release_budget import ReleaseBudget


RELEASE_PART_WORDS = 20_000
"""A seeded release of more words than this is made and cached in parts of consecutive texts of at
most this many words each (a longer text is a part alone), each part with a seed of its own
(:func:`textveil.evaluation.releasing.release_corpus`). Why by words: the work of every mechanism
grows with the words, so a part is about the same work whatever the texts (about 500 blog posts,
or 40 news articles: some minutes of a language model on 2 cores), a stopped run loses at most
that, and emp still decodes in large batches. Every release key and release digest holds it:
another size releases other texts."""


def release_digest(fingerprints: list[dict[str, Any]]) -> str:
    """A digest of what a point's releases are made by: the mechanism's fingerprint at each of its
    seeds and, as in :func:`release_key`, the size of the parts a long corpus is released in."""
    payload = json.dumps({"fingerprints": fingerprints, "part_words": RELEASE_PART_WORDS}, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:24]


def release_key(fingerprint: dict[str, Any], seed: int, corpus: LabelledCorpus) -> str:
    """A digest of everything a release depends on, the textveil version and the size of the parts
    a long corpus is released in included: a new version may release differently (a fixed
    mechanism), so it never reads an older release. ``fingerprint`` shows secrets as digests only
    (:meth:`Mechanism.fingerprint`)."""
    from textveil.version import __version__

    payload = json.dumps({"mechanism": fingerprint, "seed": seed, "corpus": corpus.content_hash(),
                          "textveil": __version__, "part_words": RELEASE_PART_WORDS}, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:24]


class ReleaseCache:
    """A folder of released corpora, one JSON file per release key."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self.hits = 0
        self.misses = 0

    def cached(self, key: str | None, expected: int) -> CorpusRelease | None:
        """The cached release for ``key``, or None where there is none: nothing is released (a
        comparison reading back an earlier point's budget must not release it again)."""
        path = self.folder / f"{key}.json" if (self.folder is not None and key is not None) else None
        return _read(path, expected) if path is not None and path.is_file() else None

    def written_at(self, key: str | None) -> float | None:
        """When the entry for ``key`` was written (seconds since the epoch), None without one:
        a comparison point stored before it cannot have been measured on it."""
        path = self.folder / f"{key}.json" if (self.folder is not None and key is not None) else None
        try:
            return path.stat().st_mtime if path is not None else None
        except OSError:
            return None

    def readable(self, key: str | None, expected: int) -> CorpusRelease | None:
        """The entry for ``key`` that a release may be read back from, or None (nothing counted).
        An aligned entry written before budgets were kept is not: a report beside it would read
        "not recorded" where a fresh release shows the figures."""
        cached = self.cached(key, expected)
        return cached if cached is not None and (cached.budget is not None or not cached.aligned) else None

    def held(self, key: str | None, expected: int) -> CorpusRelease | None:
        """:meth:`readable`, counted as a hit when it is there."""
        found = self.readable(key, expected)
        if found is not None:
            self.hits += 1
        return found

    def get_or_release(self, key: str | None, release: Callable[[], CorpusRelease], expected: int) -> CorpusRelease:
        """The cached release for ``key``, or ``release()`` (then stored when ``key`` is given).
        An aligned release must hold ``expected`` texts, else it is released again."""
        held = self.held(key, expected)
        if held is not None:
            return held
        self.misses += 1
        released = release()
        self.store(key, released)
        return released

    def store(self, key: str | None, released: CorpusRelease) -> None:
        """Keep ``released`` under ``key`` (nothing without a folder or a key)."""
        if self.folder is not None and key is not None:
            atomic_write_text(self.folder / f"{key}.json", json.dumps(released.to_dict(), ensure_ascii=False))

    def forget(self, keys: Sequence[str]) -> None:
        """Remove the entries of ``keys`` (a long release's parts, once the whole is kept)."""
        if self.folder is not None:
            for key in keys:
                (self.folder / f"{key}.json").unlink(missing_ok=True)


def _read(path: Path, expected: int) -> CorpusRelease | None:
    """A cache entry, or None when it is damaged or of an older layout (released again)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        # an entry written before budgets were kept has none (get_or_release releases it again)
        budget = ReleaseBudget.from_dict(data["budget"]) if data.get("budget") is not None else None
        release = CorpusRelease(list(data["texts"]), data["labels"], bool(data["aligned"]), dict(data["stats"]),
                                budget)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if release.aligned and len(release.texts) != expected:
        return None
    return release
