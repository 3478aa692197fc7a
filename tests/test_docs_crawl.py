"""A crawl of the built documentation site, every page of it, as a newcomer reads it.

Read from the HTML files: no user page (anything outside ``results/``) names an issue number, the
date of a run or the machine a measurement ran on; no table has headers and no rows; every page is
reachable by following links (the navigation included) from the home page. Read in headless
Chromium, one browser tab reused for every page: at 1280 px no code block is wider than its column
(long lines wrap) and no page scrolls sideways; at 390 px (a phone) no page scrolls sideways either,
wide tables scrolling inside their own box. Screenshots of four pages at both widths go to the
test's temporary folder.

The site is conftest.py's ``site`` (built once per session) served by ``served``; the browser is
conftest.py's ``chromium_browser``, so the browser test skips, saying why, where Playwright or
Chromium is missing.
"""

from __future__ import annotations

import posixpath
import re
import struct
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from conftest import NEEDS_MKDOCS

pytestmark = NEEDS_MKDOCS

WIDE, PHONE = (1280, 900), (390, 844)
# Only the measured reports may say when and on what they ran; a user page speaks to the user.
MONTH = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
DEVELOPMENT_NOTES = {
    "an issue number": re.compile(r"\b(?:issues?|PR)\s+#?\d+|(?<![\w&/])#\d{1,4}\b", re.IGNORECASE),
    "a date": re.compile(rf"\b20\d\d-[01]\d-[0-3]\d\b|\b\d{{1,2}} {MONTH},? 20\d\d\b"
                         rf"|\b{MONTH} (?:\d{{1,2}}, )?20\d\d\b"),
    "the machine": re.compile(r"\bEPYC\b|\bXeon\b|\bthis machine\b|\bthis project's [\w-]+ machine\b", re.IGNORECASE),
}
SCREENSHOTS = ("index.html", "getting-started.html", "reference/cli.html", "results/blog-short-public/report.html")


class _PageReader(HTMLParser):
    """The parts of one built page the checks read: its links, its tables' shapes and the text of
    its article (the page's own content, without the navigation every page shares)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.tables: list[tuple[int, int]] = []  # (header cells, rows holding data cells)
        self._open_tables: list[list[int]] = []
        self._row_has_data = False
        self._in_article = False
        self._skipping = 0
        self.article_text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            href = dict(attrs).get("href")
            if href:
                self.links.append(href)
        elif tag == "article":
            self._in_article = True
        elif tag in ("script", "style"):
            self._skipping += 1
        elif tag == "table":
            self._open_tables.append([0, 0])
        elif tag == "tr":
            self._row_has_data = False
        elif tag == "th" and self._open_tables:
            self._open_tables[-1][0] += 1
        elif tag == "td" and self._open_tables and not self._row_has_data:
            self._row_has_data = True
            self._open_tables[-1][1] += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "article":
            self._in_article = False
        elif tag in ("script", "style"):
            self._skipping = max(0, self._skipping - 1)
        elif tag == "table" and self._open_tables:
            self.tables.append(tuple(self._open_tables.pop()))

    def handle_data(self, data: str) -> None:
        if self._in_article and not self._skipping:
            self.article_text.append(data)


def _pages(site: Path) -> dict[str, _PageReader]:
    """Every built HTML page but the 404 page, by its path in the site, read once per module."""
    pages = {}
    for path in sorted(site.rglob("*.html")):
        name = path.relative_to(site).as_posix()
        if name == "404.html":
            continue
        reader = _PageReader()
        reader.feed(path.read_text(encoding="utf-8"))
        pages[name] = reader
    return pages


@pytest.fixture(scope="module")
def pages(site) -> dict[str, _PageReader]:
    return _pages(site)


def _target(page: str, href: str) -> str | None:
    """The site page a link on ``page`` leads to, or None for a link out of the site or to a file."""
    parts = urlsplit(href)
    if parts.scheme or parts.netloc or not parts.path:
        return None
    path = posixpath.normpath(posixpath.join(posixpath.dirname(page), unquote(parts.path)))
    if href.endswith("/") or path == ".":
        path = posixpath.join(path, "index.html")
    return path if path.endswith(".html") else None


def test_no_user_page_names_an_issue_a_run_date_or_the_machine(pages):
    found = []
    for name, page in pages.items():
        if name.startswith("results/"):
            continue
        text = " ".join("".join(page.article_text).split())
        for what, pattern in DEVELOPMENT_NOTES.items():
            for match in pattern.finditer(text):
                found.append(f"{name} names {what}: ...{text[max(0, match.start() - 60):match.end() + 20]}...")
    assert not found, "user pages should speak to the user, not of the project's history:\n" + "\n".join(found)


# A phrase of three or more words said twice across a comma or colon ("against emp at 10: against
# emp at 10: cannot be told apart"): a page's words before a quoted figure repeating what the
# figure already says, or a description that states its own direction followed by the direction.
_SAID_TWICE = re.compile(r"\b((?:\w+ ){2,}\w+)\)?[,:] \1\b", re.IGNORECASE)


def test_no_page_says_a_phrase_twice_around_a_quoted_figure(pages):
    found = []
    for name, page in pages.items():
        text = " ".join("".join(page.article_text).split())
        found += [f"{name}: ...{text[max(0, match.start() - 40):match.end() + 20]}..."
                  for match in _SAID_TWICE.finditer(text)]
    assert not found, "phrases said twice in a row:\n" + "\n".join(found)


def test_no_table_has_headers_and_no_rows(pages):
    empty = [f"{name} (table {i + 1})" for name, page in pages.items()
             for i, (headers, rows) in enumerate(page.tables) if rows == 0]
    assert not empty, "tables with headers and no rows:\n" + "\n".join(empty)


def test_every_page_is_reachable_by_links_from_the_home_page(pages):
    reached, frontier = {"index.html"}, ["index.html"]
    while frontier:
        page = frontier.pop()
        for href in pages[page].links:
            target = _target(page, href)
            if target in pages and target not in reached:
                reached.add(target)
                frontier.append(target)
    orphans = sorted(set(pages) - reached)
    assert not orphans, "pages no link leads to (the navigation included):\n" + "\n".join(orphans)


# Run in each page: at the current width, does the page scroll sideways, and which code blocks are
# wider than their box (they would scroll rather than wrap)?
MEASURE = """() => {
  const root = document.documentElement;
  const wide = [];
  for (const code of document.querySelectorAll("article pre > code")) {
    if (code.clientWidth > 0 && code.scrollWidth > code.clientWidth + 1) {
      wide.push(code.textContent.split("\\n").find(line => line.length > 0).slice(0, 60));
    }
  }
  return {scrolls: root.scrollWidth > root.clientWidth + 1, width: root.scrollWidth, wideCode: wide};
}"""


def _png_size(path: Path) -> tuple[int, int]:
    """A PNG file's width and height, from its header."""
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n"), f"{path.name} is not a PNG"
    return struct.unpack(">II", data[16:24])


