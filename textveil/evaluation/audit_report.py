"""An audit's report: a table (Markdown, or rich on the terminal) and the claimed-against-audited
figure, written atomically beside the audit's JSON."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from textveil.evaluation.report import markdown_table

HEADER = ["pair", "setting", "claim", "audited lower bound", "confidence", "power", "event counts", "verdict"]


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


def audit_markdown(report: dict[str, Any]) -> str:
    """The audit as a Markdown document: the verdict, the table, and how to read it."""
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
    from textveil.corpus.writing import atomic_write_bytes, atomic_write_text
    from textveil.evaluation.plots import audit_claims

    target = Path(folder)
    paths = {"json": target / "audit.json", "markdown": target / "audit.md", "figure": target / "audit.png"}
    atomic_write_text(paths["json"], json.dumps(report, indent=2))
    atomic_write_text(paths["markdown"], audit_markdown(report))
    unit = "probability of a right guess" if report["guarantee"] == "l-privacy" else "privacy loss (nats)"
    title = f"{report['mechanism']}: claimed against audited ({report['verdict']})"
    atomic_write_bytes(paths["figure"], audit_claims(report["pairs"], title, unit))
    return paths
