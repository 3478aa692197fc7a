"""The command line's error console and the warnings every releasing command prints. No
privacy logic: what a warning says comes from the library (the summary's lines) or from the
records' own fields."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console

stderr = Console(stderr=True, soft_wrap=True)
"""Where reports, progress and one-line errors go (releases go to stdout or ``--output``)."""


def print_lines(lines: Iterable) -> None:
    """A summary's lines (:meth:`textveil.release.summary.ReleaseSummary.lines`) on stderr, its
    warnings in yellow."""
    for line in lines:
        stderr.print(line.text, style="bold yellow" if line.warning else None, markup=False, highlight=False)


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
