"""Figures quoted in the documentation, read from the committed ``results.json`` files at build time.

The documentation quotes measured figures (a release's risk, its similarity, its fluency ratio)
from the runs committed under ``docs/results/<name>/``: ``textveil compare`` comparisons, and
``textveil evaluate`` sweeps (one mechanism's grid points, read as releases). A page writes a
*placeholder* instead of the figure, and the site's build hook (``docs/hooks/result_figures.py``)
replaces it with the value read from that folder's ``results.json``, so a figure cannot drift from
the run it cites. This module looks one figure up and formats it (the release it names is found
by :mod:`textveil.evaluation.quoted_releases`);
:mod:`textveil.evaluation.quoted_tables` renders whole tables and "Which mechanism?"'s answers;
:mod:`textveil.evaluation.quoted_pages` fills a page and finds the figures it types by hand.

A figure's placeholder (``FOLDER`` is a folder under ``docs/results/`` holding a ``results.json``,
such as ``blog-cross-topic`` or ``pii-risk/blog-on``)::

    {{ fig FOLDER RELEASE SETTING MEASURE [FORMAT] }}   one release's figure
    {{ fig FOLDER unmodified MEASURE [FORMAT] }}        the unmodified text's
    {{ fig FOLDER chance|floor [FORMAT] }}              blind guessing; the length attack on the originals

- ``RELEASE`` is the mechanism's name, with its options in brackets where the release has any:
  ``"emp"``, ``"paraphrase[score=public-base]"``, ``"paraphrase[vocabulary=8000, width=12]"``
  (quoted where it holds a space). ``"paraphrase"`` is the release with no options, as by default.
  In a sweep the options are only checked against the sweep's (a subset of them).
- ``SETTING`` is the value of the swept parameter (``10``, ``0.7``), or ``default`` for a
  mechanism without one (``random``, ``redact``).
- ``MEASURE`` is one of :data:`RELEASE_MEASURES` (``risk``, ``risk-interval``; ``content-only``,
  the best top-1 of ``topic-svm`` over the trainings, and ``style-adds``, the risk less it;
  ``clean-trained`` and ``release-trained``, the best top-1 of one training; ``top1=ATTACK`` or
  ``top1=ATTACK@TRAINING``; ``epsilon-per-document``, the budget's median over the released texts;
  ``seconds-per-text``; ``paired``, the exact paired test against the comparison's reference in
  words, or ``paired=SETTING`` against the same release at another setting), a short name of :data:`UTILITY_NAMES` (``similarity``, ``fluency``,
  ``describing``, ``length``) or any utility key of the results (``sentiment-cosine``,
  ``attribute-f1``); a utility measure with ``-interval`` after it (``similarity-interval``) is
  the value with its 95% bootstrap interval.
- ``FORMAT`` (optional): ``.N`` for N decimals, ``%`` for a whole percentage; else the measure's
  own rule (:func:`format_number`).

>>> results = {"chance": 1 / 150, "releases": [
...     {"name": "emp", "parameter": 10.0, "setting": "epsilon 10", "options": {},
...      "risk": {"attack": "word1-svm", "training": "release", "top1": 7 / 150},
...      "utility": {"semantic-similarity": {"value": 0.1659}, "fluency": {"value": 165.42}},
...      "point": {"attacks": {"topic-svm": {"top1": 0.04, "n_unknown": 150}},
...                "attacks_release": {"word1-svm": {"top1": 7 / 150, "n_unknown": 150},
...                                    "topic-svm": {"top1": 0.02, "n_unknown": 150}}}}]}
>>> render(results, 'fig blog-cross-topic "emp" 10 risk')
'0.047'
>>> render(results, 'fig blog-cross-topic emp 10 risk-interval')
'0.047 [0.023, 0.093]'
>>> [render(results, f"fig x emp 10 {measure}") for measure in ("similarity", "fluency", "content-only")]
['0.166', '165', '0.040']
>>> render(results, "fig x emp 10 risk %"), render(results, "fig x chance")
('5%', '0.007')
>>> render(results, "fig x emp 12 risk")
Traceback (most recent call last):
...
textveil.evaluation.quoted_releases.FigureError: no release "emp" at 12 (it has: emp at 10)
"""

from __future__ import annotations

import re
import shlex
import statistics
from dataclasses import dataclass
from typing import Any

