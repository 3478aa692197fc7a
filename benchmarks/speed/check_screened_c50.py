"""Does screened decoding release the very words of float32 exact decoding on every word of
Reuters C50? Every word token of the corpus (train and test), its default-embeddings vector plus
Laplace noise at each epsilon, decoded by both indexes; prints and writes the disagreements.

    .venv/bin/python benchmarks/speed/check_screened_c50.py [--epsilons 20] [--dims 312] [--limit N] [--json out.json]

Needs ../shared/data/reuters_c50. About 1,000-2,500 words/s per index on 2 cores: the whole
corpus (about 2.9 million words) takes a while; --limit checks the first N words.
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

REPO_ROOT = Path(__file__).resolve().parents[2]
C50 = REPO_ROOT / ".." / "shared" / "data" / "reuters_c50"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", default="20", help="comma-separated epsilons")
    parser.add_argument("--limit", type=int, default=None, help="check only the first N word tokens")
    parser.add_argument("--dims", type=int, default=312,
                        help="coordinates screened (fixed, so that the screen is used whatever it costs)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if not C50.is_dir():
        say(f"skipped: {C50} is absent")
        return 0
    from textveil.embeddings import load_embeddings
    from textveil.embeddings.neighbours import ExactNeighbourIndex
    from textveil.embeddings.screened import ScreenedNeighbourIndex
    from textveil.mechanisms.sampling import make_rng, sample_laplace_noise
    from textveil.text.tokenize import tokenize

    say(json.dumps(machine_info()))
    embeddings = load_embeddings()
    words = [t.text for path in sorted(C50.rglob("*.txt"))
             for t in tokenize(path.read_text(encoding="utf-8", errors="replace")) if t.is_word]
    words = words[: args.limit] if args.limit else words
    say(f"{len(words):,} word tokens of C50 against {len(embeddings):,} x {embeddings.dim}")
    exact, screened = ExactNeighbourIndex(embeddings.vectors), ScreenedNeighbourIndex(embeddings.vectors, dims=args.dims)
    results = []
    for epsilon in (float(e) for e in args.epsilons.split(",")):
        rng, second = make_rng(20).spawn(2)
        disagreements, seconds = 0, {"exact": 0.0, "screened": 0.0}
        for start in range(0, len(words), 50_000):
            chunk = words[start : start + 50_000]
            queries = (embeddings.embed(chunk) + sample_laplace_noise(len(chunk), embeddings.dim, epsilon, rng, second))
            queries = queries.astype(np.float32)
            began = time.perf_counter()
            a = exact.nearest(queries)
            seconds["exact"] += time.perf_counter() - began
            began = time.perf_counter()
            b = screened.nearest(queries)
            seconds["screened"] += time.perf_counter() - began
            disagreements += int((a != b).sum())
            say(f"  epsilon {epsilon:g}: {start + len(chunk):,} of {len(words):,} words checked, "
                f"{disagreements} decoded differently so far")
        results.append({"epsilon": epsilon, "words": len(words), "disagreements": disagreements,
                        "exact_words_per_s": len(words) / seconds["exact"],
                        "screened_words_per_s": len(words) / seconds["screened"]})
        say(f"epsilon {epsilon:g}: {disagreements} of {len(words):,} words decoded differently; "
            f"exact {results[-1]['exact_words_per_s']:,.0f} words/s, screened {results[-1]['screened_words_per_s']:,.0f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 1 if any(r["disagreements"] for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
