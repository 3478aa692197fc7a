"""One report of paraphrase, restyle and emp side by side: risk against MiniLM similarity.

Reads the ``results.json`` of ``textveil evaluate`` runs made on the same corpus, split, attacks
and seed (see ``benchmarks/comparisons/paraphrase_blog_short.sh``), and writes ``report.md``,
``results.json`` (the merged points), ``risk_similarity.png`` and sample releases::

    .venv/bin/python benchmarks/comparisons/paraphrase_report.py --runs /tmp/rep/emp /tmp/rep/para /tmp/rep/restyle \
        --out docs/results/paraphrase

The goal line (issue 26): a setting whose risk is at most emp's at epsilon 10 with MiniLM
similarity at least 0.45.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

GOAL_SIMILARITY = 0.45


def load_points(runs: list[Path]) -> tuple[list[dict], dict]:
    """Every evaluated point, labelled with its mechanism; the first run's plan and corpora."""
    points, first = [], None
    for run in runs:
        data = json.loads((run / "results.json").read_text())
        first = first or data
        mechanism = data["plan"]["mechanism"]
        options = data["plan"].get("mechanism_options") or {}
        for point in data["points"]:
            if point["parameter"] is None and points:  # the unmodified text once
                continue
            best = {training: max(attacks.values(), key=lambda a: a["top1"])
                    for training, attacks in (("clean", point["attacks"]), ("release", point.get("attacks_release", {})))
                    if attacks}
            points.append({
                "mechanism": "original" if point["parameter"] is None else mechanism,
                "parameter": point["parameter"], "options": options,
                "risk": point["risk"]["top1"], "risk_by": f"{point['risk']['attack']} ({point['risk']['training']})",
                "best_clean": best.get("clean", {}).get("top1"), "best_release": best.get("release", {}).get("top1"),
                "similarity": point["utility"]["semantic-similarity"]["value"],
                "stylometric_l2": point["utility"].get("stylometric-l2", {}).get("value"),
                "attacks": {f"{a} ({t})": v["top1"] for t, key in (("clean", "attacks"), ("release", "attacks_release"))
                            for a, v in point.get(key, {}).items()},
            })
    return points, first


