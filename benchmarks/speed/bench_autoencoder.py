"""Benchmark ER-AE (paper 002): training and generation speed, in tokens per second.

For each configuration (network size, vocabulary, batch size) and each device (the CPU, and
CUDA when ``torch.cuda.is_available()``), on the first ``--texts`` texts of a JSONL corpus:

1. Training: one ``ERAE.train`` run of two epochs, the first reconstruction only
   (``pretrain_epochs=1``) and the second with the embedding reward, no validation texts.
   The rate of each epoch is its ``tokens / seconds`` from the model's ``history_``
   (``--no-recon-epoch``: one reward epoch only, ``epochs=1, pretrain_epochs=0``).
2. Generation: ``sanitize_many`` of the same texts at epsilon 20 (seeded), in tokens
   released (``release.guarantee.words_protected``) per second. The texts were in the
   training data; that changes nothing in the cost of a release.

The figures are per-stage timings, independent of the rest of the process: an epoch's time
covers its batches only (forward, backward, optimiser), and the generation time covers
``sanitize_many`` only (network forward, softmax, exponential-mechanism draw, layout). Not
counted: starting Python, imports, loading the embeddings, building the vocabulary,
validation, and a warm-up run done first on each device (a short training on 64 texts and a
short release, which also starts CUDA). The "vocabulary" column is the size actually built:
a small corpus holds fewer distinct tokens than ``vocabulary_size`` asks for, and the
output layer's size drives the cost.

Run from the project root (a few minutes on 2 idle cores; the paper's configuration is the
slow one on a CPU)::

    .venv/bin/python benchmarks/speed/bench_autoencoder.py
    .venv/bin/python benchmarks/speed/bench_autoencoder.py --texts 500 --json erae-speed.json
    .venv/bin/python benchmarks/speed/bench_autoencoder.py --devices cpu --threads 2 \\
        --config small:hidden=128,layers=1,vocabulary_size=4000,batch_size=64

``--config NAME:KEY=VALUE,...`` (repeatable) replaces the two default configurations; any
ERAE parameter may be given (hidden, layers, vocabulary_size, batch_size, max_length, k, ...).
The numbers are wall-clock: other processes' load (printed) slows everything down.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench_common.py
from bench_common import load_average, machine_info, say  # noqa: E402
from textveil.errors import TextveilError  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CORPUS = REPO_ROOT / ".." / "shared" / "data" / "blog_short" / "blog_short.jsonl"
EPSILON = 20.0
WARM_UP_TEXTS = 64
DEFAULT_CONFIGS = (
    "cpu:hidden=256,layers=1,vocabulary_size=8000,batch_size=64",
    "paper:hidden=512,layers=2,vocabulary_size=20000,batch_size=128",
)


def parse_config(spec: str) -> tuple[str, dict[str, Any]]:
    """``NAME:key=value,key=value`` -> (name, parameters), each value parsed and checked by
    ERAE's own parameter declarations (an unknown key or a bad value fails with one line)."""
    from textveil.mechanisms.registry import MECHANISMS

    entry = MECHANISMS.entry("erae")
    name, colon, body = spec.partition(":")
    if not colon:
        name, body = spec, spec
    parameters: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in body.split(","))):
        key, equals, raw = item.partition("=")
        if not equals:
            raise ValueError(f"configuration '{spec}': '{item}' is not KEY=VALUE")
        parameters[key.strip()] = entry.parameter(key.strip()).parse(raw)
    return name, parameters


def read_texts(path: Path, limit: int, field: str) -> list[str]:
    """The first ``limit`` non-empty texts of a corpus, read as textveil reads any input."""
    from textveil.corpus.reading import expand_inputs, read_documents

    return [d.text for d in read_documents(expand_inputs([str(path)]), field) if d.text.strip()][:limit]


def devices_to_run(choice: str) -> list[str]:
    import torch

    if choice == "auto":
        return ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    wanted = [d.strip() for d in choice.split(",") if d.strip()]
    if any(d.startswith("cuda") for d in wanted) and not torch.cuda.is_available():
        raise ValueError("--devices asks for cuda, but torch sees no GPU")
    return wanted


