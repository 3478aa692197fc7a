"""A lossless tokenizer: words, whitespace and everything else, in order.

``detokenize(tokenize(text)) == text`` holds for every string, because every character
belongs to exactly one token and tokens are never normalised in place. Normalisation for
look-ups (lower case, curly apostrophes) is done by :func:`word_key`, on a copy.

>>> tokens = tokenize("Don't panic, Mr. O'Neil!\\r\\n")
>>> [t.text for t in tokens if t.kind is TokenKind.WORD]
["Don't", 'panic', 'Mr', "O'Neil"]
>>> detokenize(tokens) == "Don't panic, Mr. O'Neil!\\r\\n"
True
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Iterable

from textveil.text.placeholders import PLACEHOLDER_PATTERN, is_placeholder, placeholder_key


class TokenKind(enum.Enum):
    WORD = "word"
    SPACE = "space"
    OTHER = "other"  # punctuation, symbols, emoji: never perturbed


# A word is a run of letters or digits, optionally joined by apostrophes ("don't",
# "O'Neil", "Reuters'"-less); hyphens split words because embedding vocabularies
# (wordfreq, GloVe) hold the parts, not the compounds.
# A placeholder of the entity stage ("<PERSON>") is one word too: every mechanism then treats it
# as one public token, never as the marks "<", ">" around a word (textveil.text.placeholders).
_WORD = rf"{PLACEHOLDER_PATTERN}|[^\W_]+(?:['\u2019][^\W_]+)*"
WORD_PATTERN = _WORD
"""The regular expression of one word token, for tools that take a pattern (scikit-learn)."""
_SPACE = r"\s+"
_TOKEN_PATTERN = re.compile(rf"(?P<word>{_WORD})|(?P<space>{_SPACE})|(?P<other>.)", re.DOTALL)
_WORD_PATTERN = re.compile(rf"{_WORD}\Z")


@dataclass(frozen=True, slots=True)
class Token:
    """One piece of a text; ``text`` is exactly the characters it covers."""

    text: str
    kind: TokenKind

    @property
    def is_word(self) -> bool:
        return self.kind is TokenKind.WORD


_KIND_OF_GROUP = {kind.value: kind for kind in TokenKind}


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into word, whitespace and other tokens, losing nothing."""
    kinds = _KIND_OF_GROUP  # a dict look-up: calling TokenKind(name) per token cost a third of the time
    return [Token(match.group(), kinds[match.lastgroup]) for match in _TOKEN_PATTERN.finditer(text)]


def detokenize(tokens: Iterable[Token]) -> str:
    """Join tokens back into text; the inverse of :func:`tokenize`."""
    return "".join(token.text for token in tokens)


_WORDS = re.compile(_WORD)


def find_words(text: str) -> list[str]:
    """The word tokens of ``text`` only, fast (no :class:`Token` objects are built).

    >>> find_words("Don't panic, Mr. O'Neil!")
    ["Don't", 'panic', 'Mr', "O'Neil"]
    """
    return _WORDS.findall(text)


def is_word(text: str) -> bool:
    """Whether ``text`` is one whole word token.

    >>> is_word("don't"), is_word("well-known"), is_word("")
    (True, False, False)
    """
    return bool(_WORD_PATTERN.match(text))


def word_key(word: str) -> str:
    """The form under which a word is looked up: lower case, straight apostrophes; a placeholder
    in capitals (the public rule's, not the writer's).

    >>> word_key("Don\u2019t"), word_key("<Person>")
    ("don't", '<PERSON>')
    """
    if word[:1] == "<" and is_placeholder(word):
        return placeholder_key(word)
    return word.replace("\u2019", "'").lower()


def first_rows_by_key(words: list[str]) -> dict[str, int]:
    """Each look-up key (:func:`word_key`) to the first row whose word has it: the index of a
    vocabulary, built at C speed (a vectors file may hold millions of words, read at every run).

    >>> first_rows_by_key(["Apple", "apple", "Don\u2019t"]) == {"apple": 0, "don't": 2}
    True
    """
    joined = "\n".join(words)
    keys = joined.replace("\u2019", "'").lower().split("\n")  # word_key over all words at once
    if len(keys) != len(words):  # a word holding a line break: one at a time
        keys = [word_key(word) for word in words]
    elif "<" in joined:  # placeholders keep their capitals
        keys = [placeholder_key(word) if word[:1] == "<" and is_placeholder(word) else key
                for word, key in zip(words, keys)]
    return dict(zip(reversed(keys), range(len(keys) - 1, -1, -1)))  # an earlier row overwrites a later one
