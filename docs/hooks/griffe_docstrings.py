"""A griffe extension for the API reference: textveil's docstrings, written for readers of the
source and for doctest, made into Markdown that mkdocstrings renders cleanly.

The docstrings are plain prose in reStructuredText habits: ``double backticks``, Sphinx roles
(``:class:`~textveil.x.Y```), ``>>>`` examples in the running text, and a few NumPy-like
``Parameters`` blocks whose entries are ``name:`` lines. Rendered as Markdown unchanged, a
``>>>`` line is a blockquote three levels deep and a role is literal text. This extension
rewrites each docstring's text once, before it is parsed (nothing in ``textveil/`` changes):

- a run of ``>>>`` lines and their expected output becomes a ``pycon`` code block;
- ``:role:`~a.b.C``` becomes the code span ``C`` (``a.b.C`` without the tilde);
- a ``Parameters`` block (a title underlined with dashes, then ``name:`` lines with indented
  descriptions) becomes a bold title and a bullet list;
- an asterisk between two words (``epsilon*N*E``) is escaped, so it stays a product.

mkdocs.yml loads it with ``extensions: [docs/hooks/griffe_docstrings.py]``.
"""

from __future__ import annotations

import re
from typing import Any

from griffe import Extension, Object

ROLE = re.compile(r":(?:py:)?(?:class|func|mod|meth|data|attr|exc|obj|const|type):`(~?)([^`]+)`")
FENCE = re.compile(r"^\s*(```|~~~)")
ENTRY = re.compile(r"^([A-Za-z_*][\w*, ]*):\s*(.*)$")
PRODUCT = re.compile(r"(?<=[\w)])\*(?=[\w(])")


def _role(match: re.Match[str]) -> str:
    tilde, target = match.groups()
    target = target.strip()
    if target.startswith("!"):
        target = target[1:]
    if tilde:
        target = target.split(".")[-1]
    return f"``{target}``"


def _doctest_blocks(lines: list[str]) -> list[str]:
    """Wrap each run of ``>>>`` lines (with their expected output, up to a blank line) in a fence."""
    out: list[str] = []
    in_fence = False
    index = 0
    while index < len(lines):
        line = lines[index]
        if FENCE.match(line):
            in_fence = not in_fence
            out.append(line)
            index += 1
            continue
        if not in_fence and line.lstrip().startswith(">>>"):
            indent = line[: len(line) - len(line.lstrip())]
            block = []
            while index < len(lines) and lines[index].strip():
                text = lines[index]
                block.append(text[len(indent):] if text.startswith(indent) else text.lstrip())
                index += 1
            if out and out[-1].strip():
                out.append("")
            out.append(f"{indent}```pycon")
            out.extend(f"{indent}{text}" if text else "" for text in block)
            out.append(f"{indent}```")
            continue
        out.append(line)
        index += 1
    return out


def _parameter_blocks(lines: list[str]) -> list[str]:
    """``Parameters`` / ``----------`` / ``name:`` entries -> a bold title and a bullet list."""
    out: list[str] = []
    count = len(lines)
    index = 0
    while index < count:
        line = lines[index]
        underline = lines[index + 1].strip() if index + 1 < count else ""
        if not (line.strip() in {"Parameters", "Attributes"} and underline and set(underline) == {"-"}):
            out.append(line)
            index += 1
            continue
        out.extend([f"**{line.strip()}**", ""])
        index += 2
        while True:
            start = index
            while start < count and not lines[start].strip():
                start += 1
            entry = ENTRY.match(lines[start]) if start < count else None
            if entry is None or lines[start][:1].isspace():
                break
            names = ", ".join(f"``{name.strip()}``" for name in entry.group(1).split(","))
            words = [entry.group(2)] if entry.group(2) else []
            index = start + 1
            while index < count:
                if lines[index][:1].isspace() and lines[index].strip():
                    words.append(lines[index].strip())
                    index += 1
                elif not lines[index].strip() and index + 1 < count and lines[index + 1][:1].isspace() \
                        and lines[index + 1].strip():
                    index += 1
                else:
                    break
            out.append(f"- {names}: {' '.join(words)}".rstrip())
        out.append("")
    return out


def rewrite(text: str) -> str:
    """The docstring ``text`` as Markdown (see the module's docstring)."""
    lines = text.splitlines()
    lines = _doctest_blocks(lines)
    lines = _parameter_blocks(lines)
    rewritten: list[str] = []
    in_fence = False
    for line in lines:
        if FENCE.match(line):
            in_fence = not in_fence
        rewritten.append(line if in_fence else _products(ROLE.sub(_role, line)))
    return "\n".join(rewritten)


def _products(line: str) -> str:
    """``epsilon*N*E`` outside code spans keeps its asterisks (Markdown would read ``*N*`` as emphasis)."""
    parts = re.split(r"(`+[^`]*`+)", line)
    return "".join(part if part.startswith("`") else PRODUCT.sub(r"\\*", part) for part in parts)


class MarkdownDocstrings(Extension):
    """Rewrite every object's docstring once the tree is loaded (see :func:`rewrite`)."""

    def on_object(self, *, obj: Object, **kwargs: Any) -> None:
        _rewrite_once(obj)

    def on_package(self, *, pkg: Object, **kwargs: Any) -> None:
        _rewrite_once(pkg)  # the top-level package is not passed to on_object


def _rewrite_once(obj: Object) -> None:
    if obj.docstring is not None and not getattr(obj.docstring, "_textveil_rewritten", False):
        obj.docstring.value = rewrite(obj.docstring.value)
        obj.docstring._textveil_rewritten = True  # type: ignore[attr-defined]
