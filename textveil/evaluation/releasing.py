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

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from textveil.corpus.labelled import LabelledCorpus
from textveil.evaluation.release_cache import RELEASE_PART_WORDS, ReleaseCache, release_key
from textveil.mechanisms.base import CorpusRelease, Mechanism

PART_TAG = 0x70617274
"""The first word of a part seed's spawn key ("part"): record seeds' keys are one position only."""


def with_changed_fraction(stats: dict[str, Any]) -> dict[str, Any]:
    """Release statistics with the fraction of protected words that changed (when any were).

    >>> with_changed_fraction({"words_protected": 8, "words_changed": 2})
    {'words_protected': 8, 'words_changed': 2, 'words_changed_fraction': 0.25}
    """
    if stats.get("words_protected"):
        return {**stats, "words_changed_fraction": round(stats["words_changed"] / stats["words_protected"], 4)}
    return stats


def part_seed(seed: int, part: int) -> int:
    """The seed of part ``part`` of a corpus released in parts with ``seed``: numpy's
    ``SeedSequence`` with the part's number under :data:`PART_TAG` as its spawn key, so the parts'
    streams are independent of each other and of every record seed (:mod:`textveil.release.seeds`).

    >>> part_seed(1, 0) == part_seed(1, 0) != part_seed(1, 1) != part_seed(2, 1)
    True
    """
    words = np.random.SeedSequence(seed, spawn_key=(PART_TAG, part)).generate_state(4, dtype=np.uint32)
    return int.from_bytes(words.astype("<u4").tobytes(), "little")


def release_parts(texts: Sequence[str], most_words: int | None = None) -> list[range]:
    """The parts a corpus is released in: consecutive texts of at most ``most_words`` words together
    (:data:`RELEASE_PART_WORDS` by default; a longer text is a part alone), in order.

    >>> release_parts(["a b", "c d e", "f", "g h i j k l"], most_words=5)
    [range(0, 2), range(2, 3), range(3, 4)]
    """
    most = RELEASE_PART_WORDS if most_words is None else most_words
    parts, start, words = [], 0, 0
    for index, text in enumerate(texts):
        count = len(text.split())
        if index > start and words + count > most:
            parts.append(range(start, index))
            start, words = index, 0
        words += count
    if start < len(texts):
        parts.append(range(start, len(texts)))
    return parts


def joined_releases(parts: Sequence[CorpusRelease]) -> CorpusRelease:
    """The releases of a corpus's parts as the one release of the corpus: texts and labels in order,
    counts added, each document's epsilon kept (a budget unknown for one part is unknown).

    >>> from textveil.privacy.release_budget import ReleaseBudget
    >>> one = CorpusRelease(["a"], ["x"], True, {"words_protected": 1}, ReleaseBudget("dp", 1.0, "token", "", (2.0,)))
    >>> two = CorpusRelease(["b"], ["y"], True, {"words_protected": 3}, ReleaseBudget("dp", 1.0, "token", "", (4.0,)))
    >>> joined = joined_releases([one, two])
    >>> joined.texts, joined.labels, joined.stats, joined.budget.document_epsilons
    (['a', 'b'], ['x', 'y'], {'words_protected': 4}, (2.0, 4.0))
    """
    stats: dict[str, int] = {}
    for part in parts:
        for name, count in part.stats.items():
            stats[name] = stats.get(name, 0) + count
    budget = parts[0].budget
    for part in parts[1:]:
        budget = None if budget is None or part.budget is None else budget.combine(part.budget)
    labels = None if any(part.labels is None for part in parts) else [label for part in parts for label in part.labels]
    return CorpusRelease([text for part in parts for text in part.texts], labels,
                         all(part.aligned for part in parts), stats, budget)