from textveil.evaluation.compared_mechanism import mechanism_identity
from textveil.evaluation.intervals import rate_interval
from textveil.evaluation.release_intervals import paired_entry, paired_verdict, utility_interval
from textveil.evaluation.quoted_releases import FigureError, find_release, release_label, releases_of, unmodified_of
from textveil.evaluation.trainings import best_top1, is_content_only, result_of

RELEASE_MEASURES = ("risk", "risk-interval", "content-only", "style-adds", "clean-trained", "release-trained",
                    "epsilon-per-document", "seconds-per-text", "paired")
"""Measures read from a release's attacks, budget and timing rather than from its utility; and
``top1=ATTACK`` (one attack's best top-1 over its trainings) or ``top1=ATTACK@TRAINING``."""
UTILITY_NAMES = {"similarity": "semantic-similarity", "fluency": "fluency", "describing": "describing",
                 "length": "length-ratio"}
"""Short names of the usual utility measures; any other utility key of a results.json works as it is."""
RESULTS_MEASURES = ("chance", "floor")
"""Figures of the whole comparison: blind guessing's top-1 and the length attack's on the originals."""


# ---------------------------------------------------------------------------------------------
# Figures


def risk_of(release: dict[str, Any]) -> float:
    """A release's risk: the best top-1 over its attacks and trainings, as results.json states it."""
    risk = release.get("risk") or {}
    if risk.get("top1") is None:
        raise FigureError(f"{release_label(release)} has no risk")
    return float(risk["top1"])


def risk_interval_of(release: dict[str, Any]) -> tuple[float, float, float]:
    """A release's risk and its 95% interval (:func:`textveil.evaluation.intervals.rate_interval`
    of the attack result the risk names: ``round(top1 * n_unknown)`` of ``n_unknown``).

    >>> release = {"name": "emp", "parameter": 10.0, "risk": {"attack": "svm", "training": "clean", "top1": 0.1},
    ...            "point": {"attacks": {"svm": {"top1": 0.1, "n_unknown": 150}}}}
    >>> [round(x, 3) for x in risk_interval_of(release)]
    [0.1, 0.062, 0.158]
    """
    risk = release.get("risk") or {}
    top1 = risk_of(release)
    attack, training = risk.get("attack"), risk.get("training", "clean")
    try:
        result = result_of(release.get("point") or {}, attack, training) if attack else None
    except KeyError:
        result = None
    if result is None:
        raise FigureError(f"{release_label(release)}: no result of its risk's attack ({attack}, {training}) "
                          "to draw an interval from")
    if "top1_values" in result:
        raise FigureError(f"{release_label(release)}: its risk is a mean over repeated releases (no interval)")
    n = result.get("n_unknown")
    if not n:
        raise FigureError(f"{release_label(release)}: its risk's attack result has no n_unknown (no interval)")
    interval = rate_interval(int(round(float(result["top1"]) * int(n))), int(n))
    return top1, interval.low, interval.high


def content_only_of(release: dict[str, Any]) -> float:
    """The content-only risk: the best top-1 of the content-only attacks (``topic-svm``) over every training."""
    found = best_top1(release.get("point") or {}, is_content_only)
    if found is None:
        raise FigureError(f"{release_label(release)} has no content-only attack (topic-svm) result")
    return found


def trained_risk_of(release: dict[str, Any], training: str) -> float:
    """The best top-1 of the attacks trained one way (``clean`` or ``release``)."""
    found = best_top1(release.get("point") or {}, trainings=[training])
    if found is None:
        raise FigureError(f"{release_label(release)} has no {training}-trained attack result")
    return found


def attack_top1_of(release: dict[str, Any], measure: str) -> float:
    """``top1=ATTACK`` (its best over the trainings) or ``top1=ATTACK@TRAINING``.

    >>> release = {"name": "syntf", "parameter": 30.0, "point": {"attacks": {"word1-svm": {"top1": 0.25}},
    ...            "attacks_release": {"word1-svm": {"top1": 0.65}}}}
    >>> attack_top1_of(release, "top1=word1-svm"), attack_top1_of(release, "top1=word1-svm@clean")
    (0.65, 0.25)
    """
    attack, _, training = measure.removeprefix("top1=").partition("@")
    found = best_top1(release.get("point") or {}, lambda name: name == attack, [training] if training else None)
    if found is None:
        raise FigureError(f"{release_label(release)} has no result of {attack}"
                          + (f" ({training})" if training else ""))
    return found


