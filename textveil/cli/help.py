"""``--help`` that fits the terminal: typer's option panels laid out so that nothing is cut.

typer prints a command's options as a table of seven columns (the required star, long name, short
name, negative long name, negative short name, type, help). At 80 columns rich squeezes them and
cuts names and texts with "…": ``--collapse-per-…``, ``<exact|screened|…``. :func:`fit_help_panels`
replaces that one function of typer's, for the whole app, with panels of three columns: the star,
the option's names and type (wrapped at spaces: a name is never split), and its help with its
default (wrapped). The names column takes what the longest names need, up to two fifths of the
width; a longer entry (``--collapse-per-label / --no-collapse-per-label``) wraps at its ``/``.
Where even that leaves the help too little room (a very narrow terminal), each help text goes
under its names. Only rich and typer are imported: ``textveil --help`` stays light.
"""

from __future__ import annotations

from typing import Any

#: The narrowest help column beside the names; below it, the help goes under the names.
MIN_HELP_WIDTH = 24


def fit_help_panels() -> None:
    """Have typer print every options and arguments panel with :func:`options_panel` (idempotent).

    typer looks its panel printer up in ``typer.rich_utils`` at each ``--help``; a typer without
    one (rich not installed, or a version that renders otherwise) keeps its own."""
    try:
        from typer import rich_utils
    except ImportError:  # typer without rich: click's plain help, which wraps already
        return
    if callable(getattr(rich_utils, "_print_options_panel", None)):
        rich_utils._print_options_panel = options_panel


def options_panel(*, name: str, params: list, ctx: Any, markup_mode: Any, console: Any) -> None:
    """One panel of options (or arguments) at the console's width, nothing cut (see the module)."""
    from rich.console import Group
    from rich.padding import Padding
    from rich.panel import Panel
    from rich.table import Table
    from typer import rich_utils

    if not params:
        return
    rows = [(_required(param), _names(param, ctx), _help(param, ctx, markup_mode)) for param in params]
    starred = any(required.plain for required, _, _ in rows)

    table = Table(show_header=False, expand=True, box=None, padding=(0, 1), pad_edge=False,
                  show_lines=getattr(rich_utils, "STYLE_OPTIONS_TABLE_SHOW_LINES", False),
                  leading=getattr(rich_utils, "STYLE_OPTIONS_TABLE_LEADING", 0),
                  row_styles=getattr(rich_utils, "STYLE_OPTIONS_TABLE_ROW_STYLES", None))
    if starred:
        table.add_column(width=1, no_wrap=True)
    inner = console.width - 4  # the panel's border and padding
    room = inner - (1 + 2 if starred else 0) - 2  # besides the star and the gaps between columns
    longest_word = max(len(word) for _, names, _ in rows for word in names.plain.split())
    widest = max(names.cell_len for _, names, _ in rows)
    names_width = min(widest, max(longest_word, room * 2 // 5))
    if room - names_width >= MIN_HELP_WIDTH:
        table.add_column(width=names_width, overflow="fold")
        table.add_column(ratio=1, overflow="fold")
        for required, names, help_ in rows:
            table.add_row(*([required] if starred else []), names, help_)
    else:  # too narrow for two columns: the help under its names, indented
        table.add_column(ratio=1, overflow="fold")
        for required, names, help_ in rows:
            table.add_row(*([required] if starred else []), Group(names, Padding(help_, (0, 0, 0, 4))))
    console.print(Panel(table, border_style=getattr(rich_utils, "STYLE_OPTIONS_PANEL_BORDER", "dim"), title=name,
                        title_align=getattr(rich_utils, "ALIGN_OPTIONS_PANEL", "left")))


def _required(param: Any):
    from rich.text import Text
    from typer import rich_utils

    if not param.required:
        return Text("")
    return Text(getattr(rich_utils, "REQUIRED_SHORT_STRING", "*"),
                style=getattr(rich_utils, "STYLE_REQUIRED_SHORT", "red"))


def _names(param: Any, ctx: Any):
    """``--name, -n / --no-name <type>`` (an argument: its name and type), styled as typer styles them."""
    from rich.text import Text
    from typer import rich_utils
    from typer.core import TyperArgument

    if isinstance(param, TyperArgument):
        label = getattr(param, "display_name_raw", None) or param.human_readable_name
        if param.metavar is None and param.nargs != 1:
            label += "..."
        names = Text(label, style=getattr(rich_utils, "STYLE_OPTION", "bold cyan"))
    else:
        opts = sorted(param.opts, key=lambda opt: not opt.startswith("--"))  # long names first
        names = rich_utils.highlighter(", ".join(opts))
        if param.secondary_opts:
            names.append(" / ")
            names.append_text(rich_utils.negative_highlighter(", ".join(param.secondary_opts)))
    names.overflow = "fold"
    shown = _type(param, ctx)
    if shown:
        names.append(" ")
        names.append_text(rich_utils.types_highlighter(
            Text(shown, style=getattr(rich_utils, "STYLE_TYPES", "bold yellow"))))
    return names


def _type(param: Any, ctx: Any) -> str:
    """typer's ``<type>`` and range of a parameter; none for a flag, which takes no value."""
    if getattr(param, "is_flag", False) and not getattr(param, "count", False):
        return ""
    display = getattr(param, "display_type_rich", None)
    shown = (display(ctx=ctx) if display is not None else None) or ""
    ranged = getattr(param, "_get_number_range_help_str", None)
    limits = ranged() if ranged is not None else None
    return f"{shown} [{limits}]".strip() if limits else shown


def _help(param: Any, ctx: Any, markup_mode: Any):
    """typer's help of a parameter (its text, env var, default, [required]) as one wrapped paragraph."""
    from rich.console import Group
    from rich.text import Text
    from typer import rich_utils

    parts = rich_utils._get_parameter_help(param=param, ctx=ctx, markup_mode=markup_mode)
    items = list(getattr(parts, "renderables", [parts]))
    if not all(isinstance(item, Text) for item in items):  # Markdown help: one item a line
        return Group(*items)
    joined = Text(" ").join(items)
    joined.overflow = "fold"
    return joined
