"""MkDocs hook: the outputs on Getting started, printed by the page's own commands at build time.

``docs/getting-started.md`` shows commands in ``bash`` code blocks and marks where their results go:

- ``<!-- first-hour: output -->`` right after a ``bash`` block holding one ``.venv/bin/textveil``
  command: the hook runs that command and puts what it prints there (stdout, then stderr);
- ``<!-- first-hour: table -->``: the "Releases" table of the report the last command wrote (``--out``);
- ``<!-- first-hour: figure -->``: that report's risk-utility map (``frontier.png``), which
  ``on_post_build`` writes into the site folder.

So the page cannot drift from what textveil prints. Each command runs in a temporary folder holding
a copy of ``examples/`` (nothing is written into the repository) through ``python -m textveil.cli``,
the Python that runs MkDocs. A comparison runs with ``--no-cache`` added, so the page shows what a
first run prints rather than "resuming" from an earlier run's cached points; its numbers are the
same either way. Lines that change from one run to the next (progress, speed) are left out.

Results are cached under textveil's cache folder (``docs/first-hour/<key>``), the key a hash of
what determines them: textveil's source files, ``pyproject.toml``, the examples, this hook and the
command. A build with none of them changed reads the cache; a cold build runs the commands (about
a minute on 2 cores). mkdocs.yml loads this hook (``hooks:``).
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PAGE = "getting-started.md"
MARKER = re.compile(r"<!-- first-hour: (output|table|figure) -->")
BASH_BLOCK = re.compile(r"```bash\n(.*?)```", re.S)
PROGRAM = ".venv/bin/textveil"
COMMANDS = ("sanitize", "compare")  # what the page may run at build time
# Lines that differ between two runs of the same command: progress and speed.
CHANGING = re.compile(r": done, [\d,]+ of [\d,]+ in [\d.,]+ s$|: done in [\d.,]+ s$|^speed: ")
FIGURE_SITE_FOLDER = "first-hour"
TIMEOUT_S = 900
# Bump when the cached files change shape, so old entries are not read as new ones.
CACHE_FORMAT = "1"

# Site path -> PNG bytes, filled while the page renders and written by on_post_build.
_figures: dict[str, bytes] = {}


@dataclass
class Outcome:
    """What one command printed, and the table and figure of the report it wrote (if any)."""

    lines: list[str]
    table: list[str]
    figure: bytes | None


def printed_lines(stdout: str, stderr: str) -> list[str]:
    """The lines a command printed, stdout first, without those that change from run to run.

    >>> printed_lines("release\\n", "sanitising: done, 1 of 1 in 0.6 s\\nspeed: emp 9 words/s\\nguarantee: g\\n")
    ['release', 'guarantee: g']
    """
    lines = stdout.splitlines() + stderr.splitlines()
    return [line.rstrip() for line in lines if line.strip() and not CHANGING.search(line)]


def command_of(block: str) -> list[str]:
    """The arguments after ``.venv/bin/textveil`` of the one command in a ``bash`` block.

    >>> command_of(".venv/bin/textveil sanitize a.txt \\\\\\n    --seed 7   # reproducible\\n")
    ['sanitize', 'a.txt', '--seed', '7']
    """
    joined = block.replace("\\\n", " ")
    commands = [line for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if len(commands) != 1:
        raise ValueError(f"{PAGE}: a block followed by an output marker must hold one command, not {len(commands)}")
    argv = shlex.split(commands[0], comments=True)
    if len(argv) < 2 or argv[0] != PROGRAM or argv[1] not in COMMANDS:
        raise ValueError(f"{PAGE}: only '{PROGRAM} {{{','.join(COMMANDS)}}} ...' runs at build time, not {argv}")
    return argv[1:]


def option_value(args: list[str], option: str) -> str | None:
    """The value given to ``option`` in ``args`` (``--out x`` or ``--out=x``), else None."""
    for index, arg in enumerate(args):
        if arg == option and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith(option + "="):
            return arg.split("=", 1)[1]
    return None


def releases_table(report: str) -> list[str]:
    """The Markdown rows of a comparison report's "Releases" table."""
    rows: list[str] = []
    inside = False
    for line in report.splitlines():
        if line.startswith("## "):
            inside = line.strip() == "## Releases"
            continue
        if inside and line.startswith("|"):
            rows.append(line)
        elif inside and rows:
            break
    if not rows:
        raise ValueError("the comparison report has no 'Releases' table")
    return rows


