"""Long texts measured over all of them: the parts of a text that a measure with a short reach
(MiniLM reads at most 256 word pieces, the fluency score its first 128 tokens) reads one at a time.

- :func:`aligned_parts` pairs a text with its release part by part: paragraph by paragraph where
  both have as many paragraphs (a rewriter that releases one paragraph per unit of a
  paragraph-cut input), else the same number of windows of consecutive words, cut at the same
  proportions of each (part i of the original against part i of the release). A short text is
  its own single part, so short texts are measured exactly as before.
- :func:`word_windows` cuts one text into windows of at most ``words`` words (for a measure that
  needs no alignment: fluency, the describing share).

>>> aligned_parts("One two.\\n\\nThree four.", "Uno dos.\\n\\nTres cuatro.", words=2)
[('One two.', 'Uno dos.'), ('Three four.', 'Tres cuatro.')]
>>> aligned_parts("a b c d e f", "u v w", words=2)
[('a b', 'u'), ('c d', 'v'), ('e f', 'w')]
>>> word_windows("a b c d e", words=2)
['a b', 'c d', 'e']
>>> aligned_parts("short", "kurz")
[('short', 'kurz')]
"""

from __future__ import annotations

import math

PART_WORDS = 150
"""The most words of a part: about 200 MiniLM word pieces, inside its 256."""


def release_paragraphs(text: str) -> list[str]:
    """The non-empty paragraphs of a release, split at empty lines (a rewriter writes one per unit).

    >>> release_paragraphs("Shares rose.\\n\\n\\nBonds fell.")
    ['Shares rose.', 'Bonds fell.']
    """
    return [part.strip() for part in text.replace("\r\n", "\n").split("\n\n") if part.strip()]


def _windows(words: list[str], count: int) -> list[str]:
    """``words`` cut into ``count`` consecutive windows at the same proportions for any length."""
    bounds = [round(i * len(words) / count) for i in range(count + 1)]
    return [" ".join(words[bounds[i]:bounds[i + 1]]) for i in range(count)]


def aligned_parts(original: str, released: str, words: int = PART_WORDS) -> list[tuple[str, str]]:
    """Part i of ``original`` with part i of ``released`` (see the module's docstring)."""
    first, second = original.split(), released.split()
    if len(first) <= words and len(second) <= words:
        return [(original, released)]
    ours, theirs = release_paragraphs(original), release_paragraphs(released)
    if len(ours) == len(theirs) > 1 and all(len(p.split()) <= words for p in ours + theirs):
        return list(zip(ours, theirs))
    count = max(1, math.ceil(max(len(first), len(second)) / words))
    return list(zip(_windows(first, count), _windows(second, count)))


def word_windows(text: str, words: int = PART_WORDS) -> list[str]:
    """``text`` as consecutive windows of at most ``words`` words (itself when it is that short)."""
    found = text.split()
    if len(found) <= words:
        return [text]
    return [" ".join(found[start:start + words]) for start in range(0, len(found), words)]
