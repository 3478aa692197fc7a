"""paraphrase's two scores side by side: DP-Prompt's clip(logit, b2 - w, b2) against the relative
clip(logit - max, -w, 0), same w, same epsilons, same texts and seeds.

For each (score, epsilon): the mean all-MiniLM-L6-v2 cosine between each text and its release,
and the share of releases that are mostly words (letters and spaces); no text is stored (the
corpus's texts, and releases that may copy them, stay out of the results).
Which score ships as the default follows from this (docs/results/paraphrase/scores.json)::

    .venv/bin/python benchmarks/comparisons/compare_paraphrase_scores.py --texts 32 \
        --json docs/results/paraphrase/scores.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench_common.py
from bench_common import bench_texts  # noqa: E402


def wordy(text: str) -> bool:
    """Whether at least 80% of a release's characters are ASCII letters, spaces or common marks."""
    return bool(text) and len(re.findall(r"[A-Za-z ,.'!?]", text)) >= 0.8 * len(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=32)
    parser.add_argument("--epsilons", default="30,45")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    from textveil.mechanisms.paraphrase import Paraphrase
    from textveil.utility.similarity import SemanticSimilarity

    texts, source = bench_texts(args.texts)
    similarity = SemanticSimilarity()
    base = Paraphrase(30.0, max_new_tokens=args.max_new_tokens, seed=1)
    rows = []
    for epsilon in [float(e) for e in args.epsilons.split(",")]:
        for score in ("relative", "clipped"):
            releases = [r.text for r in base.with_params(epsilon=epsilon, score=score, seed=1).sanitize_many(texts)]
            row = {"score": score, "epsilon": epsilon, "similarity": round(similarity.mean(texts, releases), 3),
                   "wordy_share": round(sum(map(wordy, releases)) / len(releases), 3)}
            print(json.dumps(row), flush=True)
            rows.append(row)
    result = {"source": source, "texts": len(texts), "width": base.width, "clip_high": base.clip_high,
              "max_new_tokens": args.max_new_tokens, "rows": rows}
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
