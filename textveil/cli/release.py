"""The ``release`` command: a corpus of any size released into shards, streaming, resumable, on
Dask. It parses options as ``textveil sanitize`` does, builds a
:class:`~textveil.release.job.ReleaseJob` and runs it with a progress bar; the job
(:mod:`textveil.release.job`) does the rest. No privacy logic lives here.

>>> import typer
>>> app = typer.Typer()
>>> register_release_commands(app)
>>> [command.name for command in app.registered_commands]
['release']
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from textveil.cli.console import print_lines, stderr, warn_copied_field_names
from textveil.cli.entity_options import with_entity_options
from textveil.cli.options import (
    given_options,
    language_model_option,
    Layout,
    mechanism_of,
    require_parameters,
    THEN,
    then_steps,
)
from textveil.cli.progress import progress_bar
from textveil.errors import InputError, InvalidParameterError
from textveil.release.job import DEFAULT_SHARD_SIZE


@with_entity_options
def release(
    inputs: list[str] = typer.Argument(..., help="Files (JSONL, CSV, Parquet, text) and folders.", show_default=False),
    out: Path = typer.Option(..., "--out", help="Folder for the shards and manifest.json: new or empty, or the "
                             "folder of an interrupted run of the same command (it resumes)."),
    mechanism: Optional[str] = typer.Option(
        None, "--mechanism", "-m", help="Mechanism name (see 'textveil mechanisms'); default: emp, or --model's."),
    model: Optional[Path] = typer.Option(
        None, "--model", help="A trained mechanism's folder ('textveil train'); for paraphrase and restyle, a language "
        "model: a .gguf file or a Hugging Face causal LM folder (every worker loads it once)."),
    epsilon: Optional[float] = typer.Option(None, "--epsilon", "-e", help="Privacy parameter per token (> 0), for mechanisms that have one."),
    seed: Optional[int] = typer.Option(
        None, help="Run seed for a reproducible release (default: OS entropy); record i's seed derives from it and i. "
        "Never written to the output or the manifest."),
    embeddings: str = typer.Option("default", help="'default' or a word2vec/GloVe/fastText vectors file."),
    vocab_size: Optional[int] = typer.Option(None, help="Keep only the K most frequent vocabulary words."),
    decode: Optional[str] = typer.Option(
        None, help="emp: nearest-word decoding: exact (default), screened (the same words) or approx."),
    layout: Optional[Layout] = typer.Option(
        None, help="public (default): punctuation and symbols privatised too, casing and spacing written by a public "
        "rule; keep: copy the input's casing, punctuation and spacing (NOT protected)."),
    settings: Optional[list[str]] = typer.Option(None, "--set", help="Any other parameter of the mechanism, NAME=VALUE (repeatable)."),
    then: Optional[list[str]] = THEN,
    text_field: str = typer.Option("text", help="Text field of JSONL/CSV/Parquet records (a text file's record: path, text)."),
    input_format: str = typer.Option("auto", help="auto (by extension), text, jsonl, csv or parquet."),
    encoding: str = typer.Option("utf-8", help="Encoding of the inputs (shards are written in UTF-8)."),
    shard_size: int = typer.Option(DEFAULT_SHARD_SIZE, help="Records per shard (shard n: records n*S .. (n+1)*S-1)."),
    workers: Optional[int] = typer.Option(
        None, "--workers", help="Dask worker processes of a local cluster (default: the CPUs available); 0 runs in "
        "this process without Dask."),
    scheduler: Optional[str] = typer.Option(
        None, "--scheduler", help="Address of an existing Dask scheduler (e.g. tcp://10.0.0.5:8786) to run on instead "
        "of a local cluster; its workers need textveil and the embeddings or model."),
    ledger: Optional[Path] = typer.Option(
        None, "--ledger", help="Spend from this budget ledger (SQLite): refused before releasing past a cap."),
    subject: Optional[str] = typer.Option(None, "--subject", help="With --ledger: every record's subject."),
    subject_field: Optional[str] = typer.Option(
        None, "--subject-field", help="With --ledger: the field naming each record's subject."),
    dataset: str = typer.Option("default", "--dataset", help="With --ledger: the dataset the subjects belong to."),
    entity_stage: object = None,
) -> None:
    """Release a corpus of any size into shards in --out, streaming, with a manifest; a killed run
    resumes where it stopped (run the same command again). Each record keeps its other fields."""
    from textveil.cli.budget import plan_budget
    from textveil.mechanisms.registry import MECHANISMS
    from textveil.release.cluster import open_runner
    from textveil.release.job import LedgerPlan, ReleaseJob, run_release
    from textveil.release.records import estimate_records, release_inputs
    from textveil.release.shards import MechanismSpec

    name = mechanism_of(mechanism, model)
    cls = MECHANISMS.load(name)
    if cls.release_command:
        raise InputError(f"{name} releases a whole corpus at once, not record by record; use '{cls.release_command}'")
    options = given_options(name, settings, epsilon=epsilon, decode=decode, layout=layout.value if layout else None)
    require_parameters(name, options)
    model = language_model_option(name, model, options, resolve=True)  # a language model: paraphrase's parameter
    steps = then_steps(then)
    if workers is not None and scheduler is not None:
        raise InputError("--workers starts a local cluster and --scheduler uses an existing one: give one of them")
    if workers is not None and workers < 0:
        raise InvalidParameterError(f"--workers must be 0 (in this process) or more, got {workers}")
    files = release_inputs(inputs, input_format)
    budget = None
    checked = plan_budget(ledger, subject, subject_field, dataset, [])  # the options' one-line errors
    if checked is not None:
        budget = LedgerPlan(checked.ledger, dataset, subject, subject_field)
    spec = MechanismSpec(name, options, embeddings if "embeddings" in cls.resources else None,
                         vocab_size, None if model is None else str(model.resolve()),
                         entities=entity_stage.to_spec(),  # pseudonyms without a key file: refused by the spec
                         then=steps)
    job = ReleaseJob(inputs, out, spec, text_field=text_field, encoding=encoding, input_format=input_format,
                     shard_size=shard_size, seed=seed, budget=budget)
    with progress_bar() as bar:
        task = bar.add_task(f"releasing with {name}", total=estimate_records(files))

        def started(where: str, shards_done: int) -> None:
            resumed = f"; resuming: {shards_done:,} shard(s) already written" if shards_done else ""
            bar.console.print(f"releasing {len(files):,} file(s) with {name} {where}, shards of {shard_size:,} records "
                              f"-> {out}{resumed}", markup=False, highlight=False)

        outcome = run_release(
            job, lambda: open_runner(workers, scheduler), progress=lambda done: bar.advance(task, done),
            log=lambda message: bar.console.print(f"[dim]{message}[/dim]"), on_start=started)
    manifest = outcome.manifest
    if outcome.already_complete:
        stderr.print(f"--out '{out}' already holds this release, complete ({manifest.get('totals', {}).get('records', 0):,} "
                     f"records in {manifest.get('totals', {}).get('shards', 0):,} shards); nothing to do", markup=False)
        return
    _report(manifest, out)
    if budget is not None:
        from textveil.cli.budget import BudgetPlan, report_budget

        report_budget(BudgetPlan(budget.ledger, dataset, outcome.subjects))


def _report(manifest: dict[str, Any], out: Path) -> None:
    """What was released and what the guarantee is: the summary the manifest stores, rendered as
    ``sanitize`` renders its releases' (:mod:`textveil.release.summary`)."""
    from textveil.release.summary import ReleaseSummary

    totals = manifest["totals"]
    head = (f"released {totals['records']:,} records ({totals['words']:,} words) in {totals['shards']:,} "
            f"{manifest['output']['format']} shard(s) -> {out} (manifest: {out / 'manifest.json'})")
    print_lines(ReleaseSummary.from_dict(manifest["summary"]).lines(head, noun="record"))
    warn_copied_field_names(manifest.get("copied_fields", []))


def register_release_commands(app: typer.Typer) -> None:
    """Add ``release`` to the ``textveil`` app."""
    app.command("release")(release)