def epsilon_per_document_of(release: dict[str, Any]) -> float:
    """A release's epsilon per document: the median over its released texts (``budget``)."""
    median = ((release.get("budget") or {}).get("per_document") or {}).get("median")
    if median is None:
        raise FigureError(f"{release_label(release)} has no budget per document (written before it was kept, "
                          "or metric privacy)")
    return float(median)


def seconds_per_text_of(release: dict[str, Any], results: dict[str, Any]) -> float | None:
    """The release time per text of one release: its point's measured release seconds (``release``
    for the released texts, ``release known texts`` for the attacker's, each counted only where
    it was not read from the release cache) over the texts released in them. Results without
    these stage times fall back on the release's whole ``seconds`` over its released texts.
    None where nothing was measured (every stage read from the cache).

    >>> results = {"corpora": {"risk_known": {"documents": 200}, "risk_unknown": {"documents": 100}}}
    >>> release = {"point": {"seconds": {"release": 2.0, "release known texts": 4.0},
    ...                      "release": {"read_from_cache": 0}, "known_release": {"read_from_cache": 1}}}
    >>> seconds_per_text_of(release, results)
    0.02
    """
    point = release.get("point") or {}
    corpora = results.get("corpora") or {}
    known = (corpora.get("risk_known") or {}).get("documents")
    unknown = (corpora.get("risk_unknown") or {}).get("documents")
    stages = point.get("seconds") if isinstance(point.get("seconds"), dict) else {}
    seconds = texts = 0.0
    for stage, record, count in (("release", "release", unknown), ("release known texts", "known_release", known)):
        if stage in stages and count and not (point.get(record) or {}).get("read_from_cache"):
            seconds += float(stages[stage])
            texts += count
    if texts:
        return seconds / texts
    if not stages and release.get("seconds") and unknown:
        return float(release["seconds"]) / unknown
    return None


def mechanism_seconds_per_text(results: dict[str, Any], release: dict[str, Any]) -> float | None:
    """The median seconds per text over the settings of ``release``'s mechanism
    (:func:`mechanism_identity`) whose release time was measured; None where none was."""
    same = [other for other in releases_of(results) if mechanism_identity(other) == mechanism_identity(release)]
    measured = [found for found in (seconds_per_text_of(other, results) for other in same) if found is not None]
    return statistics.median(measured) if measured else None


def utility_key(measure: str) -> str:
    """The results.json key of a utility measure's short name (others are keys already)."""
    return UTILITY_NAMES.get(measure, measure)


def utility_of(release: dict[str, Any], measure: str) -> float | None:
    """A release's utility value under ``measure``; None where the measure does not apply to it
    (a corpus-level release); a :class:`FigureError` where it was not measured."""
    key = utility_key(measure)
    if key in (release.get("not_applicable") or {}):
        return None
    value = ((release.get("utility") or {}).get(key) or {}).get("value")
    if value is None:
        held = ", ".join(sorted(release.get("utility") or {})) or "none"
        raise FigureError(f'{release_label(release)} has no measure "{measure}" (it has: {held})')
    return float(value)


def results_figure(results: dict[str, Any], measure: str) -> float:
    """``chance`` or ``floor`` of a comparison (a sweep's: of its unmodified point's attacks)."""
    if measure == "chance":
        chance = results.get("chance")
        if chance is None:  # a sweep: each attack result states the chance of its top-k
            unmodified = unmodified_of(results) or {}
            for result in (unmodified.get("point") or {}).get("attacks", {}).values():
                if result.get("chance"):
                    return float(result["chance"][0])
            raise FigureError("these results state no chance level")
        return float(chance)
    floor = (results.get("floor") or {}).get("top1")
    if floor is None:
        unmodified = (unmodified_of(results) or {}).get("point") or {}
        floor = ((unmodified.get("attacks") or {}).get("length") or {}).get("top1")
    if floor is None:
        raise FigureError("these results state no length floor")
    return float(floor)


# ---------------------------------------------------------------------------------------------
# Formatting


