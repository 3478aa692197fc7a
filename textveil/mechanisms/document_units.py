"""A document's units: how a text of any length is cut into the pieces a language model rewrites,
one prompt each, and how their replies are joined again.

The cut is a public rule that reads nothing but the text and the model's tokenizer (no
randomness, no private parameter), so how many units a text has is a public function of it: what
a rewriting mechanism names as released unprotected.

1. **Paragraphs**: a paragraph ends at an empty line, or at a line break that follows a sentence's
   end (``.``, ``!``, ``?``, ``…``, a closing quote or bracket after them). A line break inside a
   sentence (hard-wrapped text) does not end one.
2. **Sentences** (:func:`textveil.text.sentences.split_sentences`) cut a paragraph longer than a
   unit may be (``max_tokens`` model tokens) into runs of whole sentences, each as long as fits.
3. **Words**, then **token windows**, cut a sentence longer than that: runs of whole words, and a
   word longer than a unit (a run with no space) into windows of ``max_tokens`` tokens. A cut
   never splits a placeholder (``<PERSON>``).

Then, by ``unit``:

- ``paragraph``: each paragraph (or each piece of a long one) is a unit;
- ``sentence``: each sentence (or each piece of a long one) is a unit;
- ``text``: consecutive paragraphs packed into as few units as ``max_tokens`` allows (a short text
  is one unit, the whole of it).

The release has one paragraph per unit: the replies joined by an empty line, in order
(:data:`UNIT_SEPARATOR`), so the release copies the number of units and nothing else of the
input's layout.

>>> counted = lambda text: len(text.split())  # a stand-in tokenizer: one token a word
>>> article = "Shares rose. Bonds fell.\\nOil was flat.\\n\\nAnalysts said little."
>>> paragraphs(article)
['Shares rose. Bonds fell.', 'Oil was flat.', 'Analysts said little.']
>>> document_units(article, "paragraph", 4, counted)
['Shares rose. Bonds fell.', 'Oil was flat.', 'Analysts said little.']
>>> document_units(article, "paragraph", 3, counted)
['Shares rose.', 'Bonds fell.', 'Oil was flat.', 'Analysts said little.']
>>> document_units(article, "sentence", 2, counted)
['Shares rose.', 'Bonds fell.', 'Oil was', 'flat.', 'Analysts said', 'little.']
>>> document_units(article, "text", 7, counted)
['Shares rose. Bonds fell.\\n\\nOil was flat.', 'Analysts said little.']
>>> paragraphs("a line cut\\nin the middle of a sentence.")
['a line cut\\nin the middle of a sentence.']
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from textveil.text.placeholders import PLACEHOLDER_PATTERN
from textveil.text.sentences import split_sentences

UNITS = ("paragraph", "sentence", "text")
"""The public rules a rewriter cuts a document by (the ``unit`` parameter)."""
UNIT_SEPARATOR = "\n\n"
"""What joins the units' replies in a release: one paragraph per unit."""

TokenCounter = Callable[[str], int]
"""How many model tokens a piece of text is (the model's tokenizer, without special tokens)."""
TokenWindows = Callable[[str, int], list[str]]
"""A piece of text cut into consecutive windows of at most n model tokens each."""

_ENDS_SENTENCE = re.compile(r"[.!?\u2026]['\"\u2019\u201d)\]]?\Z")
_WORD = re.compile(rf"{PLACEHOLDER_PATTERN}|\S+")


def paragraphs(text: str) -> list[str]:
    """The non-empty paragraphs of ``text``, in order, stripped (rule 1 of the module's docstring)."""
    parts = re.split(r"\n[ \t\f\v]*\n\s*", text.replace("\r\n", "\n").replace("\r", "\n"))
    found: list[str] = []
    for part in parts:
        lines = part.split("\n")
        current: list[str] = []
        for line in lines:
            current.append(line)
            if _ENDS_SENTENCE.search(line.rstrip()):
                found.append("\n".join(current))
                current = []
        if current:
            found.append("\n".join(current))
    return [paragraph.strip() for paragraph in found if paragraph.strip()]


