"""The ``pivot`` commands (paper 003): encode a corpus with a key, and map released artefacts
back with it. Like the rest of the command line this holds no privacy logic: it checks paths,
reads, calls :mod:`textveil.mechanisms.pivot` and writes.

The key never goes near the release: it may not lie inside the release's folder (or be one of
its files), an existing key is never overwritten without ``--force``, it is written 0600, and
what the command prints of it is its digest.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from textveil.cli.console import stderr, warn_copied_fields
from textveil.cli.entity_options import with_entity_options
from textveil.cli.progress import progress_bar
from textveil.errors import InputError

pivot_app = typer.Typer(help="PIVOT (paper 003): one-to-many word mapping against frequency analysis, with a key "
                        "the owner keeps.", no_args_is_help=True)


def _write_texts(documents, releases, targets, text_field: str, encoding: str) -> None:
    """Each input file's texts in its own shape; a plain text file ends with a line break."""
    from textveil.atomic_files import atomic_write_text
    from textveil.corpus.writing import render_releases

    for source, text in render_releases(documents, releases, "text", text_field).items():
        atomic_write_text(targets[source], text if text.endswith("\n") or source.fmt != "text" else text + "\n",
                          encoding)


def _released_texts(documents) -> list[str]:
    """The released texts as 'pivot encode' produced them (without the line break a text file gets)."""
    return [d.text.rstrip("\n") if d.source.fmt == "text" else d.text for d in documents]


def _is_within(path: Path, folder: Path) -> bool:
    path, folder = path.resolve(), folder.resolve()
    return path == folder or folder in path.parents


def check_key_path(key: Path, release_targets: list[Path], release_root: Path, inputs: list[str], force: bool) -> None:
    """Refuse a key path that would mix the key into the release or the corpus, or replace a key (one line)."""
    release_is_folder = len(release_targets) > 1 or release_root.is_dir() or \
        any(target.resolve() != release_root.resolve() for target in release_targets)
    if release_is_folder and _is_within(key, release_root):
        raise InputError(f"--key '{key}' lies inside the release folder '{release_root}': the key must never travel "
                         "with the release; keep it elsewhere")
    if any(key.resolve() == target.resolve() for target in release_targets):
        raise InputError(f"--key '{key}' is the release's own path; give the key a path of its own, outside the release")
    for item in inputs:
        if item != "-" and _is_within(key, Path(item)):
            raise InputError(f"--key '{key}' is or lies inside the input '{item}'; keep the key apart from the corpus")
    if key.exists() and not force:
        raise InputError(f"key file '{key}' exists; a key is never overwritten (pass --force to replace it)")


@pivot_app.command("encode")
@with_entity_options
def encode(
    inputs: list[str] = typer.Argument(..., help="The corpus: files, folders (one text per file), JSONL or CSV.",
                                       show_default=False),
    l: int = typer.Option(5, "--l", help="l-privacy: each code word's best frequency guess is right with probability "
                          "<= 1/l (at least 2)."),
    out: Path = typer.Option(..., "--out", help="The release: a file for one input file, else a folder (mirrors the input)."),
    key: Path = typer.Option(..., "--key", help="Where to write the key (0600, outside the release)."),
    part_size: int = typer.Option(100, help="The most occurrences one code word takes (larger: better embeddings)."),
    seed: Optional[int] = typer.Option(None, help="Seed for a reproducible release and key (default: OS entropy)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing key file."),
    text_field: str = typer.Option("text", help="Text field of JSONL/CSV inputs."),
    input_format: str = typer.Option("auto", help="auto (by extension), text, jsonl or csv."),
    encoding: str = typer.Option("utf-8", help="Encoding of the inputs."),
    entity_stage: object = None,
) -> None:
    """Replace every token of a corpus by code words (one word -> many), write the release and the key.

    Names, places and contact details are replaced first (--entities)."""
    from textveil.corpus.outputs import plan_output_paths
    from textveil.corpus.reading import expand_inputs, read_documents
    from textveil.mechanisms.pivot import Pivot
    from textveil.release.summary import summarise
    from textveil.pii.staged import corpus_through_stage
    from textveil.pii.stage import EntityStage, stage_summary

    pivot = Pivot(l=l, part_size=part_size, seed=seed)  # bad l or part size: one line, before any reading
    stage = EntityStage(entity_stage)
    files = expand_inputs(inputs, input_format)
    single_target = len(files) == 1 and Path(inputs[0]).is_file()
    targets = plan_output_paths(files, out, single_target, "")
    check_key_path(key, list(targets.values()), out, inputs, force)
    documents = read_documents(files, text_field, encoding)
    with stderr.status("replacing names, places and contact details"):
        texts, replaced = corpus_through_stage(stage, [d.text for d in documents])
    with progress_bar() as progress:
        task = progress.add_task("encoding", total=len(documents))
        encoding_result = pivot.encode(texts, progress=lambda done: progress.advance(task, done))
    encoding_result.key.save(key, force=force)  # first: a release whose key was lost could never be mapped back
    _write_texts(documents, encoding_result.releases, targets, text_field, encoding)
    stderr.print(stage_summary(stage.options.public(), replaced), markup=False)
    summary = summarise(encoding_result.releases)
    tokens = summary.total("words_protected")
    code_words = len(encoding_result.key.decoder)
    stderr.print(f"encoded {len(documents):,} text(s), {tokens:,} tokens, as {code_words:,} code words -> {out}; "
                 f"key {encoding_result.key} -> {key} (0600: keep it apart from the release)")
    stderr.print(f"guarantee: l-privacy with l = {l}: a frequency attacker who knows every word's count guesses a code "
                 f"word right with probability at most {encoding_result.success:.3f} (1/l = {1 / l:.3f}); in "
                 f"expectation it decodes {encoding_result.tokens_recoverable:.1%} of the tokens")
    if summary.documents:
        stderr.print("released unprotected: " + "; ".join(summary.unprotected), style="bold yellow", markup=False)
    warn_copied_fields(documents, text_field)