def measure(name: str, parameters: dict[str, Any], device: str, texts: list[str], embeddings: Any,
            recon_epoch: bool, seed: int) -> dict[str, Any]:
    import torch

    from textveil.mechanisms.autoencoder import ERAE

    epochs = {"epochs": 2, "pretrain_epochs": 1} if recon_epoch else {"epochs": 1, "pretrain_epochs": 0}
    settings = {**parameters, **epochs}

    # warm-up (not timed): allocator, kernels, CUDA context
    ERAE(EPSILON, embeddings, **{**settings, "epochs": 1, "pretrain_epochs": 0}, seed=seed,
         device=device).train(texts[:WARM_UP_TEXTS]).with_params(seed=seed).sanitize_many(texts[:8])

    model = ERAE(EPSILON, embeddings, **settings, seed=seed, device=device)
    started = time.perf_counter()
    model.train(texts)
    train_wall = time.perf_counter() - started
    history = model.history_
    reward = [h for h in history if h["reward"]]
    plain = [h for h in history if not h["reward"]]

    def rate(records: list[dict[str, Any]]) -> float | None:
        tokens, seconds = sum(r["tokens"] for r in records), sum(r["seconds"] for r in records)
        return tokens / seconds if records and seconds > 0 else None

    releaser = model.with_params(epsilon=EPSILON, seed=seed)
    releaser.sanitize_many(texts[:8])  # builds the network on the device (not timed)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    started = time.perf_counter()
    releases = releaser.sanitize_many(texts)
    generation_seconds = time.perf_counter() - started
    generated = sum(r.guarantee.words_protected for r in releases)
    return {
        "config": name, "parameters": settings, "device": device, "torch_threads": torch.get_num_threads(),
        "texts": len(texts), "vocabulary": len(model.vocabulary_),
        "training_tokens_per_epoch": history[-1]["tokens"],
        "training_tokens_per_s_reward": rate(reward), "training_tokens_per_s_recon": rate(plain),
        "training_wall_seconds": round(train_wall, 2), "epochs": history,
        "generation_tokens": generated, "generation_seconds": round(generation_seconds, 3),
        "generation_tokens_per_s": generated / generation_seconds if generation_seconds > 0 else None,
    }


def markdown(rows: list[dict[str, Any]]) -> str:
    def figure(value: float | None) -> str:
        return "-" if value is None else f"{value:,.0f}"

    lines = [
        "| config | device | torch threads | vocabulary | training tokens/s (reward) "
        "| training tokens/s (reconstruction only) | generation tokens/s |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        shown = ", ".join(f"{k}={v}" for k, v in row["parameters"].items() if k not in ("epochs", "pretrain_epochs"))
        lines.append(f"| {row['config']} ({shown}) | {row['device']} | {row['torch_threads']} | {row['vocabulary']:,} "
                     f"| {figure(row['training_tokens_per_s_reward'])} | {figure(row['training_tokens_per_s_recon'])} "
                     f"| {figure(row['generation_tokens_per_s'])} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="JSONL texts (default: blog_short)")
    parser.add_argument("--text-field", default="text")
    parser.add_argument("--texts", type=int, default=2000, help="use the first N texts (default 2000)")
    parser.add_argument("--config", action="append", metavar="NAME:KEY=VALUE,...",
                        help="a configuration (repeatable); default: " + " and ".join(DEFAULT_CONFIGS))
    parser.add_argument("--devices", default="auto", help="auto (cpu, and cuda when present) or a list: cpu,cuda")
    parser.add_argument("--threads", type=int, help="torch CPU threads (default: torch's own choice)")
    parser.add_argument("--no-recon-epoch", dest="recon_epoch", action="store_false",
                        help="train one reward epoch only (no reconstruction-only epoch)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", metavar="PATH", help="also write every figure to this JSON file")
    args = parser.parse_args(argv)

    if not args.corpus.is_file():
        print(f"error: corpus '{args.corpus}' not found; give a JSONL file of texts with --corpus", file=sys.stderr)
        return 2
    if args.texts < 1:
        print("error: --texts must be at least 1", file=sys.stderr)
        return 2
    try:
        configs = [parse_config(spec) for spec in (args.config or DEFAULT_CONFIGS)]
        texts = read_texts(args.corpus, args.texts, args.text_field)
        devices = devices_to_run(args.devices)
    except (ValueError, OSError, TextveilError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if not texts:
        print(f"error: '{args.corpus}' holds no texts", file=sys.stderr)
        return 2

    import torch

    from textveil.embeddings.default_model import load_embeddings

    if args.threads:
        torch.set_num_threads(args.threads)
    machine = machine_info()
    say(f"machine: {machine['cpu']}, {machine['usable_cpus']} usable CPUs, {machine['ram_gib']} GiB, "
        f"Python {machine['python']}, torch {torch.__version__}, torch threads {torch.get_num_threads()}, "
        f"CUDA {torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'absent'}; "
        f"load average {load_average()}")
    embeddings = load_embeddings()
    say(f"{len(texts):,} texts from {args.corpus}; embeddings {embeddings.dim}-d")

    rows = []
    for name, parameters in configs:
        for device in devices:
            say(f"  {name} on {device} ...")
            try:
                row = measure(name, parameters, device, texts, embeddings, args.recon_epoch, args.seed)
            except (TextveilError, TypeError) as error:
                print(f"error: configuration '{name}': {error}", file=sys.stderr)
                return 2
            say(f"    {row['training_tokens_per_epoch']:,} tokens per epoch, training {row['training_wall_seconds']} s "
                f"in all; {row['generation_tokens']:,} tokens released in {row['generation_seconds']} s")
            rows.append(row)

    load_after = load_average()
    say("")
    say(markdown(rows))
    say(f"\nload average after: {load_after}")
    if args.json:
        figures = {"machine": {**machine, "torch": torch.__version__, "load_average_1min_at_end": load_after},
                   "corpus": str(args.corpus), "texts": len(texts), "epsilon": EPSILON, "seed": args.seed,
                   "rows": rows}
        Path(args.json).write_text(json.dumps(figures, indent=2), encoding="utf-8")
        say(f"figures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
