"""The per-lever table of a `textveil compare` (issue 37): for every release, the risk (the best
attack of every kind and training), what of it content alone gives (``topic-svm``: content words
only) and what style alone gives (every other attack), MiniLM similarity, the fluency ratio and the
share of releases that describe the text instead of rewriting it, the length ratio (released
words / input words) where the comparison measured it, and the epsilon per document (median, and
the largest over the judged texts; for metric privacy the epsilon per token with its metric).

    .venv/bin/python benchmarks/comparisons/frontier_levers_table.py benchmarks/out/frontier-levers/results.json \
        [--out docs/results/frontier-levers/levers.md]

Prints the table (markdown); with --out, writes it there too.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from textveil.evaluation.trainings import risk_apart
from textveil.privacy.release_budget import one_cell_words


def rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    """One row for the unmodified text, then one per release in the comparison's order."""
    table = []
    for release in [{"mechanism": "none (the original texts)", "setting": "", "point": results["unmodified"],
                     "utility": results["unmodified"].get("utility", {})}, *results["releases"]]:
        point = release["point"]
        utility = release.get("utility") or {}
        fluency = utility.get("fluency", {})
        parts = risk_apart(point)  # the comparison report's own columns: content only, and the rest
        table.append({
            "release": release["mechanism"], "setting": release.get("setting", ""),
            "risk": parts["risk"], "style": parts["style"], "content": parts["content"],
            "similarity": utility.get("semantic-similarity", {}).get("value"),
            "fluency": fluency.get("value"),
            "describing": utility.get("describing", {}).get("value"),
            "length": utility.get("length-ratio", {}).get("value"),
            # "not recorded" in a comparison written before the budget was kept; "-" for the original texts
            "epsilon": one_cell_words(release.get("budget"), release.get("guarantee")) if "id" in release else "-",
        })
    return table


def markdown(table: list[dict[str, Any]], caption: str) -> str:
    def shown(value: Any, digits: int = 3) -> str:
        return "-" if value is None else f"{value:.{digits}f}"

    # the length ratio (released words / input words) where the comparison measured it
    length = any(row["length"] is not None for row in table)
    lines = [caption, "",
             "| release | setting | risk | style only | content only (topic-svm) | MiniLM similarity | fluency ratio | "
             "describes |" + (" length ratio |" if length else "")
             + " epsilon per document (metric privacy: per unit) |",
             "|---|---|---|---|---|---|---|---|" + ("---|" if length else "") + "---|"]
    for row in table:
        lines.append(f"| {row['release']} | {row['setting']} | {shown(row['risk'])} | {shown(row['style'])} | "
                     f"{shown(row['content'])} | {shown(row['similarity'])} | {shown(row['fluency'], 2)} | "
                     f"{shown(row['describing'], 2)} |" + (f" {shown(row['length'], 2)} |" if length else "")
                     + f" {row['epsilon']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="a comparison's results.json")
    parser.add_argument("--out", type=Path, help="also write the table here")
    args = parser.parse_args()
    results = json.loads(args.results.read_text(encoding="utf-8"))
    plan = results.get("plan", {})
    caption = (f"Seed {plan.get('seed', '?')}; attacks {', '.join(plan.get('attacks', []))} (each trained on clean and "
               "on released known texts; risk = the best top-1); content only = topic-svm; style only = the others.")
    text = markdown(rows(results), caption)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
