"""Phrases about the task, which a reply drawn on a public base may not write.

Asked to write from a document, a small model often writes *about* it ("Here is a rewritten
version...", "This post ...", "Sure, ..."): a remark that keeps nothing of the text. The public-base
draw (:mod:`textveil.mechanisms.public_base`) leaves such phrases out by a public rule: at each step
a token that would complete one of :data:`TASK_PHRASES` (as the model's tokenizer writes it, after
the reply's last tokens) is not drawn. The rule reads only the reply drawn so far, which is released
output, and a fixed public list, so it changes no likelihood ratio: the draw is the same exponential
mechanism on a public base over the tokens the rule allows (the Guarantee names the rule).

A phrase can still be spelt by other tokens than the tokenizer's own ("Her" + "e"); the rule is a
public filter for fluency, not a privacy measure, and the describing share of every comparison
counts what passes it.

>>> from textveil.models.toy_language_model import toy_language_model
>>> toy = toy_language_model(["here", "is", "my", "dog", "sure"])
>>> ban = PhraseBan.for_model(toy, ("here is", "sure"))
>>> [toy.decode([token]) for token in sorted(ban.after(toy.encode("here")))]  # "is" after "here", "sure" anywhere
['is', 'sure']
>>> [toy.decode([token]) for token in sorted(ban.after(toy.encode("my dog")))]
['sure']
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from textveil.models.engines.batching import SentenceStop

_OPENERS = ("Here is", "Here's", "Here are", "Sure", "Certainly", "Of course", "Absolutely", "This post",
            "This blog post", "This text", "This passage", "In this post")
_ANY_CASE = ("rewritten", "rewrite", "rewriting", "paraphrase", "paraphrased", "paraphrasing", "rephrase",
             "rephrased", "rephrasing", "in your own words", "the original text", "the original post",
             "the given text", "the text", "the passage", "your text", "your post", "in simpler terms", "in summary",
             "to summarize", "to summarise")

TASK_PHRASES: tuple[str, ...] = _OPENERS + _ANY_CASE + tuple(
    phrase[0].upper() + phrase[1:] for phrase in _ANY_CASE)
"""The phrases a reply drawn on a public base may not write, each alone or after a space, in the
case given: openers that announce an answer ("Here is", "Sure"), words about rewriting, and the
subjects of a remark about the input ("the text", "your post"), fixed before any private text was
read. They follow :func:`textveil.utility.describing.describes`'s public list, which counts a
release that writes about its input."""


def phrases_digest(phrases: Iterable[str] = TASK_PHRASES) -> str:
    """A short digest of the phrase list (a release's fingerprint holds it: another list, another
    release).

    >>> len(phrases_digest())
    16
    """
    return hashlib.sha256("\n".join(phrases).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class PhraseBan:
    """For each run of tokens that starts a banned phrase, the tokens that would complete it (the
    empty run: phrases of one token, banned anywhere)."""

    completing: dict[tuple[int, ...], frozenset[int]]
    longest: int
    """The longest run looked up: the longest phrase's tokens but its last."""

    @classmethod
    def for_model(cls, language_model: Any, phrases: Sequence[str] = TASK_PHRASES) -> PhraseBan:
        """The ban of ``phrases`` in ``language_model``'s tokens, each phrase alone and after a
        space (computed once per model and list); a phrase its tokenizer spells with the unknown
        token is left out."""
        cache = language_model.__dict__.setdefault("_phrase_bans", {})
        key = tuple(phrases)
        if key not in cache:
            completing: dict[tuple[int, ...], set[int]] = {}
            unknown = getattr(getattr(language_model, "tokenizer", None), "unk_token_id", None)
            for phrase in phrases:
                for spelt in (phrase, f" {phrase}"):
                    tokens = tuple(language_model.encode(spelt))
                    if tokens and unknown not in tokens:  # a phrase the tokenizer cannot spell is never written
                        completing.setdefault(tokens[:-1], set()).add(tokens[-1])
            cache[key] = cls({run: frozenset(ends) for run, ends in completing.items()},
                             max((len(run) for run in completing), default=0))
        return cache[key]

    def after(self, reply: Sequence[int]) -> frozenset[int]:
        """The tokens that may not come after ``reply`` (the reply's tokens so far)."""
        banned: set[int] = set()
        for length in range(min(self.longest, len(reply)) + 1):
            run = tuple(reply[len(reply) - length:]) if length else ()
            banned |= self.completing.get(run, frozenset())
        return frozenset(banned)


class ReplyTails:
    """The last tokens of every reply being drawn, keyed by unit, so that each step knows which
    candidates :class:`PhraseBan` leaves out. A reply is forgotten once it ends (an end token, or
    ``limit`` tokens, or where ``stop``, the decoder's sentence stop, ends it): a corpus of a
    million units keeps only the tails in flight.

    >>> import numpy as np
    >>> from textveil.models.toy_language_model import toy_language_model
    >>> toy = toy_language_model(["here", "is", "my", "dog"])
    >>> ban = PhraseBan.for_model(toy, ("here is",))
    >>> candidates = np.arange(toy.vocabulary_size)
    >>> tails = ReplyTails(ban, candidates, ends=(), limit=5)
    >>> [p.size for p in tails.banned([0])]  # nothing drawn yet: "here" is allowed
    [0]
    >>> tails.drawn([0], toy.encode("here"))
    >>> [toy.decode(candidates[p].tolist()) for p in tails.banned([0])]
    ['is']
    """

    def __init__(self, ban: PhraseBan, candidates: np.ndarray, ends: Iterable[int], limit: int,
                 stop: SentenceStop | None = None) -> None:
        self.ban = ban
        self.stop = stop
        self.candidates = np.asarray(candidates, dtype=np.int64)
        self.ends = frozenset(int(token) for token in ends)
        self.limit = int(limit)
        self._tails: dict[int, list[int]] = {}
        self._counts: dict[int, int] = {}
        self._positions: dict[frozenset[int], np.ndarray] = {}

    def banned(self, keys: Sequence[int]) -> list[np.ndarray]:
        """For each reply in ``keys``, the positions in the candidates that may not come next."""
        return [self._as_positions(self.ban.after(self._tails.get(int(key), ()))) for key in keys]

    def drawn(self, keys: Sequence[int], tokens: Sequence[int]) -> None:
        """Reply ``keys[i]`` drew ``tokens[i]``."""
        for key, token in zip(keys, tokens):
            key, token = int(key), int(token)
            kept = self._counts.get(key, 0)
            tail = self._tails.setdefault(key, [])
            stopped = self.stop is not None and self.stop.ends(kept, tail[-1] if tail else None, token)
            if token in self.ends or kept + 1 >= self.limit or stopped:
                self._tails.pop(key, None)
                self._counts.pop(key, None)
                continue
            tail.append(token)
            # the ban reads the last `longest` tokens, the sentence stop the last one
            del tail[: max(0, len(tail) - max(self.ban.longest, 1))]
            self._counts[key] = kept + 1

    def _as_positions(self, tokens: frozenset[int]) -> np.ndarray:
        if tokens not in self._positions:
            ids = np.array(sorted(tokens), dtype=np.int64)
            places = np.searchsorted(self.candidates, ids).clip(max=max(self.candidates.size - 1, 0))
            self._positions[tokens] = places[self.candidates[places] == ids] if ids.size else ids
        return self._positions[tokens]
