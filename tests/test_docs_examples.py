"""Every command the documentation shows runs on what ships, or says that it needs the reader's files.

The tests read every ```bash block of the pages the site is built from (``docs/`` outside
``docs/results/``, and ``README.md``) and pick each ``.venv/bin/textveil ...`` command in it
(backslash continuations joined, the trailing comment kept apart). Page by page, in the order the
page shows them, each command is then:

- **run**, when every input path it names exists: a file of ``examples/`` or one an earlier command
  of the page wrote. It runs in a temporary folder holding a copy of ``examples/`` and a link
  ``.venv`` to the repository's, as a reader runs it from the repository root, so nothing is written
  into the repository; its exit status must be 0, and what it writes must be a new path outside
  ``examples/``. The page's other shell lines that make inputs (``mkdir``, ``cp``, ``head``, a
  ``.venv/bin/python`` script) run too, in the same folder.
- **skipped for a missing input**, when an input is neither shipped nor written before it. Such a
  command must end with a comment that starts with ``your`` (``# your file``, ``# your corpora``),
  the marker that says the reader brings that file; a new example on a file that does not ship
  fails here until it is marked.
- **skipped as slow**, for the reasons in :data:`SLOW`, or when it needs what a skipped command
  would have written (a trained model), or when an earlier page already ran the same command on
  the same shipped files.

The commands run through textveil's own entry point (``textveil.cli.main``) in one long-lived
``.venv/bin/python`` process, with the working folder, argv, standard output and standard error
set per command as a fresh process would have them. A fresh process per command would load spaCy
for the entity stage each time (about 4 s on 2 cores), which would triple the time. The whole
module takes about two minutes on 2 cores when textveil's caches are warm.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import REPO_ROOT, run_guarded, wait_guarded

TEXTVEIL = REPO_ROOT / ".venv" / "bin" / "textveil"
PYTHON = REPO_ROOT / ".venv" / "bin" / "python"

pytestmark = pytest.mark.skipif(
    not TEXTVEIL.is_file() or not PYTHON.is_file(),
    reason=f"{TEXTVEIL} is missing ('make demo' creates it), so the documentation's commands cannot be run "
           "as a reader runs them")

PROGRAM = ".venv/bin/textveil"
MARKER = "your"
"""A command on a file that does not ship ends with a comment starting with this word."""

SLOW = {
    "serve": "starts a server that runs until it is stopped",
    "train": "trains a network: minutes",
    "synthesize": "samples from a synth model that 'textveil train' makes",
    "audit": "releases every pair of inputs thousands of times: minutes",
    "scheduler": "release --scheduler needs a running Dask scheduler",
    "paraphrase": "loads a language model: minutes on a CPU",
    "restyle": "loads a language model: minutes on a CPU",
    "translate": "runs Apertium round trips, which are slow and need Debian packages",
    "polish": "polishes with a language model: minutes on a CPU",
    "beyond-examples": "evaluate and compare run only on the shipped corpus",
}
"""Commands not run although their inputs exist, and why."""

LANGUAGE_MECHANISMS = ("paraphrase", "restyle", "translate")
SETUP_PROGRAMS = ("mkdir", "cp", "head", ".venv/bin/python")
"""Shell lines of a block that make inputs for the commands after them, run as written."""

# Options taking a value, by what the value is; every other option but FLAGS takes a plain value.
INPUT_OPTIONS = {"--known", "--unknown", "--risk-corpus", "--risk-unknown", "--utility-corpus", "--corpus",
                 "--dev-corpus", "--fit-corpus", "--vocab-corpus", "--pairs", "--pseudonym-key", "--token-file",
                 "--counts-from", "--continue-from", "--key"}
MAYBE_PATH_OPTIONS = {"--model", "--embeddings", "--language-model", "--attacker-model"}
OUTPUT_OPTIONS = {"--out", "-o", "--output", "--report", "--plot"}
ACCUMULATING_OPTIONS = {"--ledger"}
"""Written, and read when present (a budget ledger): a later command may use the same file."""
FLAGS = {"--list", "--help", "--force", "--no-force", "--bag-of-words", "--no-bag-of-words", "--collapse-per-label",
         "--no-collapse-per-label", "--keep-stop-words", "--same-key", "--no-same-key", "--unmodified",
         "--no-unmodified", "--no-cache", "--context"}
LOOKS_LIKE_PATH = re.compile(r"/|\.[A-Za-z][A-Za-z0-9]*$")

BLOCK = re.compile(r"^([ \t]*)```bash[^\n]*\n(.*?)^\1```", re.M | re.S)
HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?")

RUNNER = r"""
import json, os, sys, traceback
protocol = os.fdopen(os.dup(1), "w")
from textveil.cli import main
for line in sys.stdin:
    request = json.loads(line)
    os.chdir(request["cwd"])
    sys.stdout.flush(); sys.stderr.flush()
    log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(log, 1); os.dup2(log, 2); os.close(log)
    sys.argv = ["textveil", *request["argv"]]
    try:
        code = main()
    except SystemExit as exit_:
        code = exit_.code
    except BaseException:
        traceback.print_exc()
        code = 1
    code = 0 if code is None else code if isinstance(code, int) else 1
    sys.stdout.flush(); sys.stderr.flush()
    protocol.write(json.dumps({"code": code}) + "\n"); protocol.flush()
