"""Which score scale should select-write's banks carry? A pilot of the plans alone (no language
model, no attack): how much meaning the chosen public sentence keeps, by epsilon, under the shipped
scale and under wider ones.

A sentence scores u = clip((cos - lo) / (hi - lo), 0, 1) (textveil/mechanisms/plan_selection.py).
The shipped banks set hi to the median of a public corpus's best cosines (gensim's Lee corpus): a
document whose best sentences lie above hi scores them all 1, and the exponential mechanism cannot
tell them apart. A wider scale (hi at the 75th or 90th percentile of the same public cosines)
separates the top sentences, at the price of a smaller score gap between the relevant and the
irrelevant ones, which a small epsilon needs. Every scale here is computed from public inputs only;
the corpora below only judge them.

For each corpus sample (blog_short posts with the post bank, C50 test articles and BBC articles
with the news bank) and each scale, the MiniLM similarity between each text and its plan's sentence
(one item a plan, the budget split evenly between the stages), averaged over the texts, with a 95%
bootstrap interval over texts; each text's plan drawn with its own seed (0, 1, ...)::

    .venv/bin/python benchmarks/comparisons/select_write_scale_pilot.py --texts 200 --json out.json
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np

from textveil.evaluation.intervals import bootstrap_interval
from textveil.mechanisms.plan_selection import SelectionBank, select_plan
from textveil.mechanisms.select_write import document_vectors
from textveil.mechanisms.selection_bank import bank_path, load_bank, minilm_embed, public_documents, read_bank_file
from textveil.utility.similarity import SemanticSimilarity

ROOT = Path(__file__).resolve().parents[2]
EPSILONS = (10.0, 30.0, 50.0, 100.0)
SCALES = {"shipped (median)": None, "75th percentile": 75, "90th percentile": 90}


def samples(data: Path, count: int) -> list[tuple[str, str, list[str]]]:
    """(name, bank kind, texts): ``count`` texts of each corpus the folder holds, drawn with seed 7."""
    chosen = random.Random(7)
    found = []
    blog = data / "blog_short" / "blog_short.jsonl"
    if blog.is_file():
        posts = [json.loads(line)["text"] for line in blog.read_text(encoding="utf-8").splitlines() if line.strip()]
        found.append(("blog_short posts", "post", chosen.sample(posts, min(count, len(posts)))))
    for name, folder in (("C50 test articles", data / "reuters_c50" / "C50test"), ("BBC articles", data / "bbc_news")):
        files = sorted(folder.glob("**/*.txt"))
        if files:
            picked = chosen.sample(files, min(count, len(files)))
            found.append((name, "news", [path.read_text(encoding="latin-1") for path in picked]))
    return found


def scaled_banks(kind: str) -> dict[str, SelectionBank]:
    """The shipped bank of ``kind`` under each of :data:`SCALES`: hi moved to that percentile of the
    public documents' best cosines (the shipped bank as it is for None)."""
    bank = load_bank(kind)
    items = bank.vectors / np.linalg.norm(bank.vectors, axis=1, keepdims=True)
    public = document_vectors(public_documents(), minilm_embed, items.shape[1])
    best = (public / np.linalg.norm(public, axis=1, keepdims=True) @ items.T).max(axis=1)
    clusters = np.array(read_bank_file(bank_path(kind))["clusters"])
    return {scale: bank if percentile is None else SelectionBank.from_vectors(
                list(bank.items), bank.vectors, clusters, lo=bank.lo, hi=float(np.percentile(best, percentile)))
            for scale, percentile in SCALES.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--texts", type=int, default=200)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    similarity = SemanticSimilarity()
    rows = []
    banks = {}
    for name, kind, texts in samples(args.data, args.texts):
        banks[kind] = banks.get(kind) or scaled_banks(kind)
        vectors = document_vectors(texts, minilm_embed, banks[kind][next(iter(SCALES))].vectors.shape[1])
        for scale, bank in banks[kind].items():
            for epsilon in EPSILONS:
                plans = [select_plan(vector, bank, 1, epsilon / 2, epsilon / 2, np.random.default_rng(seed))
                         for seed, vector in enumerate(vectors)]
                values = similarity.pairwise(texts, [bank.items[plan[0]] for plan in plans])
                found = bootstrap_interval(np.mean, values)
                low, high = found.low, found.high
                rows.append({"corpus": name, "bank": kind, "scale": scale, "hi": round(bank.hi, 4),
                             "epsilon": epsilon, "similarity": round(float(np.mean(values)), 4),
                             "similarity_interval": [round(low, 4), round(high, 4)], "texts": len(texts)})
                print(f"{name:18} {scale:17} hi {bank.hi:.3f}  epsilon {epsilon:5g}  similarity "
                      f"{np.mean(values):.3f} [{low:.3f}, {high:.3f}]", flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps({"rows": rows}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
