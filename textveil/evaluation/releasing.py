"""Release a labelled corpus with a mechanism, cached when seeded.

The sweep releases the unknown, utility and known texts through :func:`release_corpus`, and
``textveil attack --release-known-with`` releases a user's known texts through it too: both
key the cache by the mechanism's fingerprint (its public parameters and the digests of its
vocabulary and training data: a secret never reaches a key), the seed and the corpus, so they
share cache entries. A cache entry holds the release's statistics with its texts, so a release
read back reports what it protected as a fresh one does.

The mechanism itself is built from its name and options by :mod:`textveil.building`, as every
face builds it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textveil.corpus.labelled import LabelledCorpus
from textveil.evaluation.release_cache import ReleaseCache, release_key
from textveil.mechanisms.base import CorpusRelease, Mechanism


def with_changed_fraction(stats: dict[str, Any]) -> dict[str, Any]:
    """Release statistics with the fraction of protected words that changed (when any were).

    >>> with_changed_fraction({"words_protected": 8, "words_changed": 2})
    {'words_protected': 8, 'words_changed': 2, 'words_changed_fraction': 0.25}
    """
    if stats.get("words_protected"):
        return {**stats, "words_changed_fraction": round(stats["words_changed"] / stats["words_protected"], 4)}
    return stats


def release_corpus(
    mechanism: Mechanism,
    corpus: LabelledCorpus,
    cache: ReleaseCache,
    *,
    progress: Callable[[int], None] | None = None,
) -> CorpusRelease:
    """``corpus`` released by ``mechanism`` (its parameters and seed set, fitted if it learns):
    read from ``cache`` when seeded and there, else released (and stored when seeded).
    ``progress(n)`` is told as each n texts are released.

    >>> from textveil.embeddings import WordEmbeddings
    >>> from textveil.mechanisms.earth_movers import EarthMoversPrivacy
    >>> toy = WordEmbeddings(["good", "fine", "bad"], [[0.0, 0.0], [0.1, 0.0], [9.0, 9.0]])
    >>> import tempfile, pathlib
    >>> corpus, cache = LabelledCorpus(["good", "bad"], ["x", "y"]), ReleaseCache(pathlib.Path(tempfile.mkdtemp()))
    >>> first = release_corpus(EarthMoversPrivacy(50.0, toy, seed=1), corpus, cache)
    >>> again = release_corpus(EarthMoversPrivacy(50.0, toy, seed=1), corpus, cache)
    >>> first == again, again.stats["words_protected"], cache.hits
    (True, 2, 1)
    """
    return cache.get_or_release(
        _key(mechanism, corpus), lambda: mechanism.release_corpus(corpus.texts, corpus.labels, progress=progress),
        len(corpus)
    )


def cached_release(mechanism: Mechanism, corpus: LabelledCorpus, cache: ReleaseCache) -> CorpusRelease | None:
    """``corpus`` released by ``mechanism`` as :func:`release_corpus` keeps it in ``cache``, or None
    where the cache does not hold it (nothing is released).

    >>> from textveil.embeddings import WordEmbeddings
    >>> from textveil.mechanisms.earth_movers import EarthMoversPrivacy
    >>> toy = WordEmbeddings(["good", "fine", "bad"], [[0.0, 0.0], [0.1, 0.0], [9.0, 9.0]])
    >>> import tempfile, pathlib
    >>> corpus, cache = LabelledCorpus(["good", "bad"], ["x", "y"]), ReleaseCache(pathlib.Path(tempfile.mkdtemp()))
    >>> cached_release(EarthMoversPrivacy(50.0, toy, seed=1), corpus, cache) is None
    True
    >>> released = release_corpus(EarthMoversPrivacy(50.0, toy, seed=1), corpus, cache)
    >>> cached_release(EarthMoversPrivacy(50.0, toy, seed=1), corpus, cache) == released
    True
    """
    return cache.cached(_key(mechanism, corpus), len(corpus))


def cached_release_written(mechanism: Mechanism, corpus: LabelledCorpus, cache: ReleaseCache) -> float | None:
    """When ``cache`` stored ``corpus`` released by ``mechanism`` (None where it holds no readable
    release of it): what a point stored without a release digest is dated against."""
    key = _key(mechanism, corpus)
    return cache.written_at(key) if cache.cached(key, len(corpus)) is not None else None


def _key(mechanism: Mechanism, corpus: LabelledCorpus) -> str | None:
    """The cache key of ``corpus`` released by ``mechanism``; None unseeded (never cached)."""
    seed = getattr(mechanism, "seed", None)
    return None if seed is None else release_key(mechanism.fingerprint(), seed, corpus)


def encode_corpus(mechanism: Any, corpus: LabelledCorpus) -> tuple[CorpusRelease, Any]:
    """``corpus`` released by a mechanism that encodes a whole corpus under one secret key (PIVOT:
    its ``encode``), after its entity stage when it has one, and the key. For the owner's own
    measurements only (frequency analysis scored with the key): the key stays in memory, so this
    release is never cached (a cache holds texts, and a key must never reach one).

    >>> from textveil.mechanisms.pivot import Pivot
    >>> released, key = encode_corpus(Pivot(l=2, seed=1), LabelledCorpus(["the cat sat", "the dog sat"], ["a", "b"]))
    >>> [key.decode_text(text) for text in released.texts], released.labels, released.stats["words_protected"]
    (['the cat sat', 'the dog sat'], ['a', 'b'], 6)
    """
    from textveil.mechanisms.base import release_statistics
    from textveil.pii.staged import StagedMechanism, corpus_through_stage

    texts, stats = list(corpus.texts), {}
    encoder = mechanism
    if isinstance(mechanism, StagedMechanism):
        texts, replaced = corpus_through_stage(mechanism.stage, texts)
        if mechanism.stage.options.enabled:
            stats["entities_replaced"] = sum(replaced.values())
        encoder = mechanism.mechanism
    encoding = encoder.encode(texts)
    released = CorpusRelease([r.text for r in encoding.releases], list(corpus.labels), True,
                             {**release_statistics(encoding.releases), **stats})
    return released, encoding.key
