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
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from textveil.errors import InputError, InvalidParameterError, TextveilError
from textveil.attacks.registry import DEFAULT_ATTACKS

app = typer.Typer(
    name="textveil",
    help="Release text with a formal privacy guarantee against authorship re-identification.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
embeddings_app = typer.Typer(help="Build and inspect word embeddings.", no_args_is_help=True)
app.add_typer(embeddings_app, name="embeddings")
stderr = Console(stderr=True, soft_wrap=True)


class OutputFormat(str, Enum):
    text = "text"
    json = "json"


class Decoder(str, Enum):
    exact = "exact"
    approx = "approx"


class Layout(str, Enum):
    public = "public"
    keep = "keep"


class OovPolicy(str, Enum):
    perturb = "perturb"
    keep = "keep"
    drop = "drop"


def _progress() -> Progress:
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=stderr,
        transient=True,
    )


def _load_embeddings(spec: str, vocab_size: Optional[int]):
    from textveil.embeddings import load_embeddings

    return load_embeddings(spec, vocab_size, log=lambda message: stderr.print(f"[dim]{message}[/dim]"))


def _parse_epsilons(grid: str, option: str = "--epsilons") -> list[float]:
    from textveil.privacy.parameters import check_epsilon

    values = [item.strip() for item in grid.split(",") if item.strip()]
    if not values:
        raise InvalidParameterError(f"{option} '{grid}' holds no value; give a comma-separated list such as 10,20,30")
    return [check_epsilon(v, name=f"epsilon '{v}' in {option}") for v in values]


def _corpus_words(documents) -> list[str]:
    from textveil.text.tokenize import tokenize

    return [t.text for d in documents for t in tokenize(d.text) if t.is_word]


def _check_outputs(output: Path, files, single_target: bool, fmt: OutputFormat) -> dict:
    """Where each input file's release goes; refuses any destination that is an input."""
    inputs = {f.path.resolve() for f in files if f.path is not None}
    if single_target:
        targets = {files[0]: output}
    else:
        if output.exists() and not output.is_dir():
            raise InputError(f"--output '{output}' is a file, but several inputs need a folder; give a folder path")
        suffix = ".json" if fmt is OutputFormat.json else ""
        targets = {f: output / (str(f.relative) + suffix) for f in files}
    for source, target in targets.items():
        if target.resolve() in inputs:
            raise InputError(
                f"--output '{target}' is an input file; textveil never writes over its input: choose another path"
            )
    return targets


@app.command()
def sanitize(
    inputs: list[str] = typer.Argument(..., help="Files, folders, or '-' for standard input.", show_default=False),
    mechanism: str = typer.Option("emp", "--mechanism", "-m", help="Mechanism name."),
    epsilon: float = typer.Option(..., "--epsilon", "-e", help="Privacy parameter per word (> 0)."),
    seed: Optional[int] = typer.Option(None, help="Seed for a reproducible release (default: OS entropy)."),
    embeddings: str = typer.Option("default", help="'default' or a word2vec/GloVe/fastText vectors file."),
    vocab_size: Optional[int] = typer.Option(None, help="Keep only the K most frequent vocabulary words."),
    vocab_corpus: Optional[Path] = typer.Option(
        None, help="Restrict the vocabulary to words of this PUBLIC corpus (never the text being released)."
    ),
    decode: Decoder = typer.Option(Decoder.exact, help="Nearest-word decoding: exact or approx (k-means inverted lists)."),
    keep_stop_words: bool = typer.Option(False, help="Leave stop words unchanged (they are then unprotected)."),
    oov: OovPolicy = typer.Option(OovPolicy.perturb, help="Words outside the vocabulary: perturb, keep or drop."),
    layout: Layout = typer.Option(
        Layout.public, help="public: punctuation and symbols privatised too, casing and spacing written by a public rule; "
        "keep: copy the input's casing, punctuation and spacing (NOT protected)."),
    bag_of_words: bool = typer.Option(False, help="Output a sorted bag of words (lower case, no stop words or punctuation)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Output file or folder (default: stdout)."),
    fmt: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text, or json (per document: release, changes, guarantee)."),
    text_field: str = typer.Option("text", help="Text field of JSONL/CSV inputs."),
    input_format: str = typer.Option("auto", help="auto (by extension), text, jsonl or csv."),
    encoding: str = typer.Option("utf-8", help="Encoding of the inputs."),
) -> None:
    """Release text with a mechanism; print or write the release and report the guarantee."""
    from textveil.corpus.reading import expand_inputs, read_documents
    from textveil.corpus.writing import atomic_write_text, render_releases
    from textveil.mechanisms.registry import mechanism_class
    from textveil.privacy.parameters import check_epsilon

    mechanism_class(mechanism)  # unknown names fail before any work
    check_epsilon(epsilon, "--epsilon")
    files = expand_inputs(inputs, input_format)
    single_target = len(files) == 1 and Path(inputs[0]).is_file() or inputs == ["-"]
    targets = _check_outputs(output, files, single_target, fmt) if output is not None else None
    if vocab_corpus is not None and vocab_corpus.resolve() in {Path(i).resolve() for i in inputs if i != "-"}:
        raise InputError(
            f"--vocab-corpus '{vocab_corpus}' is one of the inputs; a vocabulary drawn from the released text "
            "is not covered by the guarantee: use a public or training corpus"
        )
    documents = read_documents(files, text_field, encoding)
    table = _load_embeddings(embeddings, vocab_size)
    if vocab_corpus is not None:
        vocab_documents = read_documents(expand_inputs([str(vocab_corpus)]), text_field, encoding)
        table = table.restrict_to_words(_corpus_words(vocab_documents))
    from textveil.mechanisms.registry import make_mechanism

    engine = make_mechanism(
        mechanism,
        epsilon=epsilon,
        embeddings=table,
        decode=decode.value,
        keep_stop_words=keep_stop_words,
        oov=oov.value,
        output="bag" if bag_of_words else "text",
        layout=layout.value,
        seed=seed,
    )
    with _progress() as progress:
        task = progress.add_task("sanitising", total=len(documents))
        releases = engine.sanitize_many(
            (d.text for d in documents), progress=lambda done: progress.advance(task, done)
        )
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


