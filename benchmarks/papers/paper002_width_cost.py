"""What a wider or longer ER-AE network costs per training step on this machine (issue 30).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/papers/paper002_width_cost.py [--batches 30]

Times forward, backward and an Adam step on random batches of 64 segments of 20 tokens (the shape
of ``benchmarks/papers/paper002_blog_short.sh``'s batches) for each (hidden, layers, vocabulary) setting,
interleaved so that every setting sees the same load, and prints seconds per batch and the ratio to
the first setting: what an epoch of a wider model would cost, before deciding to train one.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import torch

from textveil.models.autoencoder import AutoEncoder, NetworkShape, reconstruction_loss

SETTINGS = [(128, 1, 6000), (256, 1, 6000), (128, 2, 6000), (128, 1, 20000), (512, 2, 20000)]
"""(hidden, layers, vocabulary): the script's model first, the paper's (512, 2, 20,000) last."""


def seconds_per_batch(hidden: int, layers: int, vocabulary: int, batches: int, rng: np.random.Generator) -> float:
    shape = NetworkShape(vocabulary, 384, hidden, layers, True)
    network = AutoEncoder(shape, rng.standard_normal((vocabulary, 384)).astype(np.float32))
    optimizer = torch.optim.Adam([p for p in network.parameters() if p.requires_grad], lr=0.002)
    lengths = torch.full((64,), 20)
    started = time.perf_counter()
    for _ in range(batches):
        ids = torch.as_tensor(rng.integers(4, vocabulary, size=(64, 20)))
        optimizer.zero_grad()
        logits, mask = network.step_logits(ids, lengths)
        reconstruction_loss(logits, ids[mask]).backward()
        optimizer.step()
    return (time.perf_counter() - started) / batches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=10, help="batches timed per setting and round (default 10)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; the median is kept (default 3)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    times: dict[tuple[int, int, int], list[float]] = {s: [] for s in SETTINGS}
    for round_number in range(args.rounds):
        for setting in SETTINGS:
            times[setting].append(seconds_per_batch(*setting, args.batches, rng))
            print(f"round {round_number + 1}: hidden {setting[0]}, layers {setting[1]}, vocabulary {setting[2]:,}: "
                  f"{times[setting][-1]:.3f} s per batch", file=sys.stderr, flush=True)
    base = float(np.median(times[SETTINGS[0]]))
    print(f"threads {torch.get_num_threads()}, batch 64 x 20 tokens, median of {args.rounds} rounds of {args.batches}")
    print("| hidden | layers | vocabulary | seconds per batch | ratio |\n|---|---|---|---|---|")
    for (hidden, layers, vocabulary), values in times.items():
        median = float(np.median(values))
        print(f"| {hidden} | {layers} | {vocabulary:,} | {median:.3f} | {median / base:.2f} |")


if __name__ == "__main__":
    main()
