"""The budget a set of releases was made at, to read beside the risk an attack measured on them.

A comparison judges each (mechanism, setting) by the risk its releases leave, and a reader weighs
that risk against what the mechanism promises: for an epsilon-DP mechanism the epsilon of each
whole document (which grows with the document: a rewriter spends epsilon * L per unit), for a
metric-privacy mechanism (emp) the epsilon per token and the metric it is stated under (no single
number bounds a document: the bound scales with the distance between two texts).
:class:`ReleaseBudget` gathers this from the releases' own Guarantees (every document's
``document_epsilon``, never recomputed from the mechanism's parameters), and :meth:`ReleaseBudget.figures`
gives what results hold: the median and largest epsilon per document over the judged texts, and
the per-unit epsilon with its unit and metric.

:func:`per_document_words` and :func:`per_unit_words` write the figures as a report's cells; they
read results written before the figures existed too ("not recorded"), and a mechanism whose kind
of guarantee has no epsilon says so whether or not its figures were recorded.

>>> from textveil.privacy.guarantee import Guarantee
>>> dp = [Guarantee("gen", 2.0, kind="dp", composition="sequential", words_protected=n) for n in (3, 5, 10)]
>>> figures = ReleaseBudget.of(dp).figures()
>>> figures["per_document"], figures["per_unit"], figures["unit"]
({'median': 10.0, 'largest': 20.0, 'texts': 3}, 2.0, 'token')
>>> per_document_words(figures), per_unit_words(figures)
('10 (largest 20)', '2 per token')
>>> emp = ReleaseBudget.of([Guarantee("emp", 10.0, "Euclidean distance between token vectors", 4)]).figures()
>>> per_document_words(emp), per_unit_words(emp)
('no bound per document (metric privacy: see per unit)', '10 per token, Euclidean distance between token vectors')
>>> per_document_words(None), per_document_words(None, "none")
('not recorded', 'no bound')
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from textveil.privacy.guarantee import Guarantee

NOT_RECORDED = "not recorded"
"""A cell whose figures the results do not hold (written before they were recorded, or releases
read back from a cache entry without them)."""

WITHOUT_EPSILON: dict[str, str] = {
    "none": "no bound",
    "l-privacy": "no epsilon (l-privacy)",
}
"""The kinds of guarantee that state no epsilon at all, and how a report's cells say so."""


