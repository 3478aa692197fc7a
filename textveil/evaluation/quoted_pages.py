"""A page's placeholders filled from the committed results, and the figures it types by hand.

Any ``{{ ... }}`` outside code is a placeholder: ``fig`` (:mod:`textveil.evaluation.quoted_figures`),
``fig_table``, ``best_under`` and ``answer_table`` (:mod:`textveil.evaluation.quoted_tables`), ``row``
(a pilot's table of rows: :mod:`textveil.evaluation.quoted_rows`), or
``{{ plain 0.40 }}``, a number the page states itself, written as it is. A placeholder in a code
span or a code block is text, left as written.

**Figures typed by hand** (:func:`hand_figures`): on a page outside ``docs/results/``, a *block*
(a paragraph, a list item, a heading, or a table together with the paragraph just above it) that
cites a measured run (links to, or names, ``results/FOLDER`` where FOLDER holds a ``results.json``
with a comparison's releases, a sweep's points or a pilot's rows, or a folder of such runs; or
holds a ``fig`` or ``row`` placeholder) may hold no bare decimal number (``0.047``, ``14.4``)
outside code: each must be a placeholder. Not flagged: numbers in code spans and code blocks,
version-like numbers (``0.5.0``), link targets, a number right after a setting word (epsilon,
temperature, width, threshold; at most, at least, below, above, under, over, also as "below a risk
of"; ``=``, ``<``, ``>``) and a number written ``{{ plain 0.40 }}`` (a threshold, a rounded or derived value, a figure of a run
with no results.json).

>>> text = "On [all users](results/cmp/README.md) emp at epsilon 0.5 names 0.047 (`0.1`), under a risk of 0.1."
>>> [found.number for found in hand_figures(text, {"cmp"})]
['0.047']
>>> hand_figures("Version 0.5.0 names 0.047.", {"cmp"})  # cites nothing: not checked
[]
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textveil.evaluation.quoted_figures import parse_figure, render_figure
from textveil.evaluation.quoted_releases import FigureError
from textveil.evaluation.quoted_rows import is_row_table, parse_row, render_row
from textveil.evaluation.quoted_tables import ANSWER_ROWS, answer_table, best_under_table, comparison_table

PLACEHOLDER = re.compile(r"\{\{\s*(?P<body>[^{}]*?)\s*\}\}")
DIRECTIVES = ("fig", "fig_table", "best_under", "answer_table", "row", "plain")
CITING_DIRECTIVES = ("fig", "row")
"""Placeholders that quote one run's figure: a block holding one cites that run."""


def is_quotable(results: Any) -> bool:
    """Whether a results.json holds what a placeholder reads: a comparison's releases, a sweep's
    points with attack results (a summary's points with their risk too), or a pilot's rows.

    >>> is_quotable({"releases": []}), is_quotable({"points": [{"attacks": {"svm": {"top1": 0.5}}}]})
    (True, True)
    >>> is_quotable({"rows": [{"epsilon": 10, "similarity": 0.1}]})
    True
    >>> is_quotable({"sentences": 120, "per_type": {}})  # the entity stage's recall: no release
    False
    """
    if not isinstance(results, dict):
        return False
    if isinstance(results.get("releases"), list) or is_row_table(results):
        return True
    return any(isinstance(point, dict) and isinstance(point.get("attacks"), dict)
               and (isinstance(point.get("risk"), (dict, int, float))
                    or all(isinstance(result, dict) for result in point["attacks"].values()))
               for point in results.get("points") or [])


