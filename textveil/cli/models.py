"""The ``train`` and ``split`` commands: mechanisms that learn, and the corpora they learn from.

Like the rest of the command line this holds no privacy logic: it reads, calls the library
(:meth:`~textveil.mechanisms.base.Mechanism.fit`, or ``train`` for the neural mechanisms, which
checkpoint and resume) and writes the trained mechanism with its manifest.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.progress import TextColumn

from textveil.cli.console import stderr
from textveil.cli.entity_options import with_entity_options
from textveil.cli.options import given_options, load_cli_embeddings
from textveil.cli.progress import progress_bar
from textveil.cli.synthesis import read_user_texts
from textveil.errors import InputError, InvalidParameterError


@with_entity_options
def train(
    mechanism: str = typer.Argument(
        ..., help="A mechanism that learns (see 'textveil mechanisms'): erae, aedp, syntf, synth."),
    corpus: Path = typer.Option(..., help="Training texts: a text file, a folder, JSONL or CSV."),
    architecture: Optional[str] = typer.Option(
        None, "--model", help="The network, for mechanisms that have a choice (synth: elman, gru or delta)."),
    user_field: Optional[str] = typer.Option(
        None, help="Field of JSONL/CSV records naming each text's user: required by mechanisms that model their "
        "writers (synth), refused by the others."),
    out: Path = typer.Option(..., help="Folder for the trained model (manifest.json, state.npz, checkpoint.pt)."),
    dev_corpus: Optional[Path] = typer.Option(None, help="Validation texts (loss per epoch); default: none."),
    continue_from: Optional[Path] = typer.Option(
        None, help="A trained model's folder to train on for more epochs (--set epochs=MORE): its checkpoint is "
        "copied into --out and its epochs are not repeated; same corpus and settings. The source is not changed."),
    settings: Optional[list[str]] = typer.Option(None, "--set", help="Any parameter of the mechanism, NAME=VALUE (repeatable)."),
    epsilon: Optional[float] = typer.Option(
        None, "--epsilon", "-e", help="The epsilon saved with the model (a default: sanitize --epsilon overrides it)."),
    seed: Optional[int] = typer.Option(None, help="Seed: a deterministic training run (default: OS entropy)."),
    device: str = typer.Option("auto", help="auto (CUDA when present, else CPU), cpu or cuda."),
    embeddings: str = typer.Option("default", help="'default' or a vectors file (initial token embeddings)."),
    text_field: str = typer.Option("text", help="Text field of JSONL/CSV inputs."),
    encoding: str = typer.Option("utf-8", help="Encoding of the inputs."),
    entity_stage: object = None,
) -> None:
    """Train a mechanism on a corpus and save it; an interrupted run resumes from its checkpoint.

    The training texts go through the entity stage first (--entities): a model never learns a
    name it could write back."""
    from textveil.corpus.reading import expand_inputs, read_documents
    from textveil.mechanisms.base import MANIFEST, Mechanism
    from textveil.mechanisms.registry import MECHANISMS
    from textveil.pii.staged import corpus_through_stage, record_training_stage
    from textveil.pii.stage import EntityStage, stage_summary

    entry = MECHANISMS.entry(mechanism)
    options = given_options(mechanism, settings, epsilon=epsilon)
    cls = MECHANISMS.load(mechanism)
    if cls._fit is Mechanism._fit:
        raise InvalidParameterError(f"mechanism '{mechanism}' learns nothing; sanitize with it directly")
    if architecture is not None:
        if "architecture" not in {p.name for p in entry.parameters}:
            raise InvalidParameterError(f"mechanism '{mechanism}' has no choice of network; leave out --model")
        if "architecture" in options:
            raise InvalidParameterError("give the network once: --model or --set architecture=..., not both")
        options["architecture"] = entry.parameter("architecture").parse(architecture)
    if cls.fit_uses_labels and user_field is None:
        raise InvalidParameterError(f"mechanism '{mechanism}' models each user's writing: pass --user-field with the "
                                    "field of the records naming each text's user")
    if not cls.fit_uses_labels and user_field is not None:
        raise InvalidParameterError(f"mechanism '{mechanism}' does not learn per user; leave out --user-field")
    swept = entry.swept
    if swept is not None and swept.required and swept.name not in options:
        options[swept.name] = float(entry.grid[len(entry.grid) // 2])
    if (out / MANIFEST).exists():
        raise InputError(f"--out '{out}' already holds a trained model; give another folder (nothing was overwritten)")
    if out.exists() and not out.is_dir():
        raise InputError(f"--out '{out}' is a file; give a folder for the model")
    neural = cls.trains_network
    if continue_from is not None:
        _copy_checkpoint(continue_from, out, neural=neural)
    users: list[str] | None = None
    dev_users: list[str] = []
    if user_field is not None:
        texts, users = read_user_texts(corpus, text_field, user_field, encoding, option="--corpus")
        if dev_corpus:
            dev, dev_users = read_user_texts(dev_corpus, text_field, user_field, encoding, option="--dev-corpus")
        else:
            dev = []
    else:
        texts = [d.text for d in read_documents(expand_inputs([str(corpus)]), text_field, encoding)]
        dev = [d.text for d in read_documents(expand_inputs([str(dev_corpus)]), text_field, encoding)] if dev_corpus else []
    stage = EntityStage(entity_stage)
    with stderr.status("replacing names, places and contact details in the training texts"):
        texts, replaced = corpus_through_stage(stage, texts)
        dev = corpus_through_stage(stage, dev)[0]
    shared = {"embeddings": load_cli_embeddings(embeddings, None)} if "embeddings" in cls.resources else {}
    built = MECHANISMS.make(mechanism, shared=shared, **options, seed=seed, **({"device": device} if neural else {}))
    record_training_stage(built, stage)
    if neural:
        with progress_bar(TextColumn("loss {task.fields[loss]}")) as progress:
            task = progress.add_task(f"training {mechanism}", total=None, loss="-")
            # A mechanism that models its writers is trained on each text's user, and validated likewise.
            data = (texts, users, dev, dev_users) if users is not None else (texts, dev)
            built.train(*data, folder=out,
                         progress=lambda done, total, loss: progress.update(task, completed=done, total=total,
                                                                           loss=f"{loss:.3f}"),
                         log=lambda message: progress.console.print(message))
    else:
        with stderr.status(f"fitting {mechanism} on {len(texts):,} texts"):
            built.fit(texts, users)
    built.save(out)
    stderr.print(stage_summary(stage.options.public(), replaced), markup=False)
    how = (f"release with '{cls.release_command.replace('DIR', str(out))}'" if cls.release_command
           else f"sanitize with --mechanism {mechanism} --model {out}")
    writers = f" of {len(set(users)):,} users" if users is not None else ""
    stderr.print(f"trained {mechanism} on {len(texts):,} texts{writers} -> {out} ({how})", markup=False)


def _copy_checkpoint(source: Path, out: Path, *, neural: bool) -> None:
    """Put ``source``'s training checkpoint into ``out``, where training resumes from it."""
    from textveil.atomic_files import atomic_write_bytes
    from textveil.mechanisms.base import CHECKPOINT

    if not neural:
        raise InvalidParameterError("--continue-from is for the neural mechanisms (erae, aedp, synth); leave it out")
    saved = source / CHECKPOINT
    if not saved.is_file():
        raise InputError(f"--continue-from '{source}' holds no {CHECKPOINT}; give the folder a model was trained into")
    if source.resolve() == out.resolve():
        raise InputError("--continue-from and --out are the same folder; give a new --out (the source is kept)")
    if (out / CHECKPOINT).exists():
        raise InputError(f"--out '{out}' already holds a checkpoint; leave out --continue-from to resume it, "
                         "or give a new folder")
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(out / CHECKPOINT, saved.read_bytes())