"""


@dataclass
class Command:
    """One command of a bash block: its text as shown, and for textveil its argv and trailing comment."""

    page: str
    block: int
    text: str
    argv: list[str] = field(default_factory=list)
    comment: str = ""

    @property
    def is_textveil(self) -> bool:
        """Whether the command runs ``.venv/bin/textveil``."""
        return bool(self.argv) and self.argv[0] == PROGRAM

    @property
    def is_setup(self) -> bool:
        """Whether the command is a shell line that makes inputs for later commands."""
        return not self.is_textveil and self.text.split(maxsplit=1)[0] in SETUP_PROGRAMS


def documentation_pages() -> list[Path]:
    """The Markdown pages the site is built from (results pages excepted), and the README."""
    docs = REPO_ROOT / "docs"
    pages = [path for path in docs.rglob("*.md") if "results" not in path.relative_to(docs).parts]
    return sorted(pages) + [REPO_ROOT / "README.md"]


def split_comment(text: str) -> tuple[list[str], str]:
    """A shell line's words, and its trailing comment without the ``#``."""
    quote = ""
    for index, char in enumerate(text):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or text[index - 1].isspace()):
            return shlex.split(text[:index]), text[index + 1:].strip()
    return shlex.split(text), ""


def block_commands(page: str, block: int, body: str) -> list[Command]:
    """The commands of one bash block: continuations joined, here-documents kept whole."""
    commands: list[Command] = []
    lines = body.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        heredoc = HEREDOC.search(line)
        if heredoc:
            end = next(i for i in range(index, len(lines)) if lines[i].strip() == heredoc.group(1))
            commands.append(Command(page, block, "\n".join([line, *lines[index:end + 1]])))
            index = end + 1
            continue
        while line.rstrip().endswith("\\") and index < len(lines):
            line = line.rstrip()[:-1] + " " + lines[index].strip()
            index += 1
        argv, comment = split_comment(line)
        commands.append(Command(page, block, line.strip(), argv, comment))
    return commands


def page_commands(path: Path) -> list[Command]:
    """Every command of every bash block of one page, in order."""
    page = path.relative_to(REPO_ROOT).as_posix()
    text = path.read_text(encoding="utf-8")
    commands: list[Command] = []
    for number, match in enumerate(BLOCK.finditer(text)):
        indent = len(match.group(1))
        body = "\n".join(line[indent:] for line in match.group(2).splitlines())
        commands.extend(block_commands(page, number, body))
    return commands


def subcommand(argv: list[str]) -> str:
    """``sanitize``, ``budget set-cap``, ``attack frequency``...: the words before the first option."""
    words = []
    for word in argv[1:]:
        if word.startswith("-") or LOOKS_LIKE_PATH.search(word) or len(words) == 2:
            break
        words.append(word)
    return " ".join(words)


def paths(argv: list[str]) -> tuple[list[str], list[str], list[str]]:
    """A textveil command's input paths, output paths and accumulating paths (a ledger)."""
    inputs: list[str] = []
    outputs: list[str] = []
    accumulating: list[str] = []
    name = subcommand(argv)
    words = argv[1 + len(name.split()):]
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if not word.startswith("-"):
            if LOOKS_LIKE_PATH.search(word) and not re.fullmatch(r"[\d.,]+", word):
                inputs.append(word)
            continue
        option, _, value = word.partition("=")
        if option in FLAGS:
            continue
        if not value and index < len(words):
            value = words[index]
            index += 1
        if option == "--key" and name == "pivot encode":
            outputs.append(value)
        elif option in INPUT_OPTIONS:
            inputs.append(value)
        elif option in MAYBE_PATH_OPTIONS and LOOKS_LIKE_PATH.search(value):
            inputs.append(value)
        elif option in ("-m", "--mechanism") and "@" in value:
            inputs.append(value.split("@", 1)[1])
        elif option in OUTPUT_OPTIONS:
            outputs.append(value)
        elif option in ACCUMULATING_OPTIONS:
            accumulating.append(value)
    return inputs, outputs, accumulating