class ResultsLibrary:
    """The committed results under one folder (``docs/results``), each ``results.json`` read once.

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / "cmp").mkdir()
    >>> _ = (root / "cmp" / "results.json").write_text('{"chance": 0.02, "releases": []}')
    >>> library = ResultsLibrary(root)
    >>> library.fill("fig cmp chance"), library.quotable()
    ('0.020', {'cmp'})
    >>> library.fill("fig nothing chance")
    Traceback (most recent call last):
    ...
    textveil.evaluation.quoted_releases.FigureError: no results folder "nothing" (no nothing/results.json)
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._read: dict[str, dict[str, Any]] = {}

    def results(self, folder: str) -> dict[str, Any]:
        """The results.json of ``folder`` (relative to the root), read once."""
        folder = folder.strip("/")
        if folder not in self._read:
            path = self.root / folder / "results.json"
            if ".." in Path(folder).parts or not path.is_file():
                raise FigureError(f'no results folder "{folder}" (no {folder}/results.json)')
            try:
                self._read[folder] = json.loads(path.read_text(encoding="utf-8"))
            except ValueError as error:
                raise FigureError(f"{folder}/results.json is not JSON ({error})") from None
        return self._read[folder]

    def quotable(self) -> set[str]:
        """The folders whose results.json placeholders can quote (a comparison's releases or a
        sweep's points), relative to the root."""
        found = set()
        for path in sorted(self.root.rglob("results.json")):
            folder = path.parent.relative_to(self.root).as_posix()
            try:
                results = self.results(folder)
            except FigureError:
                continue
            if is_quotable(results):
                found.add(folder)
        return found

    def page_link(self, folder: str, page: str) -> str:
        """The link from ``page`` (a path in the docs folder) to ``folder``'s page: its README.md,
        else its report.md."""
        for name in ("README.md", "report.md"):
            if (self.root / folder / name).is_file():
                target = f"{self.root.name}/{folder}/{name}"
                depth = page.count("/")
                return "../" * depth + target
        raise FigureError(f'results folder "{folder}" has no README.md or report.md to cite')

    def fill(self, body: str, page: str = "index.md") -> str:
        """The text of one placeholder (its body: what lies between the braces), for ``page``."""
        directive = body.split(None, 1)[0] if body.split() else ""
        if directive == "fig":
            figure = parse_figure(body)
            return render_figure(self.results(figure.folder), figure)
        if directive == "row":
            query = parse_row(body)
            return render_row(self.results(query.folder), query)
        if directive == "plain":
            number = body.split()[1:]
            if len(number) != 1 or not re.fullmatch(r"[-+]?\d[\d,]*(?:\.\d+)?", number[0]):
                raise FigureError('"plain" takes one number: {{ plain 0.40 }}')
            return number[0]
        if directive == "fig_table":
            tokens = body.split()[1:]
            if len(tokens) < 2:
                raise FigureError("a table is {{ fig_table FOLDER MEASURE... }}")
            return comparison_table(self.results(tokens[0]), tokens[1:])
        if directive == "best_under":
            tokens = body.split()[1:]
            if len(tokens) not in (1, 2):
                raise FigureError("{{ best_under FOLDER [MEASURE] }}")
            return best_under_table(self.results(tokens[0]), *tokens[1:])
        if directive == "answer_table":
            if body.split()[1:]:
                raise FigureError("{{ answer_table }} takes nothing")
            folders = [row.folder for row in ANSWER_ROWS]
            return answer_table({folder: self.results(folder) for folder in folders},
                                {folder: self.page_link(folder, page) for folder in folders})
        raise FigureError(f'unknown placeholder "{directive}" (one of: {", ".join(DIRECTIVES)})')


FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})")
COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
LINK_TARGET = re.compile(r"\]\(([^)\s]*)[^)]*\)")
ATTRIBUTES = re.compile(r"\{[#.:][^}]*\}")
HTML_TAG = re.compile(r"<[^>\n]+>")
NUMBER = re.compile(r"(?<![\w.\-/])\d+\.\d+(?![\w.\-/]*\d)(?![\w])")
SETTING_BEFORE = re.compile(r"(?:\b(?:epsilon|temperatures?|width|thresholds?)"
                            r"|\b(?:at most|at least|below|above|under|over)(?:\s+(?:a|an|the))?(?:\s+[\w-]+\s+of)?"
                            r"|[=<>≤≥])\s*$", re.IGNORECASE)
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+\.)\s+")
RESULTS_PATH = re.compile(r"results/([\w./-]+?)(?:/[\w.-]+\.(?:md|html|json|png)|/)?(?=[)#\s`'\"]|$)")


def _code_ranges(text: str) -> list[tuple[int, int]]:
    """Where ``text``'s fenced code blocks and code spans lie (placeholders there stay as written)."""
    ranges: list[tuple[int, int]] = []
    offset, start, fence = 0, 0, None
    for line in text.splitlines(keepends=True):
        found = FENCE.match(line)
        if fence is None and found:
            fence, start = found.group(2)[0] * len(found.group(2)), offset
        elif fence is not None and found and found.group(2).startswith(fence):
            ranges.append((start, offset + len(line)))
            fence = None
        offset += len(line)
    if fence is not None:
        ranges.append((start, offset))
    for a, b in _gaps(ranges, len(text)):  # code spans, in the text between the code blocks
        ranges += [(a + m.start(), a + m.end()) for m in CODE_SPAN.finditer(text[a:b])]
    return sorted(ranges)


def _gaps(ranges: list[tuple[int, int]], length: int) -> list[tuple[int, int]]:
    """The stretches of a text of ``length`` characters between ``ranges``."""
    gaps, last = [], 0
    for a, b in sorted(ranges):
        gaps.append((last, a))
        last = b
    gaps.append((last, length))
    return gaps


def placeholders(text: str) -> list[re.Match[str]]:
    """The placeholders of a page, outside code (a ``{{`` in a code span or block is text).

    >>> [m.group("body") for m in placeholders("{{ fig a chance }} and `{{ fig b chance }}`")]
    ['fig a chance']
    """
    code = _code_ranges(text)
    return [m for m in PLACEHOLDER.finditer(text)
            if m.group("body").split(None, 1)[:1] and not any(a <= m.start() < b for a, b in code)]


