"""A causal LM of the bundled model's shape with random weights, for timing on a machine the
bundled file cannot reach (a GPU machine that takes 64 MiB a call: the GGUF file is 94 MB).

Two steps, each one command:

    # here: the bundled model's config and tokenizer (a few MB), nothing of its weights
    .venv/bin/python benchmarks/speed/model_of_shape.py prepare benchmarks/out/smollm2-shape
    # there: random weights (seeded) of that shape, in bfloat16, beside them
    python benchmarks/speed/model_of_shape.py weights benchmarks/out/smollm2-shape /tmp/smollm2-random

Speed depends on the shape (layers, widths, vocabulary) and not on the weights' values; what the
model writes with random weights is noise, so only speed is measured with it.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path


def prepare(out: Path) -> None:
    """The bundled GGUF file's config and tokenizer, written to ``out``."""
    from transformers import AutoConfig

    from textveil.models.language_model import file_digest, gguf_tokenizer_cached
    from textveil.models.language_model import bundled_model_file

    gguf = Path(str(bundled_model_file()))
    out.mkdir(parents=True, exist_ok=True)
    AutoConfig.from_pretrained(gguf.parent, gguf_file=gguf.name).save_pretrained(out)
    gguf_tokenizer_cached(gguf, file_digest(gguf)).save_pretrained(out)
    print(f"config and tokenizer of {gguf.name} in {out}")


def weights(shape: Path, out: Path, seed: int = 0) -> None:
    """A model of ``shape``'s config with random weights (seeded), saved with its tokenizer."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(seed)
    config = AutoConfig.from_pretrained(shape)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(shape).save_pretrained(out)
    for name in ("generation_config.json",):
        if (shape / name).is_file():
            shutil.copy(shape / name, out / name)
    print(f"{sum(p.numel() for p in model.parameters()):,} random weights of {shape.name}'s shape in {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    first = commands.add_parser("prepare", help="write the bundled model's config and tokenizer")
    first.add_argument("out", type=Path)
    second = commands.add_parser("weights", help="random weights of a prepared shape")
    second.add_argument("shape", type=Path)
    second.add_argument("out", type=Path)
    second.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.command == "prepare":
        prepare(args.out)
    else:
        weights(args.shape, args.out, args.seed)


if __name__ == "__main__":
    main()
