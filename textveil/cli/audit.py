"""The ``audit`` command: textveil checks its own privacy claims from the outside.

It builds the mechanism as ``sanitize`` would, asks the library for the pairs that stress it
(:func:`~textveil.evaluation.audit_pairs.audit_cases`), runs the audit
(:func:`~textveil.evaluation.audit.run_audit`) with a progress bar, and prints the table or one
JSON object. Exit status: 0 when every claim was kept, 1 when one was refuted or when the
mechanism claims nothing (it is never reported as passed), 2 on bad input. No privacy logic
lives here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from textveil.cli.console import stderr
from textveil.cli.options import (
    given_options,
    language_model_option,
    Layout,
    load_cli_embeddings,
    mechanism_of,
    OutputFormat,
    require_parameters,
)
from textveil.cli.progress import progress_bar
from textveil.errors import InputError


def audit(
    mechanism: Optional[str] = typer.Option(
        None, "--mechanism", "-m", help="Mechanism to audit (see 'textveil mechanisms'); default: emp, or --model's."),
    model: Optional[Path] = typer.Option(
        None, "--model", help="A trained mechanism's folder ('textveil train'); for paraphrase and restyle, a language "
        "model (a .gguf file or a Hugging Face causal LM folder)."),
    epsilon: Optional[float] = typer.Option(None, "--epsilon", "-e", help="Privacy parameter per token (> 0)."),
    layout: Optional[Layout] = typer.Option(None, help="public or keep (as in 'textveil sanitize')."),
    bag_of_words: bool = typer.Option(False, help="emp: audit the sorted bag-of-words output."),
    settings: Optional[list[str]] = typer.Option(None, "--set", help="Any other parameter, NAME=VALUE (repeatable)."),
    embeddings: str = typer.Option("default", help="'default' or a word2vec/GloVe/fastText vectors file."),
    vocab_size: Optional[int] = typer.Option(None, help="Keep only the K most frequent vocabulary words."),
    pairs: Optional[Path] = typer.Option(
        None, "--pairs", help="Your own pairs, JSONL: {\"first\": TEXT, \"second\": TEXT, \"kind\": NAME} per line."),
    corpus: Optional[Path] = typer.Option(
        None, help="pivot: the corpus to encode and attack (default: 400 texts drawn with English word frequencies)."),
    text_field: str = typer.Option("text", help="Text field of a JSONL/CSV --corpus."),
    kinds: Optional[str] = typer.Option(
        None, help="Audit only these pair kinds, comma-separated (e.g. canary,casing); default: every kind."),
    trials: int = typer.Option(5000, help="Releases of each input per stage (three stages: train, choose, count); a "
                               "language model's real-text pairs run at most 50."),
    confidence: float = typer.Option(0.99, help="Confidence of the whole audit (split over its pairs)."),
    seed: Optional[int] = typer.Option(None, help="Seed for a reproducible audit (default: OS entropy)."),
    fmt: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text (a table) or json (one object)."),
    report: Optional[Path] = typer.Option(
        None, "--report", help="Also write audit.json, audit.md and audit.png (claimed against audited) here."),
) -> None:
    """Audit a mechanism's privacy claims: many releases of neighbouring inputs, a lower bound on
    the privacy loss per pair, compared with what its Guarantee claims. Exit 0: every claim kept."""
    from textveil.building import build_mechanism
    from textveil.evaluation.audit import releases_needed, run_audit
    from textveil.evaluation.audit_pairs import audit_cases, read_pairs
    from textveil.mechanisms.registry import MECHANISMS

    name = mechanism_of(mechanism, model)
    options = given_options(name, settings, epsilon=epsilon, layout=layout.value if layout else None,
                            bag_of_words=bag_of_words)
    require_parameters(name, options)
    model = language_model_option(name, model, options)
    if report is not None and (report / "audit.json").exists():
        raise InputError(f"--report '{report}' already holds an audit (audit.json): choose another folder or move it")
    if report is not None and report.exists() and not report.is_dir():
        raise InputError(f"--report '{report}' is a file; give a folder to write the audit's report in")
    user_pairs = read_pairs(pairs) if pairs is not None else None
    texts = _corpus_texts(corpus, text_field) if corpus is not None else None
    kind = MECHANISMS.entry(name).guarantee
    table = None
    if kind in ("metric", "dp") and "embeddings" in MECHANISMS.load(name).resources:
        table = load_cli_embeddings(embeddings, vocab_size)
    # The audit tests the mechanism's own claim, which holds for the text after any entity stage:
    # the stage (best-effort detection, no epsilon) is not part of what is audited.
    from textveil.pii.stage import EntityOptions

    built = build_mechanism(name, options, table, entities=EntityOptions(operator="off"), model=model)
    cases = audit_cases(built, user_pairs) if kind in ("metric", "dp") else []
    if kinds is not None and cases:
        cases = _only_kinds(cases, kinds)
    with progress_bar() as progress:
        total = releases_needed(cases, trials) if cases else None
        task = progress.add_task(f"auditing {name}", total=total)
        result = run_audit(built, cases, trials=trials, confidence=confidence, seed=seed,
                           progress=lambda done: progress.advance(task, done), corpus=texts)
    data = result.to_dict()
    if report is not None:
        from textveil.evaluation.audit_report import write_audit_report

        written = write_audit_report(data, report)
        stderr.print(f"report: {', '.join(str(p) for p in written.values())}", markup=False)
    if fmt is OutputFormat.json:
        print(json.dumps(data, indent=2))
    else:
        _print_table(data)
    raise typer.Exit(0 if result.passed else 1)


def _only_kinds(cases: list, kinds: str) -> list:
    wanted = {kind.strip() for kind in kinds.split(",") if kind.strip()}
    available = sorted({case.pair.kind for case in cases})
    unknown = sorted(wanted - set(available))
    if unknown or not wanted:
        raise InputError(f"--kinds '{kinds}' names no pair kind of this audit ({', '.join(unknown) or 'none given'}); "
                         f"its kinds: {', '.join(available)}")
    return [case for case in cases if case.pair.kind in wanted]


def _corpus_texts(path: Path, text_field: str) -> list[str]:
    from textveil.corpus.reading import expand_inputs, read_documents

    texts = [d.text for d in read_documents(expand_inputs([str(path)]), text_field)]
    if not texts:
        raise InputError(f"--corpus '{path}' holds no text; give a file or folder of texts to encode")
    return texts


def _print_table(data: dict) -> None:
    from textveil.evaluation.audit_report import HEADER, audit_rows, fewer_trials

    console = Console()
    if data.get("l_privacy"):  # PIVOT: exact shares of right frequency guesses per encoding, no likelihood ratio
        from textveil.evaluation.audit_report import L_PRIVACY_HEADER, l_privacy_rows

        view = Table(title=f"textveil audit: {data['mechanism']} ({data['l_privacy']['encodings']} encodings of the "
                           "corpus, each under a fresh key, attacked by frequency analysis)")
        for column in L_PRIVACY_HEADER:
            view.add_column(column)
        for row in l_privacy_rows(data):
            view.add_row(*row, style={"fail": "bold red", "pass": "green"}.get(row[-1], "dim"))
        console.print(view)
        console.print(data["verdict"], style="bold green" if data["passed"] else "bold red", markup=False)
        return
    if data["pairs"]:
        view = Table(title=f"textveil audit: {data['mechanism']} ({data['trials']:,} releases per input and stage"
                           f"{fewer_trials(data)})")
        shown = [0, 1, 2, 3, 5, 7]  # the event counts and the confidence are in --format json and --report
        for column in shown:
            view.add_column(HEADER[column])
        for row in audit_rows(data):
            style = {"fail": "bold red", "pass": "green"}.get(row[-1], "dim")
            view.add_row(*(row[column] for column in shown), style=style)
        console.print(view)
    console.print(data["verdict"], style="bold green" if data["passed"] else "bold red", markup=False)
    if data.get("power"):
        power = data["power"]
        console.print(f"power: the smallest violation it would have shown is {power['detectable_excess']:.3g} nats "
                      f"above the claim ({power['pair']}, {power['setting']})", markup=False)


def register_audit_commands(app: typer.Typer) -> None:
    """Add ``audit`` to the ``textveil`` app."""
    app.command()(audit)
