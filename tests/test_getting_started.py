"""Getting started runs on what ships, and shows what its commands print.

The page (``docs/getting-started.md``) is built into the session's site (conftest.py's ``site``
and ``served``), where ``docs/hooks/first_hour_outputs.py`` has put each command's output under it.
These tests open the built page in headless Chromium, read every command and the output shown
under it, run the commands as a user would (the repository's ``.venv/bin/textveil`` from a
temporary folder holding a copy of ``examples/``; nothing is written into the repository), and
check that the user sees what the page shows: the release and its guarantee lines, and the
comparison's table. They also check that the page never scrolls sideways, on a laptop and on a
phone. About a minute when the site and textveil's caches are warm.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import NEEDS_MKDOCS, REPO_ROOT, load_docs_hook, run_guarded

pytestmark = NEEDS_MKDOCS

TEXTVEIL = REPO_ROOT / ".venv" / "bin" / "textveil"
NO_TEXTVEIL = (f"{TEXTVEIL} is missing ('make demo' creates it), so the page's commands cannot be run as a user "
               "runs them")
# The hook's own filter of the lines that differ between two runs (progress, speed)
printed_lines = load_docs_hook("first_hour_outputs").printed_lines
GUARANTEE = ("guarantee:", "released unprotected:", "assumes:")

READ_PAGE = """() => {
  const article = document.querySelector('article');
  const shown = Array.from(article.querySelectorAll('.first-hour-output')).map(output => {
    const before = output.previousElementSibling;
    const isCommand = before !== null && before.matches('div.highlight:not(.first-hour-output)');
    return {command: isCommand ? before.querySelector('code').innerText : null,
            output: output.querySelector('code').innerText};
  });
  const table = article.querySelector('.first-hour-table table');
  const rows = table === null ? [] : Array.from(table.querySelectorAll('tr')).map(
    row => Array.from(row.children).map(cell => cell.innerText.trim()));
  return {shown, rows};
}"""


@pytest.fixture(scope="module")
def page_text(chromium_browser, served) -> dict:
    """Each command on the built page with the output shown under it, and the comparison's table."""
    page = chromium_browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{served}/getting-started.html")
    page.wait_for_load_state("networkidle")
    found = page.evaluate(READ_PAGE)
    page.close()
    assert found["shown"], "the page shows no command output (the first-hour hook did not run?)"
    for item in found["shown"]:
        assert item["command"] is not None, "an output on the page does not sit right under a bash block"
    return found


@pytest.fixture(scope="module")
def user_folder(tmp_path_factory) -> Path:
    """A folder like a user's checkout: the repository's .venv (linked) and a copy of the examples."""
    if not TEXTVEIL.is_file():
        pytest.skip(NO_TEXTVEIL)
    folder = tmp_path_factory.mktemp("first-hour")
    (folder / ".venv").symlink_to(REPO_ROOT / ".venv", target_is_directory=True)
    shutil.copytree(REPO_ROOT / "examples", folder / "examples")
    return folder


def shown_for(page_text: dict, subcommand: str) -> tuple[str, list[str]]:
    """The page's one command running ``textveil SUBCOMMAND``, and the lines shown under it."""
    matches = [item for item in page_text["shown"] if f"textveil {subcommand} " in item["command"]]
    assert len(matches) == 1, f"the page shows {len(matches)} outputs of 'textveil {subcommand}', expected 1"
    return matches[0]["command"], [line.rstrip() for line in matches[0]["output"].splitlines() if line.strip()]


def run_as_user(command: str, folder: Path) -> subprocess.CompletedProcess:
    """Run a command as shown on the page (line continuations and comments included) in ``folder``."""
    argv = shlex.split(command.replace("\\\n", " "), comments=True)
    assert argv[0] == ".venv/bin/textveil", f"the page's command does not start with .venv/bin/textveil: {argv}"
    done = run_guarded(argv, f"the page's command '{command}'", cwd=folder, capture_output=True, text=True,
                       env={**os.environ, "NO_COLOR": "1", "TERM": "dumb"})
    assert done.returncode == 0, f"'{command}' failed with status {done.returncode}:\n{done.stderr[-3000:]}"
    return done


def printed(done: subprocess.CompletedProcess) -> list[str]:
    return printed_lines(done.stdout, done.stderr)


def test_the_first_release_prints_the_release_and_guarantee_the_page_shows(page_text, user_folder):
    command, shown = shown_for(page_text, "sanitize")
    done = run_as_user(command, user_folder)
    release = [line.rstrip() for line in done.stdout.splitlines() if line.strip()]
    assert release and shown[:len(release)] == release, "the release printed differs from the one on the page"
    guarantee = [line for line in printed(done) if line.startswith(GUARANTEE)]
    assert len(guarantee) == len(GUARANTEE)
    assert [line for line in shown if line.startswith(GUARANTEE)] == guarantee
    assert shown == printed(done)


def test_the_first_comparison_writes_the_table_the_page_shows(page_text, user_folder):
    command, shown = shown_for(page_text, "compare")
    done = run_as_user(command, user_folder)
    argv = shlex.split(command.replace("\\\n", " "), comments=True)
    out = user_folder / argv[argv.index("--out") + 1]
    report = (out / "report.md").read_text(encoding="utf-8")
    section = report.split("## Releases", 1)[1].split("\n## ", 1)[0]
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in section.splitlines() if line.startswith("|") and not line.startswith("|---")]
    assert len(rows) == 6, "expected a header and five releases (unmodified, emp 10 and 20, random, redact)"
    assert page_text["rows"] == rows, "the comparison's table differs from the one on the page"
    assert (out / "frontier.png").is_file()
    lines = printed(done)
    if any(line.startswith("resuming:") for line in lines):
        # a user's earlier run left these points in textveil's cache: the same table, printed briefly
        assert lines[-1] == shown[-1] and lines[-1].startswith("report written to ")
    else:
        assert lines == shown, "the comparison printed other lines than the page shows"


@pytest.mark.parametrize("width", [1280, 390])
def test_the_page_fits_the_screen_with_its_outputs_and_figure(chromium_browser, served, tmp_path, width):
    page = chromium_browser.new_page(viewport={"width": width, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{served}/getting-started.html")
    page.wait_for_load_state("networkidle")
    page.screenshot(path=str(tmp_path / f"getting-started-{width}.png"), full_page=True)
    overflow = page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"at {width} px the page scrolls sideways by {overflow} px"
    assert page.locator("article .first-hour-output").count() == 2
    assert page.locator("article .first-hour-table table").count() == 1
    figure = page.locator("article .first-hour-figure img")
    assert figure.evaluate("img => img.complete && img.naturalWidth > 0"), "the comparison's figure did not load"
    box = figure.bounding_box()
    assert box is not None and box["width"] <= width
    page.close()
    assert not errors, f"the page raised: {errors}"
