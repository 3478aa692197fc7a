"""Start-up with a large vectors file: the first run parses it into the cache, later runs map it.

Writes a word2vec text file of about 146 MB (300,000 words x 50 dimensions, random values; the
size of the file that took 13 s to parse at every run), then times whole ``textveil sanitize``
processes on a short text: the first (parse and cache), then three more (from the cache).

    .venv/bin/python benchmarks/speed/bench_startup.py [--words 300000] [--dim 50] [--json out.json]

The cache goes to a fresh folder under benchmarks/out/ ($TEXTVEIL_CACHE_DIR), removed first.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench_common.py
from bench_common import machine_info, say  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]
OUT = REPO_ROOT / "benchmarks" / "out" / "startup"


def write_vectors(path: Path, words: int, dim: int) -> None:
    rng = np.random.default_rng(0)
    with path.open("w", encoding="utf-8") as handle:
        handle.write(f"{words} {dim}\n")
        for start in range(0, words, 10_000):
            block = rng.standard_normal((min(10_000, words - start), dim)).astype(np.float32)
            handle.writelines(f"w{start + i}x {' '.join(f'{v:.6f}' for v in row)}\n" for i, row in enumerate(block))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=300_000)
    parser.add_argument("--dim", type=int, default=50)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    say(json.dumps(machine_info()))
    OUT.mkdir(parents=True, exist_ok=True)
    vectors = OUT / f"vectors-{args.words}x{args.dim}.w2v.txt"
    if not vectors.is_file():
        write_vectors(vectors, args.words, args.dim)
    cache = OUT / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    environment = {**os.environ, "TEXTVEIL_CACHE_DIR": str(cache)}
    command = [str(Path(sys.executable).with_name("textveil")), "sanitize", "-", "--embeddings", str(vectors),
               "--epsilon", "20", "--seed", "1"]
    times = []
    for run in range(4):
        began = time.perf_counter()
        subprocess.run(command, input=b"The market rallied on Monday.", env=environment, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - began)
        say(f"run {run + 1}: {times[-1]:.2f} s" + (" (parses the file and writes the cache)" if run == 0 else ""))
    result = {"file_mb": vectors.stat().st_size / 1e6, "words": args.words, "dim": args.dim,
              "first_run_s": times[0], "cached_run_s": statistics.median(times[1:]), "machine": machine_info()}
    say(f"{result['file_mb']:.0f} MB file: first run {times[0]:.2f} s, later runs {result['cached_run_s']:.2f} s "
        "(whole process, median of 3)")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
