"""``textveil attack`` and ``evaluate``: authorship attacks on texts or releases (clean-trained, or
trained on a release of the known texts: the attacker knows the mechanism), and the sweep of a
mechanism with its report. No privacy logic: they parse, call the library, write."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from textveil.attacks.registry import DEFAULT_ATTACKS
from textveil.cli.pivot import attack_frequency
from textveil.cli.console import stderr
from textveil.cli.entity_options import with_entity_options
from textveil.cli.options import (
    Decoder,
    FIRST_LABELS,
    given_options,
    ESTIMATE,
    KNOWN_PER_LABEL,
    MINUTES,
    language_model_option,
    load_cli_embeddings,
    mechanism_of,
    OutputFormat,
    require_parameters,
    SPLIT,
    TEXTS_PER_LABEL,
    TOPIC_FIELD,
    TOPICS,
)
from textveil.cli.progress import progress_bar, texts_progress
from textveil.errors import InputError, InvalidParameterError

attack_app = typer.Typer(help="Attack texts or releases: authorship (the options below), or 'frequency' on a PIVOT "
                         "release.")


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
    from textveil.building import release_parameters

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
        from textveil.building import build_mechanism
        from textveil.embeddings.default_model import cache_root
        from textveil.evaluation.release_cache import ReleaseCache
        from textveil.evaluation.releasing import release_corpus

        table = load_cli_embeddings(embeddings, vocab_size)
        cache = ReleaseCache(cache_root() / "releases")  # only a seeded release is stored
        built = build_mechanism(release_known_with, parameters, table, entities=entity_stage, seed=release_seed)
        with progress_bar() as progress:
            task = progress.add_task(f"releasing the known texts with {release_known_with}", total=len(known_corpus))
            known_texts = release_corpus(built, known_corpus, cache,
                                         progress=lambda done: progress.advance(task, done)).texts
        known_release = {"mechanism": release_known_with, "parameters": built.public_params(), "seed": release_seed,
                         "embeddings": table.name, "cached": cache.hits > 0}
        stderr.print(f"known texts released with {release_known_with} "
                      + ", ".join(f"{k}={v}" for k, v in built.public_params().items() if k != "seed")
                      + f", seed {release_seed}"
                      + (" (read from the release cache)" if cache.hits else ""))
    with stderr.status(f"fitting {attack_name} on {len(known_corpus):,} known texts and ranking {len(unknown_corpus):,}"):
        result = evaluate_attack(
            model, known_texts, known_corpus.labels, unknown_corpus.texts, unknown_corpus.labels,
            top_k=top_k, collapse_per_label=collapse_per_label,
        )
    training = "clean" if known_release is None else "release"
    from textveil.evaluation.intervals import rate_interval

    intervals = [rate_interval(round(accuracy * result.n_unknown), result.n_unknown) for accuracy in result.topk]
    if fmt is OutputFormat.json:
        print(json.dumps({**result.to_dict(), "training": training,
                          "topk_intervals": [found.to_dict() for found in intervals],
                          **({"known_release": known_release} if known_release else {})}))
        return
    trained = "" if known_release is None else f" trained on known texts released by {release_known_with}"
    view = Table(title=f"{attack_name}{trained}: {result.n_unknown:,} unknown, {result.n_candidates} candidate authors")
    view.add_column("k", justify="right")
    view.add_column("top-k accuracy", justify="right")
    view.add_column("95% interval", justify="right")
    view.add_column("chance", justify="right")
    for k, (accuracy, chance, found) in enumerate(zip(result.topk, result.chance, intervals), start=1):
        view.add_row(str(k), f"{accuracy:.3f}", f"[{found.low:.3f}, {found.high:.3f}] ({found.method})",
                     f"{chance:.3f}")
    Console().print(view)


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
    known_per_label: Optional[int] = KNOWN_PER_LABEL,
    first_labels: Optional[int] = FIRST_LABELS,
    texts_per_label: Optional[int] = TEXTS_PER_LABEL,
    split: str = SPLIT,
    topic_field: Optional[str] = TOPIC_FIELD,
    topics: Optional[int] = TOPICS,
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
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not reuse or store cached releases."),
    trainings: str = typer.Option(
        "clean,release", help="What attacks are fitted on: clean known texts, known texts released by the same "
        "mechanism (the attacker knows it), or both; the risk is the best attack over them."),
    layout: Optional[str] = typer.Option(
        None, help="Release layout: public (default: punctuation privatised too) or keep (the input's casing, "
        "punctuation and spacing copied, NOT protected)."),
    bag_of_words: bool = typer.Option(False, help="emp: release sorted bags of words (paper 001)."),
    settings: Optional[list[str]] = typer.Option(None, "--set", help="Any other parameter of the mechanism, NAME=VALUE (repeatable)."),
    same_key: bool = typer.Option(
        True, "--same-key/--no-same-key", help="pivot: also fit the attacks on the known texts encoded with the "
        "unknown texts under one key, as one corpus release (the attack a corpus release implies)."),
    unmodified: bool = typer.Option(
        True, "--unmodified/--no-unmodified", help="Also measure the unmodified text (the reference row); "
        "--no-unmodified when another run of the same corpora already has."),
    estimate: bool = ESTIMATE,
    minutes: Optional[float] = MINUTES,
    entity_stage: object = None,
) -> None:
    """Sweep a mechanism over a parameter grid; attack and measure each release; write a report."""
    from textveil.embeddings.default_model import cache_root
    from textveil.evaluation import ExperimentPlan, load_evaluation_corpora, run_experiment, validate, write_report
    from textveil.evaluation.experiment_plan import EvaluationCorpora
    from textveil.evaluation.time_estimate import estimate_experiment, experiment_measured
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
        entities=entity_stage, same_key=same_key, include_unmodified=unmodified,
    )

    def load(labels_limit: Optional[int]) -> EvaluationCorpora:
        """The corpora, cut to the first ``labels_limit`` authors (``--first-labels``; ``--minutes`` too)."""
        return load_evaluation_corpora(
            risk_corpus, risk_unknown=risk_unknown, utility_corpus=utility_corpus, text_field=text_field,
            label_field=label_field, utility_label_field=utility_label_field, known_per_label=known_per_label,
            unknown_per_label=unknown_per_label, encoding=encoding, utility_encoding=utility_encoding,
            seed=0 if seed is None else seed, attribute_field=attribute_field,
            labels_limit=labels_limit, texts_per_label=texts_per_label,
            split=split, topic_field=topic_field, topics=topics,
        )

    corpora = load(first_labels)
    validate(plan, corpora)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out '{out}' is a file; give a folder for the report")
    with progress_bar() as progress:
        task = progress.add_task("evaluating", total=len(values) + 2)
        say = lambda message: progress.console.print(f"[dim]{escape(message)}[/dim]")  # noqa: E731
        estimated = None
        if estimate or minutes is not None:
            corpora, estimated = estimate_experiment(
                corpora, plan, cache_folder=None if no_cache else cache_root() / "releases", log=say,
                minutes=minutes, restrict=load)
        results = run_experiment(
            corpora, plan, cache_folder=None if no_cache else cache_root() / "releases", log=say,
            progress=lambda stage, done, total: progress.update(task, completed=done, total=total, description=stage),
            text_progress=texts_progress(progress),
        )
        if estimated is not None:
            results["estimate"] = experiment_measured(estimated, results)
            say(estimated.closing(results["estimate"]["measured_seconds"]["total"]))
    written = write_report(results, out, title=f"textveil evaluation: {mechanism} on {corpora.risk_known.name}")
    stderr.print(f"report written to {written['report.html']} (and {', '.join(sorted(p.name for p in written.values() if p.suffix != '.html'))})")


def register_attack_commands(app: typer.Typer) -> None:
    """Add ``attack`` (with ``attack frequency``) and ``evaluate`` to the ``textveil`` app."""
    app.add_typer(attack_app, name="attack")
    attack_app.command("frequency")(attack_frequency)
    app.command()(evaluate)