def split(
    corpus: Path = typer.Argument(..., help="A labelled corpus: JSONL/CSV, or a folder per author."),
    out: Path = typer.Option(..., help="Folder for one JSONL file per part."),
    fractions: str = typer.Option("70,10,20", help="Per label, the parts' shares in corpus order (paper 002: 70,10,20)."),
    names: str = typer.Option("train,dev,eval", help="The parts' file names, comma-separated."),
    text_field: str = typer.Option("text", help="Text field of JSONL/CSV corpora (kept in the parts)."),
    label_field: str = typer.Option("label", help="Label field of JSONL/CSV corpora (kept in the parts)."),
    encoding: str = typer.Option("utf-8", help="Encoding of the corpus."),
) -> None:
    """Split each author's texts, in order, into parts (train/dev/evaluation) written as JSONL."""
    from textveil.corpus.labelled import read_labelled_corpus, split_by_fractions
    from textveil.atomic_files import atomic_write_text

    try:
        shares = [float(x) for x in fractions.split(",") if x.strip()]
    except ValueError:
        raise InvalidParameterError(f"--fractions '{fractions}' must be comma-separated numbers, e.g. 70,10,20") from None
    parts_names = [n.strip() for n in names.split(",") if n.strip()]
    if len(parts_names) != len(shares) or len(set(parts_names)) != len(parts_names):
        raise InvalidParameterError(f"--names '{names}' must give one distinct name per fraction ({len(shares)})")
    total = sum(shares)
    whole = read_labelled_corpus(corpus, text_field, label_field, encoding).validate(what="corpus")
    parts = split_by_fractions(whole, [s / total for s in shares] if total > 0 else shares)
    targets = [out / f"{name}.jsonl" for name in parts_names]
    if any(t.exists() for t in targets) or any(t.resolve() == corpus.resolve() for t in targets):
        raise InputError(f"--out '{out}' already holds {', '.join(t.name for t in targets if t.exists())}; "
                         "give another folder (nothing was overwritten)")
    for target, part in zip(targets, parts):
        lines = [json.dumps({text_field: t, label_field: label}, ensure_ascii=False) for t, label in zip(part.texts, part.labels)]
        atomic_write_text(target, "\n".join(lines) + ("\n" if lines else ""))
        stderr.print(f"{target}: {len(part):,} texts, {len(part.label_set)} labels")


def register_model_commands(app: typer.Typer) -> None:
    """Add ``train`` and ``split`` to the ``textveil`` app."""
    app.command()(train)
    app.command()(split)
