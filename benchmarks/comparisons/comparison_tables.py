"""Print compact tables from committed comparisons, to read in a terminal: every release's risk,
utility and epsilon per document (median, and the largest over the judged texts; for metric
privacy, emp, the epsilon per token and its metric; "not recorded" in results written before it
was kept) on one line, and "at a risk of at most r" for semantic similarity. The documentation
does not paste them: its pages read their tables from the results.json files when the site is
built (``{{ fig_table ... }}`` and ``{{ best_under ... }}``, docs/hooks/result_figures.py).

    python benchmarks/comparisons/comparison_tables.py docs/results/compare-blog-short/results.json [...]
"""

from __future__ import annotations

import json
import sys

from textveil.evaluation.frontier import frontier_of
from textveil.privacy.release_budget import one_cell_words


def _cell(release: dict, measure: str) -> str:
    if measure in release.get("not_applicable", {}):
        return "n/a"
    value = release["utility"].get(measure, {}).get("value")
    return "–" if value is None else (f"{value:.0f}" if value >= 100 else f"{value:.2f}")


def tables(results: dict) -> str:
    measures = list(results["utility_measures"])
    rows = [("unmodified text", "", results["unmodified"]["risk"]["top1"],
             [f"{results['unmodified']['utility'][m]['value']:.2f}" for m in measures] + ["–"])]
    rows += [(r["mechanism"], r["setting"], r["risk"]["top1"],
              [_cell(r, m) for m in measures] + [one_cell_words(r.get("budget"), r.get("guarantee"))])
             for r in sorted(results["releases"], key=lambda r: r["risk"]["top1"])]
    frontier = frontier_of(results)
    lines = ["| mechanism | setting | risk | " + " | ".join(measures)
             + " | epsilon per document (metric privacy: per unit) |",
             "|---|---|---:|" + "---:|" * (len(measures) + 1)]
    for mechanism, setting, risk, cells in rows:
        on = [m for m in measures if any(r["mechanism"] == mechanism and r["setting"] == setting
                                          and r["id"] in frontier[m]["pareto"] for r in results["releases"])]
        mark = " *" if on else ""
        lines.append(f"| {mechanism}{mark} | {setting} | {risk:.3f} | " + " | ".join(cells) + " |")
    lines += ["", "| at a risk of at most | most similar release (semantic similarity) |", "|---:|---|"]
    by_id = {r["id"]: r for r in results["releases"]}
    for best in frontier.get("semantic-similarity", {}).get("best_under", []):
        chosen = by_id.get(best["release"])
        lines.append(f"| {best['max_risk']:.2f} | " + (
            f"{chosen['mechanism']} {chosen['setting']}: similarity {best['utility']:.3f} at risk {best['risk']:.3f}"
            if chosen else "none") + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    for path in sys.argv[1:]:
        results = json.load(open(path, encoding="utf-8"))
        print(f"## {path}\n\nchance {results['chance']:.3f}, length floor "
              f"{(results.get('floor') or {}).get('top1', float('nan')):.3f}; * on at least one frontier\n")
        print(tables(results) + "\n")
