"""Sentences by a public rule: a text cut after each run of sentence-ending marks (``.``, ``!``,
``?``, ``…``) that is followed by whitespace, and at every line break.

The rule is fixed and reads nothing but the text, so where it cuts is a public function of the
input (what a mechanism that rewrites sentence by sentence names as released: how many sentences
the text has).

>>> split_sentences("It rained. We stayed in!  Did you?\\nYes")
['It rained.', 'We stayed in!', 'Did you?', 'Yes']
>>> split_sentences("Mr. Smith left... then")  # a crude rule: abbreviations and ellipses cut too
['Mr.', 'Smith left...', 'then']
>>> split_sentences("   ")
[]
"""

from __future__ import annotations

import re

_BOUNDARY = re.compile(r"(?<=[.!?\u2026])\s+|\s*\n\s*")


def split_sentences(text: str) -> list[str]:
    """The non-empty sentences of ``text``, in order, stripped."""
    return [part.strip() for part in _BOUNDARY.split(text) if part.strip()]
