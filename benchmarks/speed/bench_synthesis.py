"""Training and sampling speed of paper 004's three character models, in characters per second.

    python benchmarks/speed/bench_synthesis.py [--hidden 256] [--batches 20] [--device cpu|cuda]

Training: ``--batches`` mini-batches of 32 blog_short texts (the first texts of the corpus, or
synthetic 207-character texts when ../shared/data is absent) through the full training step
(forward, backward, Adam). Sampling: 512 texts of up to 280 characters at temperature 1, in
batches of 256, from the same (untrained) network: an untrained model rarely writes the end
symbol, so the texts run to the cap and the figure is per character actually written.
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from textveil.models.char_rnn import (  # noqa: E402
    ARCHITECTURES,
    CharModelShape,
    UserCharRNN,
    build_characters,
    encode_text,
    sample_texts,
    sequence_loss,
)

BLOG = ROOT.parent / "shared" / "data" / "blog_short" / "blog_short.jsonl"


def corpus(count: int) -> list[str]:
    if BLOG.exists():
        with BLOG.open(encoding="utf-8") as lines:
            return [json.loads(next(lines))["text"] for _ in range(count)]
    return ["the quick brown fox jumps over the lazy dog, " * 4 + "and then some" for _ in range(count)][:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--users", type=int, default=150)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    device = torch.device(args.device)
    texts = corpus(32 * args.batches)
    characters = build_characters(texts)
    index = {c: i for i, c in enumerate(characters)}
    sequences = [encode_text(t, index, 280) for t in texts]
    users = [i % args.users for i in range(len(texts))]
    report = {"machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                          "device": str(device)}, "hidden": args.hidden, "models": {}}
    for architecture in ARCHITECTURES:
        torch.manual_seed(0)
        model = UserCharRNN(CharModelShape(architecture, len(characters), args.users, args.hidden)).to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.002)
        trained = 0
        started = time.perf_counter()
        for start in range(0, len(sequences), 32):
            optimizer.zero_grad()
            loss, count = sequence_loss(model, sequences[start:start + 32], users[start:start + 32], device)
            loss.backward()
            optimizer.step()
            trained += count
        training_seconds = time.perf_counter() - started
        generator = torch.Generator(device=device)
        generator.manual_seed(0)
        started = time.perf_counter()
        written = sample_texts(model, [i % args.users for i in range(512)], characters, temperature=1.0,
                               max_length=280, generator=generator, batch_size=256)
        sampling_seconds = time.perf_counter() - started
        report["models"][architecture] = {
            "parameters": sum(p.numel() for p in model.parameters()),
            "training_characters_per_second": round(trained / training_seconds),
            "sampling_characters_per_second": round(sum(map(len, written)) / sampling_seconds),
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
