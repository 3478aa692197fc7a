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


def memorisation(synthetic: Sequence[str], training: Sequence[str], n: int = 8) -> MemorisationScore:
    """Exact copies and copied word ``n``-grams of ``training`` in ``synthetic`` (both lists of texts)."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise InvalidParameterError(f"n must be a whole number of at least 1, got {n!r}")
    if not synthetic:
        raise InputError("no synthetic texts to check for memorisation")
    if not training:
        raise InputError("no training texts to check the synthetic texts against")
    known_texts = {_words(text) for text in training}
    known_ngrams = {gram for text in training for gram in _ngrams(_words(text), n)}
    exact = with_copy = copied = total = 0
    for text in synthetic:
        words = _words(text)
        exact += bool(words) and words in known_texts
        grams = list(_ngrams(words, n))
        hits = sum(gram in known_ngrams for gram in grams)
        with_copy += hits > 0
        copied += hits
        total += len(grams)
    count = len(synthetic)
    return MemorisationScore(exact / count, with_copy / count, copied / total if total else 0.0, n, count)
