"""Memorisation: how much of a synthetic corpus its model copied from its training texts.

A generator that repeats a training text, or a long run of one, releases that text's writer's own
words verbatim, whatever its temperature. Paper 004's synthetic corpora are checked here by
exact copies and by shared word n-grams (8 words by default: long enough that two writers rarely
share one by chance, short enough to catch a copied sentence).

>>> training = ["the cat sat on the mat and looked out of the window at the rain"]
>>> score = memorisation(["the cat sat on the mat and looked out of it", "a new post"], training, n=8)
>>> score.exact_copies, score.texts_with_copied_ngram
(0.0, 0.5)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from textveil.errors import InputError, InvalidParameterError
from textveil.text.tokenize import find_words, word_key


@dataclass(frozen=True)
class MemorisationScore:
    """Shares of synthetic texts (and of their n-grams) copied from the training texts
    (``dataclasses.asdict`` gives it as plain data)."""

    exact_copies: float
    """Share of synthetic texts whose words equal a training text's words (case and spacing aside)."""
    texts_with_copied_ngram: float
    """Share of synthetic texts that hold at least one word n-gram of a training text."""
    copied_ngrams: float
    """Share of all synthetic word n-grams that occur in a training text."""
    n: int
    texts: int


def _words(text: str) -> tuple[str, ...]:
    return tuple(word_key(word) for word in find_words(text))


def _ngrams(words: Sequence[str], n: int) -> Iterable[tuple[str, ...]]:
    return (tuple(words[i:i + n]) for i in range(len(words) - n + 1))


@dataclass(frozen=True)
class TrainingIndex:
    """The training texts' word sequences and word n-grams, built once and checked against
    any number of synthetic corpora (a sweep checks one per temperature)."""

    texts: frozenset[tuple[str, ...]]
    ngrams: frozenset[tuple[str, ...]]
    n: int


def index_training(training: Sequence[str], n: int = 8) -> TrainingIndex:
    """The index :func:`memorisation` checks synthetic texts against."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise InvalidParameterError(f"n must be a whole number of at least 1, got {n!r}")
    if not training:
        raise InputError("no training texts to check the synthetic texts against")
    word_lists = [_words(text) for text in training]
    return TrainingIndex(frozenset(word_lists), frozenset(g for words in word_lists for g in _ngrams(words, n)), n)


def memorisation(synthetic: Sequence[str], training: Sequence[str] | TrainingIndex, n: int = 8) -> MemorisationScore:
    """Exact copies and copied word ``n``-grams of ``training`` (texts, or their
    :func:`index_training`, whose own n then counts) in ``synthetic``."""
    index = training if isinstance(training, TrainingIndex) else index_training(training, n)
    if not synthetic:
        raise InputError("no synthetic texts to check for memorisation")
    exact = with_copy = copied = total = 0
    for text in synthetic:
        words = _words(text)
        exact += bool(words) and words in index.texts
        grams = list(_ngrams(words, index.n))
        hits = sum(gram in index.ngrams for gram in grams)
        with_copy += hits > 0
        copied += hits
        total += len(grams)
    count = len(synthetic)
    return MemorisationScore(exact / count, with_copy / count, copied / total if total else 0.0, index.n, count)