def _cache_key(repo: Path, args: list[str]) -> str:
    digest = hashlib.sha256(CACHE_FORMAT.encode())
    digest.update(Path(__file__).read_bytes())
    sources = [p for p in sorted((repo / "textveil").rglob("*")) if p.is_file() and "__pycache__" not in p.parts]
    for path in [*sources, repo / "pyproject.toml", *sorted((repo / "examples").rglob("*"))]:
        if path.is_file():
            digest.update(path.relative_to(repo).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update("\0".join(args).encode())
    return digest.hexdigest()[:24]


def _run(repo: Path, args: list[str]) -> Outcome:
    """Run ``textveil ARGS`` in a temporary folder with a copy of the examples."""
    run_args = [*args, "--no-cache"] if args[0] == "compare" and "--no-cache" not in args else args
    env = {**os.environ, "NO_COLOR": "1", "TERM": "dumb"}
    with tempfile.TemporaryDirectory(prefix="textveil-first-hour-") as folder:
        work = Path(folder)
        shutil.copytree(repo / "examples", work / "examples")
        done = subprocess.run([sys.executable, "-m", "textveil.cli", *run_args], cwd=work, env=env,
                              capture_output=True, text=True, timeout=TIMEOUT_S)
        if done.returncode != 0:
            raise RuntimeError(f"{PAGE}: 'textveil {' '.join(args)}' failed with status {done.returncode}:\n"
                               f"{done.stderr[-3000:]}")
        out = option_value(args, "--out")
        table: list[str] = []
        figure = None
        if out is not None:
            table = releases_table((work / out / "report.md").read_text(encoding="utf-8"))
            figure_path = work / out / "frontier.png"
            figure = figure_path.read_bytes() if figure_path.is_file() else None
        return Outcome(printed_lines(done.stdout, done.stderr), table, figure)


def outcome_of(repo: Path, args: list[str]) -> Outcome:
    """The command's outcome from the cache, or run now and cached."""
    from textveil.paths import cache_root

    entry = cache_root() / "docs" / "first-hour" / _cache_key(repo, args)
    if (entry / "outcome.json").is_file():
        saved = json.loads((entry / "outcome.json").read_text(encoding="utf-8"))
        figure = (entry / "frontier.png").read_bytes() if (entry / "frontier.png").is_file() else None
        return Outcome(saved["lines"], saved["table"], figure)
    outcome = _run(repo, args)
    entry.parent.mkdir(parents=True, exist_ok=True)
    # written beside the entry, then renamed: a build killed mid-write leaves no half entry
    staging = Path(tempfile.mkdtemp(prefix=entry.name + ".", dir=entry.parent))
    if outcome.figure is not None:
        (staging / "frontier.png").write_bytes(outcome.figure)
    (staging / "outcome.json").write_text(json.dumps({"args": args, "lines": outcome.lines, "table": outcome.table},
                                                     indent=1), encoding="utf-8")
    try:
        staging.rename(entry)
    except OSError:  # another build cached it meanwhile
        shutil.rmtree(staging, ignore_errors=True)
    return outcome


def _output_html(lines: list[str]) -> str:
    # Raw HTML rather than a fenced block, so that long lines (a release, a summary) wrap on a phone.
    body = html.escape("\n".join(lines), quote=False)
    return (f'<div class="highlight first-hour-output"><pre><code style="white-space: pre-wrap; '
            f'overflow-wrap: anywhere">{body}</code></pre></div>')


def render_page(markdown: str, repo: Path, page_url: str) -> str:
    """The page with every marker replaced; figures to write are noted in ``_figures``."""
    from mkdocs.utils import get_relative_url

    pieces: list[str] = []
    last: Outcome | None = None
    position = 0
    for match in MARKER.finditer(markdown):
        pieces.append(markdown[position:match.start()])
        position = match.end()
        kind = match.group(1)
        if kind == "output":
            blocks = list(BASH_BLOCK.finditer(markdown, 0, match.start()))
            if not blocks or markdown[blocks[-1].end():match.start()].strip():
                raise ValueError(f"{PAGE}: an output marker must follow a bash block directly")
            last = outcome_of(repo, command_of(blocks[-1].group(1)))
            pieces.append(_output_html(last.lines))
            continue
        if last is None or not last.table:
            raise ValueError(f"{PAGE}: a {kind} marker must follow the output of a command that writes a report")
        if kind == "table":
            pieces.append('<div class="first-hour-table" markdown>\n\n' + "\n".join(last.table) + "\n\n</div>")
        else:
            if last.figure is None:
                raise ValueError(f"{PAGE}: the report has no frontier.png for the figure marker")
            site_path = f"{FIGURE_SITE_FOLDER}/frontier-{hashlib.sha256(last.figure).hexdigest()[:12]}.png"
            _figures[site_path] = last.figure
            source = get_relative_url(site_path, page_url)
            pieces.append(f'<figure class="first-hour-figure"><img src="{source}" alt="risk against semantic '
                          'similarity for each release of the comparison above"></figure>')
    pieces.append(markdown[position:])
    return "".join(pieces)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if page.file.src_uri != PAGE:
        return markdown
    if not MARKER.search(markdown):
        raise ValueError(f"{PAGE} has no first-hour marker: its commands' outputs would not be shown")
    repo = Path(config["config_file_path"]).resolve().parent
    return render_page(markdown, repo, page.url)


def on_post_build(config: Any) -> None:
    for site_path, data in _figures.items():
        target = Path(config["site_dir"]) / site_path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
