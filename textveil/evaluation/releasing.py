"""Release a labelled corpus with a mechanism named by the user, cached when seeded.

The sweep releases the unknown, utility and known texts through :func:`release_corpus`, and
``textveil attack --release-known-with`` releases a user's known texts through it too: both
build the mechanism and the cache key the same way, so they share cache entries.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from textveil.corpus.labelled import LabelledCorpus
from textveil.embeddings.word_embeddings import WordEmbeddings
from textveil.errors import InvalidParameterError
from textveil.evaluation.release_cache import ReleaseCache, release_key
from textveil.mechanisms.earth_movers import LAYOUTS, OUTPUT_MODES
from textveil.mechanisms.registry import make_mechanism, mechanism_class

# Options the harness applies itself rather than passing to the mechanism.
HARNESS_OPTIONS = ("vocab_size",)


def takes_parameter(mechanism: str, parameter: str) -> bool:
    """Whether the mechanism's constructor has ``parameter`` (e.g. an ``epsilon``).

    >>> takes_parameter("emp", "epsilon"), takes_parameter("emp", "delta")
    (True, False)
    """
    return parameter in inspect.signature(mechanism_class(mechanism)).parameters


def mechanism_options(*, layout: str = "public", bag_of_words: bool = False, **others: Any) -> dict[str, Any]:
    """The options a face passes to the mechanism: ``layout`` and ``output="bag"`` for a bag
    of words, beside ``others`` (checked, with the rest, by :func:`check_mechanism_options`).

    >>> mechanism_options(layout="keep", bag_of_words=True, decode="exact")
    {'decode': 'exact', 'layout': 'keep', 'output': 'bag'}
    """
    # The layout always goes into the options, so it is part of every cache key: a release
    # written under another layout is never read back as this one.
    return {**others, "layout": layout, **({"output": "bag"} if bag_of_words else {})}


def check_mechanism_options(mechanism: str, options: dict[str, Any]) -> None:
    """Options the mechanism does not take, or an unknown layout or output, fail before any work.

    >>> check_mechanism_options("emp", {"layout": "keep", "vocab_size": 100})
    >>> check_mechanism_options("emp", {"colour": "red"})
    Traceback (most recent call last):
    ...
    textveil.errors.InvalidParameterError: mechanism 'emp' takes no option 'colour'
    >>> check_mechanism_options("emp", mechanism_options(layout="tidy"))
    Traceback (most recent call last):
    ...
    textveil.errors.InvalidParameterError: unknown --layout 'tidy'; valid layouts: public, keep
    """
    accepted = inspect.signature(mechanism_class(mechanism)).parameters
    for name in options:
        if name not in accepted and name not in HARNESS_OPTIONS:
            raise InvalidParameterError(f"mechanism '{mechanism}' takes no option '{name}'")
    if options.get("layout", LAYOUTS[0]) not in LAYOUTS:
        raise InvalidParameterError(f"unknown --layout '{options['layout']}'; valid layouts: {', '.join(LAYOUTS)}")
    if options.get("output", OUTPUT_MODES[0]) not in OUTPUT_MODES:
        raise InvalidParameterError(f"unknown output '{options['output']}'; valid outputs: {', '.join(OUTPUT_MODES)}")


def with_changed_fraction(stats: dict[str, Any]) -> dict[str, Any]:
    """Release statistics with the fraction of protected words that changed (when any were).

    >>> with_changed_fraction({"words_protected": 8, "words_changed": 2})
    {'words_protected': 8, 'words_changed': 2, 'words_changed_fraction': 0.25}
    """
    if stats.get("words_protected"):
        return {**stats, "words_changed_fraction": round(stats["words_changed"] / stats["words_protected"], 4)}
    return stats


def release_corpus(
    mechanism: str,
    parameters: dict[str, Any],
    embeddings: WordEmbeddings,
    corpus: LabelledCorpus,
    seed: int | None,
    cache: ReleaseCache,
    *,
    stats: dict[str, int] | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[str]:
    """The texts of ``corpus`` released by ``mechanism`` with ``parameters`` (its privacy
    parameter and options) and ``seed``: read from ``cache`` when seeded and there, else
    released (and stored when seeded). A fresh release adds its protected and changed word
    counts to ``stats``; ``progress(n)`` is told as each n texts are released.

    >>> from textveil.embeddings import WordEmbeddings
    >>> toy = WordEmbeddings(["good", "fine", "bad"], [[0.0, 0.0], [0.1, 0.0], [9.0, 9.0]])
    >>> corpus = LabelledCorpus(["good", "bad"], ["x", "y"])
    >>> cache, stats = ReleaseCache(None), {"words_protected": 0, "words_changed": 0}
    >>> first = release_corpus("emp", {"epsilon": 50.0}, toy, corpus, 1, cache, stats=stats)
    >>> first == release_corpus("emp", {"epsilon": 50.0}, toy, corpus, 1, cache), stats["words_protected"]
    (True, 2)
    """

    def release() -> list[str]:
        engine = make_mechanism(mechanism, **parameters, embeddings=embeddings, seed=seed)
        releases = engine.sanitize_many(corpus.texts, progress=progress)
        if stats is not None:
            protected, changed = sum(r.guarantee.words_protected for r in releases), sum(len(r.changes) for r in releases)
            stats["words_protected"] = stats.get("words_protected", 0) + protected
            stats["words_changed"] = stats.get("words_changed", 0) + changed
        return [r.text for r in releases]

    # The key holds everything the release depends on; the same dict the sweep has always
    # keyed by, so existing cache entries stay valid.
    key = None if seed is None else release_key(
        mechanism, {**parameters, "seed": seed, "embeddings": embeddings.name}, corpus
    )
    return cache.get_or_release(key, release, len(corpus))


def release_parameters(mechanism: str, epsilon: float | None, **options: Any) -> dict[str, Any]:
    """The parameters to release with ``mechanism``, as ``textveil attack --release-known-with``
    takes them: its ``epsilon`` (required when it has one) and its options, all checked, so a
    bad value fails with one line before any work.

    >>> release_parameters("emp", 10, layout="keep")
    {'epsilon': 10.0, 'layout': 'keep'}
    >>> release_parameters("emp", None)
    Traceback (most recent call last):
    ...
    textveil.errors.InvalidParameterError: --release-known-with emp needs --epsilon: the epsilon the unknown texts were released with
    """
    from textveil.privacy.parameters import check_epsilon

    has_epsilon = takes_parameter(mechanism, "epsilon")
    if has_epsilon and epsilon is None:
        raise InvalidParameterError(
            f"--release-known-with {mechanism} needs --epsilon: the epsilon the unknown texts were released with"
        )
    if not has_epsilon and epsilon is not None:
        raise InvalidParameterError(f"mechanism '{mechanism}' takes no epsilon; leave out --epsilon")
    check_mechanism_options(mechanism, options)
    return {**({"epsilon": check_epsilon(epsilon, "--epsilon")} if has_epsilon else {}), **options}
