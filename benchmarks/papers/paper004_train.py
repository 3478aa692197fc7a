"""Paper 004's three models trained on blog_short's known texts, with checkpoints (a killed run
resumes), and training speed recorded.

    python benchmarks/papers/paper004_train.py --architecture delta --epochs 10 --out ../paper004/models/delta

Per user, the first 70 texts (in file order) are the model's training texts and the attacker's
known texts; the last 30 are the release set (``paper004_evaluate.sh`` measures them). Every
tenth text of each user is held out for the validation loss, as ``fit`` does. Writes the trained
mechanism (``textveil synthesize --model DIR`` reads it) and ``training.json``: settings, the
loss per epoch and characters per second.
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

from textveil.atomic_files import atomic_write_text  # noqa: E402
from textveil.corpus.labelled import read_labelled_corpus, split_first_k  # noqa: E402
from textveil.mechanisms.synthesis import NeuralSynthesis, validation_split  # noqa: E402

KNOWN_PER_USER = 70


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--architecture", choices=("elman", "gru", "delta"), required=True)
    parser.add_argument("--epochs", type=int, required=True)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "blog_short" / "blog_short.jsonl")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    whole = read_labelled_corpus(args.data, "text", "user").validate(what="blog_short")
    known, _ = split_first_k(whole, KNOWN_PER_USER)
    held = validation_split(known.labels)
    mechanism = NeuralSynthesis(architecture=args.architecture, hidden=args.hidden, epochs=args.epochs,
                                batch_size=args.batch_size, seed=args.seed, device="auto")
    started = time.perf_counter()
    mechanism.train([t for t, h in zip(known.texts, held) if not h], [u for u, h in zip(known.labels, held) if not h],
                    [t for t, h in zip(known.texts, held) if h], [u for u, h in zip(known.labels, held) if h],
                    folder=args.out, log=lambda line: print(line, flush=True))
    seconds = time.perf_counter() - started
    mechanism.save(args.out)
    history = mechanism.history_
    trained = [r for r in history if r["seconds"] > 0]
    report = {
        "architecture": args.architecture, "hidden": args.hidden, "epochs": args.epochs, "batch_size": args.batch_size,
        "seed": args.seed, "texts": len(known), "users": len(known.label_set),
        "parameters": int(mechanism.weights_.size), "characters": len(mechanism.characters_) - 4,
        "history": history, "seconds_this_run": round(seconds, 1),
        "training_characters_per_second": round(sum(r["characters"] for r in trained)
                                                / max(1e-9, sum(r["seconds"] for r in trained))),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "threads": int(os.environ.get("OMP_NUM_THREADS", "0")) or None},
    }
    atomic_write_text(args.out / "training.json", json.dumps(report, indent=2))
    print(f"{args.architecture}: {report['parameters']:,} parameters, {report['training_characters_per_second']:,} "
          f"characters/s, {seconds:.0f} s", flush=True)


if __name__ == "__main__":
    main()
