"""The ``textveil`` command line. It holds no privacy logic: it parses, calls the library, writes.

Releases go to stdout (or ``--output``); reports and progress go to stderr. Bad input gets one
line on stderr and exit status 2.
"""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from textveil.attacks.registry import DEFAULT_ATTACKS
from textveil.cli_audit import register_audit_commands
from textveil.cli_budget import plan_budget, register_budget_commands, report_budget
from textveil.cli_models import register_model_commands
from textveil.cli_pivot import attack_frequency, pivot_app
from textveil.cli_support import (
    FIRST_LABELS,
    TEXTS_PER_LABEL,
    with_entity_options,
    Layout,
    OutputFormat,
    given_options,
    language_model_option,
    load_cli_embeddings,
    mechanism_of,
    progress_bar,
    require_parameters,
    stderr,
    warn_copied_fields,
)
from textveil.cli_synthesis import register_synthesis_commands
from textveil.errors import InputError, InvalidParameterError, TextveilError

app = typer.Typer(
    name="textveil",
    help="Release text with a formal privacy guarantee against authorship re-identification.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
embeddings_app = typer.Typer(help="Build and inspect word embeddings.", no_args_is_help=True)
app.add_typer(embeddings_app, name="embeddings")


class Decoder(str, Enum):
    exact = "exact"
    screened = "screened"
    approx = "approx"


class OovPolicy(str, Enum):
    perturb = "perturb"
    keep = "keep"
    drop = "drop"


def _corpus_words(documents) -> list[str]:
    from textveil.text.tokenize import tokenize

    return [t.text for d in documents for t in tokenize(d.text) if t.is_word]


@app.command()
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


@app.command()
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
    from textveil.corpus.reading import expand_inputs, read_documents
    from textveil.corpus.writing import atomic_write_text, render_releases
    from textveil.corpus.outputs import check_vocabulary_corpus, plan_output_paths
    from textveil.evaluation.releasing import build_mechanism
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
    files = expand_inputs(inputs, input_format)
    single_target = len(files) == 1 and Path(inputs[0]).is_file() or inputs == ["-"]
    suffix = ".json" if fmt is OutputFormat.json else ""
    targets = plan_output_paths(files, output, single_target, suffix) if output is not None else None
    for option, corpus in (("--vocab-corpus", vocab_corpus), ("--fit-corpus", fit_corpus)):
        if corpus is not None:
            check_vocabulary_corpus(corpus, inputs, option=option)
    documents = read_documents(files, text_field, encoding)
    budget = plan_budget(ledger, subject, subject_field, dataset, documents)
    cls = MECHANISMS.load(mechanism)
    shared = {}
    if "embeddings" in getattr(cls, "resources", ()):
        table = load_cli_embeddings(embeddings, vocab_size)
        if vocab_corpus is not None:
            vocab_documents = read_documents(expand_inputs([str(vocab_corpus)]), text_field, encoding)
            table = table.restrict_to_words(_corpus_words(vocab_documents))
        shared["embeddings"] = table
    engine = build_mechanism(mechanism, options, shared.get("embeddings"), entities=entity_stage, model=model,
                             seed=seed)
    if fit_corpus is not None:
        fit_documents = read_documents(expand_inputs([str(fit_corpus)]), text_field, encoding)
        with stderr.status(f"fitting {mechanism} on {len(fit_documents):,} texts of {fit_corpus}"):
            engine.fit([d.text for d in fit_documents])
    with progress_bar() as progress:
        task = progress.add_task("sanitising", total=len(documents))
        advance = lambda done: progress.advance(task, done)  # noqa: E731
        if budget is None:
            releases = engine.sanitize_many((d.text for d in documents), progress=advance)
        else:
            from textveil.release.budgeted import release_with_budget

            releases = release_with_budget(engine, [d.text for d in documents], budget.subjects, budget.ledger,
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
    _report(releases, engine, output)
    if budget is not None:
        report_budget(budget)
    warn_copied_fields(documents, text_field)
    if fmt is OutputFormat.json:
        stderr.print("note: --format json is a record for you, NOT a release: it holds each changed word as it "
                     "was in the input and where the entity stage found each entity; publish the text format",
                     style="bold yellow", markup=False)


def _report(releases, engine, output: Optional[Path]) -> None:
    """What was released, what the guarantee is, and what it does not cover: read from the
    releases' own Guarantees, so every mechanism is reported the same way."""
    from textveil.privacy.guarantee import KEEP_LAYOUT_WARNING, KINDS
    from textveil.release.shards import unprotected_in_general

    where = f" -> {output}" if output is not None else ""
    if not releases:
        stderr.print(f"released 0 documents{where}")
        return
    _report_entity_stage(releases, engine)
    first = releases[0].guarantee
    protected = sum(r.guarantee.words_protected for r in releases)
    unchanged = sum(r.words_unchanged for r in releases)
    passed = sum(r.guarantee.tokens_passed_through for r in releases)
    dropped = sum(r.guarantee.tokens_dropped for r in releases)
    policies = []
    if getattr(engine, "keep_stop_words", False):
        policies.append("stop words kept")
    if getattr(engine, "oov", "perturb") != "perturb":
        policies.append(f"out-of-vocabulary words: {engine.oov}")
    epsilon = "" if first.epsilon is None else f" with epsilon={first.epsilon:g}"
    if first.kind == "none":  # nothing went through a privacy mechanism: no units to count
        stderr.print(f"released {len(releases)} document(s){where} with {engine.name}", markup=False)
        stderr.print(f"guarantee: NONE: {engine.name} gives no formal privacy guarantee; its risk is measured (textveil "
                     "evaluate), not bounded", style="bold yellow", markup=False)
        stderr.print("released unprotected: " + "; ".join(first.unprotected), markup=False)
        return
    if hasattr(engine, "max_new_tokens"):  # a rewriter: its tokens are drawn anew, none stands for an input token
        stderr.print(f"released {len(releases)} document(s){where}: each rewritten by {engine.name}, every output "
                     f"token drawn{epsilon} (at most {engine.max_new_tokens} per document)", markup=False)
    else:
        stderr.print(
            f"released {len(releases)} document(s){where}: {protected:,} {first.unit}s perturbed by {engine.name}"
            f"{epsilon} ({unchanged:,} released as themselves), {passed:,} passed through unchanged by policy, "
            f"{dropped:,} dropped" + (f" [{'; '.join(policies)}]" if policies else ""))
    metric = f", metric: {first.metric}" if first.metric else ""
    per_unit = "" if first.epsilon is None else f", epsilon={first.epsilon:g} per {first.unit}"
    stderr.print(f"guarantee: {KINDS[first.kind]}{per_unit}, composing as {first.formula} over a document{metric}"
                 f"{_document_epsilons(releases)}; use --format json for each document's statement")
    unprotected = "; ".join(unprotected_in_general(first)[0])
    stderr.print(f"released unprotected: {unprotected}" + ("; words passed through by policy" if passed else ""),
                 markup=False)
    _report_exceptions(releases)
    if first.assumptions:
        stderr.print("assumes: " + "; ".join(first.assumptions))
    if first.layout == "keep":
        stderr.print(f"{KEEP_LAYOUT_WARNING} (drop --layout keep to privatise them)", style="bold yellow", markup=False)


def _report_entity_stage(releases, engine) -> None:
    """What the entity stage replaced, and its speed beside the mechanism's."""
    from textveil.pii.stage import EntityOptions, entity_counts, stage_summary

    options = getattr(engine, "entity_options", EntityOptions(operator="off"))
    stderr.print(stage_summary(options.public(), entity_counts(releases)),
                 style=None if options.enabled else "bold yellow", markup=False)
    speeds = engine.speeds() if hasattr(engine, "speeds") else {}
    if all(speeds.values()) and speeds:
        stderr.print("speed: " + "; ".join(f"{name} {rate:,.0f} words/s" for name, rate in speeds.items()),
                     markup=False)


def _document_epsilons(releases) -> str:
    """For epsilon-DP, the epsilon of a whole document (epsilon * N) over the releases: what a
    budget ledger counts for a mechanism that spends per document (paraphrase: epsilon * L)."""
    values = sorted({r.guarantee.document_epsilon for r in releases
                     if r.guarantee.kind == "dp" and r.guarantee.document_epsilon and r.guarantee.words_protected})
    if not values:
        return ""
    shown = f"{values[0]:g}" if len(values) == 1 else f"{values[0]:g} to {values[-1]:g}"
    return f" (epsilon={shown} per document)"


def _report_exceptions(releases) -> None:
    """What some documents' guarantees name unprotected beyond their layout's (e.g. a text the
    model was trained on), with how many documents each applies to."""
    from collections import Counter

    from textveil.release.shards import unprotected_in_general

    counted: Counter[str] = Counter()
    for release in releases:
        counted.update(unprotected_in_general(release.guarantee)[1])
    for item, count in counted.items():
        stderr.print(f"WARNING: {count} document(s): {item}", style="bold yellow", markup=False)


@app.command()
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
    corpus_words = None
    if inputs:
        files = expand_inputs(list(inputs))
        if plot is not None and plot.resolve() in {f.path.resolve() for f in files if f.path}:
            raise InputError(f"--plot '{plot}' is an input file; choose another path")
        corpus_words = _corpus_words(read_documents(files, text_field, encoding))
        if not corpus_words:
            raise InputError("the inputs hold no words to calibrate on; give text with words, or no input at all")
    table = load_cli_embeddings(embeddings, vocab_size)
    with progress_bar() as progress:
        task = progress.add_task("calibrating", total=len(grid))
        points = run_calibration(
            table, grid, corpus_words, samples=samples, word_types=word_types, draws=draws,
            decode=decode.value, seed=seed, progress=lambda n: progress.advance(task, n),
        )
    source = "your text" if corpus_words else "the vocabulary (Zipf-weighted)"
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


attack_app = typer.Typer(help="Attack texts or releases: authorship (the options below), or 'frequency' on a PIVOT "
                         "release.")
app.add_typer(attack_app, name="attack")


@attack_app.callback(invoke_without_command=True)
@with_entity_options
def attack(
    context: typer.Context,
    known: Optional[Path] = typer.Option(None, help="Known texts: a folder per author, or JSONL/CSV."),
    unknown: Optional[Path] = typer.Option(None, help="Unknown texts to attribute (same layouts)."),
    attack_name: str = typer.Option("char3-svm", "--attack", "-a", help="Attack name (see --list)."),
    top_k: int = typer.Option(10, help="Report top-1..k accuracy."),
    collapse_per_label: bool = typer.Option(False, help="Judge each unknown author's texts together (paper 004)."),
    fmt: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text or json."),
    text_field: str = typer.Option("text", help="Text field of JSONL/CSV corpora."),
    label_field: str = typer.Option("label", help="Label (author) field of JSONL/CSV corpora."),
    encoding: str = typer.Option("utf-8", help="Encoding of the corpora."),
    seed: Optional[int] = typer.Option(None, help="Seed for attacks that draw at random."),
    list_attacks: bool = typer.Option(False, "--list", help="List the attacks and exit."),
    release_known_with: Optional[str] = typer.Option(
        None, help="Release the known texts with this mechanism (e.g. emp) before fitting: red-team a release "
        "made elsewhere with an attacker who knows the mechanism. Give the release's own parameters."),
    epsilon: Optional[float] = typer.Option(None, "--epsilon", "-e", help="With --release-known-with: its epsilon."),
    release_seed: Optional[int] = typer.Option(
        None, help="With --release-known-with: seed of the known texts' release (reproducible, cached; "
        "use another seed than the unknown texts' release)."),
    layout: Optional[str] = typer.Option(None, help="With --release-known-with: layout, public or keep."),
    bag_of_words: bool = typer.Option(False, help="With --release-known-with: release sorted bags of words."),
    embeddings: str = typer.Option("default", help="With --release-known-with: 'default' or a vectors file."),
    vocab_size: Optional[int] = typer.Option(None, help="With --release-known-with: keep the K most frequent words."),
    decode: Optional[Decoder] = typer.Option(None, help="With --release-known-with: exact, screened or approx decoding."),
    settings: Optional[list[str]] = typer.Option(None, "--set", help="With --release-known-with: any other parameter, NAME=VALUE."),
    entity_stage: object = None,
) -> None:
    """Attribute unknown texts to the authors of known texts; print top-1..k accuracy and chance.

    With --release-known-with, the known texts are first released by that mechanism, so that the
    attack is trained on text like the (released) unknown texts it attributes. 'textveil attack
    frequency RELEASE' runs frequency analysis on a PIVOT release instead."""
    if context.invoked_subcommand is not None:
        return
    from textveil.attacks.base import evaluate_attack
    from textveil.attacks.registry import ATTACKS, make_attack
    from textveil.corpus.labelled import read_labelled_corpus
    from textveil.evaluation.releasing import release_parameters

    if list_attacks:
        for entry in ATTACKS.entries():
            print(f"{entry.name:22s} {entry.description}")
        return
    if known is None or unknown is None:
        raise InputError("attack needs --known PATH and --unknown PATH (or --list)")
    if top_k < 1:
        raise InvalidParameterError(f"--top-k must be at least 1, got {top_k}")
    release_only = {"--epsilon": epsilon is not None, "--release-seed": release_seed is not None,
                    "--layout": layout is not None, "--bag-of-words": bag_of_words,
                    "--embeddings": embeddings != "default", "--vocab-size": vocab_size is not None,
                    "--decode": decode is not None, "--set": bool(settings)}
    if release_known_with is None and any(release_only.values()):
        given = ", ".join(option for option, used in release_only.items() if used)
        raise InputError(f"{given} only apply with --release-known-with MECHANISM, which releases the known texts "
                         "first")
    parameters = None if release_known_with is None else release_parameters(
        release_known_with, epsilon, **given_options(
            release_known_with, settings, layout=layout, bag_of_words=bag_of_words,
            decode=decode.value if decode else None))
    model = make_attack(attack_name, shared={"random_state": seed})
    known_corpus = read_labelled_corpus(known, text_field, label_field, encoding).validate(what="known corpus")
    unknown_corpus = read_labelled_corpus(unknown, text_field, label_field, encoding).validate(
        min_labels=1, what="unknown corpus")
    known_texts, known_release = known_corpus.texts, None
    if release_known_with is not None and parameters is not None:  # (both or neither: for the type checker)
        from textveil.embeddings.default_model import cache_root
        from textveil.evaluation.release_cache import ReleaseCache
        from textveil.evaluation.releasing import build_mechanism, release_corpus

        table = load_cli_embeddings(embeddings, vocab_size)
        cache = ReleaseCache(cache_root() / "releases")  # only a seeded release is stored
        engine = build_mechanism(release_known_with, parameters, table, entities=entity_stage, seed=release_seed)
        with progress_bar() as progress:
            task = progress.add_task(f"releasing the known texts with {release_known_with}", total=len(known_corpus))
            known_texts = release_corpus(engine, known_corpus, cache,
                                         progress=lambda done: progress.advance(task, done)).texts
        known_release = {"mechanism": release_known_with, "parameters": engine.public_params(), "seed": release_seed,
                         "embeddings": table.name, "cached": cache.hits > 0}
        stderr.print(f"known texts released with {release_known_with} "
                      + ", ".join(f"{k}={v}" for k, v in engine.public_params().items() if k != "seed")
                      + f", seed {release_seed}"
                      + (" (read from the release cache)" if cache.hits else ""))
    with stderr.status(f"fitting {attack_name} on {len(known_corpus):,} known texts and ranking {len(unknown_corpus):,}"):
        result = evaluate_attack(
            model, known_texts, known_corpus.labels, unknown_corpus.texts, unknown_corpus.labels,
            top_k=top_k, collapse_per_label=collapse_per_label,
        )
    training = "clean" if known_release is None else "release"
    if fmt is OutputFormat.json:
        print(json.dumps({**result.to_dict(), "training": training,
                          **({"known_release": known_release} if known_release else {})}))
        return
    trained = "" if known_release is None else f" trained on known texts released by {release_known_with}"
    view = Table(title=f"{attack_name}{trained}: {result.n_unknown:,} unknown, {result.n_candidates} candidate authors")
    view.add_column("k", justify="right")
    view.add_column("top-k accuracy", justify="right")
    view.add_column("chance", justify="right")
    for k, (accuracy, chance) in enumerate(zip(result.topk, result.chance), start=1):
        view.add_row(str(k), f"{accuracy:.3f}", f"{chance:.3f}")
    Console().print(view)


@app.command()
@with_entity_options
def evaluate(
    risk_corpus: Path = typer.Option(..., help="Labelled corpus for authorship risk (a train/test folder pair, a folder per author, or JSONL/CSV)."),
    out: Path = typer.Option(..., help="Folder for results.json, report.md, report.html and figures."),
    mechanism: Optional[str] = typer.Option(
        None, "--mechanism", "-m", help="Mechanism name (see 'textveil mechanisms'); default: emp, or --model's."),
    model: Optional[Path] = typer.Option(
        None, "--model", help="A trained mechanism's folder ('textveil train'): released as trained, not fitted again; "
        "for paraphrase and restyle, a language model (a .gguf file or a Hugging Face causal LM folder)."),
    attacker_model: Optional[Path] = typer.Option(
        None, help="The release-aware attacker's own trained model (same mechanism and settings, another seed, "
        "trained on the known texts); default: the release's own model, as if it were public."),
    grid: Optional[str] = typer.Option(
        None, help="Comma-separated values of the mechanism's swept parameter (epsilon); default: the mechanism's "
        "own grid (emp 10,15,20,25,30); none for a mechanism without one (random)."),
    risk_unknown: Optional[Path] = typer.Option(None, help="Unknown risk texts, when --risk-corpus holds only the known ones."),
    utility_corpus: Optional[Path] = typer.Option(None, help="Labelled corpus for utility (topics); split 80/20."),
    attacks: str = typer.Option(",".join(DEFAULT_ATTACKS), help="Comma-separated attacks (see 'textveil attack --list')."),
    utility: Optional[str] = typer.Option(None, help="Comma-separated utility tasks (default: all that apply but fluency, which loads a language model)."),
    seed: Optional[int] = typer.Option(None, help="Seed: reproducible releases, cached between runs."),
    repeats: int = typer.Option(1, help="Releases per parameter value; results are their mean ± standard deviation."),
    top_k: int = typer.Option(10, help="Top-k for identification curves."),
    unknown_per_label: Optional[int] = typer.Option(None, help="Sample this many unknown texts per author."),
    known_per_label: Optional[int] = typer.Option(None, help="Per author, the first K texts are known (single corpus)."),
    first_labels: Optional[int] = FIRST_LABELS,
    texts_per_label: Optional[int] = TEXTS_PER_LABEL,
    collapse_per_label: bool = typer.Option(False, help="Judge each unknown author's texts together (paper 004)."),
    embeddings: str = typer.Option("default", help="'default' or a vectors file."),
    vocab_size: Optional[int] = typer.Option(None, help="Keep only the K most frequent vocabulary words."),
    decode: Optional[Decoder] = typer.Option(None, help="emp: exact (default), screened (the same words) or approx decoding."),
    text_field: str = typer.Option("text", help="Text field of JSONL/CSV corpora."),
    label_field: str = typer.Option("label", help="Label field of JSONL/CSV corpora."),
    utility_label_field: Optional[str] = typer.Option(None, help="Label field of the utility corpus (default: --label-field)."),
    attribute_field: Optional[str] = typer.Option(
        None, help="A field of the risk corpus's records holding each author's attribute (e.g. industry): the "
        "attribute-f1 utility task (paper 004)."),
    encoding: str = typer.Option("utf-8", help="Encoding of the risk corpus."),
    utility_encoding: Optional[str] = typer.Option(None, help="Encoding of the utility corpus (default: --encoding)."),
    no_cache: bool = typer.Option(False, help="Do not reuse or store cached releases."),
    trainings: str = typer.Option(
        "clean,release", help="What attacks are fitted on: clean known texts, known texts released by the same "
        "mechanism (the attacker knows it), or both; the risk is the best attack over them."),
    layout: Optional[str] = typer.Option(
        None, help="Release layout: public (default: punctuation privatised too) or keep (the input's casing, "
        "punctuation and spacing copied, NOT protected)."),
    bag_of_words: bool = typer.Option(False, help="emp: release sorted bags of words (paper 001)."),
    settings: Optional[list[str]] = typer.Option(None, "--set", help="Any other parameter of the mechanism, NAME=VALUE (repeatable)."),
    entity_stage: object = None,
) -> None:
    """Sweep a mechanism over a parameter grid; attack and measure each release; write a report."""
    from textveil.embeddings.default_model import cache_root
    from textveil.evaluation import ExperimentPlan, load_evaluation_corpora, run_experiment, validate, write_report
    from textveil.evaluation.trainings import parse_trainings
    from textveil.evaluation.utility_tasks import default_utility_tasks
    from textveil.mechanisms.registry import MECHANISMS

    mechanism = mechanism_of(mechanism, model)
    entry = MECHANISMS.entry(mechanism)
    swept = entry.swept
    if grid is not None and swept is None:
        raise InvalidParameterError(f"mechanism '{mechanism}' has no parameter to sweep; leave out --grid")
    values = [] if swept is None else (
        swept.parse_values(grid, "--grid") if grid is not None else list(entry.grid))
    options = given_options(mechanism, settings, layout=layout, bag_of_words=bag_of_words,
                             decode=decode.value if decode else None)
    require_parameters(mechanism, options, besides=(swept.name,) if swept else ())
    model = language_model_option(mechanism, model, options)
    if vocab_size:
        options["vocab_size"] = vocab_size
    plan = ExperimentPlan(
        mechanism=mechanism, grid=values, attacks=[a.strip() for a in attacks.split(",") if a.strip()],
        utility=[u.strip() for u in utility.split(",") if u.strip()] if utility else default_utility_tasks(),
        seed=seed, repeats=repeats, top_k=top_k, collapse_per_label=collapse_per_label, embeddings=embeddings,
        mechanism_options=options, trainings=parse_trainings(trainings), model=None if model is None else str(model),
        attacker_model=None if attacker_model is None else str(attacker_model),
        entities=entity_stage,
    )
    corpora = load_evaluation_corpora(
        risk_corpus, risk_unknown=risk_unknown, utility_corpus=utility_corpus, text_field=text_field,
        label_field=label_field, utility_label_field=utility_label_field, known_per_label=known_per_label,
        unknown_per_label=unknown_per_label, encoding=encoding, utility_encoding=utility_encoding,
        seed=0 if seed is None else seed, attribute_field=attribute_field,
        labels_limit=first_labels, texts_per_label=texts_per_label,
    )
    validate(plan, corpora)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out '{out}' is a file; give a folder for the report")
    with progress_bar() as progress:
        task = progress.add_task("evaluating", total=len(values) + 2)
        results = run_experiment(
            corpora, plan, cache_folder=None if no_cache else cache_root() / "releases",
            log=lambda message: progress.console.print(f"[dim]{message}[/dim]"),
            progress=lambda stage, done, total: progress.update(task, completed=done, total=total, description=stage),
        )
    written = write_report(results, out, title=f"textveil evaluation: {mechanism} on {corpora.risk_known.name}")
    stderr.print(f"report written to {written['report.html']} (and {', '.join(sorted(p.name for p in written.values() if p.suffix != '.html'))})")


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


register_model_commands(app)  # train and split: the commands of mechanisms that learn
register_synthesis_commands(app)  # synthesize: the synthetic corpus of a trained synth
register_audit_commands(app)  # audit: the mechanisms' privacy claims checked from the outside
from textveil.cli_service import register_service_commands; register_service_commands(app)  # serve: the local service and its web page
register_budget_commands(app)  # budget: the privacy budget ledger's caps, totals and export
from textveil.cli_release import register_release_commands; register_release_commands(app)  # release: a corpus of any size, sharded, resumable, on Dask
from textveil.cli_compare import register_compare_commands; register_compare_commands(app)  # compare: mechanisms on one split, one frontier
app.add_typer(pivot_app, name="pivot")
attack_app.command("frequency")(attack_frequency)


def main() -> None:
    """Entry point: run the app; a TextveilError becomes one line on stderr and exit status 2."""
    try:
        app(prog_name="textveil")
    except TextveilError as error:
        Console(stderr=True, highlight=False).print(f"textveil: error: {error}", markup=False, soft_wrap=True)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    except BrokenPipeError:  # e.g. piped into `head`
        sys.stderr.close()
        raise SystemExit(0) from None


if __name__ == "__main__":  # pragma: no cover
    main()
