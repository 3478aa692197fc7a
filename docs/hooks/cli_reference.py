"""MkDocs hook: the command-line reference, rendered at build time from the ``textveil`` app.

``docs/reference/cli.md`` holds the marker ``<!-- textveil-cli-help -->``; this hook replaces it
with a table of the commands and, for every command and sub-command, its ``--help`` text as
click formats it (typer's rich panels switched off while rendering, so the help is plain text).
The page therefore cannot go stale: a command added, renamed or given a new option shows up in
the next ``make docs``. mkdocs.yml loads it (``hooks:``); it is excluded from the site itself.
"""

from __future__ import annotations

from typing import Any

MARKER = "<!-- textveil-cli-help -->"
PAGE = "reference/cli.md"
WIDTH = 100


def _commands(group: Any, ctx: Any) -> list[tuple[str, Any, Any]]:
    """``(path, command, context)`` for every command under ``group``, depth first, in the app's order."""
    found = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        child = command.context_class(command, info_name=name, parent=ctx, terminal_width=WIDTH,
                                      max_content_width=WIDTH)
        found.append((child.command_path, command, child))
        if hasattr(command, "list_commands"):  # a group (typer vendors its own click: no isinstance)
            found.extend(_commands(command, child))
    return found


def render_cli_reference() -> str:
    """The Markdown that replaces the marker: a table of commands, then each command's help."""
    import typer
    import typer.core

    from textveil.cli.entry import app

    had_rich = typer.core.HAS_RICH
    typer.core.HAS_RICH = False  # plain click formatting: no boxes, no colours
    try:
        root = typer.main.get_command(app)
        ctx = root.context_class(root, info_name="textveil", terminal_width=WIDTH, max_content_width=WIDTH)
        commands = _commands(root, ctx)
        lines = ["| command | what it does |", "|---|---|"]
        for path, command, _ in commands:
            anchor = path.replace(" ", "-")
            summary = command.get_short_help_str(limit=120).replace("|", "\\|")
            lines.append(f"| [`{path}`](#{anchor}) | {summary} |")
        lines.append("")
        for path, command, child in commands:
            level = "#" * min(1 + path.count(" "), 4)
            anchor = path.replace(" ", "-")
            lines.append(f"{level} `{path}` {{#{anchor}}}")
            lines.append("")
            lines.append("```text")
            lines.append(command.get_help(child).rstrip())
            lines.append("```")
            lines.append("")
        return "\n".join(lines)
    finally:
        typer.core.HAS_RICH = had_rich


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if page.file.src_uri != PAGE:
        return markdown
    if MARKER not in markdown:
        raise ValueError(f"{PAGE} lost its marker {MARKER}: the command-line help would not be rendered")
    return markdown.replace(MARKER, render_cli_reference())
