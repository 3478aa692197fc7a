"""Recall and precision of the entity stage per entity type, on sentences that
presidio-evaluator's generator writes from its templates (seeded: the set is made again from the
seed, never stored). Writes docs/results/pii/{results.json,report.md} and the figures the
Guarantee quotes (textveil/pii/measured_recall.json).

    .venv/bin/python benchmarks/pii_recall.py [--sentences 1500] [--seed 2026]

Needs the test extra (presidio-evaluator): make test installs it.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from textveil.corpus.writing import atomic_write_text
from textveil.pii import EntityOptions, EntityStage
from textveil.pii.recall import generated_sentences, score
from textveil.pii.stage import DEFAULT_TYPES, DEFAULT_THRESHOLD

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "pii")
    args = parser.parse_args()

    sentences = generated_sentences(args.sentences, args.seed)
    stage = EntityStage(EntityOptions())  # the default: what every release gets
    started = time.perf_counter()
    screened = stage.apply_many([s.text for s in sentences])
    seconds = time.perf_counter() - started
    result = score(sentences, [s.entities for s in screened])
    result.update(seed=args.seed, generator="presidio-evaluator PresidioSentenceFaker(en_US, lower_case_ratio=0.05)",
                  entity_types=list(DEFAULT_TYPES), threshold=DEFAULT_THRESHOLD, seconds=round(seconds, 2),
                  words_per_second=round(stage.words_per_second() or 0.0),
                  machine=f"{platform.machine()} {platform.processor() or ''}".strip(),
                  command=f"benchmarks/pii_recall.py --sentences {args.sentences} --seed {args.seed}")
    atomic_write_text(args.out / "results.json", json.dumps(result, indent=2) + "\n")
    atomic_write_text(args.out / "report.md", report(result))
    quoted = {"per_type": {t: v for t, v in result["per_type"].items() if t in DEFAULT_TYPES and v["recall"] is not None},
              "sentences": result["sentences"], "seed": args.seed, "source": "docs/results/pii/results.json"}
    atomic_write_text(ROOT / "textveil" / "pii" / "measured_recall.json", json.dumps(quoted, indent=2) + "\n")
    print(report(result))


def report(result: dict) -> str:
    def cell(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.3f}"

    lines = [
        "# The entity stage: recall and precision per entity type", "",
        f"{result['sentences']:,} sentences from {result['generator']}, seed {result['seed']} "
        f"(`{result['command']}`); the stage's default types and threshold {result['threshold']}.", "",
        "A labelled entity is *removed* when every word of it (honorifics aside) lies inside a replaced span of any "
        "type; a replaced span is *right* when it overlaps a labelled entity. Types the stage does not target are "
        "marked; what of them was removed was removed by another type's span.", "",
        "| type | labelled | removed | recall | replaced spans | precision |", "|---|---:|---:|---:|---:|---:|",
    ]
    for kind, row in result["per_type"].items():
        lines.append(f"| {kind} | {row['labelled']} | {row['removed']} | {cell(row['recall'])} | {row['replaced']} | "
                     f"{cell(row['precision'])} |")
    lines += ["", f"Overall: recall {cell(result['overall']['recall'])}, precision "
              f"{cell(result['overall']['precision'])}.", "", "By the generator's own label:", "",
              "| label | labelled | recall |", "|---|---:|---:|"]
    for label, row in result["per_label"].items():
        lines.append(f"| {label} | {row['labelled']} | {cell(row['recall'])} |")
    lines += ["", f"Speed: {result['words_per_second']:,} words/s ({result['seconds']} s for the set, spaCy loaded "
              f"beforehand), on {result['machine']}.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
