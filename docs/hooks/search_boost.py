"""MkDocs hook: rank the guides above the measured reports in the site's search.

Over sixty pages under ``results/`` are reports full of the same words a newcomer searches for
("install", "release", "epsilon"), so by word counts alone they outrank the pages that teach. This
hook sets each page's ``search.boost`` metadata, which Material's search plugin copies into
``search/search_index.json`` as the entry's ``boost``: Getting started highest, the user guide
high, every results page (and the benchmarks page beside them) low. A page that sets
``search: boost:`` in its own front matter keeps its value. mkdocs.yml loads it (``hooks:``).
"""

from __future__ import annotations

from typing import Any

GETTING_STARTED = "getting-started.md"
GUIDE_SECTION = "User guide"  # the navigation's section title in mkdocs.yml
RESULTS_SECTION = "Results"
BOOSTS = {"getting started": 3.0, "guide": 2.0, "results": 0.3}


def _top_section(page: Any) -> str | None:
    """The title of the top-level navigation section that holds ``page``, if any."""
    ancestors = list(getattr(page, "ancestors", None) or [])
    return ancestors[-1].title if ancestors else None


def page_boost(src_uri: str, top_section: str | None) -> float | None:
    """The search boost of the page at ``src_uri`` (its path under docs/), or None to leave it at 1.

    >>> page_boost("getting-started.md", None), page_boost("guide/budgets.md", "User guide")
    (3.0, 2.0)
    >>> page_boost("results/pii/rules.md", None), page_boost("benchmarks.md", "Results")
    (0.3, 0.3)
    >>> page_boost("mechanisms/emp.md", "Mechanisms") is None
    True
    """
    if src_uri == GETTING_STARTED:
        return BOOSTS["getting started"]
    # results pages off the navigation (a paper's per-mechanism reports) have no section: their path says it
    if src_uri.startswith("results/") or top_section == RESULTS_SECTION:
        return BOOSTS["results"]
    if top_section == GUIDE_SECTION or src_uri.startswith("guide/"):
        return BOOSTS["guide"]
    return None


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Set ``page.meta["search"]["boost"]`` before the search plugin reads it (``on_page_context``)."""
    boost = page_boost(page.file.src_uri, _top_section(page))
    if boost is not None:
        search = page.meta.get("search")
        if not isinstance(search, dict):
            search = page.meta["search"] = {}
        search.setdefault("boost", boost)
    return markdown