@pivot_app.command("decode-text")
def decode_text(
    inputs: list[str] = typer.Argument(..., help="The release as 'pivot encode' wrote it.", show_default=False),
    key: Path = typer.Option(..., "--key", help="The release's key."),
    out: Path = typer.Option(..., "--out", help="Where the decoded corpus goes (a file, or a folder for several)."),
    text_field: str = typer.Option("text", help="Text field of JSONL/CSV releases."),
    encoding: str = typer.Option("utf-8", help="Encoding of the release."),
) -> None:
    """Map a release back to the original tokens (words in lower case and marks, joined by spaces)."""
    from textveil.corpus.outputs import plan_output_paths
    from textveil.corpus.reading import expand_inputs, read_documents
    from textveil.mechanisms.base import Release
    from textveil.mechanisms.pivot import PivotKey
    from textveil.privacy.guarantee import Guarantee

    owner_key = PivotKey.load(key)
    files = expand_inputs(inputs)
    targets = plan_output_paths(files, out, len(files) == 1 and Path(inputs[0]).is_file(), "")
    documents = read_documents(files, text_field, encoding)
    texts = _released_texts(documents)
    owner_key.check_release(texts, where=f"release '{' '.join(inputs)}'")
    none = Guarantee("pivot-decode", None, kind="none", statement="decoded with the owner's key")
    decoded = [Release(owner_key.decode_text(text), none) for text in texts]
    _write_texts(documents, decoded, targets, text_field, encoding)
    stderr.print(f"decoded {len(documents):,} text(s) -> {out}")


@pivot_app.command("decode-vectors")
def decode_vectors(
    vectors: Path = typer.Argument(..., help="Vectors trained on the release (word2vec text or binary format)."),
    key: Path = typer.Option(..., "--key", help="The release's key."),
    out: Optional[Path] = typer.Option(None, "--out", help="Where the word vectors go (word2vec text format; "
                                       "default: stdout)."),
) -> None:
    """Map vectors of code words back to words: each word's vector is the count-weighted mean of its code words'."""
    from textveil.atomic_files import atomic_write_text
    from textveil.embeddings.readers import read_embeddings
    from textveil.mechanisms.pivot import PivotKey

    owner_key = PivotKey.load(key)
    table = read_embeddings(vectors, words_only=False)
    trained = dict(zip(table.words, table.vectors))
    decoder = owner_key.decoder
    known = sum(1 for code in trained if code in decoder)
    if known * 2 < len(trained):
        raise InputError(f"only {known:,} of the {len(trained):,} vectors in '{vectors}' are code words of this key: "
                         "they were not trained on this key's release; give the release's own key")
    words = owner_key.decode_vectors(trained)
    if not words:
        raise InputError(f"'{vectors}' holds no vector of any code word of this key")
    dim = len(next(iter(words.values())))
    lines = [f"{len(words)} {dim}"] + [word + " " + " ".join(f"{x:.6g}" for x in vector) for word, vector in words.items()]
    text = "\n".join(lines) + "\n"
    if out is None:
        sys.stdout.write(text)
    else:
        if out.resolve() == vectors.resolve() or out.resolve() == key.resolve():
            raise InputError(f"--out '{out}' is an input; textveil never writes over its input: choose another path")
        atomic_write_text(out, text)
    stderr.print(f"decoded {len(words):,} word vectors from {known:,} code-word vectors" +
                 (f" -> {out}" if out is not None else ""))


