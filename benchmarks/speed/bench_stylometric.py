"""How many short texts a second the Writeprints features (``stylometric_features``) read.

    python benchmarks/speed/bench_stylometric.py [--texts 1000] [--repeats 3]

The utility metric and the stylometric attacks compute these features on every release, so they
should keep up with releasing: the goal is at least 2,000 texts of about 250 characters per CPU
second. Timed in CPU seconds (the best of ``--repeats``), so that other work on the machine
weighs less on the figure. Prints one JSON object: the figure, whether it meets the goal, and the
machine. (This was a test until the suite stopped deciding anything on time.)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import numpy as np  # noqa: E402

from bench_common import machine_info  # noqa: E402
from textveil.text.stylometry import stylometric_features  # noqa: E402

GOAL_TEXTS_PER_SECOND = 2000
WORDS = "the a of and market Stocks rallied 42 bank's lender, growth! OK? fine; (really) :-)".split()


def short_texts(count: int) -> list[str]:
    """``count`` texts of 45 words drawn from a mix of cases, digits, marks and emoticons (~250 characters)."""
    rng = np.random.default_rng(0)
    return [" ".join(rng.choice(WORDS, size=45)) for _ in range(count)]


def cpu_seconds(texts: list[str]) -> float:
    start = time.process_time()
    stylometric_features(texts)
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    texts = short_texts(args.texts)
    best = min(cpu_seconds(texts) for _ in range(args.repeats))
    per_second = len(texts) / best
    print(json.dumps({
        "texts": len(texts), "mean_characters": round(float(np.mean([len(t) for t in texts])), 1),
        "best_cpu_seconds": round(best, 4), "texts_per_second": round(per_second),
        "goal_texts_per_second": GOAL_TEXTS_PER_SECOND, "meets_goal": per_second >= GOAL_TEXTS_PER_SECOND,
        "machine": machine_info(),
    }, indent=2))


if __name__ == "__main__":
    main()
