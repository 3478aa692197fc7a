"""The calibration curves the page draws beside a mechanism's slider, as data.

emp gets its word-by-word curve (:func:`textveil.evaluation.calibration.calibrate`: the share
of words released unchanged, and how many substitutes a word gets). Every other mechanism with
a swept parameter that the service releases with (SynTF, and ER-AE or AE-DP when their models
are loaded) gets :func:`textveil.evaluation.calibration.calibrate_releases`: sample texts
released through the mechanism itself, a word counted wherever it appears in the text (not
position by position: such a mechanism writes a new text). Each curve names its
fields (``curves``), so the page draws either without knowing which it got.

Nothing here decides anything about privacy: the numbers are measured by releasing sample
text (the vocabulary's words, or the user's, which are never released or stored).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from textveil.errors import InputError
from textveil.text.tokenize import find_words, word_key

EMP_CURVES = [
    {"field": "unchanged_fraction", "axis": "share", "style": "unchanged",
     "label": "share of word tokens released unchanged", "reading": "of words come back unchanged"},
    {"field": "distinct_substitutes", "axis": "count", "style": "substitutes",
     "label": "distinct substitutes per word over the draws", "reading": "different substitutes per word"},
]
RELEASE_CURVES = [
    {"field": "words_from_text", "axis": "share", "style": "unchanged",
     "label": "share of a release's words taken from its text", "reading": "of a release's words come from its text"},
    {"field": "words_kept", "axis": "share", "style": "in-vocabulary",
     "label": "share of a text's words that appear in its release", "reading": "of a text's words appear in its release"},
    {"field": "release_overlap", "axis": "share", "style": "substitutes",
     "label": "share of a release's words found in another release of the same text",
     "reading": "of a release's words recur in another release of the same text"},
]


def text_words(text: str) -> list[str]:
    """The words of a user's sample text, or a one-line error if it has none."""
    words = [word_key(w) for w in find_words(text)]
    if not words:
        raise InputError("the text holds no words to calibrate on; give text with words, or none")
    return words


def emp_curve(table: Any, values: Sequence[float], decode: str, text: str | None, *, samples: int,
              word_types: int, draws: int, seed: int | None, progress: Callable[[int], None]) -> dict[str, Any]:
    """emp's word-by-word curve over ``values`` (epsilons)."""
    from textveil.evaluation.calibration import calibrate

    words = text_words(text) if text is not None else None
    points = calibrate(table, values, words, samples=samples, word_types=word_types, draws=draws,
                       decode=decode, seed=seed, progress=progress)
    return _curve("emp", "epsilon", table, words is not None, [p.to_dict() for p in points], values, EMP_CURVES)


def release_curve(mechanism: str, parameter: str, make: Callable[[float, int], Any], table: Any,
                  values: Sequence[float], text: str | None, *, samples: int, draws: int, seed: int | None,
                  progress: Callable[[int], None]) -> dict[str, Any]:
    """Any mechanism's curve over ``values`` of ``parameter``: ``make(value, seed)`` builds it.
    Sample texts: ``samples`` words of ``text`` (from its start), or Zipf-weighted vocabulary
    words, cut into texts of :data:`~textveil.evaluation.calibration.TEXT_WORDS`."""
    from textveil.evaluation.calibration import calibrate_releases, sample_calibration_tokens, sample_texts
    from textveil.mechanisms.sampling import make_rng

    rng = make_rng(seed)
    if text is not None:
        tokens = text_words(text)[:samples]
    else:
        tokens = sample_calibration_tokens(table, None, samples, rng)
    seeds = iter(rng.integers(2**63, size=len(values)).tolist())
    points = calibrate_releases(lambda value: make(value, next(seeds)), parameter, values, sample_texts(tokens),
                                draws=max(2, draws), progress=progress)
    return _curve(mechanism, parameter, table, text is not None, [p.to_dict() for p in points], values, RELEASE_CURVES)


def _curve(mechanism: str, parameter: str, table: Any, from_text: bool, points: list[dict[str, Any]],
           values: Sequence[float], curves: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "mechanism": mechanism,
        "parameter": parameter,
        "embeddings": table.name,
        "tokens_from": "your text" if from_text else "the vocabulary (Zipf-weighted)",
        "points": points,
        "curves": curves,
        "slider": {"min": float(np.min(values)), "max": float(np.max(values))},
    }
