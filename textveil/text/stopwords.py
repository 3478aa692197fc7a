"""English stop words, taken from scikit-learn's list rather than written again here."""

from __future__ import annotations

from functools import cache

from textveil.text.tokenize import word_key


@cache
def english_stop_words() -> frozenset[str]:
    """scikit-learn's English stop-word list (imported lazily: scikit-learn is slow to import)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def is_stop_word(word: str) -> bool:
    """Whether ``word`` (any casing, straight or curly apostrophe) is an English stop word.

    >>> is_stop_word("The"), is_stop_word("market")
    (True, False)
    """
    return word_key(word) in english_stop_words()
