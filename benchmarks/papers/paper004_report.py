"""Paper 004's table and figures from the sweeps of ``paper004_blog_short.sh``.

    python benchmarks/papers/paper004_report.py --work ../paper004 --out docs/results/paper004-blog-short

Reads ``WORK/reports/{redact,translate,elman,delta,gru}/results.json`` and the models'
``training.json``; writes to ``--out``:

- ``table.md``: per release (the original, redaction, translation, each model at each
  temperature) the risk (the best top-1 over the 20 attacks of the stylometric suite and both
  trainings, and the bigram SVM's, paper 004's Table 2 column), the utility (attribute F1,
  per-user unigram, bigram and sentiment cosines) and memorisation;
- ``risk_utility.png`` (Figure 4: one map per utility measure) and ``topk_bigram.png``
  (Figure 2: top-k identification by the four bigram attacks);
- ``samples.md`` (Table 3: sampled texts per temperature, for each model);
- ``summary.json``: the same figures as data, with the models' sizes and speeds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from textveil.atomic_files import atomic_write_bytes, atomic_write_text  # noqa: E402
from textveil.evaluation.trainings import TRAINING_KEYS  # noqa: E402

MODELS = {"elman": "Elman RNN", "gru": "GRU", "delta": "Delta-RNN"}
BASELINES = {"redact": "Redacted", "translate": "Translated"}
UTILITY = (("attribute-f1", "attribute F1"), ("sentiment-cosine", "sentiment cosine"),
           ("unigram-cosine", "unigram cosine"), ("bigram-cosine", "bigram cosine"))
BIGRAM_ATTACKS = ("word2-knn", "word2-rls", "word2-nb", "word2-svm")


def best_topk(point: dict[str, Any], attack: str) -> list[float]:
    """An attack's top-k curve under the training that identifies more at top-1 (the attacker
    picks the better of clean and release-trained)."""
    curves = [point[key][attack] for key in TRAINING_KEYS.values() if attack in point.get(key, {})]
    return max(curves, key=lambda r: r["top1"])["topk"]


def best_of_training(point: dict[str, Any], training: str) -> tuple[float, str]:
    """The best top-1 of one training's attacks at a point, and the attack."""
    results = point.get(TRAINING_KEYS[training], {})
    attack = max(results, key=lambda name: results[name]["top1"])
    return results[attack]["top1"], attack


def row(name: str, point: dict[str, Any]) -> dict[str, Any]:
    utility = point["utility"]
    return {
        "release": name, "risk": point["risk"]["top1"], "risk_by": f"{point['risk']['attack']} ({point['risk']['training']})",
        "risk_clean": best_of_training(point, "clean")[0],
        "bigram_svm": best_topk(point, "word2-svm")[0],
        **{key: utility[key]["value"] for key, _ in UTILITY if key in utility},
        "memorisation": utility.get("memorisation", {}).get("value"),
        "exact_copies": utility.get("memorisation", {}).get("exact_copies"),
        "topk": {attack: best_topk(point, attack) for attack in BIGRAM_ATTACKS},
    }


def collect(work: Path) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """The fixed releases (original, redaction, translation) and each model's points by temperature."""
    fixed: list[dict[str, Any]] = []
    curves: dict[str, list[dict[str, Any]]] = {}
    for name, label in BASELINES.items():
        results = json.loads((work / "reports" / name / "results.json").read_text())
        for point in results["points"]:
            if point["label"] == "none" and not fixed:
                fixed.append(row("Original", point))
            elif point["label"] != "none":
                fixed.append(row(label, point))
    for name, label in MODELS.items():
        path = work / "reports" / name / "results.json"
        if not path.exists():
            continue
        results = json.loads(path.read_text())
        points = sorted((p for p in results["points"] if p["parameter"] is not None), key=lambda p: p["parameter"])
        curves[name] = [{**row(f"{label} ({p['parameter']:g})", p), "temperature": p["parameter"]} for p in points]
    return fixed, curves


