"""Paper 002's Table 1 (and its epsilon sweep) from the results.json of ``textveil evaluate`` runs.

    .venv/bin/python benchmarks/papers/paper002_table1.py --epsilon 20 \\
        --report Random-R=reports/random --report SynTF=reports/syntf \\
        --report AE-DP=reports/aedp --report ER-AE=reports/erae [--model ER-AE=models/erae] [--out table1.md]

Each run is one mechanism's sweep (``--report NAME=FOLDER``, in the table's order); the original
text is the unmodified point of the first run. Columns, per paper 002: semantic similarity (MiniLM
cosine of each text and its release), authorship identification top-1 by fastText on character
n-grams (trained on the clean known texts, and on the known texts released by the same mechanism;
the worse of the two is the risk), the best stylometric attack over both trainings, the best attack
of all, and the stylometric L2 change. The script then says whether paper 002's ordering held, for
each variant of the two autoencoders (rows named ``ER-AE<suffix>`` and ``AE-DP<suffix>``).
``--model NAME=FOLDER`` adds each trained model's validation loss per epoch (its manifest's history).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

NEURAL = "fasttext-char"
NOT_STYLOMETRIC = {NEURAL, "length", "embedding-1nn"}


def _load(folder: str) -> dict[str, Any]:
    path = Path(folder) / "results.json"
    if not path.is_file():
        sys.exit(f"paper002_table1: {path} does not exist; run textveil evaluate --out {folder} first")
    return json.loads(path.read_text())


def _attack(point: dict[str, Any], name: str, training: str) -> float | None:
    table = point.get("attacks" if training == "clean" else "attacks_release") or {}
    if training == "release" and not table:  # the unmodified text: one clean-trained measurement
        table = point.get("attacks") or {}
    entry = table.get(name)
    return None if entry is None else float(entry["top1"])


def row(name: str, point: dict[str, Any]) -> dict[str, Any]:
    """One line of the table from one sweep point."""
    names = set(point.get("attacks") or {}) | set(point.get("attacks_release") or {})
    stylometric = [(score, f"{attack} ({training}-trained)") for attack in sorted(names - NOT_STYLOMETRIC)
                   for training in ("clean", "release") if (score := _attack(point, attack, training)) is not None]
    best_stylometric = max(stylometric, default=(None, "-"))
    utility = point.get("utility") or {}
    risk = point.get("risk") or {}
    return {
        "name": name,
        "epsilon": point.get("parameter"),
        "semantic": (utility.get("semantic-similarity") or {}).get("value"),
        "neural_clean": _attack(point, NEURAL, "clean"),
        "neural_release": _attack(point, NEURAL, "release"),
        "stylometric": best_stylometric[0],
        "stylometric_attack": best_stylometric[1],
        "risk": risk.get("top1"),
        "risk_attack": f"{risk.get('attack')} ({risk.get('training')}-trained)" if risk else "-",
        "l2": (utility.get("stylometric-l2") or {}).get("value"),
    }


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


HEADER = ("| model | epsilon per token | semantic similarity (MiniLM) ↑ | authorship, fastText chars (clean / release-trained) ↓ "
          "| best stylometric attack ↓ | risk: best attack ↓ | stylometric L2 ↑ |\n|---|---|---|---|---|---|---|")


def _line(r: dict[str, Any]) -> str:
    epsilon = "-" if r["epsilon"] is None else f"{r['epsilon']:g}"
    return (f"| {r['name']} | {epsilon} | {_fmt(r['semantic'])} | {_fmt(r['neural_clean'])} / {_fmt(r['neural_release'])} "
            f"| {_fmt(r['stylometric'])} {r['stylometric_attack']} | {_fmt(r['risk'])} {r['risk_attack']} | {_fmt(r['l2'], 2)} |")


def training_table(models: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Validation reconstruction loss (nats per token) after each epoch, one row per model."""
    histories = [(name, manifest.get("state", {}).get("history_") or []) for name, manifest in models]
    epochs = max((len(h) for _, h in histories), default=0)
    lines = ["### Training: validation reconstruction loss per token after each epoch ↓", "",
             "| model | " + " | ".join(str(e) for e in range(1, epochs + 1)) + " | training time |",
             "|---|" + "---|" * (epochs + 1)]
    for name, history in histories:
        losses = [_fmt(r.get("validation_reconstruction")) for r in history] + ["-"] * (epochs - len(history))
        minutes = sum(float(r.get("seconds") or 0.0) for r in history) / 60
        lines.append(f"| {name} | " + " | ".join(losses) + f" | {minutes:.0f} min |")
    return lines + [""]