@dataclass(frozen=True)
class ReleaseBudget:
    """The budget of a set of releases of one mechanism at one setting.

    ``kind``, ``epsilon`` (per unit), ``unit`` and ``metric`` are the first Guarantee's (every
    release of one mechanism at one setting shares them); ``document_epsilons`` holds each
    release's own epsilon per document, for epsilon-DP only (empty for the other kinds: metric
    privacy has no epsilon per document, and no guarantee none at all).
    """

    kind: str
    epsilon: float | None = None
    unit: str = ""
    metric: str = ""
    document_epsilons: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        # a list from JSON becomes a tuple, so a budget read back equals the one written
        object.__setattr__(self, "document_epsilons", tuple(float(e) for e in self.document_epsilons))

    @classmethod
    def of(cls, guarantees: Iterable[Guarantee]) -> ReleaseBudget | None:
        """The budget of the releases whose Guarantees are ``guarantees``; None for no release."""
        first: Guarantee | None = None
        documents: list[float] = []  # gathered once, not combined release by release (a corpus is long)
        for guarantee in guarantees:
            first = first or guarantee
            if guarantee.kind == "dp" and guarantee.document_epsilon is not None:
                documents.append(guarantee.document_epsilon)
        if first is None:
            return None
        return cls(first.kind, first.epsilon, first.unit, first.metric, tuple(documents))

    def combine(self, other: ReleaseBudget) -> ReleaseBudget:
        """This set and ``other`` as one (repeated releases of one point): the documents of both.

        >>> one, two = ReleaseBudget("dp", 1.0, "token", "", (3.0,)), ReleaseBudget("dp", 1.0, "token", "", (5.0,))
        >>> one.combine(two).document_epsilons
        (3.0, 5.0)
        """
        return ReleaseBudget(self.kind, self.epsilon, self.unit, self.metric,
                             self.document_epsilons + other.document_epsilons)

    def figures(self) -> dict[str, Any]:
        """What results hold: ``kind``; ``per_document``, the median and largest epsilon per document
        over the texts and how many texts (None without an epsilon per document); ``per_unit``, the
        epsilon per ``unit`` (None without one); ``metric``, the metric of metric privacy (None for
        the other kinds)."""
        without = figures_of_kind(self.kind)  # a kind with no epsilon has no figure whatever was released
        if without is not None:
            return without
        documents = self.document_epsilons
        return {
            "kind": self.kind,
            "per_document": {"median": float(statistics.median(documents)), "largest": max(documents),
                             "texts": len(documents)} if documents else None,
            "per_unit": self.epsilon,
            "unit": self.unit or None,
            "metric": (self.metric or None) if self.kind == "metric" else None,
        }

    def to_dict(self) -> dict[str, Any]:
        """The budget as plain data (a release cache entry's ``budget``)."""
        return {"kind": self.kind, "epsilon": self.epsilon, "unit": self.unit, "metric": self.metric,
                "document_epsilons": list(self.document_epsilons)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ReleaseBudget:
        """A budget from :meth:`to_dict`'s data.

        >>> budget = ReleaseBudget("dp", 2.0, "token", "", (4.0, 6.0))
        >>> ReleaseBudget.from_dict(budget.to_dict()) == budget
        True
        """
        return cls(str(data["kind"]), data.get("epsilon"), str(data.get("unit") or ""), str(data.get("metric") or ""),
                   tuple(data.get("document_epsilons") or ()))


def combined_figures(budgets: Iterable[ReleaseBudget | None]) -> dict[str, Any] | None:
    """The figures of several sets of releases of one point taken together (its repeated releases);
    None where any set's budget is not known (figures over part of the texts would mislead).

    >>> figures = combined_figures([ReleaseBudget("dp", 1.0, "token", "", (2.0,)),
    ...                             ReleaseBudget("dp", 1.0, "token", "", (4.0,))])
    >>> figures["per_document"], figures["per_unit"]
    ({'median': 3.0, 'largest': 4.0, 'texts': 2}, 1.0)
    >>> combined_figures([ReleaseBudget("dp", 1.0), None]) is None
    True
    """
    combined: ReleaseBudget | None = None
    for budget in budgets:
        if budget is None:
            return None
        combined = budget if combined is None else combined.combine(budget)
    return None if combined is None else combined.figures()


def figures_of_kind(kind: str | None) -> dict[str, Any] | None:
    """The figures a kind of guarantee alone gives, without any release: those of a kind that
    states no epsilon (a mechanism with no guarantee has no bound whatever it released); None for
    the others (their figures come from their releases).

    >>> figures_of_kind("none")["per_document"], figures_of_kind("dp")
    (None, None)
    """
    if kind not in WITHOUT_EPSILON:
        return None
    return {"kind": kind, "per_document": None, "per_unit": None, "unit": None, "metric": None}


def _number(value: float) -> str:
    """An epsilon as a cell shows it: thousands separated, no spurious digits.

    >>> _number(46080.0), _number(2.5), _number(0.0)
    ('46,080', '2.5', '0')
    """
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.4g}"


def per_document_words(figures: dict[str, Any] | None, kind: str | None = None) -> str:
    """The epsilon per document as a cell: "median (largest L)"; what stands for it where there
    is none. ``kind``: the mechanism's kind of guarantee, for figures not recorded."""
    figures = figures if figures is not None else figures_of_kind(kind)
    if figures is None:
        return NOT_RECORDED
    per_document = figures.get("per_document")
    if per_document is not None:
        median, largest = per_document["median"], per_document["largest"]
        return _number(median) if median == largest else f"{_number(median)} (largest {_number(largest)})"
    if figures.get("kind") in WITHOUT_EPSILON:
        return WITHOUT_EPSILON[figures["kind"]]
    if figures.get("kind") == "metric":
        return "no bound per document (metric privacy: see per unit)"
    return NOT_RECORDED


def per_unit_words(figures: dict[str, Any] | None, kind: str | None = None) -> str:
    """The epsilon per unit as a cell, with the metric of metric privacy: "10 per token, <metric>"."""
    figures = figures if figures is not None else figures_of_kind(kind)
    if figures is None:
        return NOT_RECORDED
    if figures.get("kind") in WITHOUT_EPSILON:
        return WITHOUT_EPSILON[figures["kind"]]
    if figures.get("per_unit") is None:
        return NOT_RECORDED
    shown = f"{_number(figures['per_unit'])} per {figures.get('unit') or 'unit'}"
    return f"{shown}, {figures['metric']}" if figures.get("metric") else shown


def one_cell_words(figures: dict[str, Any] | None, kind: str | None = None) -> str:
    """The budget in one cell, for a compact table: the epsilon per document, or for metric
    privacy, which bounds no document by one number, the epsilon per unit with its metric.

    >>> one_cell_words({"kind": "metric", "per_document": None, "per_unit": 10.0, "unit": "token", "metric": "d"})
    '10 per token, d'
    >>> one_cell_words(None, "dp")
    'not recorded'
    """
    if (figures or {}).get("kind") == "metric":
        return per_unit_words(figures, kind)
    return per_document_words(figures, kind)
