"""The public layout: what a release looks like when nothing but its tokens comes from the input.

A release that copies the input's casing, spacing, line breaks and punctuation carries the
writer's style whatever happens to the words (an attacker who released texts of their own with
the same mechanism identified 61% of 150 bloggers from such releases at epsilon 1, where every
word is random). In the public layout the input contributes only its sequence of tokens, words
and marks (punctuation, symbols, emoji), each of which the mechanism privatises; everything
else is written by the fixed rules of this module, which read only the released tokens:

* tokens are looked up in lower case (:func:`release_units`), so casing never reaches the
  mechanism, and whitespace is dropped, so spacing and line breaks never do;
* :func:`render_public_layout` joins released tokens with single spaces, attaches closing
  marks to what precedes them and opening marks to what follows, pairs quotes, joins digits
  around ``.``, ``,`` and ``:`` ("3.5", "1,000", "10:30"), capitalises the first word of each
  sentence and spells every word as a public casing table says (``"london" -> "London"``,
  ``"i" -> "I"``), and writes the whole text as one paragraph.

No randomness and no embeddings live here.

>>> release_units("Hello,   WORLD!\\n\\nI'm  here :)")
['hello', ',', 'world', '!', "i'm", 'here', ':', ')']
>>> render_public_layout(['hello', ',', 'world', '!', "i'm", 'here', ':', ')'], {"i'm": "I'm"})
"Hello, world! I'm here:)"
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence

import re

from textveil.text.tokenize import WORD_PATTERN, word_key

PUBLIC_MARKS: tuple[str, ...] = tuple(mark for mark in string.punctuation if mark not in "<>")
"""The marks a release in the public layout may contain: ASCII punctuation and symbols but the
angle brackets, which belong to the entity stage's placeholders (``<PERSON>``, one token): a
release never holds a bare one that reads as half a placeholder. Any other mark of the input
(curly quotes, dashes, emoji, a bare "<") is privatised into one of these or into a word, so
typographic habits do not survive as themselves."""

_UNITS = re.compile(rf"({WORD_PATTERN})|(\S)")
_CLOSING = frozenset(".,!?;:)]}%")  # attach to the token before
_OPENING = frozenset("([{$#@")  # attach to the token after ("#tag", "@name", "$5")
_JOINING = frozenset("-/_~^\\")  # attach on both sides ("well-known", "and/or")
_QUOTES = frozenset("\"'`")  # paired: an opening one attaches after, a closing one before
_SENTENCE_END = frozenset(".!?")
_NUMBER_JOINERS = frozenset(".,:")  # "3.5", "1,000", "10:30"


def release_units(text: str) -> list[str]:
    """The tokens of ``text`` that a public-layout release privatises: word tokens in lower
    case (:func:`~textveil.text.tokenize.word_key`) and every other non-space character,
    in order. Whitespace is dropped.

    >>> release_units("Don\u2019t  STOP\\tme now...")
    ["don't", 'stop', 'me', 'now', '.', '.', '.']
    """
    # One regular expression pass gives exactly tokenize()'s word and other tokens (whitespace is
    # what neither alternative matches), without building a Token per character: 10x faster on
    # a corpus, which PIVOT maps whole.
    return [word_key(word) if word else mark for word, mark in _UNITS.findall(text)]


def is_mark(token: str) -> bool:
    """Whether a released token is a mark (one character that is neither a letter, a digit
    nor a space) rather than a word.

    >>> is_mark("!"), is_mark("ok"), is_mark("7")
    (True, False, False)
    """
    return len(token) == 1 and not token.isalnum() and not token.isspace()


def spell_word(word: str, casing: Mapping[str, str]) -> str:
    """A released word as the public casing table spells it; "i" and its contractions are
    always capitalised (the table holds "I" but not every "i'd").

    >>> spell_word("paris", {"paris": "Paris"}), spell_word("i've", {}), spell_word("cat", {})
    ('Paris', "I've", 'cat')
    """
    spelled = casing.get(word, word)
    if spelled == word and (word == "i" or word.startswith("i'")):
        return "I" + word[1:]
    return spelled


def _capitalise(word: str) -> str:
    return word[:1].upper() + word[1:]


def render_public_layout(tokens: Sequence[str], casing: Mapping[str, str]) -> str:
    """Write released tokens as text by the fixed public rules of this module.

    ``casing`` maps a lower-case word to its usual spelling (see
    :func:`textveil.text.casing.public_casing_table`); words it does not hold stay in lower
    case. The result depends on ``tokens`` and ``casing`` only.

    >>> render_public_layout(["he", "said", '"', "it", "costs", "$", "3", ".", "5", '"', "."], {})
    'He said "it costs $3.5".'
    >>> render_public_layout(["well", "-", "known", "(", "ok", ")", "?", "yes"], {})
    'Well-known (ok)? Yes'
    """
    pieces: list[str] = []
    attach_next = True  # no space before the next token (start of text, or after an opening mark)
    capitalise_next = True
    open_quotes: set[str] = set()
    for position, token in enumerate(tokens):
        if not is_mark(token):
            word = spell_word(token, casing)
            pieces.append(("" if attach_next else " ") + (_capitalise(word) if capitalise_next else word))
            attach_next = capitalise_next = False
            continue
        before = pieces[-1] if pieces else ""
        after = tokens[position + 1] if position + 1 < len(tokens) else ""
        between_digits = token in _NUMBER_JOINERS and before[-1:].isdigit() and after[:1].isdigit()
        if token in _QUOTES:
            closing = token in open_quotes
            open_quotes.symmetric_difference_update({token})
            space_before, attach_next = (not closing and not attach_next), not closing
        elif between_digits or token in _JOINING:
            space_before, attach_next = False, True
        elif token in _CLOSING:
            space_before, attach_next = False, False
        elif token in _OPENING:
            space_before, attach_next = not attach_next, True
        else:
            space_before, attach_next = not attach_next, False
        pieces.append((" " if space_before and pieces else "") + token)
        if token in _SENTENCE_END and not between_digits:
            capitalise_next = True
    return "".join(pieces)
