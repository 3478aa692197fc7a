"""What the command-line modules share: the error console, progress bars, loading embeddings,
and reading a mechanism's options as the user gave them. No privacy logic lives here."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Optional

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from textveil.errors import InvalidParameterError

stderr = Console(stderr=True, soft_wrap=True)


class OutputFormat(str, Enum):
    """``--format`` of the commands that print a table or JSON."""

    text = "text"
    json = "json"


class Layout(str, Enum):
    """``--layout`` of the token-substitution mechanisms."""

    public = "public"
    keep = "keep"


def progress_bar() -> Progress:
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=stderr,
        transient=True,
    )


def load_cli_embeddings(spec: str, vocab_size: Optional[int]):
    from textveil.embeddings import load_embeddings

    return load_embeddings(spec, vocab_size, log=lambda message: stderr.print(f"[dim]{message}[/dim]"))


def given_options(mechanism: str, settings: Optional[list[str]], **flags) -> dict:
    """A mechanism's options as the user gave them: dedicated flags (``None``: not given) and
    ``--set NAME=VALUE`` for any other parameter, each parsed and checked by the mechanism's spec."""
    from textveil.evaluation.releasing import check_mechanism_options, mechanism_options
    from textveil.mechanisms.registry import MECHANISMS

    entry = MECHANISMS.entry(mechanism)
    options = mechanism_options(**flags)
    for setting in settings or []:
        name, separator, value = setting.partition("=")
        if not separator or not name.strip():
            raise InvalidParameterError(f"--set '{setting}' is not NAME=VALUE, e.g. --set rating=similarity")
        options[name.strip().replace("-", "_")] = entry.parameter(name.strip().replace("-", "_")).parse(value)
    check_mechanism_options(mechanism, options)
    return options


def mechanism_of(mechanism: Optional[str], model: Optional[Path]) -> str:
    """The mechanism to use: the one named, else the trained model's, else emp."""
    if model is None:
        return mechanism or "emp"
    from textveil.mechanisms.base import saved_mechanism_name

    saved = saved_mechanism_name(model)
    if mechanism is not None and mechanism != saved:
        raise InvalidParameterError(f"--model '{model}' holds a trained {saved}, not {mechanism}: "
                                    f"use --mechanism {saved} or another --model")
    return saved


def require_parameters(mechanism: str, options: dict, *, besides: tuple[str, ...] = ()) -> None:
    """Every parameter the mechanism cannot do without is given: one line names the flag."""
    from textveil.mechanisms.registry import MECHANISMS

    for parameter in MECHANISMS.entry(mechanism).parameters:
        if parameter.required and parameter.name not in options and parameter.name not in besides:
            raise InvalidParameterError(f"mechanism '{mechanism}' needs {parameter.flag}: {parameter.help}")


def warn_copied_fields(documents, text_field: str) -> None:
    """Name the JSONL/CSV fields besides the text that a release copies unchanged: no mechanism
    touches them, so no guarantee covers them."""
    warn_copied_field_names({name for d in documents for name in d.fields if name != text_field})


def warn_copied_field_names(names) -> None:
    """The warning of :func:`warn_copied_fields` for the field ``names`` a release copied (none: silent)."""
    copied = sorted(map(str, names))
    if copied:
        stderr.print(f"WARNING: the records' other fields ({', '.join(copied)}) are copied into the release unchanged "
                     "and are NOT protected; drop them from the input if they identify anyone",
                     style="bold yellow", markup=False)
