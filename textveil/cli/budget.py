"""The budget ledger's faces on the command line: ``textveil budget set-cap|show|export`` and what
``textveil sanitize --ledger`` needs (each document's subject). No privacy logic: the ledger
(:mod:`textveil.privacy.ledger`) keeps the books and :func:`~textveil.release.budgeted.release_with_budget`
spends."""

from __future__ import annotations

import csv
import io
import json
import sys
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from textveil.cli.console import stderr
from textveil.cli.options import OutputFormat
from textveil.errors import InputError, InvalidParameterError

budget_app = typer.Typer(help="The privacy budget ledger: caps, what was spent, an export.", no_args_is_help=True)

LEDGER_HELP = "The budget ledger file (SQLite; created if absent)."


class ExportFormat(str, Enum):
    jsonl = "jsonl"
    csv = "csv"


@dataclass
class BudgetPlan:
    """What ``sanitize --ledger`` spends from: the ledger, the dataset, each document's subject."""

    ledger: object
    dataset: str
    subjects: list[str]


def plan_budget(ledger: Optional[Path], subject: Optional[str], subject_field: Optional[str], dataset: str,
                documents) -> BudgetPlan | None:
    """The subjects of ``documents`` for a release with ``--ledger``; one line for a missing or
    contradictory option, or a record without the subject field."""
    if ledger is None:
        if subject is not None or subject_field is not None:
            raise InvalidParameterError("--subject and --subject-field need --ledger PATH (the budget ledger to spend from)")
        return None
    if (subject is None) == (subject_field is None):
        raise InvalidParameterError("--ledger needs exactly one of --subject ID (every document's subject) or "
                                    "--subject-field FIELD (a field of each JSONL/CSV record)")
    from textveil.privacy.ledger import BudgetLedger

    if subject is not None:
        subjects = [subject] * len(documents)
    else:
        from textveil.release.budgeted import record_subject

        subjects = [record_subject(document.fields, subject_field, document.source.display + (
            f" record {document.record + 1}" if document.record is not None else "")) for document in documents]
    return BudgetPlan(BudgetLedger(ledger), dataset, subjects)


def report_budget(plan: BudgetPlan) -> None:
    """What is left of each subject's budget after a release (stderr)."""
    subjects = sorted(set(plan.subjects))
    shown = subjects[:10]
    for subject in shown:
        left = plan.ledger.remaining(subject, plan.dataset)
        spent = plan.ledger.spent(subject, plan.dataset)
        stderr.print(f"budget: subject '{subject}' has spent {spent:g}"
                     + (" (no cap)" if left is None else f", {left:g} left"), markup=False)
    if len(subjects) > len(shown):
        stderr.print(f"budget: and {len(subjects) - len(shown):,} more subject(s): 'textveil budget show --ledger "
                     f"{plan.ledger.path}'", markup=False)


@budget_app.command("set-cap")
def set_cap(
    cap: float = typer.Argument(..., help="The most epsilon a subject may spend, in its Guarantee's unit."),
    ledger: Path = typer.Option(..., "--ledger", help=LEDGER_HELP),
    subject: Optional[str] = typer.Option(None, help="The subject to cap (default: every subject without a cap)."),
    dataset: Optional[str] = typer.Option(None, help="Only in this dataset (default: every dataset)."),
) -> None:
    """Cap what a subject (or every subject) may spend."""
    from textveil.privacy.ledger import BudgetLedger

    BudgetLedger(ledger).set_cap(cap, subject=subject, dataset=dataset)
    who = f"subject '{subject}'" if subject else "every subject without a cap of its own"
    stderr.print(f"cap {cap:g} set for {who}" + (f" in dataset '{dataset}'" if dataset else ""), markup=False)


@budget_app.command("show")
def show(
    ledger: Path = typer.Option(..., "--ledger", help=LEDGER_HELP),
    fmt: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text (a table) or json."),
) -> None:
    """What each subject has spent, its cap and what is left."""

    book = _existing(ledger)
    totals, caps = book.totals(), book.caps()
    if fmt is OutputFormat.json:
        print(json.dumps({"ledger": str(ledger), "caps": caps, "subjects": totals}, indent=2))
        return
    view = Table(title=f"budget ledger {ledger}")
    for column in ("dataset", "subject", "unit", "spent", "releases", "cap", "left"):
        view.add_column(column)
    for row in totals:
        view.add_row(row["dataset"], row["subject"], row["unit"], f"{row['spent']:g}", str(row["releases"]),
                     "none" if row["cap"] is None else f"{row['cap']:g}",
                     "-" if row["remaining"] is None else f"{row['remaining']:g}")
    Console().print(view)
    for cap in caps:
        if cap["subject"] == "*":
            where = "every dataset" if cap["dataset"] == "*" else f"dataset '{cap['dataset']}'"
            print(f"default cap for {where}: {cap['cap']:g}")


@budget_app.command("export")
def export(
    ledger: Path = typer.Option(..., "--ledger", help=LEDGER_HELP),
    fmt: ExportFormat = typer.Option(ExportFormat.jsonl, "--format", help="jsonl or csv: one spend per line."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write here (default: standard output)."),
) -> None:
    """Every spend, in the order recorded (for audits and accounts)."""
    from textveil.atomic_files import atomic_write_text

    spends = _existing(ledger).spends()
    if fmt is ExportFormat.jsonl:
        text = "".join(json.dumps(spend) + "\n" for spend in spends)
    else:
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=["id", "dataset", "subject", "amount", "unit", "mechanism",
                                                    "request_id", "created"])
        writer.writeheader()
        writer.writerows(spends)
        text = buffer.getvalue()
    if out is None:
        sys.stdout.write(text)
        return
    if out.exists() and out.resolve() == ledger.resolve():
        raise InputError(f"--out '{out}' is the ledger itself; write the export elsewhere")
    if out.exists():
        raise InputError(f"--out '{out}' exists; choose a new file (an export never overwrites one)")
    atomic_write_text(out, text)
    stderr.print(f"exported {len(spends):,} spend(s) -> {out}", markup=False)


def _existing(path: Path):
    from textveil.privacy.ledger import BudgetLedger

    if not path.is_file():
        raise InputError(f"--ledger '{path}' does not exist; a ledger is created by 'textveil budget set-cap' or the "
                         "first 'textveil sanitize --ledger'")
    return BudgetLedger(path)


def register_budget_commands(app: typer.Typer) -> None:
    """Add ``budget`` to the ``textveil`` app."""
    app.add_typer(budget_app, name="budget")
