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

import functools
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
from textveil.errors import InputError, InvalidParameterError
from textveil.mechanisms.pivot import PivotKey, normalised_tokens, plan_code_words
from textveil.privacy.l_privacy import expected_tokens_recovered, frequency_attack_success

METHODS = tuple(MATCHERS)

REFERENCES = {
    "exact": "the released corpus's own word counts, which the attacker of l-privacy's claim knows",
    "known": "the word counts of the attacker's known texts",
    "wordfreq": "wordfreq's public English word frequencies, of words only (no punctuation)",
}
"""What a frequency attacker may know of word counts, by name (:func:`frequency_recovery`)."""


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


@functools.lru_cache(maxsize=1)
def _wordfreq_reference() -> Mapping[str, float]:
    """wordfreq's frequencies, read once per process (a few seconds): a sweep attacks many releases."""
    return reference_counts(source="wordfreq")


def frequency_recovery(token_lists: Sequence[Sequence[str]], key: PivotKey, *,
                       known_texts: Sequence[str] | None = None, references: Sequence[str] = tuple(REFERENCES),
                       part_size: int | None = None, method: str = "majority", min_class: int = 20
                       ) -> dict[str, Any]:
    """What frequency analysis recovers of one PIVOT release (its token lists of code words),
    scored with its ``key``: the report the evaluation harness puts beside its stylometric attacks.

    The attacker knows the mechanism and its l (the key's), runs PIVOT's public plan on the word
    counts it knows (each of ``references``: :data:`REFERENCES`; ``known`` reads ``known_texts``)
    and guesses each code word's word from its count (``method``; ``majority``, the default, is
    the best guess from a count: code words of one count are exchangeable to this attacker, so
    in each count class it is right at most as often as the class's largest owner, which GOMM
    keeps at or below 1/l: with any reference, the share of tokens it decodes is at most 1/l).

    Returns plain data: ``claim`` (1/l), ``success_bound`` (this release's worst count class: the
    largest chance of a right guess of any code word for the attacker who knows the counts, exact),
    ``tokens_recoverable`` (the share of tokens that attacker decodes, exact), and per reference the
    attack's measured ``tokens_recovered``, ``types_recovered`` and best count class (of at least
    ``min_class`` code words; see :func:`~textveil.attacks.frequency.score_recovery`), or the
    ``error`` that stopped it (PIVOT's plan cannot reach l on a reference whose commonest word is
    too common); ``tokens_recovered_max`` is the most any reference decoded.

    >>> from textveil.mechanisms.pivot import Pivot
    >>> texts = ["the cat sat on the mat", "the dog sat on the log", "a cat and a dog"] * 20
    >>> release = Pivot(l=2, seed=0).encode(texts)
    >>> found = frequency_recovery([r.text.split() for r in release.releases], release.key, known_texts=texts,
    ...                            references=("exact", "known"))
    >>> found["claim"], found["tokens_recovered_max"] <= found["claim"]
    (0.5, True)
    >>> found["references"]["exact"]["tokens_recovered"] == found["tokens_recoverable"]
    True
    """
    unknown = sorted(set(references) - set(REFERENCES))
    if unknown:
        raise InvalidParameterError(f"unknown reference '{unknown[0]}'; use {', '.join(REFERENCES)}")
    plan = key.plan()
    decoder = key.decoder
    found: dict[str, Any] = {
        "l": key.l, "claim": 1.0 / key.l, "method": method, "min_class": min_class,
        "attacker": "knows the mechanism and l, runs its public plan on the word counts it knows, and guesses each "
                    "code word's word from the code word's count; scored with the key",
        "success_bound": frequency_attack_success(plan), "tokens_recoverable": expected_tokens_recovered(plan),
        "references": {},
    }
    for name in references:
        entry: dict[str, Any] = {"description": REFERENCES[name]}
        try:
            if name == "exact":
                counts = reference_counts([[decoder[code] for code in tokens] for tokens in token_lists])
            elif name == "known":
                if known_texts is None:
                    raise InputError("no known texts were given")
                counts = reference_counts([normalised_tokens(text) for text in known_texts])
            else:
                counts = _wordfreq_reference()
            guesses = frequency_guesses(token_lists, counts, l=key.l, part_size=part_size, method=method)
        except (InputError, InvalidParameterError, ImportError) as error:
            found["references"][name] = {**entry, "error": str(error)}
            continue
        score = score_guesses([(guesses, key, token_lists)], min_class=min_class).to_dict()
        entry.update({field: score[field] for field in ("tokens_recovered", "types_recovered", "max_class_success",
                                                         "max_class_upper", "max_class", "tokens", "code_words",
                                                         "word_types")})
        found["references"][name] = entry
    measured = [entry["tokens_recovered"] for entry in found["references"].values() if "tokens_recovered" in entry]
    found["tokens_recovered_max"] = max(measured) if measured else None
    return found
