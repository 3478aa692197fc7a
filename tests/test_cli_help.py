"""Every command's ``--help`` fits the terminal: nothing cut with "…", no line past the width,
every option's name shown whole (issue 48; the layout is textveil.cli.help's)."""

from __future__ import annotations

import re

import pytest
import typer
from typer.testing import CliRunner

from textveil.cli import app

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
WIDTHS = (80, 120, 200)


def _commands(command, path: tuple[str, ...] = ()):
    """``(path, command)`` for the app and every command and sub-command under it."""
    yield path, command
    if hasattr(command, "list_commands"):  # a group (typer vendors its own click: no isinstance)
        ctx = command.context_class(command)
        for name in command.list_commands(ctx):
            yield from _commands(command.get_command(ctx, name), (*path, name))


COMMANDS = list(_commands(typer.main.get_command(app)))


def render_help(path: tuple[str, ...], width: int, monkeypatch) -> str:
    from typer import rich_utils

    monkeypatch.setattr(rich_utils, "MAX_WIDTH", None, raising=False)  # TERMINAL_WIDTH, read at import
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": str(width), "NO_COLOR": "1"},
                                terminal_width=width)
    assert result.exit_code == 0, result.output
    return ANSI.sub("", result.output)


def test_every_command_is_checked():
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"", "sanitize", "compare", "attack", "evaluate", "release", "pivot encode", "budget show"} <= names


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("path", [path for path, _ in COMMANDS], ids=lambda path: " ".join(path) or "textveil")
def test_help_fits_the_width_with_nothing_cut(path, width, monkeypatch):
    shown = render_help(path, width, monkeypatch)
    assert "…" not in shown, f"cut at {width} columns:\n{shown}"
    wide = [line for line in shown.splitlines() if len(line) > width]
    assert not wide, f"{len(wide)} line(s) wider than {width}:\n" + "\n".join(wide)
    command = dict(COMMANDS)[path]
    words = set(re.split(r"[\s,/│]+", shown))
    for param in command.get_params(command.context_class(command)):
        if getattr(param, "hidden", False):
            continue
        for name in (*param.opts, *param.secondary_opts):
            if name.startswith("-"):
                assert name in words, f"{name} is not shown whole at {width} columns:\n{shown}"


def test_long_flag_names_show_whole_at_80_columns(monkeypatch):
    compare = render_help(("compare",), 80, monkeypatch)
    lines = [line.strip("│ ") for line in compare.splitlines()]
    at = next(i for i, line in enumerate(lines) if line.startswith("--collapse-per-label /"))
    assert lines[at + 1].startswith("--no-collapse-per-label "), compare  # wrapped at its "/", whole
    sanitize = render_help(("sanitize",), 80, monkeypatch)
    assert re.search(r"[│ ]--no-bag-of-words ", sanitize) and "<exact|screened|approx>" in sanitize, sanitize


def test_a_narrow_terminal_puts_the_help_under_the_names(monkeypatch):
    shown = render_help(("sanitize",), 40, monkeypatch)
    assert "…" not in shown and max(map(len, shown.splitlines())) <= 40
    assert re.search(r"│ --mechanism, -m <str> +│\n│ +Mechanism name", shown), shown