def release_corpus(
    mechanism: Mechanism,
    corpus: LabelledCorpus,
    cache: ReleaseCache,
    *,
    progress: Callable[[int], None] | None = None,
) -> CorpusRelease:
    """``corpus`` released by ``mechanism`` (its parameters and seed set, fitted if it learns):
    read from ``cache`` when seeded and there, else released (and stored when seeded).
    ``progress(n)`` is told as each n texts are released; where it has a ``held(n)`` method
    (:class:`~textveil.evaluation.sweep_clock.TextCount`), texts read back from the parts of a
    stopped run are told there instead, so that a rate counts only the texts released now.

    A seeded corpus of more than :data:`RELEASE_PART_WORDS` words is released in parts
    (:func:`release_parts`; not by a corpus-level mechanism: a new corpus, or PIVOT's one key
    drawn from every document's counts), part ``i`` by the mechanism with the seed
    :func:`part_seed` (seed, i), and each part is cached as it is finished: a run stopped part-way (a comparison of 15,000
    posts with a language model takes hours) resumes at the first part the cache does not hold,
    and redraws exactly what it would have drawn. The whole release is then cached as one entry
    and its parts' entries are removed.

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
    key = _key(mechanism, corpus)
    parts = _parts_of(mechanism, corpus)
    if key is None or not parts:
        return cache.get_or_release(
            key, lambda: mechanism.release_corpus(corpus.texts, corpus.labels, progress=progress), len(corpus))
    whole = cache.held(key, len(corpus))
    if whole is not None:
        return whole
    cache.misses += 1  # the cache counts whole releases: this one is (at least partly) released
    released = []
    for number, texts in enumerate(parts):
        part, part_key = corpus.subset(texts), _part_key(key, number)
        held = cache.readable(part_key, len(part))
        if held is None:
            held = mechanism.with_params(seed=part_seed(mechanism.seed, number)).release_corpus(
                part.texts, part.labels, progress=progress)
            cache.store(part_key, held)
        elif progress is not None:  # a part read back moves the bar; its rate and time left count releases only
            getattr(progress, "held", progress)(len(part))
        released.append(held)
    joined = joined_releases(released)
    cache.store(key, joined)
    cache.forget([_part_key(key, number) for number in range(len(parts))])
    return joined


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


def cached_share(mechanism: Mechanism, corpus: LabelledCorpus, cache: ReleaseCache) -> float:
    """How much of ``corpus``'s release by ``mechanism`` the run will read back from ``cache``
    (nothing is released or counted): 1.0 for the whole, the share of texts in the parts it holds
    for a release in parts that was stopped part-way, 0.0 for none. As
    :meth:`ReleaseCache.get_or_release` reads: an aligned entry kept without its budget is not
    read back."""

    key = _key(mechanism, corpus)
    if key is None:
        return 0.0
    if cache.readable(key, len(corpus)) is not None:
        return 1.0
    parts = _parts_of(mechanism, corpus)
    if not parts:
        return 0.0
    held = sum(len(texts) for number, texts in enumerate(parts)
               if cache.readable(_part_key(key, number), len(texts)) is not None)
    return held / len(corpus)


def cached_release_written(mechanism: Mechanism, corpus: LabelledCorpus, cache: ReleaseCache) -> float | None:
    """When ``cache`` stored ``corpus`` released by ``mechanism`` (None where it holds no readable
    release of it): what a point stored without a release digest is dated against."""
    key = _key(mechanism, corpus)
    return cache.written_at(key) if cache.cached(key, len(corpus)) is not None else None


def _parts_of(mechanism: Mechanism, corpus: LabelledCorpus) -> list[range]:
    """The parts ``corpus`` is released in (:func:`release_parts`), or none where it is released
    whole: a corpus of one part, or a corpus-level mechanism (a new corpus, or PIVOT's one key drawn
    from every document's counts)."""
    parts = release_parts(corpus.texts)
    return [] if mechanism.corpus_level or len(parts) < 2 else parts


def _part_key(key: str, number: int) -> str:
    """The cache key of part ``number`` of the release keyed ``key``."""
    return f"{key}-part{number}"


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