def attack_frequency(
    release: list[str] = typer.Argument(..., help="The release (as 'pivot encode' wrote it).", show_default=False),
    reference: str = typer.Option(..., help="What the attacker knows of word frequencies: corpus (give --corpus) "
                                  "or wordfreq (public English frequencies)."),
    corpus: Optional[Path] = typer.Option(None, help="With --reference corpus: the corpus whose counts the attacker "
                                          "knows (the original, at worst)."),
    l: Optional[int] = typer.Option(None, "--l", help="Attack as one who knows the mechanism: PIVOT's l (the "
                                    "attacker runs its public plan on the counts it knows)."),
    part_size: Optional[int] = typer.Option(None, help="With --l: PIVOT's part size, if the release used one."),
    method: str = typer.Option("assignment", help="assignment (l_p-optimal, scipy), rank (frequency analysis) or "
                               "majority (each code word: the word owning most slots of its count; with --l, the "
                               "best a frequency attacker can do)."),
    context: bool = typer.Option(False, "--context", help="Context-merging attack: train word2vec on the release, "
                                 "merge code words whose contexts agree, then count."),
    key: Optional[Path] = typer.Option(None, "--key", help="Score the attack with the release's key (the owner "
                                       "testing their own release)."),
    seed: int = typer.Option(0, help="Seed of the context attack's word2vec."),
    fmt: str = typer.Option("text", "--format", help="text, or json (every guess, and the score with --key)."),
    text_field: str = typer.Option("text", help="Text field of JSONL/CSV releases and corpora."),
    encoding: str = typer.Option("utf-8", help="Encoding of the release and the corpus."),
) -> None:
    """Frequency analysis of a PIVOT release: guess every code word's word from its count."""
    import json

    from rich.console import Console
    from rich.table import Table

    from textveil.corpus.reading import expand_inputs, read_documents
    from textveil.evaluation.frequency_risk import frequency_guesses, reference_counts, score_guesses
    from textveil.mechanisms.pivot import PivotKey, normalised_tokens

    if fmt not in ("text", "json"):
        raise InputError(f"unknown --format '{fmt}'; use text or json")
    if reference == "corpus" and corpus is None:
        raise InputError("--reference corpus needs --corpus PATH: the corpus whose word counts the attacker knows")
    owner_key = PivotKey.load(key) if key is not None else None
    texts = _released_texts(read_documents(expand_inputs(release), text_field, encoding))
    if owner_key is not None:
        owner_key.check_release(texts, where=f"release '{' '.join(release)}'")
    tokens = [text.split() for text in texts]
    known = None
    if corpus is not None:
        known = [normalised_tokens(d.text) for d in read_documents(expand_inputs([str(corpus)]), text_field, encoding)]
    with stderr.status("attacking the release"):
        guesses = frequency_guesses(tokens, reference_counts(known, reference), l=l, part_size=part_size,
                                    method=method, context=context, seed=seed)
        score = None if owner_key is None else score_guesses([(guesses, owner_key, tokens)])
    attacker = ("context-merging" if context else "frequency") + (f", knowing the mechanism (l = {l})" if l else "")
    if fmt == "json":
        print(json.dumps({"attack": attacker, "reference": reference, "method": method, "guesses": guesses,
                          **({"score": score.to_dict()} if score else {})}, ensure_ascii=False))
        return
    view = Table(title=f"{attacker} attack ({method}, reference: {reference}) on {len(guesses):,} code words")
    view.add_column("measure")
    view.add_column("value", justify="right")
    if score is None:
        view.add_row("code words guessed", f"{len(guesses):,}")
        view.add_row("words guessed", f"{len(set(guesses.values())):,}")
    else:
        view.add_row("tokens recovered", f"{score.tokens_recovered:.1%}")
        view.add_row("word types recovered", f"{score.types_recovered:.1%}")
        if score.max_class_success is not None:
            view.add_row("best count class: success (95% upper bound)",
                         f"{score.max_class_success:.3f} ({score.max_class_upper:.3f})")
        view.add_row("l-privacy's bound 1/l", f"{1 / owner_key.l:.3f}")
    Console().print(view)