def format_number(value: float | None, measure: str, style: str | None = None) -> str:
    """A figure as the pages print it: ``.N`` decimals or ``%`` where asked, else the measure's
    own rule (fluency ratios: 155, 14.4, 0.79; epsilon per document: 3,840; seconds: 2
    significant digits; the rest three decimals, ``describing`` and ``length`` two).

    >>> format_number(14.363, "fluency"), format_number(3840.0, "epsilon-per-document"), format_number(0.2, "risk")
    ('14.4', '3,840', '0.200')
    >>> format_number(0.3, "seconds-per-text"), format_number(0.84667, "risk", "%"), format_number(None, "fluency")
    ('0.30', '85%', 'n/a')
    """
    if value is None:
        return "n/a"
    if style == "%":
        return f"{value * 100:.0f}%"
    if style:
        digits = int(style.lstrip("."))
        return f"{value:.{digits}f}"
    if measure == "fluency":
        return f"{value:.0f}" if abs(value) >= 100 else f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"
    if measure == "epsilon-per-document":
        return f"{value:,.0f}" if abs(value) >= 100 else f"{value:g}"
    if measure == "seconds-per-text":
        return f"{value:#.2g}" if value < 10 else f"{value:.0f}"
    if measure in ("describing", "length-ratio", "length"):
        return f"{value:.2f}"
    return f"{value:.3f}"


@dataclass(frozen=True)
class Figure:
    """One ``fig`` placeholder, parsed: the folder, the release (None for a comparison's own
    figure), its setting, the measure and the format."""

    folder: str
    release: str | None
    setting: str | None
    measure: str
    style: str | None = None


def pop_style(tokens: list[str]) -> str | None:
    """A placeholder's last token when it is a FORMAT (``.N`` or ``%``), taken off ``tokens``."""
    if tokens and re.fullmatch(r"\.\d|%", tokens[-1]):
        return tokens.pop()
    return None


def parse_figure(body: str) -> Figure:
    """A ``fig`` placeholder's body (what lies between the braces), parsed.

    >>> parse_figure('fig blog-cross-topic "paraphrase[score=public-base]" 8 risk-interval')
    Figure(folder='blog-cross-topic', release='paraphrase[score=public-base]', setting='8', measure='risk-interval', style=None)
    >>> parse_figure("fig c50-documents unmodified risk .2").style
    '.2'
    >>> parse_figure("fig c50-documents emp risk")
    Traceback (most recent call last):
    ...
    textveil.evaluation.quoted_releases.FigureError: a figure is "fig FOLDER RELEASE SETTING MEASURE [.N|%]", "fig FOLDER unmodified MEASURE" or "fig FOLDER chance|floor"
    """
    usage = ('a figure is "fig FOLDER RELEASE SETTING MEASURE [.N|%]", "fig FOLDER unmodified MEASURE" '
             'or "fig FOLDER chance|floor"')
    try:
        tokens = shlex.split(body)
    except ValueError as error:
        raise FigureError(f"{usage} ({error})") from None
    if not tokens or tokens[0] != "fig":
        raise FigureError(usage)
    tokens = tokens[1:]
    style = pop_style(tokens)
    if len(tokens) == 2 and tokens[1] in RESULTS_MEASURES:
        return Figure(tokens[0], None, None, tokens[1], style)
    if len(tokens) == 3 and tokens[1] == "unmodified":
        return Figure(tokens[0], "unmodified", None, tokens[2], style)
    if len(tokens) == 4:
        return Figure(tokens[0], tokens[1], tokens[2], tokens[3], style)
    raise FigureError(usage)


def release_value(results: dict[str, Any], release: dict[str, Any],
                  measure: str) -> float | tuple[float, float, float] | None:
    """One release's figure under ``measure`` (a risk with its interval: three values; a utility
    that does not apply to the release: None)."""
    if measure == "risk":
        return risk_of(release)
    if measure == "risk-interval":
        return risk_interval_of(release)
    if measure == "content-only":
        return content_only_of(release)
    if measure == "style-adds":
        return risk_of(release) - content_only_of(release)
    if measure in ("clean-trained", "release-trained"):
        return trained_risk_of(release, measure.split("-")[0])
    if measure.startswith("top1="):
        return attack_top1_of(release, measure)
    if measure == "epsilon-per-document":
        return epsilon_per_document_of(release)
    if measure == "seconds-per-text":
        found = seconds_per_text_of(release, results)
        if found is None:
            raise FigureError(f"{release_label(release)}: its release time was not measured (read from the cache)")
        return found
    if measure.endswith("-interval"):
        return utility_interval_of(release, measure.removesuffix("-interval"))
    return utility_of(release, measure)