def _report(releases, engine, output: Optional[Path]) -> None:
    from textveil.privacy.guarantee import KEEP_LAYOUT_WARNING, RELEASED_UNPROTECTED

    protected = sum(r.guarantee.words_protected for r in releases)
    unchanged = sum(r.words_unchanged for r in releases)
    passed = sum(r.guarantee.tokens_passed_through for r in releases)
    dropped = sum(r.guarantee.tokens_dropped for r in releases)
    policies = []
    if engine.keep_stop_words:
        policies.append("stop words kept")
    if engine.oov != "perturb":
        policies.append(f"out-of-vocabulary words: {engine.oov}")
    where = f" -> {output}" if output is not None else ""
    layout = releases[0].guarantee.layout if releases else engine.release_layout
    unit = "token" if layout == "public" else "word"
    stderr.print(
        f"released {len(releases)} document(s){where}: {protected:,} {unit}s perturbed with epsilon={engine.epsilon:g} "
        f"({unchanged:,} decoded back to themselves), {passed:,} passed through unchanged by policy, {dropped:,} dropped"
        + (f" [{'; '.join(policies)}]" if policies else "")
    )
    composition = "epsilon*N*E per bag of words (sorted)" if layout == "bag" else "epsilon * sum of per-position distances"
    stderr.print(
        f"guarantee: {composition}, epsilon={engine.epsilon:g} per {unit}, metric: {engine.metric}; "
        "use --format json for each document's statement"
    )
    unprotected = "; ".join(RELEASED_UNPROTECTED[layout]) + ("; words passed through by policy" if passed else "")
    stderr.print(f"released unprotected: {unprotected}")
    if layout == "keep":
        stderr.print(f"{KEEP_LAYOUT_WARNING} (drop --layout keep to privatise them)", style="bold yellow", markup=False)


@app.command()
def calibrate(
    inputs: Optional[list[str]] = typer.Argument(None, help="Text to sample word tokens from (default: the vocabulary, Zipf-weighted)."),
    epsilons: str = typer.Option("5,10,15,20,25,30,40", help="Comma-separated epsilon grid."),
    embeddings: str = typer.Option("default", help="'default' or a vectors file."),
    vocab_size: Optional[int] = typer.Option(None, help="Keep only the K most frequent vocabulary words."),
    samples: int = typer.Option(2000, help="Word tokens sampled per epsilon."),
    word_types: int = typer.Option(100, help="Word types whose distinct substitutes are counted."),
    draws: int = typer.Option(20, help="Draws per word type for counting distinct substitutes."),
    decode: Decoder = typer.Option(Decoder.exact, help="exact or approx decoding."),
    seed: Optional[int] = typer.Option(None, help="Seed for reproducible figures."),
    plot: Optional[Path] = typer.Option(None, help="Also save the curves as this PNG file."),
    fmt: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text (a table) or json."),
    text_field: str = typer.Option("text", help="Text field of JSONL/CSV inputs."),
    encoding: str = typer.Option("utf-8", help="Encoding of the inputs."),
) -> None:
    """Print, per epsilon, the fraction of words left unchanged and the distinct substitutes per word."""
    from textveil.corpus.reading import expand_inputs, read_documents
    from textveil.privacy.calibration import calibrate as run_calibration
    from textveil.privacy.calibration import plot_calibration

    grid = _parse_epsilons(epsilons)
    corpus_words = None
    if inputs:
        files = expand_inputs(list(inputs))
        if plot is not None and plot.resolve() in {f.path.resolve() for f in files if f.path}:
            raise InputError(f"--plot '{plot}' is an input file; choose another path")
        corpus_words = _corpus_words(read_documents(files, text_field, encoding))
        if not corpus_words:
            raise InputError("the inputs hold no words to calibrate on; give text with words, or no input at all")
    table = _load_embeddings(embeddings, vocab_size)
    with _progress() as progress:
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


