"""The ``compare`` command: several mechanisms on one split, one risk-utility frontier.

It parses the mechanisms (``--mechanism emp:10,15 --mechanism redact``), loads the corpora as
``evaluate`` does, runs :func:`~textveil.evaluation.comparison.run_comparison` with a progress
bar and writes the report (:mod:`textveil.evaluation.comparison_report`). No privacy logic
lives here. A comparison without ``--seed`` draws one from OS entropy and records it in the
report folder, so running the same command again resumes it.
"""

from __future__ import annotations

import secrets as entropy
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from textveil.cli.console import stderr
from textveil.cli.entity_options import with_entity_options
from textveil.cli.options import (
    FIRST_LABELS,
    ESTIMATE,
    KNOWN_PER_LABEL,
    MINUTES,
    language_model_option,
    require_parameters,
    SPLIT,
    TEXTS_PER_LABEL,
    TOPIC_FIELD,
    TOPICS,
)
from textveil.cli.progress import progress_bar, texts_progress
from textveil.errors import InputError, InvalidParameterError


def _mechanism_specs(mechanisms: list[str], settings: list[str]) -> list:
    """The ``--mechanism`` specs with their ``--set MECHANISM.NAME=VALUE`` options, each checked."""
    from textveil.building import check_model_path
    from textveil.evaluation.comparison import parse_compared_mechanism
    from textveil.mechanisms.registry import MECHANISMS

    specs = [parse_compared_mechanism(text) for text in mechanisms]
    by_name: dict[str, list] = {}
    for spec in specs:
        by_name.setdefault(spec.name, []).append(spec)
    for setting in settings:
        target, dot, rest = setting.partition(".")
        name, equals, value = rest.partition("=")
        if not dot or not equals or not name.strip():
            raise InvalidParameterError(f"--set '{setting}' is not MECHANISM.NAME=VALUE, e.g. --set emp.layout=keep")
        if target not in by_name:
            raise InvalidParameterError(f"--set '{setting}' names mechanism '{target}', which no --mechanism gives")
        parameter = MECHANISMS.entry(target).parameter(name.strip().replace("-", "_"))
        for spec in by_name[target]:  # an entry's own [PARAM=VALUE] stands
            spec.options.setdefault(parameter.name, parameter.parse(value))
    for spec in specs:
        swept = MECHANISMS.entry(spec.name).swept
        require_parameters(spec.name, spec.options, besides=(swept.name,) if swept else ())
        if spec.model is not None:
            check_model_path(spec.model, spec.name)
            model = language_model_option(spec.name, Path(spec.model), spec.options, resolve=True)
            spec.model = None if model is None else str(model)
    return specs