def attacker_models(work: Path) -> list[dict[str, Any]]:
    """Delta-RNN: the release-aware attacker with the release's own model against one with its own."""
    own_path, shared_path = (work / "reports" / name / "results.json" for name in ("delta-own-attacker", "delta"))
    if not own_path.exists() or not shared_path.exists():
        return []
    shared = {p["parameter"]: p for p in json.loads(shared_path.read_text())["points"] if p["parameter"] is not None}
    rows = []
    for point in json.loads(own_path.read_text())["points"]:
        if point["parameter"] is None or point["parameter"] not in shared:
            continue
        other = shared[point["parameter"]]
        rows.append({"temperature": point["parameter"], "clean": best_of_training(other, "clean"),
                     "release_own_model": best_of_training(point, "release"),
                     "release_shared_model": best_of_training(other, "release")})
    return rows


def attacker_table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return ""
    lines = ["", "Delta-RNN, best top-1 identification by the attacker's training (20 attacks each):", "",
             "| Temperature | clean-trained | release-trained, attacker's own model (seed 1) | "
             "release-trained, the release's own model |", "|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['temperature']:g} | " + " | ".join(
            f"{row[key][0]:.3f} ({row[key][1]})" for key in ("clean", "release_own_model", "release_shared_model"))
            + " |")
    return "\n".join(lines) + "\n"


def table(fixed: list[dict[str, Any]], curves: dict[str, list[dict[str, Any]]]) -> str:
    def cell(value: Any) -> str:
        return "" if value is None else f"{value:.2f}"

    lines = ["| Release | Risk: best top-1 (of 40) | by | Risk: clean-trained only | Risk: bigram SVM top-1 | "
             "Attribute F1 | Unigram cos | Bigram cos | Sentiment cos | Memorised (8-gram) |", "|" + "---|" * 10]
    for entry in fixed + [e for name in MODELS for e in curves.get(name, [])]:
        lines.append(f"| {entry['release']} | {cell(entry['risk'])} | {entry['risk_by']} | {cell(entry['risk_clean'])} | "
                     f"{cell(entry['bigram_svm'])} | "
                     f"{cell(entry.get('attribute-f1'))} | {cell(entry.get('unigram-cosine'))} | "
                     f"{cell(entry.get('bigram-cosine'))} | {cell(entry.get('sentiment-cosine'))} | "
                     f"{cell(entry['memorisation'])} |")
    return "\n".join(lines) + "\n"


def risk_utility_png(fixed: list[dict[str, Any]], curves: dict[str, list[dict[str, Any]]]) -> bytes:
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, len(UTILITY), figsize=(4.8 * len(UTILITY), 4.4))
    markers = {"Original": "*", "Redacted": "s", "Translated": "^"}
    for axis, (key, label) in zip(axes, UTILITY):
        for entry in fixed:
            dots = axis.scatter(entry["risk"], entry.get(key, float("nan")), marker=markers.get(entry["release"], "o"),
                                s=90, label=entry["release"], zorder=3)
            if entry["risk_clean"] != entry["risk"]:  # hollow: its risk with clean-trained attacks only
                axis.scatter(entry["risk_clean"], entry.get(key, float("nan")), marker=markers.get(entry["release"], "o"),
                             s=90, facecolors="none", edgecolors=dots.get_facecolor(), zorder=3)
        for name, points in curves.items():
            xs, ys = [p["risk"] for p in points], [p.get(key, float("nan")) for p in points]
            line, = axis.plot(xs, ys, marker="o", label=f"{MODELS[name]} (worst attack)")
            axis.plot([p["risk_clean"] for p in points], ys, marker=".", linestyle="--", color=line.get_color(),
                      alpha=0.7, label=f"{MODELS[name]} (clean-trained attacks only)")
            for p in points:
                axis.annotate(f"{p['temperature']:g}", (p["risk"], p.get(key, float("nan"))), fontsize=7,
                              xytext=(3, 3), textcoords="offset points")
        axis.set_xlabel("risk: best top-1 identification of 150 users")
        axis.set_ylabel(label)
        axis.set_xlim(-0.02, 1.02)
        axis.grid(alpha=0.3)
    axes[0].legend(fontsize=7, loc="lower right")
    figure.suptitle("Risk-utility maps (paper 004, Figure 4) on blog_short; numbers are temperatures; solid: the "
                    "worst of 40 attacks, dashed: clean-trained attacks only (paper 004's attacker)")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    plt.close(figure)
    return buffer.getvalue()