def utility_interval_of(release: dict[str, Any], measure: str) -> tuple[float, float, float]:
    """A release's utility under ``measure`` with its 95% bootstrap interval, as it was measured;
    a :class:`FigureError` where the interval was not kept (a run before intervals).

    >>> utility_interval_of({"utility": {"fluency": {"value": 1.14, "interval": {"low": 0.57, "high": 2.33,
    ...     "method": "bootstrap"}}}}, "fluency")
    (1.14, 0.57, 2.33)
    """
    value = utility_of(release, measure)
    interval = utility_interval(((release.get("utility") or {}).get(utility_key(measure))))
    if value is None or interval is None:
        raise FigureError(f'{release_label(release)}: "{measure}" has no interval (measured before intervals were kept)')
    return value, interval.low, interval.high


def figure_value(results: dict[str, Any], figure: Figure) -> float | tuple[float, float, float] | None:
    """The value a parsed ``fig`` placeholder stands for (a risk with its interval: three values)."""
    if figure.release is None:
        return results_figure(results, figure.measure)
    return release_value(results, find_release(results, figure.release, figure.setting), figure.measure)


def format_key(measure: str) -> str:
    """The formatting rule a measure follows (an attack's top-1 is a risk)."""
    if measure.startswith("top1=") or measure.endswith("-trained") or measure in RESULTS_MEASURES + (
            "style-adds", "risk-interval"):
        return "risk"
    return utility_key(measure.removesuffix("-interval"))


def render_figure(results: dict[str, Any], figure: Figure) -> str:
    """A parsed ``fig`` placeholder's text."""
    if figure.measure == "paired" or figure.measure.startswith("paired="):
        return paired_text(results, figure)
    value = figure_value(results, figure)
    measure = format_key(figure.measure)
    if isinstance(value, tuple):
        risk, low, high = (format_number(part, measure, figure.style) for part in value)
        return f"{risk} [{low}, {high}]"
    return format_number(value, measure, figure.style)


def paired_text(results: dict[str, Any], figure: Figure) -> str:
    """A release's exact paired test (McNemar) in words: ``paired``, against the comparison's
    reference; ``paired=SETTING``, against the same release at another setting. A
    release whose per-text outcomes were not kept (a row released before them) is tested from its
    count alone, bounded over every pairing; a :class:`FigureError` where neither was kept.

    >>> results = {"releases": [{"id": "emp epsilon 10", "name": "emp", "parameter": 10.0, "options": {}},
    ...     {"id": "x", "name": "select-write", "parameter": 100.0, "options": {},
    ...      "paired": {"reference": "emp epsilon 10", "only_first": 3, "only_second": 5, "p_value": 0.727,
    ...                 "told_apart": False}}]}
    >>> paired_text(results, parse_figure('fig f "select-write" 100 paired'))
    'against emp at 10: cannot be told apart (p = 0.727; 3 named only here, 5 only there)'
    """
    if figure.release is None or figure.release == "unmodified":
        raise FigureError('"paired" is a release\'s measure: "fig FOLDER RELEASE SETTING paired[=SETTING]"')
    release = find_release(results, figure.release, figure.setting)
    _, _, other_setting = figure.measure.partition("=")
    if other_setting:
        other = find_release(results, figure.release, other_setting)
        paired = paired_entry(release, other)
    else:
        paired = release.get("paired") or {}
    if "p_value" not in paired and not paired.get("bounds"):
        raise FigureError(f"{release_label(release)}: no paired test (the reference itself, or neither its "
                          "per-text outcomes nor its counts kept: release it again)")
    reference = next((other for other in releases_of(results) if other.get("id") == paired.get("reference")), None)
    against = release_label(reference) if reference is not None else str(paired.get("reference"))
    return f"against {against}: {paired_verdict({'paired': paired})}"


def render(results: dict[str, Any], body: str) -> str:
    """A ``fig`` placeholder's text from ``results`` (the folder it names is not read: see
    :class:`ResultsLibrary` for placeholders naming their own folder)."""
    return render_figure(results, parse_figure(body))