@with_entity_options
def compare(
    risk_corpus: Path = typer.Option(..., help="Labelled corpus for authorship risk (a train/test folder pair, a folder per author, or JSONL/CSV)."),
    out: Path = typer.Option(..., help="Folder for results.json, report.md, report.html and frontier.png."),
    mechanisms: list[str] = typer.Option(
        ..., "--mechanism", "-m", help="NAME, NAME:V1,V2 (values of its swept parameter) or either with @MODEL (a "
        "trained mechanism's folder, or a language model for paraphrase/restyle); NAME[PARAM=VALUE,...] sets this "
        "entry's other parameters (one mechanism can be compared under several settings); +polish after it rewrites "
        "each release with the language model, reading only the release (emp:10+polish); repeat for each mechanism."),
    settings: Optional[list[str]] = typer.Option(
        None, "--set", help="A mechanism's other parameter, MECHANISM.NAME=VALUE (repeatable), e.g. emp.layout=keep."),
    risk_unknown: Optional[Path] = typer.Option(None, help="Unknown risk texts, when --risk-corpus holds only the known ones."),
    utility_corpus: Optional[Path] = typer.Option(None, help="Labelled corpus for topic accuracy; split 80/20."),
    attacks: Optional[str] = typer.Option(
        None, help="Comma-separated attacks (see 'textveil attack --list'); default: char3-svm,word1-svm,length,topic-svm "
        "(topic-svm: content words only, shown apart as the content-only risk)."),
    utility: Optional[str] = typer.Option(
        None, help="Comma-separated utility tasks; default: semantic-similarity, fluency, sentiment-cosine, and "
        "attribute-f1 / topic-fasttext where the corpora have their labels."),
    language_model: Optional[Path] = typer.Option(
        None, help="The public language model fluency is scored with (.gguf or a Hugging Face folder); default: the "
        "bundled one (paraphrase's)."),
    seed: Optional[int] = typer.Option(
        None, help="Seed for every release; default: the one recorded in --out by an earlier run (resumed), else drawn."),
    thresholds: str = typer.Option("0.05,0.1,0.2,0.3,0.5", help="Risks r for the table 'at a risk of at most r, the most useful release is ...'."),
    top_k: int = typer.Option(10, help="Top-k for identification."),
    known_per_label: Optional[int] = KNOWN_PER_LABEL,
    unknown_per_label: Optional[int] = typer.Option(None, help="Sample this many unknown texts per author."),
    first_labels: Optional[int] = FIRST_LABELS,
    texts_per_label: Optional[int] = TEXTS_PER_LABEL,
    split: str = SPLIT,
    topic_field: Optional[str] = TOPIC_FIELD,
    topics: Optional[int] = TOPICS,
    collapse_per_label: bool = typer.Option(False, help="Judge each unknown author's texts together (per user)."),
    embeddings: str = typer.Option("default", help="'default' or a vectors file."),
    text_field: str = typer.Option("text", help="Text field of JSONL/CSV corpora."),
    label_field: str = typer.Option("label", help="Label field of JSONL/CSV corpora."),
    utility_label_field: Optional[str] = typer.Option(None, help="Label field of the utility corpus (default: --label-field)."),
    attribute_field: Optional[str] = typer.Option(None, help="A field holding each author's attribute (e.g. industry): attribute-f1."),
    encoding: str = typer.Option("utf-8", help="Encoding of the risk corpus."),
    trainings: str = typer.Option("clean,release", help="What attacks are fitted on: clean, release or both."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Keep nothing between runs (no release cache, no resume)."),
    same_key: bool = typer.Option(
        True, "--same-key/--no-same-key", help="pivot: also fit the attacks on the known texts encoded with the "
        "unknown texts under one key, as one corpus release (the attack a corpus release implies)."),
    estimate: bool = ESTIMATE,
    minutes: Optional[float] = MINUTES,
    reference: Optional[str] = typer.Option(
        None, help="LABEL:SETTING of the release every other is tested against in pairs (McNemar's exact test on "
        "which texts each names), e.g. emp:10; default: emp at 10 when compared."),
    entity_stage: object = None,
) -> None:
    """Compare mechanisms on one split: the same attacks and utility for every release, one frontier."""
    from textveil.embeddings.default_model import cache_root
    from textveil.evaluation import load_evaluation_corpora
    from textveil.evaluation.comparison import (
        DEFAULT_COMPARE_ATTACKS,
        DEFAULT_COMPARE_UTILITY,
        ComparisonPlan,
        run_comparison,
        validate_comparison,
    )
    from textveil.evaluation.comparison_state import load_state_seed, save_state_seed
    from textveil.evaluation.experiment_plan import EvaluationCorpora
    from textveil.evaluation.comparison_report import write_comparison_report
    from textveil.evaluation.trainings import parse_trainings

    if out.exists() and not out.is_dir():
        raise InputError(f"--out '{out}' is a file; give a folder for the report")
    specs = _mechanism_specs(mechanisms, settings or [])
    try:
        risks = [float(t) for t in thresholds.split(",") if t.strip()]
    except ValueError:
        raise InvalidParameterError(f"--thresholds '{thresholds}' is not a comma-separated list of shares, e.g. 0.1,0.2") from None
    if language_model is not None and not language_model.exists():
        raise InputError(f"--language-model '{language_model}' does not exist; give a .gguf file or a model folder")
    recorded = None if (seed is not None or no_cache) else load_state_seed(out)
    drawn = seed is None and not no_cache and recorded is None
    run_seed = seed if seed is not None else (recorded if recorded is not None else (
        None if no_cache else entropy.randbits(31)))
    plan = ComparisonPlan(
        mechanisms=specs,
        attacks=[a.strip() for a in attacks.split(",") if a.strip()] if attacks else list(DEFAULT_COMPARE_ATTACKS),
        utility=[u.strip() for u in utility.split(",") if u.strip()] if utility else list(DEFAULT_COMPARE_UTILITY),
        trainings=parse_trainings(trainings), seed=run_seed, top_k=top_k, collapse_per_label=collapse_per_label,
        embeddings=embeddings, language_model=None if language_model is None else str(language_model.resolve()),
        thresholds=risks,
        entities=entity_stage, same_key=same_key, reference=reference,
    )

    def load(labels_limit: int | None) -> EvaluationCorpora:
        """The corpora, cut to the first ``labels_limit`` authors (``--first-labels``; ``--minutes`` too)."""
        return load_evaluation_corpora(
            risk_corpus, risk_unknown=risk_unknown, utility_corpus=utility_corpus, text_field=text_field,
            label_field=label_field, utility_label_field=utility_label_field, known_per_label=known_per_label,
            unknown_per_label=unknown_per_label, encoding=encoding, seed=0 if run_seed is None else run_seed,
            attribute_field=attribute_field, labels_limit=labels_limit, texts_per_label=texts_per_label,
            split=split, topic_field=topic_field, topics=topics,
        )

    corpora = load(first_labels)
    validate_comparison(plan, corpora)
    if drawn and run_seed is not None:  # a seed the user gave is given again; a drawn one is kept
        save_state_seed(out, run_seed)
        stderr.print(f"seed {run_seed} drawn from OS entropy and kept in {out}: run the same command again to resume")
    with progress_bar() as progress:
        task = progress.add_task("comparing", total=None)
        results = run_comparison(
            corpora, plan,
            state_folder=None if no_cache else cache_root() / "comparisons",
            release_cache_folder=None if no_cache else cache_root() / "releases",
            # escaped: a mechanism's label holds brackets (paraphrase [score=public-base]), not markup
            log=lambda message: progress.console.print(f"[dim]{escape(message)}[/dim]"),
            progress=lambda stage, done, total: progress.update(task, completed=done, total=total, description=stage),
            text_progress=texts_progress(progress),
            estimate=estimate, minutes=minutes, restrict=load,
        )
    names = ", ".join(spec.label for spec in specs)
    written = write_comparison_report(results, out, title=f"textveil comparison: {names} on {corpora.risk_known.name}")
    stderr.print(f"report written to {written['report.html']} (and "
                 f"{', '.join(sorted(p.name for p in written.values() if p.suffix != '.html'))})")


def register_compare_commands(app: typer.Typer) -> None:
    """Add ``compare`` to the ``textveil`` app."""
    app.command()(compare)
