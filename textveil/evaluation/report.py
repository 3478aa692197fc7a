"""Write an experiment's results: ``results.json``, a Markdown report and a self-contained
HTML page (figures embedded), plus the figures as PNG files. Every file is written atomically.

A keyed release (PIVOT) gets its own wording: what each of its three trainings means and which
one the threat model of a corpus release implies, its frequency analysis against the claim 1/l,
and why no utility task is reported (:mod:`textveil.evaluation.code_words`)."""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import Any

from textveil.atomic_files import atomic_write_bytes, atomic_write_text
from textveil.evaluation.plots import risk_utility_maps, topk_curves
from textveil.evaluation.tradeoff import BEST_ATTACK, halving_points
from textveil.evaluation.code_words import releases_code_words
from textveil.evaluation.experiment_plan import UNMODIFIED
from textveil.evaluation.intervals import Interval, rate_interval_of
from textveil.evaluation.release_intervals import utility_interval, with_attack_intervals
from textveil.evaluation.trainings import (
    SAME_KEY_RESULTS,
    attack_lines,
    best_attack,
    best_top1,
    is_content_only,
    line_label,
    lines_of,
    result_of,
    trainings_in,
)
from textveil.evaluation.splits import split_lines
from textveil.evaluation.time_estimate import estimate_report_line
from textveil.pii.stage import entity_stage_line
from textveil.privacy.release_budget import per_document_words, per_unit_words

FIGURES = {"topk_curves.png": topk_curves, "risk_utility.png": risk_utility_maps}
NO_UTILITY_MAP = "No utility was measured (see 'Utility of the release'): there is no risk-utility map to draw."
# The style of every self-contained HTML report (evaluation and comparison).
PAGE_STYLE = ("body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}"
              "table{border-collapse:collapse;margin:1em 0;font-size:14px}td,th{border:1px solid #ccc;padding:4px 8px}"
              "th{background:#f3f3f3}img{max-width:100%}")



def _parameter(results: dict[str, Any]) -> str:
    """What the points are labelled by: the swept parameter, or "release" for a mechanism without one."""
    return results["plan"].get("parameter") or "release"

def _fmt(value: float) -> str:
    return f"{value:.3f}"


def _utility_cell(result: dict[str, Any]) -> str:
    """A utility value with its 95% interval over texts where it was kept; with repeated releases,
    the mean ± its standard deviation.

    >>> _utility_cell({"value": 0.25, "interval": {"low": 0.2, "high": 0.3, "method": "bootstrap"}})
    '0.250 [0.200, 0.300]'
    """
    found = utility_interval(result)
    shown = f" [{_fmt(found.low)}, {_fmt(found.high)}]" if found is not None else ""
    return _fmt(result["value"]) + shown + (f" ± {result['sd']:.3f}" if "sd" in result else "")


def _correct_cell(result: dict[str, Any]) -> str:
    """Correct top-1 predictions and their share with its 95% interval; with repeated releases,
    ± its standard deviation.

    >>> _correct_cell({"top1": 0.1, "n_unknown": 150})
    '15 (10.0% [6.2, 15.8])'
    """
    spread = f" ± {result['top1_sd']:.1%}" if "top1_sd" in result else ""
    found = rate_interval_of(result)
    shown = f" {percent_interval(found)}" if found is not None else ""
    return f"{round(result['top1'] * result['n_unknown'])} ({result['top1']:.1%}{shown}{spread})"


def percent_interval(found: Interval) -> str:
    """An interval of a rate in percent points, as the reports print it.

    >>> percent_interval(Interval(0.0371, 0.1181, "wilson"))
    '[3.7, 11.8]'
    """
    return f"[{found.low * 100:.1f}, {found.high * 100:.1f}]"


BUDGET_HEADER = ["epsilon per document: median (largest)", "epsilon per unit (metric)"]
"""The columns that show a release's budget beside its risk (:func:`budget_cells`)."""