def topk_png(fixed: list[dict[str, Any]], curves: dict[str, list[dict[str, Any]]], temperature: float) -> bytes:
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    releases = fixed + [p for name in MODELS for p in curves.get(name, []) if p["temperature"] == temperature]
    figure, axes = plt.subplots(1, len(BIGRAM_ATTACKS), figsize=(4.2 * len(BIGRAM_ATTACKS), 3.8), sharey=True)
    for axis, attack in zip(axes, BIGRAM_ATTACKS):
        for entry in releases:
            curve = entry["topk"][attack]
            axis.plot(range(1, len(curve) + 1), curve, marker=".", label=entry["release"])
        axis.set_title(attack)
        axis.set_xlabel("top N")
        axis.grid(alpha=0.3)
    axes[0].set_ylabel("users identified")
    axes[0].legend(fontsize=7)
    figure.suptitle(f"Top-N identification with bigram features (paper 004, Figure 2); models at temperature {temperature:g}")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    plt.close(figure)
    return buffer.getvalue()


def samples(work: Path, temperatures: list[float], per_temperature: int = 3) -> tuple[str, dict[str, Any]]:
    """Texts each model writes for one user per temperature (seed 0), and sampling speed."""
    from textveil.mechanisms.base import Mechanism

    lines = ["# Sample texts (paper 004, Table 3)", "",
             "Seed 0; the first user of blog_short (its 70 known texts trained the models). "
             "Texts are shown up to 200 characters.", ""]
    speeds: dict[str, Any] = {}
    for name, label in MODELS.items():
        folder = work / "models" / name
        if not (folder / "manifest.json").exists():
            continue
        model = Mechanism.load(folder)
        user = model.users[0]
        lines += [f"## {label} (user {user})", "", "| Temperature | Text |", "|---|---|"]
        for temperature in temperatures:
            for text in model.with_params(temperature=temperature, seed=0).synthesize([user] * per_temperature):
                shown = text[:200].replace("|", "\\|").replace("\n", " ")
                lines.append(f"| {temperature:g} | {shown} |")
        lines.append("")
        every_user = model.users * 4  # 600 texts, batched as the release is
        started = time.perf_counter()
        written = model.with_params(temperature=1.0, seed=1).synthesize(every_user)
        seconds = time.perf_counter() - started
        speeds[name] = {"texts": len(written), "characters": sum(map(len, written)), "seconds": round(seconds, 2),
                        "sampling_characters_per_second": round(sum(map(len, written)) / seconds)}
    return "\n".join(lines) + "\n", speeds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--figure-temperature", type=float, default=1.0)
    args = parser.parse_args()
    fixed, curves = collect(args.work)
    temperatures = sorted({p["temperature"] for points in curves.values() for p in points})
    attackers = attacker_models(args.work)
    atomic_write_text(args.out / "table.md", table(fixed, curves) + attacker_table(attackers))
    atomic_write_bytes(args.out / "risk_utility.png", risk_utility_png(fixed, curves))
    atomic_write_bytes(args.out / "topk_bigram.png", topk_png(fixed, curves, args.figure_temperature))
    sample_text, sampling = samples(args.work, temperatures)
    atomic_write_text(args.out / "samples.md", sample_text)
    training = {}
    for name in MODELS:
        for folder in (name, f"{name}-attacker"):
            path = args.work / "models" / folder / "training.json"
            if path.exists():
                record = json.loads(path.read_text())
                training[folder] = {k: record[k] for k in ("architecture", "hidden", "epochs", "batch_size", "seed",
                                                           "parameters", "characters", "training_characters_per_second")}
                training[folder]["final_losses"] = {k: record["history"][-1][k] for k in ("train_loss", "validation_loss")}
                training[folder]["training_minutes"] = round(sum(r["seconds"] for r in record["history"]) / 60, 1)
    summary = {"fixed": fixed, "models": curves, "attacker_models": attackers, "training": training,
               "sampling": sampling}
    atomic_write_text(args.out / "summary.json", json.dumps(summary, indent=2))
    print(table(fixed, curves) + attacker_table(attackers))
    print(json.dumps({"training": training, "sampling": sampling}, indent=2))


if __name__ == "__main__":
    main()
