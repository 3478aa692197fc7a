"""Frequency analysis against a PIVOT release, as the owner measures it: the attacks of
:mod:`textveil.attacks.frequency` joined with the mechanism's public planning function (an
attacker who knows the mechanism runs it on the word counts it knows) and scored with the key.

Attacks never import a mechanism; this module is where the two meet.

>>> from textveil.mechanisms.pivot import Pivot, normalised_tokens
>>> texts = ["the cat sat on the mat", "the dog sat on the log", "a cat and a dog"] * 20
>>> release = Pivot(l=2, seed=0).encode(texts)
>>> tokens = [r.text.split() for r in release.releases]
>>> reference = reference_counts([normalised_tokens(t) for t in texts])
>>> guesses = frequency_guesses(tokens, reference, l=2)
>>> score = score_guesses([(guesses, release.key, tokens)], min_class=1)
>>> score.max_class_success <= 0.5 + 0.25  # 1/l, up to the sampling error of a small corpus
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from textveil.attacks.frequency import (
    MATCHERS,
    Planner,
    context_merging_attack,
    expected_slots,
    reference_from_corpus,
    reference_from_wordfreq,
    released_counts,
    score_recovery,
)
from textveil.errors import InputError
from textveil.mechanisms.pivot import PivotKey, plan_code_words

METHODS = tuple(MATCHERS)


def reference_counts(token_lists: Sequence[Sequence[str]] | None = None, source: str = "corpus") -> Mapping[str, float]:
    """What the attacker knows of word frequencies: the counts of ``token_lists`` (the original
    corpus, or any corpus the attacker holds) or ``wordfreq``'s public English frequencies."""
    if source == "wordfreq":
        return reference_from_wordfreq()
    if source != "corpus":
        raise InputError(f"unknown reference '{source}'; use corpus or wordfreq")
    if token_lists is None:
        raise InputError("a corpus reference needs the corpus whose counts the attacker knows (--corpus PATH)")
    return reference_from_corpus(token_lists)


def pivot_planner(l: int, part_size: int | None = None):
    """PIVOT's public planning function for an attacker who knows the mechanism and its l."""
    return lambda counts: plan_code_words(counts, l, part_size)


def frequency_guesses(token_lists: Sequence[Sequence[str]], reference: Mapping[str, float], *,
                      l: int | None = None, part_size: int | None = None, planner: Planner | None = None,
                      method: str = "assignment", context: bool = False, seed: int = 0,
                      **context_options: Any) -> dict[str, str]:
    """The attacker's guess (code word -> word) for every code word of a release.

    ``l`` given: the attacker knows the mechanism and expects PIVOT's parts (run on its
    reference counts); ``planner``: another mechanism's public plan (a baseline's); neither:
    it assumes a one-to-one cipher. ``context``: code words whose contexts agree are merged
    first (the context-merging attack)."""
    if method not in METHODS:
        raise InputError(f"unknown method '{method}'; use one of: {', '.join(METHODS)}")
    if l is not None:
        planner = pivot_planner(l, part_size)
    if context:
        return context_merging_attack(token_lists, reference, planner=planner, method=method, seed=seed,
                                      **context_options).guesses
    counts = released_counts(token_lists)
    slots = expected_slots(reference, int(sum(counts.values())), planner)
    return MATCHERS[method](counts, slots)


def score_guesses(runs: Sequence[tuple[Mapping[str, str], PivotKey, Sequence[Sequence[str]]]], min_class: int = 20):
    """Score guesses with the owner's key, pooled over runs of ``(guesses, key, released token lists)``."""
    return score_recovery([(guesses, key.decoder, released_counts(tokens)) for guesses, key, tokens in runs],
                          min_class=min_class)