def budget_cells(figures: dict[str, Any] | None, kind: str | None) -> list[str]:
    """A release's epsilon per document (median and largest over the judged texts) and per unit
    with its metric, as its Guarantees state them (``figures``: a point's ``budget``); ``kind``, the
    mechanism's kind of guarantee, for results written before the figures were kept: they read
    "not recorded", or "no bound" for a mechanism with no guarantee.

    >>> budget_cells({"kind": "dp", "per_document": {"median": 2880.0, "largest": 5760.0, "texts": 9},
    ...               "per_unit": 30.0, "unit": "token", "metric": None}, "dp")
    ['2,880 (largest 5,760)', '30 per token']
    >>> budget_cells(None, "metric"), budget_cells(None, "none")
    (['not recorded', 'not recorded'], ['no bound', 'no bound'])
    """
    return [per_document_words(figures, kind), per_unit_words(figures, kind)]


def _risk_cell(point: dict[str, Any]) -> str:
    """The risk at a point: the best top-1 over every attack and training, and who reached it."""
    best = best_attack(point)
    return f"{best['top1']:.1%}: {line_label(best['attack'], best['training'])}"


def table1_rows(results: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Paper 001's Table 1: per grid point, correct author predictions of each attack under
    each training, the risk (the best of them, naming its attack and training), the budget of the
    release beside it (:func:`budget_cells`) and topic accuracy of each topic task, with the
    chance levels in the header."""
    points = results["points"]
    lines = lines_of(points)
    tasks = [t for t in (points[0]["utility"] if points else {}) if t.startswith("topic")]
    header = [_parameter(results)]
    for attack, training in lines:
        first = next(r for r in (result_of(p, attack, training) for p in points) if r is not None)
        chance = first["chance"][0] * first["n_unknown"]
        header.append(f"{line_label(attack, training)}: correct / {first['n_unknown']} (chance {chance:.1f})")
    header.append("risk: best top-1 (attack, training)")
    header += BUDGET_HEADER
    kind = _guarantee_kind(results["plan"]["mechanism"])
    topic_chance = results.get("topic_chance")
    for task in tasks:
        header.append(f"{task}: accuracy" + (f" (chance {topic_chance:.2f})" if topic_chance else ""))
    rows = []
    for point in points:
        row = [point["label"]]
        row += [_correct_cell(result) if (result := result_of(point, attack, training)) else "–"
                for attack, training in lines]
        row.append(_risk_cell(point))
        unmodified = point["label"] == UNMODIFIED and point.get("parameter") is None
        row += ["–"] * len(BUDGET_HEADER) if unmodified else budget_cells(point.get("budget"), kind)
        row += [_utility_cell(point["utility"][task]) for task in tasks]
        rows.append(row)
    return header, rows


def topk_rows(results: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    header = [_parameter(results), "attack", "trained on", "top-1", "top-5", "top-10", "chance top-1"]
    rows = []
    for point in results["points"]:
        for name, training, result in attack_lines(point):
            topk = result["topk"]
            rows.append([point["label"], name, training, _fmt(topk[0]), _fmt(topk[min(4, len(topk) - 1)]),
                         _fmt(topk[min(9, len(topk) - 1)]), _fmt(result["chance"][0])])
    return header, rows


def utility_rows(results: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    points = results["points"]
    tasks = list(points[0]["utility"]) if points else []
    header = [_parameter(results)] + [
        f"{t} ({points[0]['utility'][t]['metric']}, {'higher' if points[0]['utility'][t]['higher_is_better'] else 'lower'} is better)"
        for t in tasks
    ]
    rows = [[p["label"]] + [_utility_cell(p["utility"][t]) for t in tasks] for p in points]
    return header, rows


def halving_rows(results: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Where top-1 identification has halved, and the utility left there (see :mod:`tradeoff`)."""
    parameter = _parameter(results)
    header = ["attack", "trained on", "utility task", "clean top-1", f"largest {parameter} with top-1 <= half",
              "utility there (change)", f"interpolated {parameter}", "utility there (change)"]
    rows = []
    for found in halving_points(results):
        row = [found["attack"], _training_cell(found), found["task"], _fmt(found["clean_top1"])]
        if not found["halves"]:
            rows.append(row + ["not reached on this grid", "", "", ""])
            continue
        row += [f"{found['measured_parameter']:g}",
                f"{_fmt(found['measured_utility'])} ({found['measured_utility_change']:+.3f})"]
        if "interpolated_parameter" in found:
            low, high = found["bracket"]
            row += [f"{found['interpolated_parameter']:.1f} (between {low:g} and {high:g})",
                    f"{_fmt(found['interpolated_utility'])} ({found['interpolated_utility_change']:+.3f})"]
        else:
            row += ["", ""]
        rows.append(row)
    return header, rows


def halving_section(results: dict[str, Any]) -> tuple[list[str], tuple[list[str], list[list[str]]] | None]:
    """The halving section's paragraphs and table: the table of :func:`halving_rows`, or, where it
    would have no row, no table and one line that says why (a table of headers alone reads as if
    something had gone wrong)."""
    header, rows = halving_rows(results)
    if rows:
        return [], (header, rows)
    points = results["points"]
    if not any(p.get("parameter") is not None for p in points):
        reason = ("This mechanism has no parameter to sweep, so there is no grid on which identification could "
                  "halve: the table above gives the risk of its release.")
    elif not any(p.get("parameter") is None for p in points):
        reason = ("This run has no point on the unmodified text (--no-unmodified), so there is no clean level of "
                  "identification to halve.")
    elif any(task.startswith("topic") for p in points for task in p["utility"]):
        reason = ("No attack and topic task were measured both on the unmodified text and on the grid, so no "
                  "halving point can be read.")
    else:
        reason = ("No topic-classification task was measured (topic accuracy is the utility this section reads, as "
                  "in paper 001), so no halving point is reported; the risk at each value is in the table above. "
                  "A utility corpus with topic labels (--utility-corpus) adds it.")
    return [reason], None


def _training_cell(found: dict[str, Any]) -> str:
    """The training of a halving row; for the best attack, which attack and training won."""
    if found["attack"] != BEST_ATTACK:
        return found["training"] or "clean"
    winners = [("clean text", found.get("clean_best")), ("where halved", found.get("measured_best"))]
    return "; ".join(f"{where}: {line_label(w['attack'], w['training'])}" for where, w in winners if w)


def _trainings_line(results: dict[str, Any]) -> str:
    """What the attacks were fitted on, and what the risk is therefore the best of."""
    if releases_code_words(results["plan"]["mechanism"]):
        return _keyed_trainings_line(results)
    trainings = trainings_in(results)
    if trainings == ["clean"]:
        return ("attacks trained on the clean known texts only: no release-trained attack, "
                "so the risk may be underestimated")
    if trainings == ["release"]:
        return ("attacks trained on the known texts released by the same mechanism (independent seed), "
                "and on the clean text for the unmodified point")
    return ("attacks trained on the clean known texts and, at each grid point, on the known texts released by the "
            "same mechanism and parameters with an independent seed (the attacker knows the mechanism); "
            "the risk is the best top-1 over every attack and both trainings (on the unmodified text, with no "
            "mechanism, the two trainings are one clean-trained measurement)")


def _keyed_trainings_line(results: dict[str, Any]) -> str:
    """What each training means for a mechanism that encodes a corpus under one key (PIVOT), and
    which the threat model of a corpus release implies."""
    trainings = trainings_in(results)
    same_key = any(SAME_KEY_RESULTS in point for point in results["points"])
    parts = []
    if "clean" in trainings:
        parts.append("*clean*: fitted on the clean known texts (the attack learned words and is shown code words: "
                     "near chance is what to expect)")
    if "release" in trainings:
        parts.append("*release*: fitted on the known texts encoded by the public mechanism under the attacker's own "
                     "fresh key (Kerckhoffs: the mechanism is known, the key is not; another key gives other code "
                     "words, so near chance is what to expect again)")
    if same_key:
        parts.append("*same-key*: fitted on the known texts encoded together with the unknown texts under one key, as "
                     "one corpus release in one random order (code words are consistent within a key, so an "
                     "author's code-word n-grams can be learned)")
    line = (f"{len(parts)} trainings of each attack: " + "; ".join(parts) + ". The clean- and release-trained attacks "
            "are scored on the unknown texts encoded alone, the same-key-trained ones on the unknown texts' code "
            "words of the joint release")
    if same_key:
        line += (". PIVOT encodes a whole corpus under one key: where an author's labelled and unlabelled texts are "
                 "released together, in one corpus, the same-key attack is the one the threat model implies, and the "
                 "realistic worst case")
    else:
        line += (". The same-key training was not run (--no-same-key): the risk below holds only where the unknown "
                 "texts are released alone, never in one corpus with texts whose authors are known")
    return line + ("; the risk is the best top-1 over every attack and training, naming the attack and training that "
                   "reached it (on the unmodified text, one clean-trained measurement)")


def frequency_rows(results: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Frequency analysis of a keyed release, per point and reference: what the attacker who
    guesses from counts decoded, beside the claim 1/l and the release's exact worst count class."""
    parameter = _parameter(results)
    header = [parameter, "claim: 1/l", "worst count class, exact", "tokens decodable, exact", "attacker's counts",
              "tokens decoded", "word types decoded", "best count class of >= 20 code words: right (95% upper bound)"]
    rows = []
    for point in results["points"]:
        found = point.get("frequency")
        if not found:
            continue
        for name, entry in found["references"].items():
            common = [point["label"], _fmt(found["claim"]), _fmt(found["success_bound"]),
                      f"{found['tokens_recoverable']:.1%}", name]
            if "error" in entry:
                rows.append(common + [f"not measured: {entry['error']}", "–", "–"])
                continue
            classes = entry["max_class"] if isinstance(entry["max_class"], list) else [entry["max_class"]]
            best = ("–" if entry["max_class_success"] is None else
                    f"{entry['max_class_success']:.3f} ({entry['max_class_upper']:.3f}), count "
                    + ", ".join(str(c) for c in classes))
            rows.append(common + [f"{entry['tokens_recovered']:.1%}", f"{entry['types_recovered']:.1%}", best])
    return header, rows


def _frequency_notes(results: dict[str, Any]) -> list[str]:
    """How to read the frequency table."""
    found = next((p["frequency"] for p in results["points"] if p.get("frequency")), None)
    if found is None:
        return []
    references = "; ".join(f"*{name}*: {entry['description']}" for name, entry in found["references"].items())
    return [
        f"The attacker {found['attacker']} (method: {found['method']}, the best guess from a count: code words of one "
        "count are exchangeable to it). PIVOT's claim, l-privacy, bounds its chance of guessing any code word right "
        "by 1/l, and so the share of tokens it decodes. *worst count class, exact*: that chance for the release's "
        "riskiest code words, computed from the key for the attacker who knows every word's count; *tokens "
        f"decodable, exact*: the share of tokens that attacker decodes. The attacker's counts: {references}.",
    ]


def _utility_notes(results: dict[str, Any]) -> list[str]:
    """Why utility tasks of the plan were not run (as ``results.json`` records them)."""
    skipped = results.get("utility_not_applicable") or {}
    by_reason: dict[str, list[str]] = {}
    for task, reason in skipped.items():  # tasks skipped for one reason are named together
        by_reason.setdefault(reason, []).append(task)
    notes = [f"{', '.join(tasks)}: not applicable: {reason}." for reason, tasks in by_reason.items()]
    if not any(p["utility"] for p in results["points"]) and not notes:
        notes.append("No utility task was run.")
    return notes


def _risk_by_training(point: dict[str, Any]) -> str:
    """The best top-1 of each training at one point, and the risk (the best of all)."""
    best: dict[str, tuple[float, str]] = {}
    for attack, training, result in attack_lines(point):
        if training not in best or result["top1"] > best[training][0]:
            best[training] = (result["top1"], attack)
    risk = best_attack(point)
    return (f"{point['label']}: " + ", ".join(f"{training}-trained best {top1:.1%} ({attack})"
                                              for training, (top1, attack) in best.items())
            + f"; risk {risk['top1']:.1%} by {line_label(risk['attack'], risk['training'])}")


def _keyed_blocks(results: dict[str, Any]) -> list[tuple[str, list[str], tuple[list[str], list[list[str]]] | None]]:
    """A keyed release's own sections: risk per training, and frequency analysis."""
    released = [p for p in results["points"] if SAME_KEY_RESULTS in p or "frequency" in p]
    if not released:
        return []
    chance = next((r["chance"][0] for p in released for _, _, r in attack_lines(p)), None)
    risk = [("Stylometric risk per training (PIVOT)",
             [_risk_by_training(p) for p in released]
             + ([f"chance top-1: {chance:.1%}"] if chance is not None else []), None)]
    header, rows = frequency_rows(results)
    return risk + [("Frequency analysis of the release (PIVOT, paper 003)", _frequency_notes(results), (header, rows))]


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table.

    >>> print(markdown_table(["a", "b"], [["1", "2"]]))
    | a | b |
    |---|---|
    | 1 | 2 |
    """
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def html_table(header: list[str], rows: list[list[str]]) -> str:
    """An HTML table, every cell escaped.

    >>> html_table(["a"], [["<b>"]])
    '<table><thead><tr><th>a</th></tr></thead><tbody><tr><td>&lt;b&gt;</td></tr></tbody></table>'
    """
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _embeddings_line(embeddings: dict[str, Any]) -> str:
    size = f"{embeddings['words']:,} words, {embeddings['dim']} dims"
    # the default table's name already states its size: "default (MiniLM-L6 static, 30,000 words)"
    return f"embeddings: {embeddings['name']}, {embeddings['dim']} dims" if f"{embeddings['words']:,} words" in embeddings["name"] \
        else f"embeddings: {embeddings['name']} ({size})"


def _guarantee_kind(mechanism: str) -> str:
    """The kind of guarantee a mechanism gives, from its registry entry."""
    from textveil.mechanisms.registry import MECHANISMS

    return MECHANISMS.entry(mechanism).guarantee


def _guarantee_line(mechanism: str) -> str:
    """What the mechanism guarantees, from its registry entry: a report of a mechanism with no
    formal guarantee says so before any figure."""
    from textveil.privacy.guarantee import KINDS

    kind = _guarantee_kind(mechanism)
    if kind == "none":
        return (f"guarantee: NONE: `{mechanism}` gives no formal privacy guarantee; the risk below is measured by "
                "these attacks, not bounded")
    return f"guarantee: {KINDS[kind]}"


def _summary_lines(results: dict[str, Any]) -> list[str]:
    plan, corpora = results["plan"], results["corpora"]
    lines = [
        f"mechanism `{plan['mechanism']}`, "
        + (f"{plan['parameter']} grid {', '.join(f'{v:g}' for v in plan['grid'])}" if plan["parameter"]
           else "no parameter to sweep (one release)")
        + (" plus the unmodified text" if plan["include_unmodified"] else "")
        + f", seed {plan['seed']}"
        + (f", {plan['repeats']} releases per value (mean ± standard deviation)" if plan.get("repeats", 1) > 1 else "")
        + "".join(f", {name}={value}" for name, value in (plan.get("mechanism_options") or {}).items()),
        _guarantee_line(plan["mechanism"]),
        entity_stage_line(plan.get("entities")),
        _trainings_line(results),
        _embeddings_line(results["embeddings"]),
    ]
    for role, info in corpora.items():
        lines.append(f"{role.replace('_', ' ')}: {info['name']}, {info['documents']:,} documents, {info['labels']} labels")
    unmodified = next((p for p in results["points"] if p.get("label") == UNMODIFIED), None)
    lines += split_lines(results.get("split"),
                         best_top1(unmodified, is_content_only, ["clean"]) if unmodified is not None else None)
    timing = ", ".join(f"{stage} {seconds:.1f} s" for stage, seconds in results["timings"].items())
    lines.append(f"time per stage: {timing}")
    lines.append(estimate_report_line(results.get("estimate")))
    if results.get("task_seconds"):
        tasks = sorted(results["task_seconds"].items(), key=lambda item: -item[1])
        lines.append("time per task (summed over the grid): " + ", ".join(f"{task} {seconds:.1f} s" for task, seconds in tasks))
    lines.append(f"machine: {results['machine']['platform']}, {results['machine']['cpus']} CPUs, Python {results['machine']['python']}")
    return lines


def write_report(results: dict[str, Any], out_dir: str | Path, title: str = "textveil evaluation") -> dict[str, Path]:
    """Write results.json, report.md, report.html and the PNG figures into ``out_dir``."""
    out = Path(out_dir)
    written: dict[str, Path] = {}
    results = {**results, "points": [with_attack_intervals(point) for point in results["points"]]}
    written["results.json"] = atomic_write_text(out / "results.json", json.dumps(results, indent=2) + "\n")
    has_utility = any(p["utility"] for p in results["points"])
    # no utility measured (PIVOT's code words): no risk-utility map, rather than an empty picture
    images = {name: draw(results) for name, draw in FIGURES.items() if has_utility or name != "risk_utility.png"}
    for name, data in images.items():
        written[name] = atomic_write_bytes(out / name, data)
    # (heading, paragraphs, table or None): a section without a table says why in its paragraphs
    sections: list[tuple[str, list[str], tuple[list[str], list[list[str]]] | None]] = [
        ("Correct predictions per parameter value (paper 001, Table 1)", [], table1_rows(results))]
    if has_utility:
        sections.append(("Where identification has halved (paper 001's shape)", *halving_section(results)))
    sections.append(("Top-k identification", [], topk_rows(results)))
    sections += _keyed_blocks(results)
    sections.append(("Utility of the release", _utility_notes(results), utility_rows(results) if has_utility else None))
    figures_note = (["A third column of panels shows the same-key-trained attacks."]
                    if any(SAME_KEY_RESULTS in p for p in results["points"]) else [])
    markdown = [f"# {title}", "", *[f"- {line}" for line in _summary_lines(results)], ""]
    for heading, paragraphs, table in sections:
        markdown += [f"## {heading}", ""]
        markdown += [item for paragraph in paragraphs for item in (paragraph, "")]
        markdown += [markdown_table(*table), ""] if table is not None else []
    markdown += ["## Top-k identification curves (paper 004, Fig. 2)", "", *[item for n in figures_note for item in (n, "")],
                 "![top-k curves](topk_curves.png)", "",
                 "## Risk-utility maps (paper 004, Fig. 4)", "",
                 "![risk-utility maps](risk_utility.png)" if has_utility else NO_UTILITY_MAP, ""]
    written["report.md"] = atomic_write_text(out / "report.md", "\n".join(markdown))
    body = [f"<h1>{html.escape(title)}</h1>", "<ul>" + "".join(f"<li>{html.escape(l)}</li>" for l in _summary_lines(results)) + "</ul>"]
    for heading, paragraphs, table in sections:
        body += [f"<h2>{html.escape(heading)}</h2>", *(f"<p>{html.escape(p)}</p>" for p in paragraphs)]
        body += [html_table(*table)] if table is not None else []
    body += [f"<p>{html.escape(n)}</p>" for n in figures_note]
    for name, caption in (("topk_curves.png", "Top-k identification curves (paper 004, Fig. 2)"),
                          ("risk_utility.png", "Risk-utility maps (paper 004, Fig. 4)")):
        if name == "risk_utility.png" and not has_utility:
            body += [f"<h2>{caption}</h2>", f"<p>{html.escape(NO_UTILITY_MAP)}</p>"]
            continue
        encoded = base64.b64encode(images[name]).decode("ascii")
        body += [f"<h2>{caption}</h2>", f'<img alt="{caption}" src="data:image/png;base64,{encoded}">']
    page = f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title><style>{PAGE_STYLE}</style></head><body>{''.join(body)}</body></html>"
    written["report.html"] = atomic_write_text(out / "report.html", page)
    return written
