"""MkDocs hook: mark each table cell short or long, so a wide table stays readable.

A browser squeezes every column of a wide table into the text column, so a risk cell such as
"84.7%: char3-svm (release-trained)" or a pair of figures "0.153 / 0.181" breaks over three or four
lines. CSS cannot see how long a cell's text is, so this hook marks it: a cell of at most
:data:`SHORT` characters gets the class ``tv-short`` (docs/stylesheets/extra.css keeps it on one
line), a longer one ``tv-long`` (a minimum width, so prose does not end up a word per line). A table
wider than the column then scrolls inside its own box instead. mkdocs.yml loads it (``hooks:``).
"""

from __future__ import annotations

import html
import re
from typing import Any

SHORT = 40  # characters: a risk cell with its attack and training, a figure with its spread
CELL = re.compile(r"<(t[dh])((?:\s[^>]*)?)>(.*?)</\1>", re.DOTALL)
TAG = re.compile(r"<[^>]+>")
CLASS = re.compile(r'\sclass="([^"]*)"')


def mark_cells(page_html: str) -> str:
    """``page_html`` with the class ``tv-short`` or ``tv-long`` added to every table cell.

    >>> mark_cells('<td>0.153 / 0.181</td><td align="left"><code>x</code></td>')
    '<td class="tv-short">0.153 / 0.181</td><td align="left" class="tv-short"><code>x</code></td>'
    >>> mark_cells('<th class="a">' + "word " * 10 + "</th>").startswith('<th class="a tv-long">')
    True
    """

    def mark(match: re.Match[str]) -> str:
        tag, attributes, content = match.groups()
        if "<table" in content:  # a table inside a cell: the regular expression cannot pair its tags
            return match.group(0)
        text = " ".join(html.unescape(TAG.sub("", content)).split())
        kind = "tv-short" if len(text) <= SHORT else "tv-long"
        if CLASS.search(attributes):
            attributes = CLASS.sub(lambda found: f' class="{found.group(1)} {kind}"', attributes, count=1)
        else:
            attributes += f' class="{kind}"'
        return f"<{tag}{attributes}>{content}</{tag}>"

    return CELL.sub(mark, page_html)


def on_page_content(page_html: str, page: Any, config: Any, files: Any) -> str:
    """Mark the cells of the page's tables (its content only: the theme adds no tables around it)."""
    return mark_cells(page_html) if "<t" in page_html else page_html
