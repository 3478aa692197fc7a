"""Figures quoted from a pilot's table of rows (a ``results.json`` holding ``{"rows": [...]}``).

A pilot that is not a comparison (no attack: one utility measured over a grid of settings, such as
``benchmarks/select_write/pilot_scale.py``) commits its rows, one dict per setting. A page quotes
one value with a ``row`` placeholder, which names the folder, the field and as many ``KEY=VALUE``
filters as it takes for exactly one row to match::

    {{ row FOLDER FIELD KEY=VALUE... [FORMAT] }}

- ``FIELD`` is a numeric field of the row (``similarity``); ``FIELD-interval`` adds the row's
  ``interval`` (``0.292 [0.276, 0.307]``).
- A filter's value is compared as a number where both sides are numbers (``epsilon=10`` matches
  ``10.0``), else as text; quote a value that holds a space (``scale="shipped (median)"``).
- ``FORMAT`` is ``.N`` for N decimals or ``%``, as for ``fig``; else three decimals (whole numbers
  with thousands separated).

>>> results = {"rows": [
...     {"corpus": "posts", "k": 1, "epsilon": 10.0, "similarity": 0.1024, "interval": [0.0789, 0.1246]},
...     {"corpus": "posts", "k": 1, "epsilon": 30.0, "similarity": 0.2919, "interval": [0.2759, 0.3069]},
...     {"corpus": "posts", "k": 2, "epsilon": 30.0, "similarity": 0.1561, "interval": [0.133, 0.1787]}]}
>>> render_row(results, "row pilot similarity k=1 epsilon=30")
'0.292'
>>> render_row(results, 'row pilot similarity-interval corpus=posts k=2 epsilon=30 .2')
'0.16 [0.13, 0.18]'
>>> render_row(results, "row pilot similarity epsilon=30")
Traceback (most recent call last):
...
textveil.evaluation.quoted_releases.FigureError: 2 rows of pilot match epsilon=30 (tell them apart by k: 1, 2)
"""

from __future__ import annotations

import shlex
from typing import Any

from textveil.evaluation.quoted_figures import format_number
from textveil.evaluation.quoted_releases import FigureError

FORMAT_STYLES = ("%",)
"""A last token that is a format rather than a filter (besides ``.N``)."""


def is_row_table(results: Any) -> bool:
    """Whether a results.json is a pilot's flat table of rows (what ``row`` placeholders quote):
    every row a dict of plain values (numbers, text) and at most an ``interval`` pair. Rows that
    nest their measures (a paper's replication keeping each row's full results) are not.

    >>> is_row_table({"rows": [{"epsilon": 10, "similarity": 0.1, "interval": [0.08, 0.12]}]})
    True
    >>> is_row_table({"rows": []}), is_row_table({"rows": [{"mapping": "cipher", "utility": {"words": 1000}}]})
    (False, False)
    """
    rows = results.get("rows") if isinstance(results, dict) else None
    return isinstance(rows, list) and bool(rows) and all(
        isinstance(row, dict) and all(not isinstance(value, (dict, list)) or key == "interval"
                                      for key, value in row.items())
        for row in rows)


def _same(wanted: str, found: Any) -> bool:
    """Whether a filter's text matches a row's value: as numbers where both are, else as text."""
    if isinstance(found, (int, float)) and not isinstance(found, bool):
        try:
            return float(wanted) == float(found)
        except ValueError:
            return False
    return wanted == str(found)


def _format(value: float, style: str | None) -> str:
    """A row's value as a page prints it (whole numbers with thousands separated)."""
    if style is None and float(value).is_integer() and abs(value) >= 1:
        return f"{value:,.0f}"
    return format_number(float(value), "row", style)


def render_row(results: dict[str, Any], body: str) -> str:
    """The text of one ``row`` placeholder (its body, the braces removed) read from ``results``."""
    try:
        tokens = shlex.split(body)
    except ValueError as error:
        raise FigureError(f"cannot read the placeholder {{{{ {body} }}}} ({error})") from None
    if len(tokens) < 4 or tokens[0] != "row":
        raise FigureError("a pilot's figure is {{ row FOLDER FIELD KEY=VALUE... [FORMAT] }}")
    folder, field, rest = tokens[1], tokens[2], tokens[3:]
    style = rest.pop() if rest[-1] in FORMAT_STYLES or (rest[-1].startswith(".") and rest[-1][1:].isdigit()) else None
    if not is_row_table(results):
        raise FigureError(f'{folder}/results.json holds no pilot rows ({{"rows": [...]}})')
    filters = []
    for token in rest:
        key, equals, value = token.partition("=")
        if not equals or not key:
            raise FigureError(f'"{token}" is not a filter KEY=VALUE (in {{{{ {body} }}}})')
        filters.append((key, value))
    rows = results["rows"]
    matching = [row for row in rows if all(key in row and _same(value, row[key]) for key, value in filters)]
    said = " ".join(f"{key}={value}" for key, value in filters)
    if not matching:
        raise FigureError(f"no row of {folder} matches {said}")
    if len(matching) > 1:
        differing = sorted({key for row in matching for key in row
                            if len({repr(other.get(key)) for other in matching}) > 1 and key != field
                            and not isinstance(row.get(key), (list, dict))})
        key = next((key for key in differing if key not in {"example", "interval"}), differing[0] if differing else "?")
        values = ", ".join(str(value) for value in sorted({other.get(key) for other in matching}, key=str))
        raise FigureError(f"{len(matching)} rows of {folder} match {said} (tell them apart by {key}: {values})")
    row = matching[0]
    name, with_interval = (field[:-len("-interval")], True) if field.endswith("-interval") else (field, False)
    value = row.get(name)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        numeric = sorted(key for key, found in row.items() if isinstance(found, (int, float)) and not isinstance(found, bool))
        raise FigureError(f'the row of {folder} matching {said} has no number "{name}" (it has: {", ".join(numeric)})')
    text = _format(value, style)
    if with_interval:
        interval = row.get("interval")
        if not (isinstance(interval, list) and len(interval) == 2):
            raise FigureError(f"the row of {folder} matching {said} has no interval")
        text += f" [{_format(interval[0], style)}, {_format(interval[1], style)}]"
    return text
