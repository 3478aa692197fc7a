"""Join comparisons run in pieces into one comparison report.

A long ``textveil compare`` (hours per language-model setting) can run as pieces, each with the
same corpora, split, attacks, utility measures, entity stage and seed, and some of the releases
(``ONLY=... benchmarks/comparisons/frontier_blog_short.sh``). Their releases were measured against the same
attacks on the same texts, so they join into one table: this checks that every piece planned the
same comparison with the same textveil version (it refuses pieces that differ, naming what
differs), puts the releases side by
side in the order given, adds up the time each took, and writes the usual ``results.json``,
``report.md``, ``report.html`` and ``frontier.png`` (the frontier computed over all of them).

    .venv/bin/python benchmarks/comparisons/merge_comparisons.py OUT_DIR piece1/results.json piece2/results.json ... \
        [--title "..."]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from textveil.evaluation.comparison_report import write_comparison_report

SAME = ("attacks", "utility", "trainings", "seed", "top_k", "collapse_per_label", "embeddings", "entities",
        "same_key")
"""What every piece's plan must share to be one comparison (besides its corpora)."""


def differences(first: dict[str, Any], other: dict[str, Any]) -> list[str]:
    """What keeps ``other`` from joining ``first``: plan fields and corpora that differ.

    >>> plan = {"plan": {"seed": 1}, "corpora": {"risk_known": {"hash": "a"}}, "textveil_version": "0.4.0"}
    >>> differences(plan, {"plan": {"seed": 2}, "corpora": {"risk_known": {"hash": "a"}}, "textveil_version": "0.4.0"})
    ['plan.seed: 1 != 2']
    """
    found = [f"plan.{key}: {first['plan'].get(key)} != {other['plan'].get(key)}" for key in SAME
             if first["plan"].get(key) != other["plan"].get(key)]
    if first.get("textveil_version") != other.get("textveil_version"):  # another version may release otherwise
        found.append(f"textveil_version: {first.get('textveil_version')} != {other.get('textveil_version')}")
    for role in sorted(set(first["corpora"]) | set(other["corpora"])):
        a, b = (first["corpora"].get(role) or {}).get("hash"), (other["corpora"].get(role) or {}).get("hash")
        if a != b:
            found.append(f"corpora.{role}: {a} != {b}")
    return found


def plan_mechanism(planned: list[dict[str, Any]], mechanism: dict[str, Any]) -> None:
    """Add ``mechanism`` to ``planned``; the same mechanism and options from another piece only add
    their settings to its grid, so the report names each mechanism once."""
    def key(entry: dict[str, Any]) -> str:
        return json.dumps({k: v for k, v in entry.items() if k != "grid"}, sort_keys=True)
    for entry in planned:
        if key(entry) == key(mechanism):
            entry["grid"] += [value for value in mechanism["grid"] if value not in entry["grid"]]
            return
    planned.append(json.loads(json.dumps(mechanism)))


def merge(pieces: list[dict[str, Any]], replace: bool = False) -> dict[str, Any]:
    """One comparison holding every piece's releases (the first piece's unmodified point). A
    setting measured twice keeps the first piece's figures, or with ``replace`` the last piece's
    (a setting measured again: a mechanism changed, or its per-text outcomes kept since), in the
    first one's place in the table."""
    merged = json.loads(json.dumps(pieces[0]))
    first_plan, merged["plan"]["mechanisms"] = merged["plan"]["mechanisms"], []
    for mechanism in first_plan:  # an earlier merge may have listed one mechanism once per piece
        plan_mechanism(merged["plan"]["mechanisms"], mechanism)
    seen = {release["id"] for release in merged["releases"]}
    for piece in pieces[1:]:
        added = set()
        for release in piece["releases"]:
            if release["id"] in seen:
                if replace:
                    where = next(i for i, r in enumerate(merged["releases"]) if r["id"] == release["id"])
                    merged["releases"][where] = release
                    added.add(release["mechanism"])
                continue  # the same setting measured twice: the first piece's stands, unless replaced
            seen.add(release["id"])
            added.add(release["mechanism"])
            merged["releases"].append(release)
        for mechanism in piece["plan"]["mechanisms"]:
            plan_mechanism(merged["plan"]["mechanisms"], mechanism)
        spent = merged["measured_seconds"]
        for mechanism, seconds in piece["measured_seconds"].get("by_mechanism", {}).items():
            if mechanism in added:
                spent["by_mechanism"][mechanism] = round(spent["by_mechanism"].get(mechanism, 0.0) + seconds, 3)
        if added:
            for stage, seconds in piece["measured_seconds"].get("by_stage", {}).items():
                spent["by_stage"][stage] = round(spent["by_stage"].get(stage, 0.0) + seconds, 3)
        spent["total"] = round(sum(spent["by_mechanism"].values()), 3)
    merged.pop("frontier", None)
    merged["merged_from"] = len(pieces)
    return merged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("pieces", type=Path, nargs="+")
    parser.add_argument("--title", default="textveil comparison")
    parser.add_argument("--replace", action="store_true",
                        help="a setting in a later piece replaces the same setting of an earlier one")
    args = parser.parse_args()
    pieces = []
    for path in args.pieces:
        try:
            pieces.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as error:
            sys.exit(f"{path}: not a readable results.json ({error}); give each piece's results.json")
    for path, piece in zip(args.pieces[1:], pieces[1:]):
        found = differences(pieces[0], piece)
        if found:
            sys.exit(f"{path} is not the same comparison as {args.pieces[0]}: {'; '.join(found)}")
    written = write_comparison_report(merge(pieces, args.replace), args.out, args.title)
    print("\n".join(str(path) for path in written.values()))


if __name__ == "__main__":
    main()
