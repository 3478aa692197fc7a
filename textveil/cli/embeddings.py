"""``textveil embeddings build`` and ``info``: the bundled default embeddings, built once and cached."""

from __future__ import annotations

import json
from typing import Optional

import typer

from textveil.cli.console import stderr
from textveil.cli.options import load_cli_embeddings
from textveil.errors import InvalidParameterError

embeddings_app = typer.Typer(help="Build and inspect word embeddings.", no_args_is_help=True)


@embeddings_app.command("build")
def embeddings_build(
    vocab_size: int = typer.Option(30_000, help="Number of most frequent English words (wordfreq)."),
    force: bool = typer.Option(False, help="Rebuild even if cached."),
) -> None:
    """Distil the default embeddings (once; cached in the user cache folder)."""
    from textveil.embeddings.default_model import build_default_embeddings, default_embeddings_dir

    if vocab_size < 1:
        raise InvalidParameterError(f"--vocab-size must be a positive integer, got {vocab_size}")
    cached = (default_embeddings_dir(vocab_size) / "meta.json").is_file()
    folder = build_default_embeddings(vocab_size, force=force, log=lambda m: stderr.print(m))
    if cached and not force:
        stderr.print(f"default embeddings already built: {folder}")


@embeddings_app.command("info")
def embeddings_info(
    embeddings: str = typer.Option("default", help="'default' or a vectors file."),
    vocab_size: Optional[int] = typer.Option(None, help="Keep only the K most frequent words."),
) -> None:
    """Describe embeddings: size, dimension, vector norms, where they are cached."""
    import numpy as np

    table = load_cli_embeddings(embeddings, vocab_size)
    norms = np.linalg.norm(table.vectors, axis=1)
    print(f"name:        {table.name}")
    print(f"words:       {len(table):,}")
    print(f"dimensions:  {table.dim}")
    print(f"norms:       min {norms.min():.3f}  median {np.median(norms):.3f}  max {norms.max():.3f}")
    print(f"first words: {', '.join(table.words[:10])}")
    if embeddings == "default":
        from textveil.embeddings.default_model import default_embeddings_dir

        folder = default_embeddings_dir(max(vocab_size or 30_000, 30_000))
        print(f"cached in:   {folder}")
        meta = folder / "meta.json"
        if meta.is_file():
            print(f"build:       {json.loads(meta.read_text())}")


def register_embeddings_commands(app: typer.Typer) -> None:
    """Add ``embeddings build`` and ``embeddings info`` to the ``textveil`` app."""
    app.add_typer(embeddings_app, name="embeddings")
