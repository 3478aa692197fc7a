"""MkDocs hook: each mechanism page's parameter table, rendered at build time from the registry.

A page holds ``<!-- textveil-mechanism-parameters NAME -->``; this hook replaces it with a table
of NAME's parameters (constructor argument, type, default, choices, what it does) read from
``textveil.mechanisms.registry.MECHANISMS``, the same data ``textveil mechanisms`` prints and
every mechanism's constructor checks. A parameter added or a default changed shows up in the
next ``make docs``. mkdocs.yml loads it (``hooks:``); it is excluded from the site itself.
"""

from __future__ import annotations

import re
from typing import Any

MARKER = re.compile(r"<!-- textveil-mechanism-parameters (?P<name>[\w-]+) -->")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _default(parameter: Any) -> str:
    if parameter.required:
        return "required"
    if parameter.default is None:
        return "`None`"
    return f"`{parameter.default!r}`" if isinstance(parameter.default, str) else f"`{parameter.default}`"


def render_parameters(name: str) -> str:
    """The Markdown table of mechanism ``name``'s parameters, with its guarantee kind and grid."""
    from textveil.mechanisms.registry import MECHANISMS
    from textveil.privacy.guarantee import KINDS

    entry = MECHANISMS.entry(name)
    lines = [
        f"Registered as `{entry.name}` (`{entry.target.replace(':', '.')}`); guarantee: "
        f"{KINDS.get(entry.guarantee, entry.guarantee)}.",
    ]
    swept = entry.swept
    if swept is not None:
        grid = ", ".join(f"{value:g}" for value in entry.grid)
        lines[0] += (f" A sweep (`textveil evaluate`, `textveil compare`) varies `{swept.name}`"
                     + (f", by default over {grid}." if grid else "."))
    lines += ["", "| parameter | type | default | what it does |", "|---|---|---|---|"]
    for parameter in entry.parameters:
        kind = " \\| ".join(f"`{choice}`" for choice in parameter.choices) or parameter.type.__name__
        what = parameter.help + ("; a secret: never printed, written or logged" if parameter.secret else "")
        lines.append(f"| `{parameter.name}` | {kind} | {_default(parameter)} | {_cell(what)} |")
    own = [f"`{flag}`" for name, flag in (("epsilon", "-e/--epsilon"), ("seed", "--seed"))
           if any(p.name == name for p in entry.parameters)]
    lines += ["", "On the command line every parameter is `--set NAME=VALUE` (for example "
              f"`--set {entry.parameters[0].name}=...`)" + (f"; {' and '.join(own)} also work" if own else "")
              + f". In Python they are keyword arguments of the class or of `textveil.mechanism(\"{entry.name}\", ...)`."]
    return "\n".join(lines)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    return MARKER.sub(lambda match: render_parameters(match.group("name")), markdown)