def test_no_page_scrolls_sideways_and_code_fits_its_column(chromium_browser, served, site, pages, tmp_path):
    tab = chromium_browser.new_page(viewport={"width": WIDE[0], "height": WIDE[1]})
    # Figures are most of the site's bytes and cannot widen a page (the theme caps an image at its
    # column's width): they load only on the pages photographed.
    photographing = {"now": False}
    tab.route(re.compile(r".*\.(?:png|jpe?g|gif|svg|webp)$"),
              lambda route: route.continue_() if photographing["now"] else route.abort())
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    wide_code, scrolls_wide, scrolls_phone = [], [], []
    try:
        for name in pages:
            tab.set_viewport_size({"width": WIDE[0], "height": WIDE[1]})
            photographing["now"] = name in SCREENSHOTS
            tab.goto(f"{served}/{name}", wait_until="load")
            measured = tab.evaluate(MEASURE)
            wide_code += [f"{name}: {line}" for line in measured["wideCode"]]
            if measured["scrolls"]:
                scrolls_wide.append(f"{name} ({measured['width']} px)")
            if name in SCREENSHOTS:
                tab.screenshot(path=str(tmp_path / f"{name.replace('/', '_')}-{WIDE[0]}.png"))
            # the same page, resized to a phone's width: the layout follows without a reload
            tab.set_viewport_size({"width": PHONE[0], "height": PHONE[1]})
            measured = tab.evaluate(MEASURE)
            if measured["scrolls"]:
                scrolls_phone.append(f"{name} ({measured['width']} px)")
            if name in SCREENSHOTS:
                tab.screenshot(path=str(tmp_path / f"{name.replace('/', '_')}-{PHONE[0]}.png"))
    finally:
        tab.close()
    assert not wide_code, f"code blocks wider than their column at {WIDE[0]} px:\n" + "\n".join(wide_code)
    assert not scrolls_wide, f"pages that scroll sideways at {WIDE[0]} px:\n" + "\n".join(scrolls_wide)
    assert not scrolls_phone, f"pages that scroll sideways at {PHONE[0]} px:\n" + "\n".join(scrolls_phone)
    assert not errors, f"pages raised: {errors}"
    for name in SCREENSHOTS:
        for width, height in (WIDE, PHONE):
            shot = tmp_path / f"{name.replace('/', '_')}-{width}.png"
            assert shot.is_file() and shot.stat().st_size > 10_000, f"{shot.name} is missing or blank"
            assert _png_size(shot) == (width, height), f"{shot.name} is {_png_size(shot)}, not {width} x {height}"


def test_the_search_index_ranks_the_guides_above_the_reports(site):
    import json

    boosts: dict[str, set[float]] = {}
    for entry in json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))["docs"]:
        boosts.setdefault(entry["location"].split("#")[0], set()).add(entry.get("boost", 1.0))
    reports = {page: boost for page, boost in boosts.items() if page.startswith("results/")}
    assert reports and all(boost == {0.3} for boost in reports.values()), "every results page is ranked low"
    assert boosts["getting-started.html"] == {3.0} and boosts["guide/releasing.html"] == {2.0}


@pytest.mark.parametrize("query", ["how to install", "install"])
def test_search_finds_getting_started_before_any_report(chromium_browser, served, query):
    """docs/hooks/search_boost.py ranks the guides above the reports: a newcomer's question about
    installing lands on Getting started, not on a report that mentions an install."""
    tab = chromium_browser.new_page(viewport={"width": WIDE[0], "height": WIDE[1]})
    try:
        tab.goto(f"{served}/index.html", wait_until="load")
        tab.locator("input.md-search__input").fill(query)
        # the search index loads in a web worker: its first answer is the one wait this test needs
        first = tab.locator("li.md-search-result__item a").first
        first.wait_for()
        href = first.get_attribute("href")
    finally:
        tab.close()
    assert href is not None and urlsplit(href).path.endswith("/getting-started.html"), (
        f"searching {query!r} first finds {href}, not Getting started")