def normal(path: str) -> str:
    """A relative path as a key: no ``./``, no trailing slash."""
    return os.path.normpath(path)


def under(path: str, folders: set[str]) -> bool:
    """Whether ``path`` is one of ``folders`` or inside one."""
    return any(path == folder or path.startswith(folder + os.sep) for folder in folders)


def mechanisms_named(argv: list[str]) -> list[str]:
    """The mechanisms a command releases with (``-m NAME:V1,V2@MODEL`` gives NAME)."""
    named = []
    for index, word in enumerate(argv[:-1]):
        if word in ("-m", "--mechanism", "--release-known-with"):
            named.append(re.split(r"[:@\[]", argv[index + 1], maxsplit=1)[0])
    return named


def slow(argv: list[str], inputs: list[str]) -> str | None:
    """Why a command with all its inputs at hand is not run, or None to run it."""
    name = subcommand(argv)
    first = name.split()[0] if name else ""
    if first in ("serve", "train", "synthesize", "audit"):
        return SLOW[first]
    if first == "release" and "--scheduler" in argv:
        return SLOW["scheduler"]
    for mechanism in mechanisms_named(argv):
        if mechanism in LANGUAGE_MECHANISMS:
            return SLOW[mechanism]
    if "--then" in argv or any("+polish" in arg for arg in argv):
        return SLOW["polish"]
    if first in ("evaluate", "compare") and not all(normal(path).startswith("examples" + os.sep) for path in inputs):
        return SLOW["beyond-examples"]
    return None


@dataclass
class Outcome:
    """What became of one command: run (and its status), or skipped and why."""

    command: Command
    status: str
    detail: str = ""


class Runner:
    """One ``.venv/bin/python`` process running textveil's entry point for each command sent."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.count = 0
        env = {**os.environ, "NO_COLOR": "1", "TERM": "dumb", "COLUMNS": "120"}
        self.process = subprocess.Popen([str(PYTHON), "-c", RUNNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, env=env, cwd=logs)

    def run(self, argv: list[str], cwd: Path) -> tuple[int, str]:
        """Run ``textveil ARGV`` in ``cwd``; its exit status and the tail of what it printed."""
        self.count += 1
        log = self.logs / f"command-{self.count}.log"
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"argv": argv, "cwd": str(cwd), "log": str(log)}) + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        printed = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
        if not answer:
            return -1, f"the runner process ended:\n{printed[-3000:]}"
        return json.loads(answer)["code"], printed[-3000:]

    def close(self) -> None:
        """End the process (its standard input closes)."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        wait_guarded(self.process, "the documentation's runner process, its input closed")


PAGES = [path for path in documentation_pages() if any(c.is_textveil for c in page_commands(path))]


@pytest.fixture(scope="module")
def runner(tmp_path_factory) -> Runner:
    """The module's one textveil process."""
    started = Runner(tmp_path_factory.mktemp("docs-examples-logs"))
    yield started
    started.close()


@pytest.fixture(scope="module")
def already_run() -> dict[tuple[str, ...], str]:
    """Commands on shipped files only that ran already (argv -> page), so a repeat is not run again."""
    return {}


def reader_folder(base: Path) -> Path:
    """A folder like a reader's checkout: a copy of ``examples/`` and a link to the repository's .venv."""
    (base / ".venv").symlink_to(REPO_ROOT / ".venv", target_is_directory=True)
    shutil.copytree(REPO_ROOT / "examples", base / "examples")
    return base


