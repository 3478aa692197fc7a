"""The ``synthesize`` command (paper 004): a trained ``synth`` model writes a synthetic corpus,
texts per user. Like the rest of the command line this holds no privacy logic: it checks paths,
reads the users to write for, calls :meth:`~textveil.mechanisms.synthesis.NeuralSynthesis.synthesize`
and writes JSON Lines.

Also here: reading a corpus whose records name their user (``--user-field``), which ``train``
needs for the mechanisms that model their writers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from textveil.cli.console import stderr
from textveil.cli.progress import progress_bar
from textveil.errors import InputError, InvalidParameterError


def read_user_texts(path: Path, text_field: str, user_field: str, encoding: str = "utf-8",
                    option: str = "--corpus") -> tuple[list[str], list[str]]:
    """The texts of a JSONL/CSV corpus (a file, or a folder of them) and each text's user, read
    from ``user_field``. A plain text file, or a record without a user, is one line naming the
    field and the file."""
    from textveil.corpus.reading import expand_inputs, read_documents

    files = expand_inputs([str(path)])
    plain = next((f for f in files if f.fmt == "text"), None)
    if plain is not None:  # a plain text file names no user at all
        raise InputError(f"{option} '{plain.display}' is a plain text file: give JSONL or CSV records with a "
                         f"'{user_field}' field naming each text's user")
    texts, users = [], []
    for document in read_documents(files, text_field, encoding):
        user = document.fields.get(user_field)
        if user is None or isinstance(user, (dict, list)) or str(user) == "":
            fields = ", ".join(sorted(map(str, document.fields))) or "none"
            raise InputError(f"{document.source.display}: record {(document.record or 0) + 1} has no user field "
                             f"'{user_field}' (fields: {fields}); pass --user-field with the field naming each "
                             "text's user")
        texts.append(document.text)
        users.append(str(user))
    return texts, users


def _is_within(path: Path, folder: Path) -> bool:
    path, folder = path.resolve(), folder.resolve()
    return path == folder or folder in path.parents


def synthesize(
    model: Path = typer.Option(..., "--model", help="A trained synth model's folder ('textveil train synth')."),
    out: Path = typer.Option(..., "--out", help="The synthetic corpus to write (JSON Lines: one user and text a line)."),
    temperature: Optional[float] = typer.Option(
        None, "--temperature", "-t", help="Sampling temperature (> 0; higher: noisier text, lower: the users' "
        "commonest text); default: the one saved with the model."),
    counts_from: Optional[Path] = typer.Option(
        None, help="The set to be released (JSONL/CSV): per user, as many texts as it has there (its texts are "
        "never read). Without it, --per-user texts for every trained user."),
    per_user: Optional[int] = typer.Option(
        None, help="Texts per trained user when --counts-from is not given (default 1: the model does not know how "
        "many texts each user had in training)."),
    user_field: str = typer.Option("user", help="User field of --counts-from and of the records written."),
    text_field: str = typer.Option("text", help="Text field of --counts-from and of the records written."),
    seed: Optional[int] = typer.Option(None, help="Seed for a reproducible corpus (default: OS entropy)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing --out file."),
    encoding: str = typer.Option("utf-8", help="Encoding of --counts-from."),
) -> None:
    """Write a synthetic corpus with a trained synth model: texts per user, sampled at a temperature."""
    from textveil.atomic_files import atomic_write_text
    from textveil.mechanisms.base import Mechanism, saved_mechanism_name
    from textveil.mechanisms.registry import MECHANISMS

    # Every cheap check first: nothing is loaded or sampled for a command that cannot write.
    if counts_from is not None and per_user is not None:
        raise InvalidParameterError("give --counts-from FILE or --per-user N, not both")
    if per_user is not None and per_user < 1:
        raise InvalidParameterError(f"--per-user must be at least 1, got {per_user}")
    if user_field == text_field:
        raise InvalidParameterError(f"--user-field and --text-field are both '{text_field}'; give two names")
    if counts_from is not None and out.resolve() == counts_from.resolve():
        raise InputError(f"--out '{out}' is the --counts-from file; give the synthetic corpus a path of its own")
    if out.exists() and _is_within(out, model):
        raise InputError(f"--out '{out}' is a file of the model folder '{model}'; write the corpus elsewhere")
    if out.is_dir():
        raise InputError(f"--out '{out}' is a folder; give a file for the synthetic corpus")
    if out.exists() and not force:
        raise InputError(f"--out '{out}' exists; pass --force to replace it (nothing was overwritten)")
    saved = saved_mechanism_name(model)
    if not MECHANISMS.load(saved).writes_synthetic_corpus:
        raise InputError(f"--model '{model}' holds a trained {saved}, which writes no synthetic corpus; give a model "
                         "from 'textveil train synth'")

    if counts_from is not None:
        _, users = read_user_texts(counts_from, text_field, user_field, encoding, option="--counts-from")
        if not users:
            raise InputError(f"--counts-from '{counts_from}' holds no records: nothing to synthesise")
    synthesiser = Mechanism.load(model)
    if counts_from is None:  # the trained users, --per-user texts each, user by user
        users = [user for user in synthesiser.users for _ in range(per_user or 1)]
    changes = {"seed": seed} if temperature is None else {"seed": seed, "temperature": temperature}
    synthesiser = synthesiser.with_params(**changes)  # seed None: OS entropy, never the training run's seed
    with progress_bar() as progress:
        task = progress.add_task(f"synthesising with {synthesiser.name}", total=len(users))
        texts = synthesiser.synthesize(users, progress=lambda done: progress.advance(task, done))
    lines = [json.dumps({user_field: user, text_field: text}, ensure_ascii=False) for user, text in zip(users, texts)]
    atomic_write_text(out, "\n".join(lines) + "\n")
    guarantee = synthesiser.guarantee()
    stderr.print(f"synthesised {len(texts):,} text(s) for {len(set(users)):,} user(s) with {synthesiser.name} "
                 f"(temperature {synthesiser.temperature:g}) -> {out}", markup=False)
    # The mechanism's own statement (kind "none": NO formal guarantee), never a paraphrase of it.
    stderr.print(f"guarantee: {guarantee.statement}", style="bold yellow", markup=False)


def register_synthesis_commands(app: typer.Typer) -> None:
    """Add ``synthesize`` to the ``textveil`` app."""
    app.command()(synthesize)
