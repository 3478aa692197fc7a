"""The one normalisation the utility tasks share: lower-cased words, punctuation gone.

Paper 001 (appendix B.1) normalises text for topic classification by removing stop words
and punctuation and lower-casing; the Earth Mover's task compares the same bags. The n-gram
distribution tasks of paper 004 keep stop words (they are part of a user's language), so
dropping them is a choice here, not a rule.
"""

from __future__ import annotations

from collections.abc import Sequence

from textveil.text.stopwords import is_stop_word
from textveil.text.tokenize import tokenize, word_key


def words(text: str, *, drop_stop_words: bool = False) -> list[str]:
    """The words of ``text`` in order, lower-cased (straight apostrophes), punctuation dropped.

    >>> words("It\u2019s the market: it rallied!")
    ["it's", 'the', 'market', 'it', 'rallied']
    >>> words("It's the market: it rallied!", drop_stop_words=True)
    ['market', 'rallied']
    """
    keys = (word_key(token.text) for token in tokenize(text) if token.is_word)
    if not drop_stop_words:
        return list(keys)
    # The one stop-word rule (contractions such as "it's" included) that the mechanism uses too.
    return [key for key in keys if not is_stop_word(key)]


def content_words(text: str) -> list[str]:
    """Words with stop words removed: the bag a topic classifier or Earth Mover's distance sees.

    >>> content_words("Shares in the bank ROSE by 5%.")
    ['shares', 'bank', 'rose', '5']
    """
    return words(text, drop_stop_words=True)


def check_parallel(originals: Sequence[str], releases: Sequence[str], *others: Sequence[object]) -> None:
    """Fail clearly unless every original has its release (and label) at the same position.

    >>> check_parallel(["a"], ["b", "c"])
    Traceback (most recent call last):
    ...
    textveil.errors.InvalidParameterError: 1 original texts but 2 released texts; a utility task compares each text with its own release
    """
    from textveil.errors import InvalidParameterError

    if len(originals) != len(releases):
        raise InvalidParameterError(
            f"{len(originals)} original texts but {len(releases)} released texts; "
            "a utility task compares each text with its own release"
        )
    for other in others:
        if len(other) != len(originals):
            raise InvalidParameterError(f"{len(originals)} texts but {len(other)} labels; give one label per text")
    if not originals:
        raise InvalidParameterError("no texts to compare; a utility task needs at least one text and its release")