def run_page(commands: list[Command], folder: Path, runner: Runner,
             already_run: dict[tuple[str, ...], str]) -> list[Outcome]:
    """Run or skip a page's commands in order in ``folder``; what became of each."""
    outcomes: list[Outcome] = []
    unmade: set[str] = set()  # what skipped commands would have written
    for command in commands:
        if command.is_setup:
            done = run_guarded(["bash", "-c", command.text], f"the page's setup command {command.text!r}", cwd=folder,
                               capture_output=True, text=True)
            outcomes.append(Outcome(command, "failed" if done.returncode else "ran", done.stderr[-2000:]))
            continue
        if not command.is_textveil:
            continue
        inputs, outputs, accumulating = paths(command.argv)
        made = {normal(path) for path in outputs + accumulating}
        missing = [path for path in inputs if not (folder / path).exists() and not under(normal(path), unmade)]
        waiting = [path for path in inputs if not (folder / path).exists() and under(normal(path), unmade)]
        shipped_only = all(normal(path).startswith("examples" + os.sep) for path in inputs)
        key = tuple(command.argv[1:])
        if missing:
            outcomes.append(Outcome(command, "missing", ", ".join(missing)))
        elif waiting:
            outcomes.append(Outcome(command, "skipped", f"needs {', '.join(waiting)}, which a skipped command writes"))
        elif (reason := slow(command.argv, inputs)) is not None:
            outcomes.append(Outcome(command, "skipped", reason))
        elif shipped_only and key in already_run:
            outcomes.append(Outcome(command, "skipped", f"ran already for {already_run[key]}"))
        else:
            clashes = [path for path in outputs if (folder / path).exists() or under(normal(path), {"examples"})]
            if clashes:
                outcomes.append(Outcome(command, "failed", f"writes over {', '.join(clashes)}, which exists"))
                continue
            code, printed = runner.run(command.argv[1:], folder)
            outcomes.append(Outcome(command, "ran" if code == 0 else "failed", f"exit status {code}:\n{printed}"))
            if code == 0 and shipped_only:
                already_run[key] = command.page
            continue
        unmade |= made
    return outcomes


def unmarked(outcomes: list[Outcome]) -> list[str]:
    """The commands skipped for a missing input that do not say the input is the reader's."""
    problems = []
    for outcome in outcomes:
        if outcome.status != "missing" or outcome.command.comment.lower().startswith(MARKER):
            continue
        problems.append(f"{outcome.command.page} (block {outcome.command.block + 1}): '{outcome.command.text}' "
                        f"reads {outcome.detail}, which does not ship: use a file of examples/, or end the line "
                        f"with '# {MARKER} file' and say before the block that the reader brings it")
    return problems


def test_the_pages_show_commands_to_check():
    names = {path.relative_to(REPO_ROOT).as_posix() for path in PAGES}
    assert {"README.md", "docs/getting-started.md", "docs/guide/releasing.md"} <= names
    commands = [command for path in PAGES for command in page_commands(path) if command.is_textveil]
    assert len(commands) > 50, "fewer commands than the pages show: is the bash block parser broken?"
    for command in commands:
        assert "\\" not in command.argv, f"a continuation was not joined: {command.text}"


def test_continuations_comments_and_paths_are_read_as_a_reader_means_them():
    body = (".venv/bin/textveil evaluate --risk-corpus c50/ --utility-corpus bbc/ \\\n"
            "    --grid 8,10 --out report/   # your corpora\n"
            ".venv/bin/textveil train synth --model delta --corpus parts/known.jsonl --out models/delta\n"
            ".venv/bin/textveil pivot encode examples/writers.jsonl --out release.jsonl --key writers.key\n")
    evaluate, train, encode = block_commands("page.md", 0, body)
    assert evaluate.comment == "your corpora" and evaluate.argv[-1] == "report/"
    assert paths(evaluate.argv) == (["c50/", "bbc/"], ["report/"], [])
    assert paths(train.argv) == (["parts/known.jsonl"], ["models/delta"], [])
    assert subcommand(encode.argv) == "pivot encode"
    assert paths(encode.argv) == (["examples/writers.jsonl"], ["release.jsonl", "writers.key"], [])


@pytest.mark.parametrize("page", PAGES, ids=[path.relative_to(REPO_ROOT).as_posix() for path in PAGES])
def test_each_command_runs_on_what_ships_or_says_it_needs_your_files(page, runner, already_run, tmp_path):
    outcomes = run_page(page_commands(page), reader_folder(tmp_path), runner, already_run)
    failed = [f"'{outcome.command.text}' failed: {outcome.detail}" for outcome in outcomes
              if outcome.status == "failed"]
    problems = failed + unmarked(outcomes)
    assert not problems, "\n\n".join(problems)
