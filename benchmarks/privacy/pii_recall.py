"""Recall and precision of the entity stage per entity type, on sentences that
presidio-evaluator's generator writes from its templates (seeded: the set is made again from the
seed, never stored), or on the labelled set written by hand (tests/data/pii_second_set.jsonl).

    .venv/bin/python benchmarks/privacy/pii_recall.py [--sentences 1500] [--seed 2026]
    .venv/bin/python benchmarks/privacy/pii_recall.py --set second
    .venv/bin/python benchmarks/privacy/pii_recall.py --rules none           # the stage before issue 38's rules
    .venv/bin/python benchmarks/privacy/pii_recall.py --ablation             # each rule alone and left out, both sets

The generated set writes docs/results/pii/{results.json,report.md} and the figures the Guarantee
quotes (textveil/pii/measured_recall.json); the second set writes docs/results/pii/second-set/;
``--ablation`` writes docs/results/pii/rules.{json,md}. A run with other ``--rules`` only prints.

Needs the test extra (presidio-evaluator) for the generated set: make test installs it.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from textveil.atomic_files import atomic_write_text
from textveil.pii import EntityOptions, EntityStage
from textveil.pii.detector import use_rules
from textveil.pii.recall import LabelledSentence, generated_sentences, labelled_file, score
from textveil.pii.recognisers import RULES
from textveil.pii.stage import DEFAULT_THRESHOLD, DEFAULT_TYPES

ROOT = Path(__file__).resolve().parents[2]
SECOND_SET = ROOT / "tests" / "data" / "pii_second_set.jsonl"
GENERATOR = "presidio-evaluator PresidioSentenceFaker(en_US, lower_case_ratio=0.05)"
SHOWN = ("PERSON", "LOCATION", "ORGANIZATION", "NRP", "PHONE_NUMBER", "CREDIT_CARD")
"""The types the ablation table shows (the others are at or near 1.0 before and after)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--set", choices=("generated", "second"), default="generated", dest="which")
    parser.add_argument("--rules", default="all", help="'all' (the default), 'none', or rules split by commas: "
                                                       + ", ".join(RULES))
    parser.add_argument("--ablation", action="store_true", help="no rule, each alone, all, all but each: both sets")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "pii")
    args = parser.parse_args()

    if args.ablation:
        ablation(args)
        return
    rules = chosen_rules(args.rules)
    use_rules(rules)
    sentences = sets(args)[args.which]
    result = measure(sentences)
    result.update(rules=list(rules), entity_types=list(DEFAULT_TYPES), threshold=DEFAULT_THRESHOLD,
                  machine=f"{platform.machine()} {platform.processor() or ''}".strip())
    if args.which == "generated":
        result.update(seed=args.seed, generator=GENERATOR,
                      command=f"benchmarks/privacy/pii_recall.py --sentences {args.sentences} --seed {args.seed}")
    else:
        result.update(source=str(SECOND_SET.relative_to(ROOT)), command="benchmarks/privacy/pii_recall.py --set second")
    if args.rules != "all":
        print(report(result))
        return
    folder = args.out if args.which == "generated" else args.out / "second-set"
    atomic_write_text(folder / "results.json", json.dumps(result, indent=2) + "\n")
    atomic_write_text(folder / "report.md", report(result))
    if args.which == "generated":
        quoted = {"per_type": {t: v for t, v in result["per_type"].items()
                               if t in DEFAULT_TYPES and v["recall"] is not None},
                  "sentences": result["sentences"], "seed": args.seed, "source": "docs/results/pii/results.json"}
        atomic_write_text(ROOT / "textveil" / "pii" / "measured_recall.json", json.dumps(quoted, indent=2) + "\n")
    print(report(result))


def chosen_rules(value: str) -> tuple[str, ...]:
    """``--rules`` as rule names."""
    if value == "all":
        return RULES
    if value == "none":
        return ()
    return tuple(rule.strip() for rule in value.split(",") if rule.strip())


def sets(args: argparse.Namespace) -> dict[str, list[LabelledSentence]]:
    """The labelled sets (the generated one only where it is asked for: it takes a while)."""
    chosen = {"second": labelled_file(SECOND_SET)}
    if args.ablation or args.which == "generated":
        chosen["generated"] = generated_sentences(args.sentences, args.seed)
    return chosen


def measure(sentences: Sequence[LabelledSentence]) -> dict[str, Any]:
    """The stage's defaults (what every release gets) over ``sentences``, scored and timed."""
    stage = EntityStage(EntityOptions())  # loads spaCy and warms it up: not counted
    started = time.perf_counter()
    screened = stage.apply_many([s.text for s in sentences])
    seconds = time.perf_counter() - started
    result = score(sentences, [s.entities for s in screened])
    result.update(seconds=round(seconds, 2), words_per_second=round(stage.words_per_second() or 0.0))
    return result


