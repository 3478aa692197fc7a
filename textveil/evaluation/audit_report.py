"""An audit's report: a table (Markdown, or rich on the terminal) and the claimed-against-audited
figure, written atomically beside the audit's JSON.

An l-privacy audit (PIVOT) is reported in its own terms: what was encoded and attacked, the claim
1/l against the frequency attacker's measured success on each encoding and over all of them, and
no column (confidence, power, event counts, releases per stage) that does not apply to it."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from textveil.evaluation.report import markdown_table

HEADER = ["pair", "setting", "claim", "audited lower bound", "confidence", "power", "event counts", "verdict"]
L_PRIVACY_HEADER = ["encoding", "code words", "claim: 1/l", "best-guess success (worst count class)",
                    "worst count class: count, right / code words", "tokens decoded", "verdict"]


def _number(value: float | None, missing: str) -> str:
    if value is None:
        return missing
    return "inf" if math.isinf(value) else f"{value:.3g}"


def audit_rows(report: dict[str, Any]) -> list[list[str]]:
    """One row per pair of an audit's JSON form (:meth:`AuditReport.to_dict`).

    >>> audit_rows({"pairs": [{"kind": "casing", "setting": "configured", "claim": 0.0, "bound": 0.0,
    ...     "confidence": 0.999, "power": 0.02, "event_first": 10, "event_second": 9, "trials": 10,
    ...     "verdict": "pass"}]})[0]
    ['casing', 'configured', '0', '0', '99.9%', '0.02', '10 / 9 of 10', 'pass']
    """
    rows = []
    for pair in report["pairs"]:
        power = pair["power"]
        if pair.get("measured") is not None:  # an l-privacy row: only its claim and measured success apply
            rows.append([pair["kind"], pair["setting"], _number(pair["claim"], "none"), f"{pair['bound']:.3g}",
                         "-", "-", "-", pair["verdict"]])
            continue
        rows.append([
            pair["kind"], pair["setting"], _number(pair["claim"], "none"), f"{pair['bound']:.3g}",
            f"{pair['confidence']:.1%}", "-" if power is None and pair["claim"] is None else _number(power, "none"),
            f"{pair['event_first']} / {pair['event_second']} of {pair['trials']}", pair["verdict"],
        ])
    return rows


def fewer_trials(report: dict[str, Any]) -> str:
    """A clause naming the pairs that ran fewer releases than the audit's (a real language
    model's), or "" when every pair ran them all.

    >>> fewer_trials({"trials": 500, "pairs": [{"kind": "canary", "trials": 500}, {"kind": "name", "trials": 50},
    ...     {"kind": "sentence", "trials": 50}]})
    ', 50 for the name and sentence pairs'
    """
    fewer: dict[int, list[str]] = {}
    if report.get("guarantee") == "l-privacy":  # its pairs count tokens, not releases
        return ""
    for pair in report["pairs"]:
        if pair["trials"] < report["trials"]:
            fewer.setdefault(pair["trials"], []).append(pair["kind"])
    clauses = []
    for count, kinds in sorted(fewer.items()):
        named = kinds[0] if len(kinds) == 1 else f"{', '.join(kinds[:-1])} and {kinds[-1]}"
        clauses.append(f", {count:,} for the {named} pair{'s' if len(kinds) > 1 else ''}")
    return "".join(clauses)


def _plural(count: int, noun: str) -> str:
    """
    >>> _plural(1, "text"), _plural(3000, "token")
    ('1 text', '3,000 tokens')
    """
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _class_cell(measured: dict[str, Any]) -> str:
    if measured.get("worst_class_count") is None:
        return "-"
    return (f"count {measured['worst_class_count']:,}: {measured['worst_class_right']:,} / "
            f"{measured['worst_class_code_words']:,}")


def _l_privacy_lines(report: dict[str, Any]) -> list[tuple[str, float, float, dict[str, Any], str]]:
    """``(label, claim, best-guess success, measured, verdict)`` per encoding, then pooled over all."""
    lines = [(pair["setting"], pair["claim"], pair["bound"], pair["measured"], pair["verdict"])
             for pair in report["pairs"]]
    account = report.get("l_privacy") or {}
    overall = account.get("overall")
    if overall and len(report["pairs"]) > 1:
        claim = account["claim"]
        lines.append((f"all {account['encodings']} keys, pooled", claim, overall["success"], overall,
                      "pass" if overall["success"] <= claim + 1e-12 else "fail"))
    return lines


def l_privacy_rows(report: dict[str, Any]) -> list[list[str]]:
    """One row per encoding of an l-privacy audit's JSON form, then one for all of them pooled.

    >>> row = {"setting": "key 1 of 1", "claim": 0.2, "bound": 0.15, "verdict": "pass",
    ...        "measured": {"code_words": 40, "worst_class_count": 3, "worst_class_right": 3,
    ...                     "worst_class_code_words": 20, "tokens_decoded": 0.1}}
    >>> l_privacy_rows({"pairs": [row], "l_privacy": {"claim": 0.2, "encodings": 1, "overall": {
    ...     **row["measured"], "success": 0.15}}})[0]
    ['key 1 of 1', '40', '0.200', '0.150', 'count 3: 3 / 20', '10.0%', 'pass']
    """
    return [[label, f"{measured['code_words']:,}", f"{claim:.3f}", f"{success:.3f}", _class_cell(measured),
             f"{measured['tokens_decoded']:.1%}", verdict]
            for label, claim, success, measured, verdict in _l_privacy_lines(report)]


def l_privacy_markdown(report: dict[str, Any]) -> str:
    """An l-privacy audit (PIVOT) as a Markdown document: what was done, the claim against the
    measured success per encoding and over all, and how to read it."""
    parameters = ", ".join(f"{k}={v}" for k, v in report["parameters"].items() if v is not None)
    account = report.get("l_privacy") or {}
    corpus = account.get("corpus") or {}
    encodings = account.get("encodings", len(report["pairs"]))
    source, _, drawn = corpus.get("description", "the corpus").partition(", ")
    keys = "seeded" if report["seeded"] else "drawn from OS entropy"
    lines = [
        f"# textveil audit: {report['mechanism']} ({parameters})", "",
        f"**{report['verdict']}**.", "",
        f"What was done: {source} ({_plural(corpus.get('texts', 0), 'text')}, "
        f"{_plural(corpus.get('tokens', 0), 'token')}{', ' + drawn if drawn else ''}) was encoded "
        f"{encodings} times, each time under a fresh key ({keys}), in {report['seconds']:.0f} s. Each encoding was "
        "attacked by the frequency attacker that knows the mechanism and every word's count: it sees each code word's "
        "count and guesses the word that owns the most code words of that count (code words of one count are "
        "exchangeable to it, so no guess from the counts does better); its guesses were scored with the key.", "",
    ]
    if report["pairs"]:
        lines += [markdown_table(L_PRIVACY_HEADER, l_privacy_rows(report)), ""]
    lines += [
        "*claim*: l-privacy's bound on the chance that the attacker's guess of any code word is right; *best-guess "
        "success (worst count class)*: the share of right guesses among the code words of the count where the "
        "attacker did best, the claim's own measure (with its count, and how many of that class's code words it "
        "guessed right); *tokens decoded*: the share of the release's tokens whose code word it guessed right; the "
        "pooled row counts every encoding's code words together. These are exact shares on each release, not "
        "estimates from samples: no confidence level, power or event count applies.", "",
    ]
    if len(report["pairs"]) > 1 and account.get("same_for_every_key"):
        lines += [
            f"The {encodings} keys give the same numbers, as they must: GOMM's plan (how many code words of which count "
            "each word gets) is a public function of the word counts, so every key makes the same count classes; a "
            "key only names the code words and decides which occurrences each one takes. Attacks that use more than "
            "counts (merging code words by their contexts) can do differently per key; they are measured by "
            "benchmarks/papers/paper003_pivot.py, not bounded by l.", ""]
    return "\n".join(lines)


def audit_markdown(report: dict[str, Any]) -> str:
    """The audit as a Markdown document: the verdict, the table, and how to read it."""
    if report.get("guarantee") == "l-privacy":
        return l_privacy_markdown(report)
    parameters = ", ".join(f"{k}={v}" for k, v in report["parameters"].items() if v is not None)
    lines = [
        f"# textveil audit: {report['mechanism']} ({parameters})", "",
        f"**{report['verdict']}** ({report['trials']:,} releases of each input per stage{fewer_trials(report)}, "
        f"{report['seconds']:.0f} s{', seeded' if report['seeded'] else ', OS entropy'}).", "",
    ]
    if report.get("power"):
        power = report["power"]
        lines += [f"Power: the smallest violation this audit would have shown is a loss of "
                  f"{power['detectable_loss']:.3g} nats on the {power['pair']} pair ({power['setting']}), "
                  f"{power['detectable_excess']:.3g} above its claim of {power['claim']:.3g}.", ""]
    elif report["pairs"] and report["guarantee"] != "l-privacy":
        lines += ["Power: with these trials no pair's chosen event was likely enough to show any violation.", ""]
    if report["pairs"]:
        lines += [markdown_table(HEADER, audit_rows(report)), ""]
    lines += [
        "*claim*: the largest privacy loss (log-likelihood ratio of any release) the Guarantee allows for the pair; "
        "*audited lower bound*: the loss the chosen event's counts prove, at the pair's confidence (the audit's, "
        "split over its claimed pairs); *power*: the smallest true loss above the claim these trials would have "
        "shown (inf: none); a pair the Guarantee does not cover (its difference is released unprotected) is "
        "'no claim' and proves nothing either way.",
    ]
    return "\n".join(lines) + "\n"


def write_audit_report(report: dict[str, Any], folder: str | Path) -> dict[str, Path]:
    """``audit.json``, ``audit.md`` and ``audit.png`` in ``folder``, each written atomically."""
    from textveil.atomic_files import atomic_write_bytes, atomic_write_text
    from textveil.evaluation.plots import audit_claims

    target = Path(folder)
    paths = {"json": target / "audit.json", "markdown": target / "audit.md", "figure": target / "audit.png"}
    atomic_write_text(paths["json"], json.dumps(report, indent=2))
    atomic_write_text(paths["markdown"], audit_markdown(report))
    if report["guarantee"] == "l-privacy" and report["pairs"]:
        figure = l_privacy_figure(report)
    else:
        figure = audit_claims(report["pairs"], f"{report['mechanism']}: claimed against audited ({report['verdict']})")
    atomic_write_bytes(paths["figure"], figure)
    return paths


def l_privacy_figure(report: dict[str, Any]) -> bytes:
    """An l-privacy audit's figure: per encoding (and pooled), the frequency attacker's best-guess
    success on its worst count class (red above the claim) and the share of tokens it decoded,
    against the claim 1/l (dashed)."""
    import numpy as np

    from textveil.evaluation.plots import _png, plt

    lines = _l_privacy_lines(report)
    claim = float(report["pairs"][0]["claim"])
    success = [float(line[2]) for line in lines]
    decoded = [float(line[3]["tokens_decoded"]) for line in lines]
    figure, axis = plt.subplots(figsize=(max(6.0, 1.2 * len(lines) + 2), 4.2))
    positions = np.arange(len(lines))
    axis.bar(positions - 0.18, success, width=0.36, label="best-guess success (worst count class)",
             color=["tab:red" if value > claim + 1e-12 else "tab:blue" for value in success])
    axis.bar(positions + 0.18, decoded, width=0.36, label="tokens decoded", color="tab:grey")
    axis.axhline(claim, linestyle="--", color="black", linewidth=1.2, label=f"claim: 1/l = {claim:.3f}")
    axis.set_xticks(list(positions))
    axis.set_xticklabels([line[0] for line in lines], fontsize=8)
    axis.set_ylim(0, max([claim, *success, *decoded]) * 1.3)
    axis.set_ylabel("share of right guesses")
    parameters = ", ".join(f"{k}={v}" for k, v in report["parameters"].items() if v is not None)
    axis.set_title(f"{report['mechanism']} ({parameters}): the frequency attacker against l-privacy "
                   f"({'passed' if report['passed'] else 'FAILED'})", fontsize=10)
    axis.legend(fontsize=7, loc="upper right")
    return _png(figure)
