"""MkDocs hook: measured figures quoted from the committed results at build time, and a build that
fails on a figure typed by hand.

A page quotes a figure of a run committed under ``docs/results/FOLDER/results.json`` (a
``textveil compare`` comparison, a ``textveil evaluate`` sweep, or a pilot's table of rows) with a
placeholder, which this hook replaces by the value read from that file. The lookup is the library's:
:mod:`textveil.evaluation.quoted_figures` (one figure; its docstring has every variant),
:mod:`textveil.evaluation.quoted_tables` (tables, and "Which mechanism?"'s rule and answers),
:mod:`textveil.evaluation.quoted_rows` (a pilot's row) and
:mod:`textveil.evaluation.quoted_pages` (a page filled and checked). Any ``{{ ... }}`` outside
code is a placeholder; in a code span or block it is text, left as written::

    {{ fig blog-cross-topic "emp" 10 risk }}                          -> 0.047
    {{ fig blog-cross-topic "emp" 10 risk-interval }}                 -> 0.047 [0.023, 0.093]
    {{ fig blog-cross-topic "paraphrase[score=public-base]" 8 fluency }} -> 0.80
    {{ fig frontier-blog-short "paraphrase" 30 similarity }}          (also describing, length, any
                                                                      utility key of the results)
    {{ fig blog-cross-topic "paraphrase" 30 content-only }}           (topic-svm, best over trainings)
    {{ fig blog-cross-topic "paraphrase[score=public-base]" 8 epsilon-per-document }}  (budget median)
    {{ fig blog-cross-topic unmodified risk }}   {{ fig c50-documents chance }}   {{ ... floor }}
    {{ fig compare-blog-short "emp" 15 risk % }} -> 85%            (".2": two decimals)
    {{ fig_table compare-c50 risk similarity:.3 fluency }}   every release, a row each
    {{ best_under compare-blog-short similarity }}           "at a risk of at most r" table
    {{ answer_table }}                                        "Which mechanism?"'s rule and answers
    {{ row select-write-scale similarity-interval corpus="C50 test articles" scale="shipped (median)" epsilon=30 }}
                                                              a pilot's row (filters: one row matches)
    {{ plain 0.40 }}                                       a number that is not a measured figure

A release is its mechanism, with its options in brackets where it has any (``"paraphrase"`` is
the one without), and its setting: the swept parameter's value, or ``default``.

**The build fails** (a PluginError: one line per problem, naming the page, the placeholder and
what is missing) where a placeholder names a results folder, a release or a measure that does not
exist, and where a page quotes a measured figure by hand. **The rule for figures typed by hand**,
on every page outside ``docs/results/`` (whose reports are the measured record itself):

- The page is read in blocks: a paragraph, a list item, a heading, and a table together with the
  paragraph just above it (its caption).
- A block *cites a measured run* when it holds a ``fig`` or ``row`` placeholder, or links to or
  names ``results/FOLDER`` where FOLDER holds a results.json that placeholders can quote (a
  comparison's releases, a sweep's points, a pilot's rows; or a folder of such runs, such as
  ``results/pii-risk/``).
- In such a block, a decimal number (``0.047``, ``14.4``, ``0.80``) is an error unless it is a
  placeholder. Not figures, never flagged: code spans and code blocks, version-like numbers
  (``0.5.0``), link targets, and a number right after a setting word (epsilon, temperature, width,
  threshold), a bound (at most, at least, below, above, under, over; also "under a risk of 0.10")
  or ``=``, ``<``, ``>``. A number the page
  states itself where a run is cited (a threshold, a rounded or derived value, a figure of a run
  with no results.json) is written ``{{ plain 0.40 }}``, which renders as ``0.40``.

Counts and whole percentages are not checked (``one writer in four``, ``93%``); quote them with
``%`` where they come from a run. README.md is not part of the site and is not checked.

``{{ answer_table }}`` ("Which mechanism?") states its own rule above the table
(:data:`textveil.evaluation.quoted_tables.ANSWER_RULE`) and reads each row from the comparison
:data:`~textveil.evaluation.quoted_tables.ANSWER_ROWS` names for it, citing that comparison.
mkdocs.yml loads this hook (``hooks:``); docs/hooks/ is excluded from the site itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

from textveil.evaluation.quoted_pages import ResultsLibrary, fill_page, hand_figures

RESULTS = "results"  # docs/results/: the committed runs
_state: dict[str, Any] = {}


def check_page(markdown: str, page: str, library: ResultsLibrary, quotable: set[str]) -> tuple[str, list[str]]:
    """``markdown`` with its placeholders filled, and one line per problem (an unknown folder,
    release or measure; a figure typed by hand on a page outside results/)."""
    filled, problems = fill_page(markdown, lambda body: library.fill(body, page))
    lines = [f"{page}: {placeholder}: {missing}" for placeholder, missing in problems]
    if not page.startswith(f"{RESULTS}/"):
        lines += [f"{page}: line {found.line}: {found.number} is typed by hand in a block that cites a measured "
                  f"run (\"...{found.context}...\"): quote it with {{{{ fig ... }}}}, or write "
                  f"{{{{ plain {found.number} }}}} if it is not a measured figure"
                  for found in hand_figures(markdown, quotable)]
    return filled, lines


def on_config(config: Any) -> Any:
    library = ResultsLibrary(Path(config["docs_dir"]) / RESULTS)
    _state.update(library=library, quotable=library.quotable())
    return config


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if "library" not in _state:
        on_config(config)
    filled, problems = check_page(markdown, page.file.src_uri, _state["library"], _state["quotable"])
    if problems:
        raise PluginError("\n".join(problems))
    return filled