def ablation(args: argparse.Namespace) -> None:
    """No rule, each rule alone, all of them, and all but each, on both sets: what each rule moves
    by itself and what the others leave to it."""
    labelled = sets(args)
    runs: list[dict[str, Any]] = []
    configurations = ([("none", ())] + [(rule, (rule,)) for rule in RULES] + [("all", RULES)]
                      + [(f"all but {rule}", tuple(r for r in RULES if r != rule)) for rule in RULES])
    for name, rules in configurations:
        use_rules(rules)
        for which, sentences in labelled.items():
            result = measure(sentences)
            runs.append({"rules": name, "set": which, "per_type": result["per_type"], "overall": result["overall"],
                         "words_per_second": result["words_per_second"]})
            print(f"{name:26s} {which:9s} " + "  ".join(
                f"{t} {cell(result['per_type'].get(t, {}).get('recall'))}/"
                f"{cell(result['per_type'].get(t, {}).get('precision'))}" for t in SHOWN), flush=True)
    use_rules(RULES)
    summary = {"seed": args.seed, "sentences": args.sentences, "generator": GENERATOR,
               "second_set": str(SECOND_SET.relative_to(ROOT)), "runs": runs,
               "command": (f"benchmarks/privacy/pii_recall.py --ablation --sentences {args.sentences} "
                           f"--seed {args.seed}")}
    atomic_write_text(args.out / "rules.json", json.dumps(summary, indent=2) + "\n")
    atomic_write_text(args.out / "rules.md", ablation_report(summary))
    print(ablation_report(summary))


def cell(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def ablation_report(summary: dict[str, Any]) -> str:
    """The ablation as Markdown: per set, a row per run, recall / precision per type."""
    lines = ["# The entity stage's rules, one at a time", "",
             f"`{summary['command']}`: the stage with no rule of issue 38 (as it was), with each rule alone, "
             f"with all of them (the default) and with all but one, on {summary['sentences']:,} sentences from "
             f"{summary['generator']} (seed {summary['seed']}) and on the hand-written set `{summary['second_set']}`. "
             "Each cell is recall / precision; the rules are described in `textveil/pii/recognisers.py`. Words/s "
             "is the stage alone on a shared 2-core machine: compare rows, not runs.", ""]
    for which in ("generated", "second"):
        rows = [run for run in summary["runs"] if run["set"] == which]
        if not rows:
            continue
        lines += [f"## {'Generated sentences' if which == 'generated' else 'Second set (hand-written)'}", "",
                  "| rules | " + " | ".join(SHOWN) + " | overall | words/s |",
                  "|---|" + "---:|" * (len(SHOWN) + 2)]
        for run in rows:
            cells = [f"{cell(run['per_type'].get(t, {}).get('recall'))} / "
                     f"{cell(run['per_type'].get(t, {}).get('precision'))}" for t in SHOWN]
            overall = f"{cell(run['overall']['recall'])} / {cell(run['overall']['precision'])}"
            lines.append(f"| {run['rules']} | " + " | ".join(cells) + f" | {overall} | {run['words_per_second']:,} |")
        lines.append("")
    return "\n".join(lines)


def report(result: dict) -> str:
    source = (f"{result['sentences']:,} sentences from {result['generator']}, seed {result['seed']}"
              if "generator" in result else f"the {result['sentences']} labelled texts of `{result['source']}`")
    lines = [
        "# The entity stage: recall and precision per entity type", "",
        f"{source} (`{result['command']}`); the stage's default types and threshold {result['threshold']}, "
        f"rules: {', '.join(result['rules']) or 'none'}.", "",
        "A labelled entity is *removed* when every word of it (honorifics aside) lies inside a replaced span of any "
        "type; a replaced span is *right* when it overlaps a labelled entity. Types the stage does not target are "
        "marked; what of them was removed was removed by another type's span.", "",
        "| type | labelled | removed | recall | replaced spans | precision |", "|---|---:|---:|---:|---:|---:|",
    ]
    for kind, row in result["per_type"].items():
        lines.append(f"| {kind} | {row['labelled']} | {row['removed']} | {cell(row['recall'])} | {row['replaced']} | "
                     f"{cell(row['precision'])} |")
    lines += ["", f"Overall: recall {cell(result['overall']['recall'])}, precision "
              f"{cell(result['overall']['precision'])}.", "", "By the set's own label:", "",
              "| label | labelled | recall |", "|---|---:|---:|"]
    for label, row in result["per_label"].items():
        lines.append(f"| {label} | {row['labelled']} | {cell(row['recall'])} |")
    lines += ["", f"Speed: {result['words_per_second']:,} words/s ({result['seconds']} s for the set, spaCy loaded "
              f"beforehand), on {result['machine']}.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
