"""Why the two-set sampler releases what it does on a trained ER-AE/AE-DP model (issue 30).

For the first ``--texts`` posts of ``--inputs``, at every step of the generator: the rating of the
original token, the mass of a lexical set (the distinct tokens of ``--draws`` draws from the
generator's probabilities, drawn ``--repeats`` times), the share of steps where that mass exceeds
0.5, and the chance that the two-set sampler chooses the lexical set at each epsilon
(1 / (1 + e^(-eps/2 (2 m - 1)))). Prints one block per model.

    .venv/bin/python benchmarks/papers/paper002_two_set_mass.py --model ../paper002/models/erae \\
        --inputs ../paper002/splits/eval.jsonl [--texts 200] [--epsilons 10,20,50,100]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from textveil.mechanisms.base import Mechanism
from textveil.models.autoencoder import SPECIALS
from textveil.text.layout import release_units


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, action="append", help="a trained erae/aedp folder")
    parser.add_argument("--inputs", type=Path, required=True, help="JSONL posts with a 'text' field")
    parser.add_argument("--texts", type=int, default=200)
    parser.add_argument("--draws", type=int, default=5, help="draws that form the lexical set")
    parser.add_argument("--repeats", type=int, default=20, help="lexical sets drawn per step")
    parser.add_argument("--epsilons", default="10,20,50,100")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    texts = [json.loads(line)["text"] for line in args.inputs.read_text(encoding="utf-8").splitlines()[:args.texts]]
    epsilons = [float(e) for e in args.epsilons.split(",")]
    for folder in args.model:
        model = Mechanism.load(folder)
        rows, originals = [], []
        for text in texts:
            segments = model._unit_segments(release_units(text))
            if not segments:
                continue
            ratings = model.ratings(segments)[:, len(SPECIALS):]
            rows.append(ratings / ratings.sum(axis=1, keepdims=True))
            originals += [max(i - len(SPECIALS), 0) for segment in segments for i in segment]
        p = np.concatenate(rows)
        steps = np.arange(len(p))
        rng = np.random.default_rng(args.seed)
        cumulative = np.cumsum(p, axis=1)
        masses = []
        for _ in range(args.repeats):
            lexical = np.zeros(p.shape, dtype=bool)
            for _ in range(args.draws):
                target = rng.random(len(p))[:, None] * cumulative[:, -1:]
                lexical[steps, np.minimum((cumulative <= target).sum(axis=1), p.shape[1] - 1)] = True
            masses.append((p * lexical).sum(axis=1))
        mass = np.array(masses)
        print(f"{folder}: {len(texts)} texts, {len(p):,} steps; rating of the original token "
              f"{p[steps, originals].mean():.3f}; lexical-set mass {mass.mean():.3f} (above 0.5 at "
              f"{(mass > 0.5).mean():.1%} of steps)")
        for epsilon in epsilons:
            chosen = 1.0 / (1.0 + np.exp(-epsilon / 2 * (2 * mass - 1)))
            print(f"  epsilon {epsilon:g}: the lexical set is chosen at {chosen.mean():.1%} of steps")


if __name__ == "__main__":
    main()
