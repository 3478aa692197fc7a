"""Write a comparison's results (``textveil compare``): ``results.json``, a Markdown report, a
self-contained HTML page (the figure embedded) and ``frontier.png``. Every file is written
atomically.

The report says what was compared and how (corpora, split, attacks, trainings, what the risk
is, seed, machine, time), lists every release with its risk, its budget (the epsilon per
document, median and largest over the judged texts, and per unit with its metric:
:mod:`textveil.privacy.release_budget`) and utility (a measure that does not apply to a release
reads "n/a", with the reason in a note, never 0), and reads the
risk-utility frontier (:mod:`textveil.evaluation.frontier`) per utility measure: the releases
worth considering, and the most useful release under each risk threshold. A release that no
utility measure applies to (PIVOT's code words) keeps its row and its risk, and is named as off
each utility axis; a keyed release also gets its risk per training and its frequency analysis.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import Any

from textveil.atomic_files import atomic_write_bytes, atomic_write_text
from textveil.evaluation.trainings import SAME_KEY_RESULTS, attack_lines, best_top1, is_content_only, risk_apart
from textveil.evaluation.frontier import frontier_of
from textveil.evaluation.intervals import RESAMPLES, SMALL_COUNT, Interval
from textveil.evaluation.release_intervals import READABLE_FLUENCY, content_interval, paired_verdict, with_intervals
from textveil.evaluation.plots import frontier_maps
from textveil.evaluation.report import (
    BUDGET_HEADER,
    PAGE_STYLE,
    _utility_cell,
    budget_cells,
    html_table,
    markdown_table,
    percent_interval,
)
from textveil.evaluation.splits import split_lines
from textveil.evaluation.time_estimate import estimate_report_line
from textveil.evaluation.trainings import line_label
from textveil.pii.stage import entity_stage_line

FIGURE = "frontier.png"
UNMODIFIED_ROW = "unmodified text"
TRAINING_WORDS = {
    "clean": "the clean known texts",
    "release": "the known texts released by the same mechanism and setting with an independent seed "
               "(the attacker knows the mechanism; for a keyed release, under the attacker's own key)",
}
SAME_KEY_WORDS = ("for a keyed release (pivot), also on the known texts encoded with the unknown texts under one key, "
                  "as one corpus release (same-key)")

# A report as a list of blocks, each rendered to Markdown and to HTML by the same content:
# ("h2" | "h3" | "p", text), ("list", [items]), ("table", header, rows), ("image", file name, caption).
Block = tuple[Any, ...]


def _percent(value: float) -> str:
    return f"{value:.1%}"


def _threshold(value: float) -> str:
    """A risk threshold as a percentage with no spurious digits (0.05 * 100 is 5.000000000000001).

    >>> _threshold(0.05), _threshold(0.025), _threshold(0.1)
    ('5%', '2.5%', '10%')
    """
    return f"{value * 100:g}%"


def _risk_cell(risk: dict[str, Any]) -> str:
    """A release's risk with its 95% interval (where its count was kept), and the attack and
    training that reached it.

    >>> _risk_cell({"attack": "char3-svm", "training": "release", "top1": 0.15})
    '15.0% (char3-svm (release-trained))'
    >>> _risk_cell({"attack": "length", "training": "clean", "top1": 0.1,
    ...             "interval": {"low": 0.062, "high": 0.158, "method": "wilson"}})
    '10.0% [6.2, 15.8] (length (clean-trained))'
    """
    found = risk.get("interval")
    shown = f" {percent_interval(Interval.from_dict(found))}" if found else ""
    return f"{_percent(risk['top1'])}{shown} ({line_label(risk['attack'], risk['training'])})"


def _with_direction(metric: str, higher_is_better: bool) -> str:
    """A measure's description followed by which way is better, unless the description already
    says so (a stored results.json keeps the wording its run wrote: older runs wrote the describing
    share's as "... (lower is better)").

    >>> _with_direction("released words / input words", True)
    'released words / input words, higher is better'
    >>> _with_direction("share that describe the text (lower is better)", False)
    'share that describe the text (lower is better)'
    """
    direction = "higher is better" if higher_is_better else "lower is better"
    return metric if direction in metric else f"{metric}, {direction}"


class _Notes:
    """Numbered notes for the cells a measure does not apply to; one number per distinct reason."""

    def __init__(self) -> None:
        self.reasons: list[str] = []

    def cite(self, reason: str) -> str:
        if reason not in self.reasons:
            self.reasons.append(reason)
        return f"n/a [{self.reasons.index(reason) + 1}]"

    def lines(self) -> list[str]:
        return [f"[{number}] {reason}" for number, reason in enumerate(self.reasons, 1)]


def _measure_cell(entry: dict[str, Any], measure: str, notes: _Notes) -> str:
    """One utility value of a release (or the unmodified text); "n/a" with a note where the
    measure does not apply or was not measured: a 0 would read as a measured utility of 0."""
    reason = (entry.get("not_applicable") or {}).get(measure)
    result = (entry.get("utility") or {}).get(measure)
    if reason is None and (result is None or result.get("value") is None):
        reason = f"{measure} was not measured on this release"
    return notes.cite(reason) if reason is not None else _utility_cell(result)


def _measure_header(measure: str, info: dict[str, Any]) -> str:
    return f"{measure} ({_with_direction(info.get('metric') or measure, info['higher_is_better'])})"


def content_attacks(results: dict[str, Any]) -> list[str]:
    """The content-only attacks of the plan (topic-svm by default): empty, the report has no
    content-only column."""
    return [attack for attack in results["plan"].get("attacks") or [] if is_content_only(attack)]


def _content_cells(point: dict[str, Any], notes: _Notes, attacks: list[str]) -> list[str]:
    """A point's content-only risk and what style adds to it (risk minus content only)."""
    parts = risk_apart(point)
    if parts["content"] is None or parts["style_adds"] is None:
        missing = notes.cite(f"{', '.join(attacks)} was not measured on this release")
        return [missing, missing]
    found = content_interval(point)
    shown = f" {percent_interval(found)}" if found is not None else ""
    return [_percent(parts["content"]) + shown, f"{parts['style_adds'] * 100:.1f} pts"]


def release_rows(results: dict[str, Any]) -> tuple[list[str], list[list[str]], list[str]]:
    """Every release's mechanism, setting, risk, budget and utility, the unmodified text first;
    with the notes that explain each "n/a". Where the plan has a content-only attack (topic-svm),
    each row also shows the content-only risk and what style adds (the risk minus it)."""
    measures = results["utility_measures"]
    content = content_attacks(results)
    notes = _Notes()
    header = ["mechanism", "setting", "risk: best top-1 (attack, training)"]
    if content:
        header += [f"content only: best top-1 ({', '.join(content)})", "style adds: risk − content only"]
    header += BUDGET_HEADER + [_measure_header(measure, info) for measure, info in measures.items()]
    reference = results.get("reference")
    paired = [f"risk against {reference} (McNemar, exact)"] if reference else []
    header += paired
    unmodified = results["unmodified"]
    rows = [[UNMODIFIED_ROW, "–", _risk_cell(unmodified["risk"])]
            + (_content_cells(unmodified, notes, content) if content else [])
            + ["–"] * len(BUDGET_HEADER)
            + [_measure_cell(unmodified, measure, notes) for measure in measures]
            + ["–"] * len(paired)]
    for release in results["releases"]:
        rows.append([release["mechanism"], release["setting"], _risk_cell(release["risk"])]
                    + (_content_cells(release.get("point") or {}, notes, content) if content else [])
                    + budget_cells(release.get("budget"), release.get("guarantee"))
                    + [_measure_cell(release, measure, notes) for measure in measures]
                    + ([paired_verdict({**release, "is_reference": release["id"] == reference})] if paired else []))
    return header, rows, notes.lines()


def frontier_blocks(results: dict[str, Any]) -> list[Block]:
    """Per utility measure: the Pareto releases, and the most useful release under each risk threshold."""
    by_id = {release["id"]: release for release in results["releases"]}
    blocks: list[Block] = []
    for measure, frontier in frontier_of(results).items():
        left_out = [f"{r['id']} ({r['guarantee'] + ', ' if r.get('guarantee') else ''}risk {_percent(r['risk']['top1'])})"
                    for r in results["releases"] if measure in (r.get("not_applicable") or {})]
        blocks += [("h3", f"Frontier: {measure}"),
                   ("p", f"{_with_direction(frontier['metric'], frontier['higher_is_better'])}. A release is on the frontier when no other release "
                         "is at least as safe and at least as useful, and strictly better in one of the two."
                         + (f" Off this axis (the measure does not apply, and no number is made up for it): "
                            f"{', '.join(left_out)}." if left_out else ""))]
        pareto = [by_id[i] for i in frontier["pareto"]]
        blocks.append(("table", ["on the frontier: mechanism", "setting", "risk: top-1", measure],
                       [[r["mechanism"], r["setting"], _percent(r["risk"]["top1"]),
                         _utility_cell(r["utility"][measure])] for r in pareto]))
        rows = []
        for best in frontier["best_under"]:
            unreadable = best.get("more_useful_unreadable")
            aside = (f"{_named(by_id[unreadable])} is more useful but does not read (fluency ratio "
                     f"{by_id[unreadable]['utility']['fluency']['value']:.1f} > {READABLE_FLUENCY:g})"
                     if unreadable else "–")
            if best["release"] is None:
                rows.append([_threshold(best["max_risk"]), "none: every release it measures that reads is riskier",
                             "–", "–", "–", "–", aside])
                continue
            release = by_id[best["release"]]
            ties = ", ".join(_named(by_id[other]) for other in best.get("cannot_be_told_apart") or []) or "–"
            rows.append([_threshold(best["max_risk"]), release["mechanism"], release["setting"],
                         _utility_cell(release["utility"][measure]), _risk_cell(release["risk"]), ties, aside])
        blocks.append(("table", ["at a risk of at most", "the most useful release that reads is", "at",
                                 "with utility", "its risk", "cannot be told apart from it at 95% (utility)",
                                 "left out"], rows))
    return blocks


def _named(release: dict[str, Any]) -> str:
    return f"{release['mechanism']} at {release['setting']}"


def _mechanism_lines(results: dict[str, Any]) -> list[str]:
    """Each mechanism of the plan, its guarantee and the settings it was released at."""
    lines = []
    for spec in results["plan"].get("mechanisms") or []:
        label = spec.get("label") or spec["name"]
        releases = [r for r in results["releases"] if r["mechanism"] == label]
        guarantee = next((r.get("guarantee") or r.get("kind") for r in releases), None)
        settings = ", ".join(r["setting"] for r in releases) or "no release"
        if guarantee == "l-privacy":
            kind = ", encodes the whole corpus under one key (each token an opaque code word)"
        else:
            kind = ", releases a new corpus" if any(r.get("corpus_level") for r in releases) else ""
        lines.append(f"mechanism {label}" + (f" (guarantee: {guarantee})" if guarantee else "") + f": {settings}" + kind)
    return lines


def summary_lines(results: dict[str, Any]) -> list[str]:
    """What was compared and how: the report's opening list."""
    plan, corpora = results["plan"], results["corpora"]
    lines = [f"textveil {results.get('textveil_version', '?')}, created {results.get('created', '?')}"]
    for role, info in corpora.items():
        lines.append(f"{role.replace('_', ' ')}: {info['name']}, {info['documents']:,} documents, {info['labels']} labels")
    content = content_attacks(results)
    lines += split_lines(results.get("split"), best_top1(results["unmodified"], is_content_only, ["clean"]))
    if "risk_known" in corpora and "risk_unknown" in corpora:
        lines.append(f"attribution: the attacks learn each author from the {corpora['risk_known']['documents']:,} "
                     "known "
                     f"texts and name the author of each of the {corpora['risk_unknown']['documents']:,} unknown "
                     "texts, which every mechanism releases"
                     + ("; the unknown texts of one author are judged together" if plan.get("collapse_per_label") else ""))
    chance = results.get("chance")
    if chance and not results.get("split"):  # the split's lines say it otherwise
        lines.append(f"candidate authors: {round(1 / chance):,} (chance top-1: {_percent(chance)})")
    trainings = plan.get("trainings") or ["clean"]
    same_key = any(SAME_KEY_RESULTS in r["point"] for r in results["releases"] if "point" in r)
    lines.append(f"attacks: {', '.join(plan['attacks'])}; trained on "
                 + " and, separately, on ".join(TRAINING_WORDS.get(t, t) for t in trainings)
                 + (f"; {SAME_KEY_WORDS}" if same_key else ""))
    lines.append("risk: the best top-1 identification accuracy over every attack and training "
                 f"(lower is better; top-k measured up to k = {plan.get('top_k', '?')})")
    lines.append("intervals: every risk with its 95% interval in brackets, in percent (Wilson's score interval; "
                 f"the exact Clopper-Pearson interval where fewer than {SMALL_COUNT} texts were named or missed); "
                 "similarity, fluency ratio, describing share and length ratio with a 95% percentile bootstrap "
                 f"interval over texts ({RESAMPLES:,} resamples)")
    reference = results.get("reference")
    lines.append(f"paired test: each release's risk against {reference}'s, by McNemar's exact test on which texts "
                 "each one's risk line names (only texts named by one of the two count); 'cannot be told apart' where "
                 "p >= 0.05" if reference else
                 "paired test: none (no reference release: give --reference, or include emp at 10)")
    lines.append(f"reads: a release whose fluency ratio is at most {READABLE_FLUENCY:g}; the 'at a risk of at most r' "
                 "tables choose among releases that read and name a more useful one that does not only as such")
    lines.append("epsilon per document: for epsilon-DP, the median and the largest of each released unknown text's "
                 "own epsilon, as its Guarantee states it (a longer text spends more); epsilon per unit: per token or "
                 "word, with the metric for metric privacy (emp), which bounds no document by one number: two texts' "
                 "releases differ by at most exp(epsilon times the distance between them)")
    lines.append(f"content only: the best top-1 of {', '.join(content)} (content words only) over its trainings: "
                 "what the subject of the texts gives away, which no release that keeps the meaning can remove; "
                 "style adds: the risk minus content only, the part a mechanism can remove by changing how the "
                 "texts are written" if content else
                 "content only: not measured (add topic-svm to --attacks to see what the subject alone gives away)")
    lines += _mechanism_lines(results)
    for measure, info in results["utility_measures"].items():
        lines.append(f"utility: {_measure_header(measure, info)}")
    lines.append(f"seed: {plan.get('seed')}")
    lines.append(f"embeddings: {plan.get('embeddings') or 'default'}")
    lines.append(entity_stage_line(plan.get("entities")))
    lines.append("language model for fluency: " + (plan.get("language_model") or "the bundled one")
                 + ("" if "fluency" in results["utility_measures"] else " (fluency not measured)"))
    floor = results.get("floor")
    lines.append(f"length floor: {_percent(floor['top1'])}, the {floor['attack']} attack's top-1 on the unmodified "
                 "text (what text length alone reveals; a release that keeps lengths keeps it)" if floor
                 else "length floor: not measured (the length attack was not run)")
    timings = dict(results.get("timings") or {})
    total = timings.pop("total", sum(timings.values()))
    lines.append(f"total time: {total:.1f} s; per stage: "
                 + (", ".join(f"{stage} {seconds:.1f} s" for stage, seconds in timings.items()) or "none recorded"))
    lines.append(estimate_report_line(results.get("estimate")))
    measured = results.get("measured_seconds")
    if measured:
        lines.append(f"time measuring the points, whichever run measured them: {measured['total']:.0f} s "
                     f"({measured['total'] / 3600:.2f} h); per stage: "
                     + ", ".join(f"{stage} {seconds:.0f} s" for stage, seconds in measured["by_stage"].items())
                     + "; per mechanism: "
                     + ", ".join(f"{name} {seconds:.0f} s" for name, seconds in measured["by_mechanism"].items()))
    resume = results.get("resume") or {}
    if resume.get("points_read_back") or resume.get("releases_read_back"):
        lines.append(f"resumed: {resume.get('points_read_back', 0)} points and "
                     f"{resume.get('releases_read_back', 0)} releases read back from an earlier run")
    machine = results["machine"]
    lines.append(f"machine: {machine['platform']}, {machine['cpus']} CPUs, Python {machine['python']}")
    return lines


def _best_of(point: dict[str, Any], training: str) -> str:
    """The best top-1 of one training at a point, with its attack; "–" where it was not measured."""
    held = [(result["top1"], attack) for attack, trained, result in attack_lines(point) if trained == training]
    if not held:
        return "–"
    top1, attack = max(held, key=lambda item: item[0])
    return f"{_percent(top1)} ({attack})"


def _decoded(found: dict[str, Any], reference: str) -> str:
    entry = (found.get("references") or {}).get(reference)
    if entry is None:
        return "–"
    return "not measured" if "error" in entry else _percent(entry["tokens_recovered"])


def keyed_blocks(results: dict[str, Any]) -> list[Block]:
    """The keyed releases (PIVOT): risk per training, which one the threat model implies, and
    frequency analysis against the claim 1/l. None where the comparison has no keyed release."""
    keyed = [r for r in results["releases"] if "frequency" in r.get("point", {}) or SAME_KEY_RESULTS in r.get("point", {})]
    if not keyed:
        return []
    references = list(dict.fromkeys(name for r in keyed for name in (r["point"].get("frequency") or {}).get("references", {})))
    header = ["mechanism", "setting", "clean-trained", "release-trained (own key)", "same-key-trained",
              "risk (attack, training)", "claim: 1/l", "worst count class, exact"]
    header += [f"tokens decoded by frequency analysis ({name} counts)" for name in references]
    rows = []
    for release in keyed:
        point, found = release["point"], release["point"].get("frequency") or {}
        rows.append([release["mechanism"], release["setting"], _best_of(point, "clean"), _best_of(point, "release"),
                     _best_of(point, "same-key"), _risk_cell(release["risk"]),
                     f"{found['claim']:.3f}" if found else "–",
                     f"{found['success_bound']:.3f}" if found else "–"]
                    + [_decoded(found, name) for name in references])
    descriptions = next(((r["point"].get("frequency") or {}).get("references") for r in keyed
                         if (r["point"].get("frequency") or {}).get("references")), {})
    return [
        ("h2", "Keyed releases (PIVOT): attacks per training and frequency analysis"),
        ("p", "PIVOT releases every token as an opaque code word and encodes a whole corpus under one key. Its "
              "attacks are trained three ways: on the clean known texts and on the known texts under the attacker's "
              "own fresh key (both scored on the unknown texts encoded alone: the attacks see code words they never "
              "learned, so near chance is what to expect), and on the known texts encoded with the unknown texts "
              "under one key, as one corpus release (same-key: code words are consistent within a key). Where an "
              "author's labelled and unlabelled texts are released together, in one corpus, the same-key attack is "
              "the one the threat model implies; the risk is the best of the three, and names its training."),
        ("table", header, rows),
        ("p", "Frequency analysis: the attacker knows the mechanism and l, and guesses each code word's word from its "
              "count with the word counts it knows (" + "; ".join(f"{name}: {entry['description']}"
                                                                 for name, entry in descriptions.items())
              + "); the owner scores the guesses with the key. PIVOT's claim, l-privacy, bounds this attacker's "
              "chance of a right guess of any code word by 1/l; the worst count class, exact, is that chance on this "
              "release's riskiest code words for the attacker who knows every count. No utility measure of this "
              "comparison applies to code words (the notes under the releases table say why): a keyed release is "
              "off every utility axis of the frontier, with its risk shown above."),
    ]


def report_blocks(results: dict[str, Any]) -> list[Block]:
    """The whole report, below its title, as blocks."""
    header, rows, notes = release_rows(results)
    blocks: list[Block] = [("list", summary_lines(results)), ("h2", "Releases"), ("table", header, rows)]
    blocks += [("p", note) for note in notes]
    blocks += keyed_blocks(results)
    blocks += [("h2", "Risk-utility frontier"), *frontier_blocks(results),
               ("h2", "Risk-utility map"),
               ("image", FIGURE, "risk (top-1) against utility, one panel per utility measure")]
    return blocks


def _markdown(title: str, blocks: list[Block]) -> str:
    lines = [f"# {title}", ""]
    for kind, *content in blocks:
        if kind in ("h2", "h3"):
            lines += ["#" * int(kind[1]) + " " + content[0], ""]
        elif kind == "p":
            lines += [content[0], ""]
        elif kind == "list":
            lines += [*(f"- {item}" for item in content[0]), ""]
        elif kind == "table":
            lines += [markdown_table(*content), ""]
        else:
            lines += [f"![{content[1]}]({content[0]})", ""]
    return "\n".join(lines)


def _html(title: str, blocks: list[Block], images: dict[str, bytes]) -> str:
    body = [f"<h1>{html.escape(title)}</h1>"]
    for kind, *content in blocks:
        if kind in ("h2", "h3", "p"):
            body.append(f"<{kind}>{html.escape(content[0])}</{kind}>")
        elif kind == "list":
            body.append("<ul>" + "".join(f"<li>{html.escape(item)}</li>" for item in content[0]) + "</ul>")
        elif kind == "table":
            body.append(html_table(*content))
        else:  # embedded, so that the page is one file that opens anywhere
            encoded = base64.b64encode(images[content[0]]).decode("ascii")
            body.append(f'<img alt="{html.escape(content[1])}" src="data:image/png;base64,{encoded}">')
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{PAGE_STYLE}</style></head><body>{''.join(body)}</body></html>")


def write_comparison_report(
    results: dict[str, Any], out_dir: str | Path, title: str = "textveil comparison"
) -> dict[str, Path]:
    """Write ``results.json`` (with the frontier, computed when ``results`` lack one),
    ``report.md``, ``report.html`` and ``frontier.png`` into ``out_dir``; returns each file's path
    by name. ``results`` itself is left as it was."""
    out = Path(out_dir)
    results = with_intervals(results)
    results["frontier"] = frontier_of(results)
    written: dict[str, Path] = {}
    written["results.json"] = atomic_write_text(out / "results.json", json.dumps(results, indent=2) + "\n")
    images = {FIGURE: frontier_maps(results)}
    written[FIGURE] = atomic_write_bytes(out / FIGURE, images[FIGURE])
    blocks = report_blocks(results)
    written["report.md"] = atomic_write_text(out / "report.md", _markdown(title, blocks))
    written["report.html"] = atomic_write_text(out / "report.html", _html(title, blocks, images))
    return written