@app.command()
def attack(
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
    layout: str = typer.Option("public", help="With --release-known-with: layout, public or keep."),
    bag_of_words: bool = typer.Option(False, help="With --release-known-with: release sorted bags of words."),
    embeddings: str = typer.Option("default", help="With --release-known-with: 'default' or a vectors file."),
    vocab_size: Optional[int] = typer.Option(None, help="With --release-known-with: keep the K most frequent words."),
    decode: Decoder = typer.Option(Decoder.exact, help="With --release-known-with: exact or approx decoding."),
) -> None:
    """Attribute unknown texts to the authors of known texts; print top-1..k accuracy and chance.

    With --release-known-with, the known texts are first released by that mechanism, so that the
    attack is trained on text like the (released) unknown texts it attributes."""
    from textveil.attacks.base import evaluate_attack
    from textveil.attacks.registry import ATTACKS, make_attack
    from textveil.corpus.labelled import read_labelled_corpus
    from textveil.evaluation.releasing import mechanism_options, release_parameters

    if list_attacks:
        for name, (_, _, description) in ATTACKS.items():
            print(f"{name:22s} {description}")
        return
    if known is None or unknown is None:
        raise InputError("attack needs --known PATH and --unknown PATH (or --list)")
    if top_k < 1:
        raise InvalidParameterError(f"--top-k must be at least 1, got {top_k}")
    release_only = {"--epsilon": epsilon is not None, "--release-seed": release_seed is not None,
                    "--layout": layout != "public", "--bag-of-words": bag_of_words,
                    "--embeddings": embeddings != "default", "--vocab-size": vocab_size is not None,
                    "--decode": decode is not Decoder.exact}
    if release_known_with is None and any(release_only.values()):
        given = ", ".join(option for option, used in release_only.items() if used)
        raise InputError(f"{given} only apply with --release-known-with MECHANISM, which releases the known texts "
                         "first")
    parameters = None if release_known_with is None else release_parameters(
        release_known_with, epsilon, **mechanism_options(layout=layout, bag_of_words=bag_of_words, decode=decode.value))
    model = make_attack(attack_name, shared={"random_state": seed})
    known_corpus = read_labelled_corpus(known, text_field, label_field, encoding).validate(what="known corpus")
    unknown_corpus = read_labelled_corpus(unknown, text_field, label_field, encoding).validate(
        min_labels=1, what="unknown corpus")
    known_texts, known_release = known_corpus.texts, None
    if release_known_with is not None and parameters is not None:  # (both or neither: for the type checker)
        from textveil.embeddings.default_model import cache_root
        from textveil.evaluation.release_cache import ReleaseCache
        from textveil.evaluation.releasing import release_corpus

        table = _load_embeddings(embeddings, vocab_size)
        cache = ReleaseCache(cache_root() / "releases")  # only a seeded release is stored
        with _progress() as progress:
            task = progress.add_task(f"releasing the known texts with {release_known_with}", total=len(known_corpus))
            known_texts = release_corpus(release_known_with, parameters, table, known_corpus, release_seed, cache,
                                         progress=lambda done: progress.advance(task, done))
        known_release = {"mechanism": release_known_with, "parameters": parameters, "seed": release_seed,
                         "embeddings": table.name, "cached": cache.hits > 0}
        stderr.print(f"known texts released with {release_known_with} "
                      + ", ".join(f"{k}={v}" for k, v in parameters.items()) + f", seed {release_seed}"
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
def evaluate(
    risk_corpus: Path = typer.Option(..., help="Labelled corpus for authorship risk (a train/test folder pair, a folder per author, or JSONL/CSV)."),
    out: Path = typer.Option(..., help="Folder for results.json, report.md, report.html and figures."),
    mechanism: str = typer.Option("emp", "--mechanism", "-m", help="Mechanism name."),
    grid: str = typer.Option("10,15,20,25,30", help="Comma-separated parameter values (epsilon)."),
    risk_unknown: Optional[Path] = typer.Option(None, help="Unknown risk texts, when --risk-corpus holds only the known ones."),
    utility_corpus: Optional[Path] = typer.Option(None, help="Labelled corpus for utility (topics); split 80/20."),
    attacks: str = typer.Option(",".join(DEFAULT_ATTACKS), help="Comma-separated attacks (see 'textveil attack --list')."),
    utility: Optional[str] = typer.Option(None, help="Comma-separated utility tasks (default: all that apply)."),
    seed: Optional[int] = typer.Option(None, help="Seed: reproducible releases, cached between runs."),
    repeats: int = typer.Option(1, help="Releases per parameter value; results are their mean ± standard deviation."),
    top_k: int = typer.Option(10, help="Top-k for identification curves."),
    unknown_per_label: Optional[int] = typer.Option(None, help="Sample this many unknown texts per author."),
    known_per_label: Optional[int] = typer.Option(None, help="Per author, the first K texts are known (single corpus)."),
    collapse_per_label: bool = typer.Option(False, help="Judge each unknown author's texts together (paper 004)."),
    embeddings: str = typer.Option("default", help="'default' or a vectors file."),
    vocab_size: Optional[int] = typer.Option(None, help="Keep only the K most frequent vocabulary words."),
    decode: Decoder = typer.Option(Decoder.exact, help="exact or approx decoding."),
    text_field: str = typer.Option("text", help="Text field of JSONL/CSV corpora."),
    label_field: str = typer.Option("label", help="Label field of JSONL/CSV corpora."),
    utility_label_field: Optional[str] = typer.Option(None, help="Label field of the utility corpus (default: --label-field)."),
    encoding: str = typer.Option("utf-8", help="Encoding of the risk corpus."),
    utility_encoding: Optional[str] = typer.Option(None, help="Encoding of the utility corpus (default: --encoding)."),
    no_cache: bool = typer.Option(False, help="Do not reuse or store cached releases."),
    trainings: str = typer.Option(
        "clean,release", help="What attacks are fitted on: clean known texts, known texts released by the same "
        "mechanism (the attacker knows it), or both; the risk is the best attack over them."),
    layout: str = typer.Option(
        "public", help="Release layout: public (punctuation privatised too) or keep (the input's casing, "
        "punctuation and spacing copied, NOT protected)."),
    bag_of_words: bool = typer.Option(False, help="Release sorted bags of words (paper 001)."),
) -> None:
    """Sweep a mechanism over a parameter grid; attack and measure each release; write a report."""
    from textveil.embeddings.default_model import cache_root
    from textveil.evaluation import ExperimentPlan, load_evaluation_corpora, run_experiment, validate, write_report
    from textveil.evaluation.releasing import mechanism_options
    from textveil.evaluation.trainings import parse_trainings
    from textveil.evaluation.utility_tasks import UTILITY_RUNNERS

    values = _parse_epsilons(grid, option="--grid")
    options = mechanism_options(layout=layout, bag_of_words=bag_of_words, decode=decode.value,
                                **({"vocab_size": vocab_size} if vocab_size else {}))
    plan = ExperimentPlan(
        mechanism=mechanism, grid=values, attacks=[a.strip() for a in attacks.split(",") if a.strip()],
        utility=[u.strip() for u in utility.split(",") if u.strip()] if utility else list(UTILITY_RUNNERS),
        seed=seed, repeats=repeats, top_k=top_k, collapse_per_label=collapse_per_label, embeddings=embeddings,
        mechanism_options=options, trainings=parse_trainings(trainings),
    )
    corpora = load_evaluation_corpora(
        risk_corpus, risk_unknown=risk_unknown, utility_corpus=utility_corpus, text_field=text_field,
        label_field=label_field, utility_label_field=utility_label_field, known_per_label=known_per_label,
        unknown_per_label=unknown_per_label, encoding=encoding, utility_encoding=utility_encoding,
        seed=0 if seed is None else seed,
    )
    validate(plan, corpora)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out '{out}' is a file; give a folder for the report")
    with _progress() as progress:
        task = progress.add_task("evaluating", total=len(values) + 1)
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

    table = _load_embeddings(embeddings, vocab_size)
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
