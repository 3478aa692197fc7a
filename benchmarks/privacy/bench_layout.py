"""How readable is the public layout at high epsilon, against copying the input's layout?

The public layout (the default) privatises punctuation and symbols as well as words and
writes casing, spacing and breaks by a public rule; ``--layout keep`` copies them from the
input. This benchmark releases the same texts both ways, at the same epsilons and seeds, and
prints for each:

* the share of tokens (words and marks, compared in lower case, position by position) that
  the release keeps;
* the mean MiniLM cosine between each text and its release (paper 002's content measure);
* words per second released.

Data: 200 Reuters C50 test articles and 1,000 blog_short posts from ../shared/data.

    .venv/bin/python benchmarks/privacy/bench_layout.py [--epsilons 20,30] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench_common.py
from bench_common import machine_info, say  # noqa: E402

from textveil import EarthMoversPrivacy, load_embeddings  # noqa: E402
from textveil.text.layout import release_units  # noqa: E402
from textveil.utility.similarity import SemanticSimilarity  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


def corpora() -> dict[str, list[str]]:
    c50 = sorted((DATA / "reuters_c50" / "C50test").glob("*/*.txt"))[::12][:200]
    blog = (DATA / "blog_short" / "blog_short.jsonl").read_text(encoding="utf-8").splitlines()[::15][:1000]
    return {
        "C50 (200 articles)": [p.read_text(encoding="utf-8") for p in c50],
        "blog_short (1,000 posts)": [json.loads(line)["text"] for line in blog],
    }


def tokens_kept(originals: list[str], releases: list[str]) -> float:
    kept = total = 0
    for original, release in zip(originals, releases):
        before, after = release_units(original), release_units(release)
        total += len(before)
        kept += sum(a == b for a, b in zip(before, after))
    return kept / max(1, total)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", default="20,30")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if not DATA.is_dir():
        sys.exit("../shared/data is absent: this benchmark reads C50 and blog_short from it")
    say(f"machine: {machine_info()}")
    embeddings = load_embeddings()
    similarity = SemanticSimilarity()
    rows = []
    for name, texts in corpora().items():
        originals = similarity.embed(texts)
        for epsilon in [float(e) for e in args.epsilons.split(",")]:
            for layout in ("keep", "public"):
                mechanism = EarthMoversPrivacy(epsilon, embeddings=embeddings, layout=layout, seed=args.seed)
                started = time.perf_counter()
                releases = [r.text for r in mechanism.sanitize_many(texts)]
                seconds = time.perf_counter() - started
                released = similarity.embed(releases)
                cosine = float(np.mean(np.einsum("ij,ij->i", originals, released)))
                words = sum(len(release_units(t)) for t in texts)
                rows.append((name, epsilon, layout, tokens_kept(texts, releases), cosine, words / seconds))
                say(f"{name:26s} eps {epsilon:g} {layout:6s}: tokens kept {rows[-1][3]:.3f}, "
                    f"MiniLM cosine {cosine:.3f}, {rows[-1][5]:,.0f} tokens/s")
    say("\n| corpus | epsilon | layout | tokens kept | MiniLM cosine |\n|---|---:|---|---:|---:|")
    for name, epsilon, layout, kept, cosine, _ in rows:
        say(f"| {name} | {epsilon:g} | {layout} | {kept:.3f} | {cosine:.3f} |")


if __name__ == "__main__":
    main()