def fill_page(text: str, fill: Callable[[str], str]) -> tuple[str, list[tuple[str, str]]]:
    """``text`` with every placeholder replaced by ``fill(body)``, and the problems: (placeholder,
    what is missing) for each :class:`FigureError` (the placeholder is then left as written).

    >>> library = ResultsLibrary(Path("docs/results"))  # relative: the example reads nothing
    >>> fill_page("{{ plain 0.40 }} and {{ fig nowhere chance }}", library.fill)
    ('0.40 and {{ fig nowhere chance }}', [('{{ fig nowhere chance }}', 'no results folder "nowhere" (no nowhere/results.json)')])
    """
    problems: list[tuple[str, str]] = []
    pieces, last = [], 0
    for found in placeholders(text):
        try:
            value = fill(found.group("body"))
        except FigureError as error:
            problems.append((found.group(0), str(error)))
            value = found.group(0)
        pieces += [text[last:found.start()], value]
        last = found.end()
    pieces.append(text[last:])
    return "".join(pieces), problems


@dataclass(frozen=True)
class HandFigure:
    """A decimal number typed by hand where a page cites a measured run."""

    line: int
    number: str
    context: str


def _blocks(text: str) -> list[tuple[int, list[str], str]]:
    """``(first line, lines, kind)`` of each block of a page outside code and comments: a
    paragraph or a list item (``prose``), a heading, or a table (``table``) together with the
    paragraph just above it, its caption, where there is one."""
    text = COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    blocks: list[tuple[int, list[str], str]] = []
    current: list[str] = []
    first, kind, fence = 0, "prose", None

    def close() -> None:
        nonlocal current
        if current:
            blocks.append((first, current, kind))
        current = []

    for number, line in enumerate(text.splitlines(), 1):
        found = FENCE.match(line)
        if fence is not None:
            if found and found.group(2).startswith(fence):
                fence = None
            continue
        stripped = line.strip()
        if found:
            close()
            blocks.append((number, [], "code"))  # nothing merges across a code block
            fence = found.group(2)[0] * len(found.group(2))
        elif not stripped:
            close()
        elif stripped.startswith("#"):
            close()
            blocks.append((number, [line], "heading"))
        elif stripped.startswith("|"):
            if kind != "table":
                if current:  # a caption right above the table, without a blank line
                    kind = "table"
                else:
                    first, kind = number, "table"
            current.append(line)
        else:
            if kind == "table" or LIST_ITEM.match(line):
                close()
            if not current:
                first, kind = number, "prose"
            current.append(line)
    close()
    merged: list[tuple[int, list[str], str]] = []
    for block in blocks:
        if block[2] == "table" and merged and merged[-1][2] == "prose":
            caption = merged.pop()
            gap = [""] * (block[0] - caption[0] - len(caption[1]))  # blank lines: lines keep their numbers
            block = (caption[0], caption[1] + gap + block[1], "table")
        merged.append(block)
    return [block for block in merged if block[2] != "code"]


def cites(text: str, quotable: Collection[str]) -> bool:
    """Whether a block cites a measured run: it holds a ``fig`` or ``row`` placeholder, or links to
    or names ``results/FOLDER`` where FOLDER (or, for a folder of several runs, one folder in it) is quotable.

    >>> cites("see [the report](../results/cmp/report.md)", {"cmp"}), cites("results/pii/report.md", {"cmp"})
    (True, False)
    >>> cites("[the effect](results/pii-risk/README.md)", {"pii-risk/blog-on"})
    True
    """
    if any(m.group("body").split()[0] in CITING_DIRECTIVES
           for m in PLACEHOLDER.finditer(text) if m.group("body").split()):
        return True
    for found in RESULTS_PATH.finditer(text):
        folder = found.group(1).rstrip(".").strip("/")
        if folder in quotable or any(q.startswith(folder + "/") and q.count("/") == folder.count("/") + 1
                                     for q in quotable):
            return True
    return False


def _mask(text: str) -> str:
    """``text`` with what is not prose blanked out, lengths and line breaks kept: placeholders,
    code spans, link targets, attribute lists and HTML tags."""
    def blank(found: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", found.group(0))

    for pattern in (PLACEHOLDER, CODE_SPAN, ATTRIBUTES, HTML_TAG):
        text = pattern.sub(blank, text)
    return LINK_TARGET.sub(lambda found: "]" + blank(found)[1:], text)


def hand_figures(text: str, quotable: Collection[str]) -> list[HandFigure]:
    """The decimal numbers typed by hand in the blocks of a page that cite a measured run (the
    rule of the module's docstring); ``quotable`` are the results folders placeholders can quote."""
    found = []
    for first, lines, _ in _blocks(text):
        block = "\n".join(lines)
        if not cites(block, quotable):
            continue
        masked = _mask(block)
        for number in NUMBER.finditer(masked):
            if SETTING_BEFORE.search(masked[:number.start()]):
                continue
            line = block.count("\n", 0, number.start())
            context = " ".join(block[max(0, number.start() - 50):number.end() + 20].split())
            found.append(HandFigure(first + line, number.group(0), context))
    return found
