"""Whole tables read from a committed results.json, and "Which mechanism?"'s answers.

Placeholders (filled by :class:`textveil.evaluation.quoted_pages.ResultsLibrary`)::

    {{ fig_table FOLDER MEASURE[:FORMAT]... }}   every release of a run, a row each (the unmodified
                                                 text first, then by risk); * marks the frontier
    {{ best_under FOLDER [MEASURE] }}            "at a risk of at most r, the most useful release"
    {{ answer_table }}                           "Which mechanism?"'s rule and answers (ANSWER_ROWS)

**Which mechanism?** :func:`answers` picks three releases of one comparison by a stated rule
(:data:`ANSWER_RULE`): the least risk among the releases that read (fluency ratio at most
:data:`READABLE_FLUENCY`), the least risk of all, and the least risk of the fastest mechanism;
:data:`ANSWER_ROWS` says which committed comparison answers which kind of text and threat.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from textveil.evaluation.compared_mechanism import mechanism_identity, then_of_label
from textveil.evaluation.quoted_figures import (RELEASE_MEASURES, format_key, format_number,
                                                mechanism_seconds_per_text, release_value, results_figure,
                                                risk_interval_of, risk_of, utility_key)
from textveil.evaluation.quoted_releases import (FigureError, find_release, plain_value, release_label,
                                                 releases_of, unmodified_of)
# READABLE_FLUENCY: the reports' rule of a release that reads
from textveil.evaluation.release_intervals import READABLE_FLUENCY, paired_verdict, reference_release

HEADINGS = {"risk": "risk", "risk-interval": "risk (95% interval)", "content-only": "content only",
            "paired": "against the reference (McNemar, exact)",
            "style-adds": "style adds", "semantic-similarity": "semantic similarity", "fluency": "fluency (ratio)",
            "describing": "describes", "length-ratio": "length ratio", "sentiment-cosine": "sentiment cosine",
            "attribute-f1": "attribute F1", "epsilon-per-document": "epsilon per document (median)",
            "seconds-per-text": "seconds per text", "unigram-cosine": "unigram cosine"}
"""A table column's heading, by measure (others: the measure's key, hyphens as spaces)."""


def _heading(column: str) -> str:
    key = utility_key(column.partition(":")[0])
    return HEADINGS.get(key, key.replace("-", " "))


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _release_name(release: dict[str, Any]) -> str:
    options = release.get("options") or {}
    name = release.get("name") or "?"
    if options and not release.get("sweep"):
        name += " [" + ", ".join(f"{key}={plain_value(value)}" for key, value in options.items()) + "]"
    # a step after the mechanism makes another mechanism (emp, then polish, is not emp)
    return name + "".join(f" + {step}" for step in then_of_label(release.get("mechanism") or ""))


def _table_cell(release: dict[str, Any], results: dict[str, Any], column: str) -> str:
    """A table cell: ``MEASURE`` (utilities at two decimals, fluency by its own rule, risks at
    three) or ``MEASURE:.N``; "–" where the release has no such figure."""
    measure, _, style = column.partition(":")
    if measure == "paired":
        return paired_verdict(release)
    try:
        value = release_value(results, release, measure)
    except FigureError:
        return "–"
    key = format_key(measure)
    if isinstance(value, tuple):
        risk, low, high = (format_number(part, "risk", style or None) for part in value)
        return f"{risk} [{low}, {high}]"
    if not style and value is not None and key not in ("risk", "risk-interval", "content-only", "fluency",
                                                        "epsilon-per-document", "seconds-per-text"):
        style = ".2"
    return format_number(value, key, style or None)


def comparison_table(results: dict[str, Any], measures: Sequence[str]) -> str:
    """Every release of a comparison, a row each (the unmodified text first, then by risk), with
    ``measures`` as columns; ``*`` marks a release on at least one utility measure's frontier.

    >>> results = {"unmodified": {"risk": {"top1": 0.9}, "utility": {"fluency": {"value": 1.0}}},
    ...            "releases": [{"id": "emp epsilon 10", "name": "emp", "parameter": 10.0, "setting": "epsilon 10",
    ...                          "risk": {"top1": 0.1}, "utility": {"fluency": {"value": 155.0}}}],
    ...            "frontier": {"fluency": {"pareto": ["emp epsilon 10"]}}}
    >>> print(comparison_table(results, ["risk", "fluency"]))
    | mechanism | setting | risk | fluency (ratio) |
    |---|---|---:|---:|
    | unmodified text |  | 0.900 | 1.00 |
    | emp * | epsilon 10 | 0.100 | 155 |
    """
    for column in measures:
        measure, _, style = column.partition(":")
        if style and not re.fullmatch(r"\.\d|%", style):
            raise FigureError(f'column "{column}": a format is .N or %')
        if measure not in RELEASE_MEASURES and not measure.startswith("top1=") and not any(
                utility_key(measure) in (release.get("utility") or {}) for release in releases_of(results)):
            raise FigureError(f'no release has the measure "{measure}"')
    on_frontier = {identifier for entry in (results.get("frontier") or {}).values()
                   for identifier in entry.get("pareto") or []}
    lines = ["| mechanism | setting | " + " | ".join(_heading(column) for column in measures) + " |",
             "|---|---|" + "---:|" * len(measures)]
    unmodified = unmodified_of(results)
    rows = ([("unmodified text", "", unmodified)] if unmodified and unmodified.get("risk") else [])
    for release in sorted(releases_of(results), key=lambda r: (r.get("risk") or {}).get("top1", math.inf)):
        mark = " *" if release.get("id") in on_frontier else ""
        rows.append((_release_name(release) + mark, release.get("setting") or "", release))
    for name, setting, release in rows:
        lines.append(f"| {_cell(name)} | {_cell(setting)} | "
                     + " | ".join(_table_cell(release, results, m) for m in measures) + " |")
    return "\n".join(lines)


def best_under_table(results: dict[str, Any], measure: str = "similarity") -> str:
    """The comparison's "at a risk of at most r, the most useful release" table for one utility
    measure (its committed frontier), thresholds with the same answer on one row.

    >>> results = {"releases": [{"id": "emp epsilon 10", "name": "emp", "parameter": 10.0, "setting": "epsilon 10"}],
    ...            "frontier": {"semantic-similarity": {"best_under": [
    ...                {"max_risk": 0.1, "release": None}, {"max_risk": 0.2, "release": "emp epsilon 10",
    ...                 "utility": 0.181, "risk": 0.153}, {"max_risk": 0.3, "release": "emp epsilon 10",
    ...                 "utility": 0.181, "risk": 0.153}]}}}
    >>> print(best_under_table(results))
    | at a risk of at most | the most useful release (semantic similarity) |
    |---:|---|
    | 0.10 | none |
    | 0.20, 0.30 | emp, epsilon 10: 0.181 at risk 0.153 |
    """
    key = utility_key(measure)
    frontier = (results.get("frontier") or {}).get(key)
    if not frontier or "best_under" not in frontier:
        raise FigureError(f'no frontier of "{measure}" in these results')
    by_id = {release.get("id"): release for release in releases_of(results)}
    answers: list[tuple[list[str], str]] = []
    for best in frontier["best_under"]:
        chosen = by_id.get(best.get("release"))
        if chosen is None:
            text = "none"
        else:
            setting = chosen.get("setting") or ""
            text = (f"{_release_name(chosen)}{', ' + setting if setting and setting != 'default' else ''}: "
                    f"{format_number(best['utility'], key)} at risk {format_number(best['risk'], 'risk')}")
        if answers and answers[-1][1] == text:
            answers[-1][0].append(f"{best['max_risk']:.2f}")
        else:
            answers.append(([f"{best['max_risk']:.2f}"], text))
    lines = [f"| at a risk of at most | the most useful release ({_heading(key)}) |", "|---:|---|"]
    lines += [f"| {', '.join(thresholds)} | {_cell(text)} |" for thresholds, text in answers]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Which mechanism?


@dataclass(frozen=True)
class AnswerRow:
    """One kind of text and threat of "Which mechanism?", the comparison that answers it, and the
    releases of that comparison that may not answer, each with the reason the page states
    (``("paraphrase[score=public-base] at 8", "why")``: :func:`release_label`'s names)."""

    texts: str
    folder: str
    left_out: tuple[tuple[str, str], ...] = ()


ANSWER_ROWS = (
    AnswerRow("blog posts, reviews; the attacker holds other posts of the same stream", "blog-same-stream"),
    AnswerRow("blog posts, reviews; the attacker holds the writers' texts on other topics", "blog-cross-topic"),
    AnswerRow("news articles, whole documents", "c50-documents"),
)
"""Which committed comparison answers which kind of text: the same-stream and the cross-topic blog
comparisons (the same 150 users and sizes, entity stage on), and whole C50 news articles."""

ANSWER_RULE = (
    "Each row is read from the comparison it names, among its releases with a formal guarantee, "
    "text by text (a release with no guarantee, such as `restyle`, is measured beside them and never "
    f"an answer): **readable** is the least risk among the releases whose fluency ratio is at most "
    f"{READABLE_FLUENCY:g}; **least risk** the least risk of all; **fastest** the least risk of the "
    "mechanism that released fastest, in seconds per text: the release time measured for the released "
    "and the attacker's texts over their number, the median over the mechanism's settings (a setting "
    "read back from the cache is not timed); **one epsilon per document** the least risk among the "
    "releases whose every document was released at the same epsilon, fixed before any text was read "
    "(the median and the largest epsilon per document are equal: a bound per document that does not "
    "grow with the text). Ties go to the higher semantic similarity."
)
"""The rule of :func:`answers`, as "Which mechanism?" states it above its table."""


def _answerable(release: dict[str, Any]) -> bool:
    return (release.get("guarantee") not in (None, "none") and not release.get("corpus_level")
            and (release.get("risk") or {}).get("top1") is not None)


def _least_risk(releases: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    def order(release: dict[str, Any]) -> tuple[float, float]:
        similarity = ((release.get("utility") or {}).get("semantic-similarity") or {}).get("value")
        return float(release["risk"]["top1"]), -(similarity if similarity is not None else -math.inf)
    return min(releases, key=order, default=None)


def answers(results: dict[str, Any], left_out: Collection[str] = ()) -> list[tuple[str, dict[str, Any] | None]]:
    """The four answers of one comparison by :data:`ANSWER_RULE`: ``("readable", release)``,
    ``("least risk", release)``, ``("fastest", release)`` and ``("one epsilon per document",
    release)``; None where no release qualifies.
    The releases named in ``left_out`` (:func:`release_label`) are not candidates.

    >>> def release(name, parameter, risk, fluency, seconds):
    ...     return {"name": name, "parameter": parameter, "options": {}, "guarantee": "dp",
    ...             "risk": {"top1": risk}, "utility": {"fluency": {"value": fluency}},
    ...             "point": {"seconds": {"release": seconds}, "release": {}}}
    >>> results = {"corpora": {"risk_unknown": {"documents": 10}},
    ...            "releases": [release("emp", 10, 0.11, 155, 0.1), release("paraphrase", 25, 0.08, 10.7, 3),
    ...                         release("paraphrase", 30, 0.23, 0.79, 4)]}
    >>> for want, found in answers(results):
    ...     print(want, "->", release_label(found) if found else None)
    readable -> paraphrase at 30
    least risk -> paraphrase at 25
    fastest -> emp at 10
    one epsilon per document -> None
    """
    candidates = [release for release in releases_of(results)
                  if _answerable(release) and release_label(release) not in left_out]
    readable = []
    for release in candidates:
        fluency = ((release.get("utility") or {}).get("fluency") or {}).get("value")
        if fluency is not None and fluency <= READABLE_FLUENCY:
            readable.append(release)
    speeds: dict[tuple[str, str, tuple[str, ...]], float] = {}
    for release in candidates:
        speed = mechanism_seconds_per_text(results, release)
        if speed is not None:
            speeds[mechanism_identity(release)] = speed
    fastest = None
    if speeds:
        quickest = min(speeds, key=speeds.get)
        fastest = _least_risk(r for r in candidates if mechanism_identity(r) == quickest)
    fixed = [release for release in candidates if _one_epsilon_per_document(release)]
    return [("readable", _least_risk(readable)), ("least risk", _least_risk(candidates)), ("fastest", fastest),
            ("one epsilon per document", _least_risk(fixed))]


def _one_epsilon_per_document(release: dict[str, Any]) -> bool:
    """Whether every released document of ``release`` has the same epsilon (a bound fixed per document).

    >>> _one_epsilon_per_document({"budget": {"per_document": {"median": 50.0, "largest": 50.0}}})
    True
    >>> _one_epsilon_per_document({"budget": {"per_document": {"median": 768.0, "largest": 3840.0}}})
    False
    """
    found = (release.get("budget") or {}).get("per_document") or {}
    return found.get("median") is not None and found.get("median") == found.get("largest")


def release_command(release: dict[str, Any]) -> str:
    """How "Which mechanism?" names a release: the mechanism, its options as ``--set``, its setting.

    >>> release_command({"name": "paraphrase", "options": {"score": "public-base"}, "parameter": 8.0,
    ...                  "parameter_name": "epsilon"})
    '`paraphrase --set score=public-base`, epsilon 8'
    >>> release_command({"name": "emp", "mechanism": "emp+polish", "parameter": 10.0, "parameter_name": "epsilon"})
    '`emp --then polish`, epsilon 10'
    """
    options = " ".join(f"--set {key}={plain_value(value)}" for key, value in (release.get("options") or {}).items())
    options += "".join(f" --then {step}" for step in then_of_label(release.get("mechanism") or ""))
    command = f"`{release.get('name')}{' ' + options.strip() if options else ''}`"
    parameter = release.get("parameter")
    if parameter is None:
        return command
    return f"{command}, {release.get('parameter_name') or 'setting'} {plain_value(parameter)}"


ANSWER_INTERVALS = (
    " Each risk is shown with its 95% interval (Wilson, or exact under 5 texts named), and beside it the "
    "paired test against emp at 10 on the same texts (McNemar's, exact): where it reads \"cannot be told "
    "apart\", the ranking between the two is not settled by this comparison."
)
"""What the answer table adds to the rule: the intervals and the paired test, read the same way as in
the comparison reports."""


def _risk_with_interval(release: dict[str, Any]) -> str:
    """The risk and its 95% interval where the results allow one, else the risk alone."""
    try:
        risk, low, high = risk_interval_of(release)
    except FigureError:
        return format_number(risk_of(release), "risk")
    return f"{format_number(risk, 'risk')} [{format_number(low, 'risk')}, {format_number(high, 'risk')}]"


def _against_reference(results: dict[str, Any], release: dict[str, Any]) -> str:
    """The answer's paired test against the comparison's reference, in the reports' words."""
    reference = reference_release(results)
    if reference is not None and reference.get("id") == release.get("id"):
        return "the reference"
    if not release.get("paired"):
        return "not recorded (per-text outcomes not kept)"
    return paired_verdict(release)


def answer_table(comparisons: dict[str, dict[str, Any]], links: dict[str, str],
                 rows: Sequence[AnswerRow] = ANSWER_ROWS) -> str:
    """"Which mechanism?"'s answers: the rule (:data:`ANSWER_RULE`), then a table with, for each
    row, its three :func:`answers`, each with its risk (and chance), similarity, fluency ratio and
    the mechanism's seconds per text, citing the comparison (``links``: the folder's page, relative
    to the page that shows the table)."""
    notes: list[str] = []
    lines = [ANSWER_RULE + ANSWER_INTERVALS, "", "| your texts | you want | release with | risk, 95% interval "
             "(chance) | against emp at 10, same texts | similarity | fluency ratio | seconds per text | measured in |",
             "|---|---|---|---:|---|---:|---:|---:|---|"]
    for row in rows:
        results = comparisons[row.folder]
        chance = format_number(results_figure(results, "chance"), "chance")
        cite = f"[`{row.folder}`]({links[row.folder]})"
        for label, why in row.left_out:
            name, _, setting = label.rpartition(" at ")
            left = find_release(results, name, setting)  # a release left out must exist, or the note is stale
            notes.append(f"{release_command(left)} in `{row.folder}`, {why}")
        for index, (want, release) in enumerate(answers(results, [label for label, _ in row.left_out])):
            texts = row.texts if index == 0 else "the same"
            if release is None:
                lines.append(f"| {texts} | {want} | none measured | | | | | | {cite} |")
                continue
            similarity = ((release.get("utility") or {}).get("semantic-similarity") or {}).get("value")
            fluency = ((release.get("utility") or {}).get("fluency") or {}).get("value")
            lines.append(f"| {texts} | {want} | {release_command(release)} "
                         f"| {_risk_with_interval(release)} ({chance}) | {_against_reference(results, release)} "
                         f"| {format_number(similarity, 'semantic-similarity')} "
                         f"| {format_number(fluency, 'fluency')} "
                         f"| {format_number(mechanism_seconds_per_text(results, release), 'seconds-per-text')} "
                         f"| {cite} |")
    if notes:
        lines += ["", "Not an answer: " + "; ".join(notes) + "."]
    return "\n".join(lines)
