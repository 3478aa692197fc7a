"""How a batch of documents becomes the rows a language model decodes: each document cut into
units by its tokenizer (:mod:`textveil.mechanisms.document_units`), the units grouped in sections,
each unit a row with its own random stream, a section's rows written in order (each prompt after
the unit before it and its reply), and the public stop rules that end a unit's reply at a line
break or, once it is long enough, at a sentence's end. Every choice here is a function of the
texts and public constants alone, never of the batch.

>>> from textveil.mechanisms.sampling import make_rng
>>> plan = UnitPlan()
>>> plan.add(0, ["One.", "Two.", "Three."], make_rng(1), section=2)
>>> plan.add(1, ["Alone."], make_rng(2), section=2)
>>> plan.previous, plan.following, plan.rows_of_text
([None, 0, None, None], [1, None, None, None], {0: [0, 1, 2], 1: [3]})
"""

from __future__ import annotations

from typing import Any

import numpy as np

from textveil.mechanisms.base import ProgressCallback
from textveil.mechanisms.document_units import document_units
from textveil.mechanisms.sampling import child_generator
from textveil.models.engines.batching import SentenceStop

SECTION_UNITS = 8
"""How many consecutive units of a document form a section: a section's units are rewritten in
order, each prompt holding the unit before it and its reply; sections are rewritten side by side,
so a long document fills the engine's batches (a public constant: where sections start is a
function of the text alone, never of the batch)."""
CONTEXT_MARGIN = 16
"""Tokens added to the bound on a prompt with context (a reply's tokens may merge differently once
decoded to text and read again)."""


class UnitPlan:
    """The units of a batch of texts as rows: each row's unit, stream, the row before it in its
    section (None: a section's first) and the row after it."""

    def __init__(self) -> None:
        self.units: list[str] = []
        self.streams: list[np.random.Generator] = []
        self.previous: list[int | None] = []
        self.following: list[int | None] = []
        self.rows_of_text: dict[int, list[int]] = {}

    def add(self, text: int, units: list[str], stream: np.random.Generator, section: int = SECTION_UNITS) -> None:
        """Text number ``text``'s ``units`` as rows, in sections of ``section`` units, each with its
        own stream drawn in order from the text's ``stream``."""
        rows = []
        for k, unit in enumerate(units):
            row = len(self.units)
            first_of_section = k % section == 0
            self.units.append(unit)
            self.streams.append(child_generator(stream))
            self.previous.append(None if first_of_section else row - 1)
            self.following.append(None)
            if not first_of_section:
                self.following[row - 1] = row
            rows.append(row)
        if rows:
            self.rows_of_text[text] = rows


def model_units(language_model: Any, text: str, unit: str, max_tokens: int) -> list[str]:
    """The units of ``text`` by the public rule ``unit`` (:func:`document_units`), each at most
    ``max_tokens`` tokens of ``language_model``'s tokenizer, a run with no space in it cut into
    token windows."""
    return document_units(text, unit, max_tokens, lambda piece: len(language_model.encode(piece)),
                          lambda piece, size: token_windows(language_model, piece, size))


def token_windows(language_model: Any, piece: str, size: int) -> list[str]:
    """``piece`` cut into windows of at most ``size`` model tokens (a run with no space in it)."""
    ids = language_model.encode(piece)
    return [language_model.decode(ids[start:start + size]) for start in range(0, len(ids), size)]


def line_break_tokens(language_model: Any) -> tuple[int, ...]:
    """The model's tokens that hold a line break: a public stop rule ends a unit's reply at its
    first line break (a unit is one paragraph of the release; what a small model writes after a
    break is most often a remark about the task). Computed once per model."""
    cache = language_model.__dict__
    if "_line_break_tokens" not in cache:
        vocabulary = language_model.tokenizer.get_vocab()
        special = set(language_model.special_token_ids)
        found = sorted(index for index in vocabulary.values()
                       if index not in special and "\n" in language_model.decode([index]))
        cache["_line_break_tokens"] = tuple(found)
    return tuple(cache["_line_break_tokens"])


_CLOSERS = ".!?\u2026"
"""What ends a sentence; a closing quote or bracket may follow it in the same token."""
_AFTER_CLOSER = "\"')]\u201d\u2019"


def sentence_stop(language_model: Any, after: int) -> SentenceStop | None:
    """The public rule that ends a unit's reply at the first sentence's end after ``after``
    tokens (None for 0: no such rule). A token closes a sentence when its text ends with '.', '!',
    '?' or '...' (a quote or bracket may follow); the reply ends when the token drawn after it is
    written after a space (as the tokenizer decodes the pair), so "3.5" and "example.com" stay
    whole. Token sets computed once per model.

    >>> from textveil.models.toy_language_model import toy_language_model
    >>> toy = toy_language_model(["calm", "sea.", "Waves"])
    >>> stop = sentence_stop(toy, 4)
    >>> stop.after, sorted(toy.decode([t]) for t in stop.closing), toy.encode("Waves")[0] in stop.opening
    (4, ['sea.'], True)
    >>> sentence_stop(toy, 0) is None
    True
    """
    if after <= 0:
        return None
    cache = language_model.__dict__
    if "_sentence_tokens" not in cache:
        special = set(language_model.special_token_ids)
        ordinary = [index for index in sorted(language_model.tokenizer.get_vocab().values()) if index not in special]
        texts = {index: language_model.decode([index]) for index in ordinary}
        closing = [index for index, text in texts.items()
                   if "\n" not in text and text.strip() and text.rstrip(_AFTER_CLOSER).endswith(tuple(_CLOSERS))]
        opening: list[int] = []
        if closing:  # which tokens are written after a space when they follow a sentence's end
            stop = min(closing, key=lambda index: (texts[index].strip() != ".", index))
            width = len(language_model.decode([stop]))
            opening = [index for index in ordinary
                       if "\n" not in texts[index] and language_model.decode([stop, index])[width:width + 1].isspace()]
        cache["_sentence_tokens"] = (frozenset(closing), frozenset(opening))
    closing_ids, opening_ids = cache["_sentence_tokens"]
    return SentenceStop(int(after), closing_ids, opening_ids)


def stop_rule_words(max_new_tokens: int, end_after: int) -> str:
    """How a unit's reply ends, as a Guarantee says it.

    >>> stop_rule_words(64, 16)
    'at most L = 64 tokens, ended by an end token or a line break, both drawn like any other token, or, once it held 16 tokens, by a drawn token that opened a new sentence after one had closed (a public rule on the drawn tokens: that token is not kept)'
    """
    words = (f"at most L = {max_new_tokens} tokens, ended by an end token or a line break, both drawn like any "
             "other token")
    if end_after > 0:
        words += (f", or, once it held {end_after} tokens, by a drawn token that opened a new sentence after one had "
                  "closed (a public rule on the drawn tokens: that token is not kept)")
    return words


def units_progress(progress: ProgressCallback | None, plan: UnitPlan, texts: int) -> ProgressCallback | None:
    """``progress`` told in texts while the decoder counts finished units: after k of n units,
    k * texts / n texts are told (a fraction while one long document is written, so it shows
    progress; whole numbers where they are), all of them at the end."""
    if progress is None:
        return None
    total = len(plan.units)
    state = {"units": 0, "told": 0.0}

    def told(done: int) -> None:
        state["units"] += done
        due = float(texts) if state["units"] >= total else state["units"] * texts / total
        if due > state["told"]:
            step, state["told"] = due - state["told"], due
            progress(int(step) if float(step).is_integer() else step)

    return told
