"""The entity stage's effect on risk: one table from the comparisons benchmarks/privacy/pii_risk.sh wrote
(docs/results/pii-risk/{blog,c50}-{on,off}/results.json). blog-off, when absent, is read from
docs/results/compare-blog-short: the same split, seed, attacks and trainings with no stage.

    .venv/bin/python benchmarks/privacy/pii_risk_table.py      # writes docs/results/pii-risk/README.md
"""

from __future__ import annotations

import json
from pathlib import Path

from textveil.atomic_files import atomic_write_text

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results"
SOURCES = {
    ("blog_short, 150 users, per user", "on"): [RESULTS / "pii-risk" / "blog-on"],
    ("blog_short, 150 users, per user", "off"): [RESULTS / "pii-risk" / "blog-off", RESULTS / "compare-blog-short"],
    ("C50, first 25 authors, per article", "on"): [RESULTS / "pii-risk" / "c50-on"],
    ("C50, first 25 authors, per article", "off"): [RESULTS / "pii-risk" / "c50-off"],
}


def best(attacks: dict, training: str) -> tuple[float, str] | None:
    scored = [(a["top1"], name) for name, a in attacks.items() if a.get("training", training) == training]
    return max(scored) if scored else None


def rows() -> list[str]:
    lines = ["| corpus | emp epsilon | entity stage | best clean-trained top-1 | best release-trained top-1 | risk | "
             "MiniLM similarity | entities replaced | from |", "|---|---:|---|---:|---:|---:|---:|---:|---|"]
    for (corpus, stage), folders in SOURCES.items():
        folder = next((f for f in folders if (f / "results.json").is_file()), None)
        if folder is None:
            lines.append(f"| {corpus} | 10, 15 | {stage} | not measured | | | | | |")
            continue
        results = json.loads((folder / "results.json").read_text())
        if stage == "off":  # the reference: the text as written, and a guess
            unmodified = results["unmodified"]["risk"]
            lines.append(f"| {corpus} | unmodified text | | {unmodified['top1']:.3f} ({unmodified['attack']}) | | "
                         f"{unmodified['top1']:.3f} | 1.000 | | chance {results['chance']:.3f} |")
        for release in results["releases"]:
            if release["name"] != "emp" or release["parameter"] not in (10.0, 15.0):
                continue
            point = release["point"]
            clean = best(point["attacks"], "clean")
            aware = best(point.get("attacks_release") or {}, "release")
            similarity = release["utility"].get("semantic-similarity", {}).get("value")
            replaced = point["release"].get("entities_replaced", "")
            lines.append(
                f"| {corpus} | {release['parameter']:g} | {stage} | {clean[0]:.3f} ({clean[1]}) | "
                + (f"{aware[0]:.3f} ({aware[1]})" if aware else "n/a")
                + f" | {release['risk']['top1']:.3f} | {similarity:.3f} | {replaced} | `{folder.relative_to(RESULTS)}` |")
    return lines


def version() -> str:
    """The textveil version the comparisons were measured by (each names its own)."""
    found = {json.loads((folder / "results.json").read_text()).get("textveil_version", "?")
             for folders in SOURCES.values() for folder in folders[:1] if (folder / "results.json").is_file()}
    return ", ".join(sorted(found)) or "?"


def main() -> None:
    text = "\n".join([
        "# The entity stage's effect on risk (issue 28, re-made in issue 38)", "",
        f"Measured by textveil {version()}.", "",
        "emp at epsilon 10 and 15, with the entity stage (placeholders, the default types) on and off; risk is the "
        "best top-1 identification over char3-svm, word1-svm and length, trained on clean known texts and on known "
        "texts released the same way (stage included). Made with `benchmarks/privacy/pii_risk.sh blog|c50` "
        "(seed 1) and "
        "`benchmarks/privacy/pii_risk_table.py`; the reports are in the folders named. MiniLM similarity compares each "
        "release with its original (names included); *entities replaced* counts the released (unknown) texts' "
        "entities.", "", *rows(), "",
        "Reading: the names, places and organisations that survive emp carry much of what identifies a writer. With "
        "them replaced first, the best attack's top-1 falls at both epsilons on both corpora, most for the "
        "clean-trained attacks (they learned the names), and MiniLM similarity falls too (a placeholder is further "
        "from the original than the surviving name). The stage moves emp along the frontier rather than off it: on "
        "blog_short neither setting becomes both readable and unlinkable.", "",
        "Issue 28's figures (textveil 0.3.0: the stage before its recall rules, a placeholder three tokens to emp), "
        "risk with the stage on / off: blog_short 0.113 / 0.153 at 10 and 0.740 / 0.847 at 15; C50 0.288 / 0.464 at "
        "10 and 0.668 / 0.700 at 15. What changed since is in docs/entity-stage.md.", ""])
    atomic_write_text(RESULTS / "pii-risk" / "README.md", text)
    print(text)


if __name__ == "__main__":
    main()