def _orderings(by_name: dict[str, dict[str, Any]]) -> list[str]:
    lines = []
    for name in [n for n in by_name if n.startswith("ER-AE")]:
        suffix = name[len("ER-AE"):]
        order = [n for n in (name, "AE-DP" + suffix, "SynTF", "Random-R") if n in by_name]
        values = [by_name[n]["semantic"] for n in order]
        held = all(a is not None and b is not None and a > b for a, b in zip(values, values[1:]))
        lines.append(f"- Semantic similarity ordering {' > '.join(order)}: " + ("held" if held else "did NOT hold")
                     + " (" + ", ".join(f"{n} {_fmt(v)}" for n, v in zip(order, values)) + ").")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--report", action="append", required=True, help="NAME=FOLDER of a textveil evaluate run")
    parser.add_argument("--epsilon", type=float, required=True, help="the common epsilon per token of Table 1")
    parser.add_argument("--model", action="append", default=[], help="NAME=FOLDER of a trained model (its training)")
    parser.add_argument("--out", help="write the markdown here (default: stdout)")
    args = parser.parse_args()
    runs = []
    for spec in args.report:
        name, _, folder = spec.partition("=")
        if not folder:
            sys.exit(f"paper002_table1: --report '{spec}' is not NAME=FOLDER")
        runs.append((name, _load(folder)))
    original = next((p for p in runs[0][1]["points"] if p["label"] == "none"), None)
    if original is None:
        sys.exit("paper002_table1: the first run has no unmodified point (run it without --no-unmodified)")
    table = [row("Original text", original)]
    for name, results in runs:
        released = [p for p in results["points"] if p["label"] != "none"]
        at = [p for p in released if p.get("parameter") is None or abs(p["parameter"] - args.epsilon) < 1e-9]
        if not at:
            sys.exit(f"paper002_table1: the {name} run has no point at epsilon {args.epsilon:g}")
        table.append(row(name, at[0]))
    lines = [f"### Table 1: blog posts, common epsilon {args.epsilon:g} per token", "", HEADER, *map(_line, table), ""]
    for name, results in runs:
        released = [p for p in results["points"] if p["label"] != "none" and p.get("parameter") is not None]
        if len(released) > 1:
            lines += [f"### {name}: the epsilon sweep", "", HEADER, *(_line(row(name, p)) for p in released), ""]
    models = []
    for spec in args.model:
        name, _, folder = spec.partition("=")
        manifest = Path(folder) / "manifest.json"
        if not manifest.is_file():
            sys.exit(f"paper002_table1: --model '{spec}': {manifest} does not exist; train the model first")
        models.append((name, json.loads(manifest.read_text())))
    if models:
        lines += training_table(models)
    by_name = {r["name"]: r for r in table}
    lines += _orderings(by_name)
    clean = by_name["Original text"]["neural_clean"]
    for n in [n for n in by_name if n != "Original text"]:
        worse = max(v for v in (by_name[n]["neural_clean"], by_name[n]["neural_release"]) if v is not None)
        lines.append(f"- {n}: fastText authorship {_fmt(worse)} (worse of the two trainings) against {_fmt(clean)} on the "
                     f"original text; risk over every attack {_fmt(by_name[n]['risk'])}.")
    text = "\n".join(lines) + "\n"
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