def _pack(pieces: list[str], counts: list[int], max_tokens: int, joiner: str) -> list[str]:
    """Consecutive ``pieces`` joined by ``joiner`` into runs of at most ``max_tokens`` tokens (the
    sum of their counts; each piece fits on its own)."""
    runs: list[str] = []
    current: list[str] = []
    total = 0
    for piece, count in zip(pieces, counts):
        if current and total + count > max_tokens:
            runs.append(joiner.join(current))
            current, total = [], 0
        current.append(piece)
        total += count
    if current:
        runs.append(joiner.join(current))
    return runs


def _words_then_windows(sentence: str, max_tokens: int, count: TokenCounter,
                        windows: TokenWindows | None) -> list[str]:
    """A sentence longer than a unit: runs of whole words, and a word longer than a unit in windows."""
    words = _WORD.findall(sentence)
    pieces: list[str] = []
    for word in words:
        if count(word) <= max_tokens:
            pieces.append(word)
        elif windows is not None:
            pieces.extend(windows(word, max_tokens))
        else:  # no tokenizer to cut by: characters, as many as tokens allowed (a token is at least one)
            pieces.extend(word[i:i + max_tokens] for i in range(0, len(word), max_tokens))
    return _pack(pieces, [count(" " + piece) for piece in pieces], max_tokens, " ")


def _pieces_of_paragraph(paragraph: str, max_tokens: int, count: TokenCounter,
                         windows: TokenWindows | None) -> list[str]:
    """A paragraph as pieces of at most ``max_tokens`` tokens: itself, else runs of sentences,
    else runs of words, else token windows."""
    if count(paragraph) <= max_tokens:
        return [paragraph]
    pieces = list(_sentence_pieces(paragraph, max_tokens, count, windows))
    return _pack(pieces, [count(" " + piece) for piece in pieces], max_tokens, " ")


def _sentence_pieces(paragraph: str, max_tokens: int, count: TokenCounter,
                     windows: TokenWindows | None) -> Iterator[str]:
    """A paragraph's sentences, each one longer than a unit as runs of words (or token windows)."""
    for sentence in split_sentences(paragraph):
        if count(sentence) <= max_tokens:
            yield sentence
        else:
            yield from _words_then_windows(sentence, max_tokens, count, windows)


def iter_document_units(text: str, unit: str, max_tokens: int, count: TokenCounter,
                        windows: TokenWindows | None = None) -> Iterator[str]:
    """The units of ``text`` in order (see the module's docstring); none for an empty text.

    ``count`` gives a piece's length in model tokens; ``windows`` cuts a piece with no space in it
    by tokens (without it, by characters)."""
    if unit not in UNITS:
        raise ValueError(f"unknown unit {unit!r}: give one of {', '.join(UNITS)}")
    if max_tokens < 1:
        raise ValueError(f"a unit holds at least one token, got max_tokens={max_tokens}")
    found = paragraphs(text)
    if unit == "sentence":
        for paragraph in found:
            yield from _sentence_pieces(paragraph, max_tokens, count, windows)
        return
    if unit == "paragraph":
        for paragraph in found:
            yield from _pieces_of_paragraph(paragraph, max_tokens, count, windows)
        return
    # text: paragraphs packed, each counted with the separator that joins it to the one before
    pieces = [piece for paragraph in found for piece in _pieces_of_paragraph(paragraph, max_tokens, count, windows)]
    yield from _pack(pieces, [count(UNIT_SEPARATOR + piece) for piece in pieces], max_tokens, UNIT_SEPARATOR)


def document_units(text: str, unit: str, max_tokens: int, count: TokenCounter,
                   windows: TokenWindows | None = None) -> list[str]:
    """:func:`iter_document_units` as a list."""
    return list(iter_document_units(text, unit, max_tokens, count, windows))


def join_units(replies: list[str]) -> str:
    """The release of a document: its units' replies, in order, one paragraph each (empty ones left out).

    >>> join_units(["Shares went up.", "", "Analysts were quiet."])
    'Shares went up.\\n\\nAnalysts were quiet.'
    """
    return UNIT_SEPARATOR.join(reply.strip() for reply in replies if reply.strip())