def plot(points: list[dict], goal_risk: float | None, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6.5, 4.5))
    for mechanism, marker in (("emp", "o"), ("paraphrase", "s"), ("restyle", "^"), ("original", "*")):
        chosen = [p for p in points if p["mechanism"] == mechanism]
        if not chosen:
            continue
        axes.plot([p["similarity"] for p in chosen], [p["risk"] for p in chosen], marker=marker, label=mechanism,
                  linestyle="-" if len(chosen) > 1 else "")
        for p in chosen:
            if p["parameter"] is not None:
                axes.annotate(f"{p['parameter']:g}", (p["similarity"], p["risk"]), fontsize=8,
                              textcoords="offset points", xytext=(4, 4))
    if goal_risk is not None:
        axes.fill_between([GOAL_SIMILARITY, 1.0], 0, goal_risk, color="green", alpha=0.12, label="goal")
    axes.set_xlabel("MiniLM similarity to the original (higher reads closer)")
    axes.set_ylabel("risk: best attack top-1 (lower is better)")
    axes.set_xlim(0, 1.02)
    axes.set_ylim(0, 1.02)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, nargs="+", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--samples", type=int, default=3,
                        help="paragraphs of the bundled public sample released at every setting (0: none); the "
                        "corpus's own texts are never copied into the report")
    parser.add_argument("--command", default="", help="the command that produced the runs, for the report")
    args = parser.parse_args()

    points, first = load_points(args.runs)
    emp10 = next((p for p in points if p["mechanism"] == "emp" and p["parameter"] == 10.0), None)
    goal_risk = None if emp10 is None else emp10["risk"]
    reached = [p for p in points if p["mechanism"] in ("paraphrase", "restyle") and goal_risk is not None
               and p["risk"] <= goal_risk and p["similarity"] >= GOAL_SIMILARITY]
    args.out.mkdir(parents=True, exist_ok=True)
    plot(points, goal_risk, args.out / "risk_similarity.png")

    lines = ["# paraphrase, restyle and emp on blog posts: risk against MiniLM similarity", ""]
    corpora = first["corpora"]
    lines += [f"Corpus: {corpora['risk_known']['name']}: {corpora['risk_known']['labels']} users, "
              f"{corpora['risk_known']['documents']} known and {corpora['risk_unknown']['documents']} unknown texts "
              "(per user judged together). Attacks: " + ", ".join(first["plan"]["attacks"])
              + ", each trained on clean known texts and on known texts released by the same mechanism; the risk is "
              "the best top-1 over both. Seed " + str(first["plan"]["seed"]) + ".", ""]
    if args.command:
        lines += ["Produced by:", "", "```", args.command, "```", ""]
    lines += ["| mechanism | setting | risk (best top-1) | by | best clean-trained | best release-trained | "
              "MiniLM similarity | stylometric L2 |", "|---|---|---|---|---|---|---|---|"]
    for p in points:
        setting = "" if p["parameter"] is None else (
            f"epsilon {p['parameter']:g}" if p["mechanism"] != "restyle" else f"temperature {p['parameter']:g}")
        if p["options"]:
            setting += " " + " ".join(f"{k}={v}" for k, v in p["options"].items())
        lines.append(f"| {p['mechanism']} | {setting} | {p['risk']:.3f} | {p['risk_by']} | {p['best_clean']:.3f} | "
                     f"{p['best_release']:.3f} | {p['similarity']:.3f} | {p['stylometric_l2'] or 0:.2f} |")
    lines += ["", "![risk against similarity](risk_similarity.png)", ""]
    if goal_risk is not None:
        verdict = ("Reached by: " + ", ".join(f"{p['mechanism']} {p['parameter']:g}" for p in reached)) if reached \
            else "Not reached by any setting measured here."
        lines += [f"**Goal** (risk at most emp's at epsilon 10, {goal_risk:.3f} here, with MiniLM similarity at least "
                  f"{GOAL_SIMILARITY}): {verdict}", ""]
    if args.samples:
        lines += sample_section(points, args.samples)
    (args.out / "report.md").write_text("\n".join(lines) + "\n")
    (args.out / "results.json").write_text(json.dumps({"points": points, "goal_risk": goal_risk,
                                                       "goal_similarity": GOAL_SIMILARITY,
                                                       "reached": [(p["mechanism"], p["parameter"]) for p in reached],
                                                       "runs": [r.name for r in args.runs]}, indent=2) + "\n")
    print("\n".join(lines))


def sample_section(points: list[dict], count: int) -> list[str]:
    """Paragraphs of the bundled public sample (examples/sample.txt) and their release at every
    measured setting (seed 7): what each setting reads like, without copying a corpus text."""
    from textveil.mechanisms.registry import make_mechanism

    sample = Path(__file__).resolve().parents[2] / "examples" / "sample.txt"
    texts = [p.strip() for p in sample.read_text(encoding="utf-8").split("\n\n") if p.strip()][:count]
    lines = ["## Sample releases of the bundled public sample (examples/sample.txt, seed 7)", ""]
    made = {}
    for p in points:
        if p["mechanism"] == "original":
            continue
        swept = "temperature" if p["mechanism"] == "restyle" else "epsilon"
        mechanism = make_mechanism(p["mechanism"], **{swept: p["parameter"]}, **p["options"], seed=7)
        made[(p["mechanism"], p["parameter"])] = [r.text for r in mechanism.sanitize_many(texts)]
    for i, text in enumerate(texts):
        lines += [f"**Original {i + 1}:** {text}", ""]
        for (mechanism, parameter), releases in made.items():
            lines += [f"- {mechanism} {parameter:g}: {releases[i]}".replace("\n", " "), ""]
    return lines


if __name__ == "__main__":
    main()
