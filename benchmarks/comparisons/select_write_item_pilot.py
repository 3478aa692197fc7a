"""What should a select-write plan hold: public sentences or keywords, and how many? A pilot of the
plans alone (no language model writes, no attack): how much of a text's meaning its plan keeps, by
per-document epsilon, for each kind and number of items.

select-write draws a plan of k items from a public bank, each in two stages (a cluster, then an
item in it) with epsilon / k, half for each stage (textveil/mechanisms/plan_selection.py). Two banks
of the same kind of text, from the same public inputs:

- **sentences**: the shipped bank (one sentence the bundled model wrote for each common noun);
- **keywords**: the nouns themselves (the bank file's ``topics``), embedded with the same MiniLM,
  clustered and scaled by the same recipe (textveil/mechanisms/selection_bank.py:
  ``cluster_items`` and ``calibrate_scale`` on gensim's Lee corpus).

A plan's meaning is the MiniLM cosine between the text and the plan's items joined (sentences
with a space, keywords with ", "), averaged over the texts with a 95% bootstrap interval over
texts; each text's plan drawn with its own seed (0, 1, ...), the same seeds for every cell. What
the written text keeps of its plan is not measured here (the scale pilot measured 0.319 written
against 0.336 for the plan on 60 posts at 50 per document)::

    .venv/bin/python benchmarks/comparisons/select_write_item_pilot.py --texts 100 --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from textveil.evaluation.intervals import bootstrap_interval
from textveil.mechanisms.plan_selection import SelectionBank, select_plan
from textveil.mechanisms.select_write import document_vectors
from textveil.mechanisms.selection_bank import (bank_path, calibrate_scale, cluster_items, load_bank, minilm_embed,
                                                public_documents, read_bank_file)
from textveil.utility.similarity import SemanticSimilarity

sys.path.insert(0, str(Path(__file__).resolve().parent))
from select_write_scale_pilot import samples  # noqa: E402  (the same texts as the scale pilot)

ROOT = Path(__file__).resolve().parents[2]
EPSILONS = (10.0, 30.0, 50.0, 100.0)
PLANS = (("sentences", 1), ("sentences", 2), ("keywords", 1), ("keywords", 3), ("keywords", 5), ("keywords", 8))
"""(bank, k): the plans measured."""
JOINERS = {"sentences": " ", "keywords": ", "}


def keyword_bank(kind: str) -> SelectionBank:
    """The nouns the shipped bank of ``kind`` was written from, as a bank of their own: embedded,
    clustered and scaled by the shipped banks' recipe (public inputs only)."""
    words = list(dict.fromkeys(read_bank_file(bank_path(kind))["topics"]))
    vectors = minilm_embed(words)
    lo, hi = calibrate_scale(vectors, minilm_embed(public_documents()))
    return SelectionBank.from_vectors(words, vectors, cluster_items(vectors), lo=lo, hi=hi)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--texts", type=int, default=100)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    similarity = SemanticSimilarity()
    rows = []
    banks: dict[str, dict[str, SelectionBank]] = {}
    for name, kind, texts in samples(args.data, args.texts):
        banks[kind] = banks.get(kind) or {"sentences": load_bank(kind), "keywords": keyword_bank(kind)}
        for bank_name, k in PLANS:
            bank = banks[kind][bank_name]
            vectors = document_vectors(texts, minilm_embed, bank.vectors.shape[1])
            for epsilon in EPSILONS:
                share = epsilon / k / 2  # each item's two stages, as select-write splits the budget
                plans = [select_plan(vector, bank, k, share, share, np.random.default_rng(seed))
                         for seed, vector in enumerate(vectors)]
                written = [JOINERS[bank_name].join(bank.items[i] for i in plan) for plan in plans]
                values = similarity.pairwise(texts, written)
                found = bootstrap_interval(np.mean, values)
                rows.append({"corpus": name, "kind": kind, "items": bank_name, "k": k, "bank_size": len(bank.items),
                             "epsilon": epsilon, "similarity": round(float(np.mean(values)), 4),
                             "similarity_interval": [round(found.low, 4), round(found.high, 4)], "texts": len(texts),
                             "example": written[0]})
                print(f"{name:18} {bank_name:9} k={k}  epsilon {epsilon:5g}  similarity {np.mean(values):.3f} "
                      f"[{found.low:.3f}, {found.high:.3f}]   e.g. {written[0][:70]!r}", flush=True)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"rows": rows}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
