"""Figures quoted from a pilot's table of rows (a ``results.json`` holding ``{"rows": [...]}``).

A pilot that is not a comparison (no attack: one utility measured over a grid of settings, such as
``benchmarks/comparisons/select_write_scale_pilot.py``) commits its rows, one dict per setting. A page quotes
one value with a ``row`` placeholder, which names the folder, the field and as many ``KEY=VALUE``
filters as it takes for exactly one row to match::

    {{ row FOLDER FIELD KEY=VALUE... [FORMAT] }}

- ``FIELD`` is a numeric field of the row (``similarity``); ``FIELD-interval`` adds the row's
  ``FIELD_interval`` (``0.292 [0.276, 0.307]``): an interval is its field's, never another's.
- A filter's value is compared as a number where both sides are numbers (``epsilon=10`` matches
  ``10.0``), else as text; quote a value that holds a space (``scale="shipped (median)"``).
- ``FORMAT`` is ``.N`` for N decimals or ``%``, as for ``fig``; else three decimals (a whole
  number, such as a count of texts, as it is, thousands separated).

>>> results = {"rows": [
...     {"corpus": "posts", "k": 1, "epsilon": 10.0, "similarity": 0.1024, "similarity_interval": [0.0789, 0.1246]},
...     {"corpus": "posts", "k": 1, "epsilon": 30.0, "similarity": 0.2919, "similarity_interval": [0.2759, 0.3069]},
...     {"corpus": "posts", "k": 2, "epsilon": 30.0, "similarity": 0.1561, "similarity_interval": [0.133, 0.1787]}]}
>>> render_row(results, parse_row("row pilot similarity k=1 epsilon=30"))
'0.292'
>>> render_row(results, parse_row('row pilot similarity-interval corpus=posts k=2 epsilon=30 .2'))
'0.16 [0.13, 0.18]'
>>> render_row(results, parse_row("row pilot similarity epsilon=30"))
Traceback (most recent call last):
...
textveil.evaluation.quoted_releases.FigureError: 2 rows of pilot match epsilon=30 (tell them apart by k: 1, 2)
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from textveil.evaluation.quoted_figures import format_number, pop_style
from textveil.evaluation.quoted_releases import FigureError

USAGE = "a pilot's figure is {{ row FOLDER FIELD KEY=VALUE... [.N|%] }}"


def is_row_table(results: Any) -> bool:
    """Whether a results.json is a pilot's flat table of rows (what ``row`` placeholders quote):
    every row a dict of plain values (numbers, text) and of ``FIELD_interval`` pairs. Rows that
    nest their measures (a paper's replication keeping each row's full results) are not.

    >>> is_row_table({"rows": [{"epsilon": 10, "similarity": 0.1, "similarity_interval": [0.08, 0.12]}]})
    True
    >>> is_row_table({"rows": []}), is_row_table({"rows": [{"mapping": "cipher", "utility": {"words": 1000}}]})
    (False, False)
    """
    rows = results.get("rows") if isinstance(results, dict) else None
    return isinstance(rows, list) and bool(rows) and all(
        isinstance(row, dict) and all(not isinstance(value, (dict, list)) or key.endswith("_interval")
                                      for key, value in row.items())
        for row in rows)


@dataclass(frozen=True)
class RowQuery:
    """One ``row`` placeholder, parsed: the folder, the field (``interval`` asks for the row's
    interval too), the ``KEY=VALUE`` filters and the format."""

    folder: str
    field: str
    interval: bool
    filters: tuple[tuple[str, str], ...]
    style: str | None = None

    def said(self) -> str:
        """The filters as the placeholder wrote them."""
        return " ".join(f"{key}={value}" for key, value in self.filters)


def parse_row(body: str) -> RowQuery:
    """A ``row`` placeholder's body (what lies between the braces), parsed.

    >>> parse_row('row pilot similarity-interval scale="shipped (median)" epsilon=30 .2')
    RowQuery(folder='pilot', field='similarity', interval=True, filters=(('scale', 'shipped (median)'), ('epsilon', '30')), style='.2')
    """
    try:
        tokens = shlex.split(body)
    except ValueError as error:
        raise FigureError(f"{USAGE} ({error})") from None
    style = pop_style(tokens)
    if len(tokens) < 4 or tokens[0] != "row":
        raise FigureError(USAGE)
    filters = []
    for token in tokens[3:]:
        key, equals, value = token.partition("=")
        if not equals or not key:
            raise FigureError(f'"{token}" is not a filter KEY=VALUE ({USAGE})')
        filters.append((key, value))
    field = tokens[2].removesuffix("-interval")
    return RowQuery(tokens[1], field, field != tokens[2], tuple(filters), style)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _same(wanted: str, found: Any) -> bool:
    """Whether a filter's text matches a row's value: as numbers where both are, else as text."""
    if _is_number(found):
        try:
            return float(wanted) == float(found)
        except ValueError:
            return False
    return wanted == str(found)


def _format(value: float, style: str | None) -> str:
    """A row's value as a page prints it: a whole number (a count) as it is, thousands separated."""
    if style is None and isinstance(value, int):
        return f"{value:,}"
    return format_number(float(value), "row", style)


def render_row(results: dict[str, Any], query: RowQuery) -> str:
    """The text of one ``row`` placeholder, read from its folder's ``results``."""
    if not is_row_table(results):
        raise FigureError(f'{query.folder}/results.json holds no pilot rows ({{"rows": [...]}})')
    said = query.said()
    matching = [row for row in results["rows"]
                if all(key in row and _same(value, row[key]) for key, value in query.filters)]
    if not matching:
        raise FigureError(f"no row of {query.folder} matches {said}")
    if len(matching) > 1:
        # Name a plain field the matching rows differ in, other than the one quoted: the filter to
        # add; a numeric one first (a setting such as k), before text that merely varies (an example).
        differing = sorted({key for row in matching for key, value in row.items()
                            if key != query.field and not isinstance(value, list)
                            and len({repr(other.get(key)) for other in matching}) > 1},
                           key=lambda key: (not all(_is_number(row.get(key)) for row in matching), key))
        key = differing[0] if differing else "?"
        values = ", ".join(sorted({str(other.get(key)) for other in matching}))
        raise FigureError(f"{len(matching)} rows of {query.folder} match {said} (tell them apart by {key}: {values})")
    row = matching[0]
    value = row.get(query.field)
    if not _is_number(value):
        numeric = sorted(key for key, found in row.items() if _is_number(found))
        raise FigureError(f'the row of {query.folder} matching {said} has no number "{query.field}" '
                          f'(it has: {", ".join(numeric)})')
    text = _format(value, query.style)
    if query.interval:
        interval = row.get(f"{query.field}_interval")
        if not (isinstance(interval, list) and len(interval) == 2):
            raise FigureError(f'the row of {query.folder} matching {said} has no interval "{query.field}_interval"')
        text += f" [{_format(interval[0], query.style)}, {_format(interval[1], query.style)}]"
    return text
