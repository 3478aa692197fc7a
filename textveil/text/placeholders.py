"""Placeholders: what the entity stage writes in place of a name, a place or a contact detail
(``<PERSON>``, ``<LOCATION>``, ...), and the public rule that makes each one token to every
mechanism.

A placeholder is ``<`` + an entity type (a letter, then letters, digits, underscores) + ``>``;
its look-up form is in capitals whatever the case it was typed in, so a writer's "<grin>" and
"<GRIN>" are one token too and a release never depends on which they typed. The tokenizer reads
it as one word, so no mechanism sees ``<``, ``PERSON`` and ``>`` apart: emp used to
turn "in <LOCATION> today" into "untitled sedentary Falcons > today", and SynTF rated
"organization" as an article's top content word. What each mechanism then does with the token is
its own public rule (:attr:`textveil.mechanisms.base.Mechanism.placeholder_rule`), stated in the
Guarantee of every release that holds one.

A token-substitution mechanism's vocabulary holds the placeholders as entries
(:data:`PLACEHOLDER_TYPES`) only where an entity stage before it may write them (placeholders or
pseudonyms; never with ``--entities off`` or ``drop``, nor for a mechanism used alone), each
placed by the public words that describe its type (:func:`describing_words`): at the mean vector
of those the embeddings know. One the embeddings cannot place at a point of its own (they know
none of its words, or its point is a word's or an earlier placeholder's) is no entry, and goes
through the mechanism as a word outside the vocabulary
(:meth:`textveil.embeddings.WordEmbeddings.with_placeholders`). All of it is fixed before any text
is read.

>>> placeholder("PERSON"), is_placeholder("<PERSON>"), is_placeholder("<3"), is_placeholder("PERSON")
('<PERSON>', True, False, False)
>>> placeholder_key("<Person>")
'<PERSON>'

>>> describing_words("LOCATION"), describing_words("US_PASSPORT")
(('place', 'city', 'country'), ('us', 'passport'))
"""

from __future__ import annotations

import re

PLACEHOLDER_PATTERN = r"<[^\W\d_]\w*>"
"""The regular expression of one placeholder (the tokenizer's first word alternative)."""
_PLACEHOLDER = re.compile(rf"{PLACEHOLDER_PATTERN}\Z")

DESCRIBING_WORDS: dict[str, tuple[str, ...]] = {
    "PERSON": ("person", "someone", "name"),
    "LOCATION": ("place", "city", "country"),
    "ORGANIZATION": ("company", "organization", "agency"),
    "NRP": ("nationality", "religion", "group"),
    "EMAIL_ADDRESS": ("email", "address"),
    "PHONE_NUMBER": ("phone", "number"),
    "URL": ("website", "link"),
    "IP_ADDRESS": ("ip", "address", "computer"),
    "CREDIT_CARD": ("credit", "card", "number"),
    "IBAN_CODE": ("bank", "account", "number"),
    "US_SSN": ("social", "security", "number"),
    "DATE_TIME": ("date", "time"),
    "CUSTOM": ("name", "word"),
}
"""Each entity type the stage writes by default (and ``DATE_TIME``, ``CUSTOM``), with the public
English words its placeholder's vector is the mean of (those the embeddings know): near what it
stands for, at no word's own vector, so emp at a small epsilon writes "city" for ``<LOCATION>``
rather than a stray mark."""

PLACEHOLDER_TYPES: tuple[str, ...] = tuple(DESCRIBING_WORDS)
"""The types whose placeholders a vocabulary may hold as entries (a public, fixed list)."""


def placeholder(entity_type: str) -> str:
    """The placeholder of an entity type."""
    return f"<{entity_type}>"


def is_placeholder(token: str) -> bool:
    """Whether ``token`` is one whole placeholder."""
    return token[:1] == "<" and _PLACEHOLDER.match(token) is not None


def placeholder_key(token: str) -> str:
    """The look-up form of a placeholder: in capitals (the public rule's, not the writer's)."""
    return token.upper()


def describing_words(entity_type: str) -> tuple[str, ...]:
    """The public words that place a type's placeholder: listed, or the type's own parts."""
    return DESCRIBING_WORDS.get(entity_type) or tuple(part.lower() for part in entity_type.split("_") if part)


def placeholders() -> list[str]:
    """Every placeholder a vocabulary may hold as an entry, in a fixed order.

    >>> placeholders()[:2]
    ['<PERSON>', '<LOCATION>']
    """
    return [placeholder(t) for t in PLACEHOLDER_TYPES]
