"""``textveil mechanisms``, ``sanitize`` and ``calibrate``: list the mechanisms, release texts, and
read emp's epsilon as a rate of words kept. No privacy logic: they parse, call the library, write."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from textveil.cli.budget import plan_budget, report_budget
from textveil.cli.console import print_lines, stderr, warn_copied_fields
from textveil.cli.entity_options import with_entity_options
from textveil.cli.options import (
    corpus_words,
    Decoder,
    given_options,
    language_model_option,
    Layout,
    load_cli_embeddings,
    mechanism_of,
    OovPolicy,
    OutputFormat,
    require_parameters,
    THEN,
    then_steps,
)
from textveil.cli.progress import progress_bar, words_progress
from textveil.errors import InputError

def mechanisms(
    fmt: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text (a table) or json."),
) -> None:
    """List the mechanisms: their guarantee, description and parameters."""
    from textveil.mechanisms.registry import MECHANISMS
    from textveil.privacy.guarantee import KINDS

    if fmt is OutputFormat.json:
        print(json.dumps([{"name": e.name, "guarantee": e.guarantee, "description": e.description,
                           "parameters": [p.describe() for p in e.parameters]} for e in MECHANISMS.entries()],
                         indent=2))
        return
    view = Table(title="textveil mechanisms (textveil sanitize -m NAME; other parameters: --set NAME=VALUE)")
    view.add_column("name")
    view.add_column("guarantee")
    view.add_column("description")
    view.add_column("parameters")
    for entry in MECHANISMS.entries():
        parameters = ", ".join(
            f"{p.flag}" + (" (required)" if p.required else f"={p.default}") for p in entry.parameters)
        view.add_row(entry.name, KINDS[entry.guarantee], entry.description, parameters or "none")
    Console().print(view)


@with_entity_options
def sanitize(
    inputs: list[str] = typer.Argument(..., help="Files, folders, or '-' for standard input.", show_default=False),
    mechanism: Optional[str] = typer.Option(
        None, "--mechanism", "-m", help="Mechanism name (see 'textveil mechanisms'); default: emp, or --model's."),
    model: Optional[Path] = typer.Option(
        None, "--model", help="A trained mechanism's folder ('textveil train'); for paraphrase and restyle, a language "
        "model: a .gguf file or a Hugging Face causal LM folder (safetensors)."),
    epsilon: Optional[float] = typer.Option(None, "--epsilon", "-e", help="Privacy parameter per token (> 0), for mechanisms that have one."),
    seed: Optional[int] = typer.Option(None, help="Seed for a reproducible release (default: OS entropy)."),
    embeddings: str = typer.Option("default", help="'default' or a word2vec/GloVe/fastText vectors file."),
    vocab_size: Optional[int] = typer.Option(None, help="Keep only the K most frequent vocabulary words."),
    vocab_corpus: Optional[Path] = typer.Option(
        None, help="Restrict the vocabulary to words of this PUBLIC corpus (never the text being released)."
    ),
    fit_corpus: Optional[Path] = typer.Option(
        None, help="Fit a mechanism that learns (e.g. syntf's idf) on this corpus (never the text being released)."),
    decode: Optional[Decoder] = typer.Option(None, help="emp: nearest-word decoding: exact (default), screened (the same words) or approx."),
    keep_stop_words: Optional[bool] = typer.Option(None, "--keep-stop-words", help="emp: leave stop words unchanged (they are then unprotected)."),
    oov: Optional[OovPolicy] = typer.Option(None, help="emp: words outside the vocabulary: perturb (default), keep or drop."),
    layout: Optional[Layout] = typer.Option(
        None, help="public (default): punctuation and symbols privatised too, casing and spacing written by a public "
        "rule; keep: copy the input's casing, punctuation and spacing (NOT protected)."),
    bag_of_words: bool = typer.Option(False, help="emp: output a sorted bag of words (lower case, no stop words or punctuation)."),
    settings: Optional[list[str]] = typer.Option(None, "--set", help="Any other parameter of the mechanism, NAME=VALUE (repeatable)."),
    then: Optional[list[str]] = THEN,
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Output file or folder (default: stdout)."),
    fmt: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text, or json (per document: release, changes, guarantee)."),
    text_field: str = typer.Option("text", help="Text field of JSONL/CSV inputs."),
    input_format: str = typer.Option("auto", help="auto (by extension), text, jsonl or csv."),
    encoding: str = typer.Option("utf-8", help="Encoding of the inputs."),
    ledger: Optional[Path] = typer.Option(
        None, "--ledger", help="Spend from this budget ledger (SQLite): refused before releasing past a cap."),
    subject: Optional[str] = typer.Option(None, "--subject", help="With --ledger: every document's subject."),
    subject_field: Optional[str] = typer.Option(
        None, "--subject-field", help="With --ledger: the JSONL/CSV field naming each record's subject."),
    dataset: str = typer.Option("default", "--dataset", help="With --ledger: the dataset the subjects belong to."),
    entity_stage: object = None,
) -> None:
    """Release text with a mechanism; print or write the release and report the guarantee.

    Names, places, organisations and contact details are replaced first (--entities), then the
    mechanism releases the text."""
    from textveil.building import build_mechanism
    from textveil.corpus.reading import expand_inputs, read_documents
    from textveil.atomic_files import atomic_write_text
    from textveil.corpus.writing import render_releases
    from textveil.corpus.outputs import check_vocabulary_corpus, plan_output_paths
    from textveil.mechanisms.registry import MECHANISMS

    mechanism = mechanism_of(mechanism, model)
    command = MECHANISMS.load(mechanism).release_command
    if command:
        raise InputError(f"{mechanism} releases a whole corpus at once, not text by text; use '{command}'")
    options = given_options(
        mechanism, settings, epsilon=epsilon, decode=decode.value if decode else None, keep_stop_words=keep_stop_words,
        oov=oov.value if oov else None, layout=layout.value if layout else None, bag_of_words=bag_of_words)
    require_parameters(mechanism, options)
    model = language_model_option(mechanism, model, options)  # a language model is paraphrase's model parameter
    steps = then_steps(then)
    files = expand_inputs(inputs, input_format)
    single_target = len(files) == 1 and Path(inputs[0]).is_file() or inputs == ["-"]
    suffix = ".json" if fmt is OutputFormat.json else ""
    targets = plan_output_paths(files, output, single_target, suffix) if output is not None else None
    for option, corpus in (("--vocab-corpus", vocab_corpus), ("--fit-corpus", fit_corpus)):
        if corpus is not None:
            check_vocabulary_corpus(corpus, inputs, option=option)
    documents = read_documents(files, text_field, encoding)
    if not documents:
        raise InputError(f"no document to release in {' '.join(inputs)}: it holds no file (hidden ones are skipped); "
                         "give files or folders that hold text, or '-' for standard input")
    budget = plan_budget(ledger, subject, subject_field, dataset, documents)
    cls = MECHANISMS.load(mechanism)
    shared = {}
    if "embeddings" in cls.resources:
        table = load_cli_embeddings(embeddings, vocab_size)
        if vocab_corpus is not None:
            vocab_documents = read_documents(expand_inputs([str(vocab_corpus)]), text_field, encoding)
            table = table.restrict_to_words(corpus_words(vocab_documents))
        shared["embeddings"] = table
    built = build_mechanism(mechanism, options, shared.get("embeddings"), entities=entity_stage, model=model,
                            then=steps, seed=seed)
    if fit_corpus is not None:
        fit_documents = read_documents(expand_inputs([str(fit_corpus)]), text_field, encoding)
        with stderr.status(f"fitting {mechanism} on {len(fit_documents):,} texts of {fit_corpus}"):
            built.fit([d.text for d in fit_documents])
    with progress_bar() as progress:
        advance = words_progress(progress, "sanitising", [d.text for d in documents])
        if budget is None:
            releases = built.sanitize_many((d.text for d in documents), progress=advance)
        else:
            from textveil.release.budgeted import release_with_budget

            releases = release_with_budget(built, [d.text for d in documents], budget.subjects, budget.ledger,
                                           dataset=budget.dataset, progress=advance).releases
    rendered = render_releases(documents, releases, fmt.value, text_field)
    if targets is None:
        for text in rendered.values():
            sys.stdout.write(text)
            if text and not text.endswith("\n"):  # the public layout writes no line break of its own
                sys.stdout.write("\n")
        sys.stdout.flush()
    else:
        for source, text in rendered.items():
            atomic_write_text(targets[source], text, "utf-8" if fmt is OutputFormat.json else encoding)
    _report(releases, built, entity_stage, output)
    if budget is not None:
        report_budget(budget)
    warn_copied_fields(documents, text_field)
    if fmt is OutputFormat.json:
        stderr.print("note: --format json is a record for you, NOT a release: it holds each changed word as it "
                     "was in the input and where the entity stage found each entity; publish the text format",
                     style="bold yellow", markup=False)


def _report(releases, built, entity_stage, output: Optional[Path]) -> None:
    """What was released, what the guarantee is and what it does not cover: the summary of the
    releases (:mod:`textveil.release.summary`), as every face renders it; then the speeds."""
    from textveil.release.summary import summarise

    summary = summarise(releases, entity_stage=entity_stage.public())
    where = f" -> {output}" if output is not None else ""
    print_lines(summary.lines(f"released {summary.documents} document(s){where}"))
    if summary.kind != "none":
        stderr.print("use --format json for each document's statement", markup=False)
    if entity_stage.enabled:  # the stage runs before the mechanism: their speeds side by side
        speeds = built.speeds()
        if speeds and all(speeds.values()):
            stderr.print("speed: " + "; ".join(f"{name} {rate:,.0f} words/s" for name, rate in speeds.items()),
                         markup=False)


def calibrate(
    inputs: Optional[list[str]] = typer.Argument(None, help="Text to sample word tokens from (default: the vocabulary, Zipf-weighted)."),
    epsilons: str = typer.Option("5,10,15,20,25,30,40", help="Comma-separated epsilon grid."),
    embeddings: str = typer.Option("default", help="'default' or a vectors file."),
    vocab_size: Optional[int] = typer.Option(None, help="Keep only the K most frequent vocabulary words."),
    samples: int = typer.Option(2000, help="Word tokens sampled per epsilon."),
    word_types: int = typer.Option(100, help="Word types whose distinct substitutes are counted."),
    draws: int = typer.Option(20, help="Draws per word type for counting distinct substitutes."),
    decode: Decoder = typer.Option(Decoder.exact, help="exact, screened (the same words) or approx decoding."),
    seed: Optional[int] = typer.Option(None, help="Seed for reproducible figures."),
    plot: Optional[Path] = typer.Option(None, help="Also save the curves as this PNG file."),
    fmt: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text (a table) or json."),
    text_field: str = typer.Option("text", help="Text field of JSONL/CSV inputs."),
    encoding: str = typer.Option("utf-8", help="Encoding of the inputs."),
) -> None:
    """Print, per epsilon, the fraction of words left unchanged and the distinct substitutes per word."""
    from textveil.corpus.reading import expand_inputs, read_documents
    from textveil.evaluation.calibration import calibrate as run_calibration
    from textveil.evaluation.calibration import plot_calibration

    from textveil.mechanisms.registry import MECHANISMS

    grid = MECHANISMS.entry("emp").parameter("epsilon").parse_values(epsilons, "--epsilons")
    sampled_words = None
    if inputs:
        files = expand_inputs(list(inputs))
        if plot is not None and plot.resolve() in {f.path.resolve() for f in files if f.path}:
            raise InputError(f"--plot '{plot}' is an input file; choose another path")
        sampled_words = corpus_words(read_documents(files, text_field, encoding))
        if not sampled_words:
            raise InputError("the inputs hold no words to calibrate on; give text with words, or no input at all")
    table = load_cli_embeddings(embeddings, vocab_size)
    with progress_bar() as progress:
        task = progress.add_task("calibrating", total=len(grid))
        points = run_calibration(
            table, grid, sampled_words, samples=samples, word_types=word_types, draws=draws,
            decode=decode.value, seed=seed, progress=lambda n: progress.advance(task, n),
        )
    source = "your text" if sampled_words else "the vocabulary (Zipf-weighted)"
    if fmt is OutputFormat.json:
        print(json.dumps({"embeddings": table.name, "tokens_from": source, "points": [p.to_dict() for p in points]}, indent=2))
    else:
        view = Table(title=f"emp calibration: {table.name}, {len(table):,} words, tokens from {source}")
        view.add_column("epsilon", justify="right")
        view.add_column("word tokens unchanged", justify="right")
        view.add_column("in-vocabulary tokens unchanged", justify="right")
        view.add_column(f"distinct substitutes / word ({draws} draws)", justify="right")
        for p in points:
            view.add_row(f"{p.epsilon:g}", f"{p.unchanged_fraction:.3f} ± {2 * p.unchanged_stderr:.3f}",
                         f"{p.unchanged_in_vocabulary:.3f}", f"{p.distinct_substitutes:.2f}")
        Console().print(view)
        print(f"{points[0].out_of_vocabulary_fraction:.1%} of the sampled word tokens are outside the vocabulary: "
              "they are perturbed too, and can never come back unchanged.")
    if plot is not None:
        plot_calibration(points, str(plot), title=f"emp calibration ({table.name})")
        stderr.print(f"plot written to {plot}")


def register_sanitize_commands(app: typer.Typer) -> None:
    """Add ``mechanisms``, ``sanitize`` and ``calibrate`` to the ``textveil`` app."""
    app.command()(mechanisms)
    app.command()(sanitize)
    app.command()(calibrate)
