"""Typed character n-grams (Sapkota, Bethard, Montes-y-Gómez & Solorio 2015, "Not all
character n-grams are created equal: a study in authorship attribution").

Every character n-gram of a text is labelled with what it covers, and the feature is the
(category, n-gram) pair: "the" as a whole word and "the" inside "other" count apart. The
ten categories fall into three classes:

* affix: ``prefix`` / ``suffix`` (the first / last n characters of a longer word),
  ``space-prefix`` / ``space-suffix`` (an n-gram that begins / ends with a space);
* word: ``whole-word`` (a word of exactly n characters), ``mid-word`` (inside a word,
  touching neither its first nor its last character), ``multi-word`` (a space in the middle);
* punct: ``beg-punct`` (punctuation first, none in the middle), ``mid-punct`` (punctuation
  in the middle), ``end-punct`` (punctuation last, none before).

A word is a run of letters and digits; punctuation is every other character but whitespace
(so "old-fashioned" is two words joined by a mark, and "-fa" is ``beg-punct``). The paper's
rules leave two cases open; here punctuation decides first (an n-gram with punctuation and a
space is a punct n-gram, as the affix and word classes hold none), and an n-gram with
punctuation at both ends only is ``beg-punct``. The edges of the text count as spaces.

>>> grams = TypedCharNgrams(3)("an old-fashioned one.")
>>> grams[:8]
['space-suffix:an ', 'multi-word:n o', 'space-prefix: ol', 'whole-word:old', 'end-punct:ld-', 'mid-punct:d-f', 'beg-punct:-fa', 'prefix:fas']
>>> grams[-6:]
['suffix:ned', 'space-suffix:ed ', 'multi-word:d o', 'space-prefix: on', 'whole-word:one', 'end-punct:ne.']
"""

from __future__ import annotations

import itertools
import operator
import re
from functools import lru_cache

from textveil.errors import InvalidParameterError

CATEGORIES = (
    "prefix", "suffix", "space-prefix", "space-suffix",
    "whole-word", "mid-word", "multi-word",
    "beg-punct", "mid-punct", "end-punct",
)
"""The ten categories of Sapkota et al. (2015), affix, word and punct classes in that order."""

_WORD_CHARACTER = re.compile(r"[^\W_]")
_SPACE = re.compile(r"\s")


class _CharacterClasses(dict):
    """Code point -> class letter for ``str.translate``, filled on first sight of a character:
    translating is a hundred times faster than matching runs of classes with a regex."""

    def __missing__(self, code: int) -> str:
        character = chr(code)
        letter = "w" if _WORD_CHARACTER.match(character) else "s" if _SPACE.match(character) else "p"
        self[code] = letter
        return letter


_CLASSES = _CharacterClasses()


def character_classes(text: str) -> str:
    """A string as long as ``text``: ``w`` for a letter or digit, ``s`` for whitespace, ``p``
    for anything else.

    >>> character_classes("Hi, you 2!")
    'wwpswwwswp'
    """
    return text.translate(_CLASSES)


def category(window: str) -> str:
    """The category of an n-gram from the classes of its characters, with one more on each
    side (``window`` = before + n-gram + after, from :func:`character_classes`).

    >>> category("swwws"), category("swwww"), category("wwwws"), category("wwwww")
    ('whole-word', 'prefix', 'suffix', 'mid-word')
    >>> category("wwsws"), category("wwpws"), category("wwwpw")
    ('multi-word', 'mid-punct', 'end-punct')
    """
    before, gram, after = window[0], window[1:-1], window[-1]
    if "p" in gram:
        if "p" in gram[1:-1]:
            return "mid-punct"
        return "beg-punct" if gram[0] == "p" else "end-punct"
    if gram[0] == "s":
        return "space-prefix"
    if gram[-1] == "s":
        return "space-suffix"
    if "s" in gram:
        return "multi-word"
    starts, ends = before != "w", after != "w"
    if starts and ends:
        return "whole-word"
    if starts:
        return "prefix"
    return "suffix" if ends else "mid-word"


@lru_cache(maxsize=None)
def _labels(n: int) -> dict[str, str]:
    """Every window of n + 2 character classes -> its category and a colon."""
    return {"".join(w): f"{category(''.join(w))}:" for w in itertools.product("wsp", repeat=n + 2)}


class TypedCharNgrams:
    """A scikit-learn analyzer (``CountVectorizer(analyzer=TypedCharNgrams(3))``): a text's
    character ``n``-grams, each prefixed with its category and a colon (see the module notes).

    Case is kept, as for the untyped character n-grams. A class rather than a function, so
    that a fitted vectorizer pickles and ``n`` shows in its repr.

    >>> TypedCharNgrams(3)("Yes, sir!")
    ['whole-word:Yes', 'end-punct:es,', 'mid-punct:s, ', 'beg-punct:, s', 'space-prefix: si', 'whole-word:sir', 'end-punct:ir!']
    """

    def __init__(self, n: int = 3) -> None:
        # The mid-word and mid-punct categories need a middle.
        if n < 3:
            raise InvalidParameterError(f"typed character n-grams need n of at least 3, got {n}")
        self.n = n

    def __call__(self, text: str) -> list[str]:
        n, labels = self.n, _labels(self.n)
        classes = f"s{character_classes(text)}s"
        positions = range(len(text) - n + 1)
        # A table of every window and flat comprehensions: no Python function call per n-gram.
        return list(map(operator.add, map(labels.__getitem__, [classes[i:i + n + 2] for i in positions]),
                        [text[i:i + n] for i in positions]))

    def __repr__(self) -> str:
        return f"TypedCharNgrams({self.n})"
