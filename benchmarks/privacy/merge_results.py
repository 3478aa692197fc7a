"""Merge the results of sweeps run in pieces (by grid point, or by attack) into one report.

A long sweep can be split across processes or machines: each piece runs ``textveil evaluate``
with the same corpora and seed, over some grid values or some attacks; this joins their
``results.json`` files point by point (attacks and utility tasks of the same point are put
side by side, the risk is recomputed as the best of all) and writes the usual report.

    .venv/bin/python benchmarks/privacy/merge_results.py OUT_DIR --title "..." \
        piece1/results.json piece2/results.json ...
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from textveil.evaluation.report import write_report
from textveil.evaluation.trainings import TRAINING_KEYS, best_attack


def merge(pieces: list[dict[str, Any]]) -> dict[str, Any]:
    """One results dict holding every point and every attack of ``pieces``."""
    merged = json.loads(json.dumps(pieces[0]))
    by_label = {point["label"]: point for point in merged["points"]}
    for piece in pieces[1:]:
        for point in piece["points"]:
            target = by_label.get(point["label"])
            if target is None:
                by_label[point["label"]] = target = json.loads(json.dumps(point))
                merged["points"].append(target)
                continue
            for key in (*TRAINING_KEYS.values(), "utility"):
                if key in point:
                    target.setdefault(key, {}).update(point[key])
        for book in ("timings", "task_seconds"):
            for stage, seconds in piece.get(book, {}).items():
                merged[book][stage] = round(merged[book].get(stage, 0.0) + seconds, 3)
        merged["plan"]["attacks"] = list(dict.fromkeys(merged["plan"]["attacks"] + piece["plan"]["attacks"]))
        merged["plan"]["grid"] = sorted(set(merged["plan"]["grid"]) | set(piece["plan"]["grid"]), reverse=True)
    merged["points"].sort(key=lambda p: (p["parameter"] is not None, -(p["parameter"] or 0)))
    for point in merged["points"]:
        point["risk"] = best_attack(point)
    return merged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("results", type=Path, nargs="+")
    parser.add_argument("--title", default="textveil evaluation")
    args = parser.parse_args()
    merged = merge([json.loads(path.read_text(encoding="utf-8")) for path in args.results])
    written = write_report(merged, args.out, title=args.title)
    print(f"merged {len(args.results)} results into {written['report.md']}")


if __name__ == "__main__":
    main()
