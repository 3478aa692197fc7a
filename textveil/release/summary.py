"""One summary of a set of releases, computed once here and rendered by every face.

What went through the mechanism and what did not (units protected, released as themselves,
passed through and dropped by policy, units rewritten and left out), the guarantee that holds
for every release in general words (its kind, epsilon per unit and per unit rewritten, how it
composes, what is protected and what is not, the policies, the post-processing, the
assumptions), the range of the per-document epsilon, what some records leave unprotected beyond
the rest (counted by record), and what the entity stage replaced.

:func:`summarise` reads it from the releases' Guarantees (:func:`summarise_records` from their
JSON form, as a budget ledger gives a replayed request back); a release job combines its shards'
summaries (:meth:`ReleaseSummary.combine`) and stores the result in its manifest;
:meth:`ReleaseSummary.lines` writes it in words for ``textveil sanitize``, ``textveil release``
and the service. No face reads a Guarantee's wording back or asks a mechanism what it is.

>>> from textveil.mechanisms.redaction import Redaction
>>> summary = summarise(Redaction().sanitize_many(["mail a@b.org", "hi"]))
>>> summary.documents, summary.kind, summary.total("words_protected")
(2, 'none', 1)
>>> ReleaseSummary.from_dict(summary.to_dict()) == summary
True
>>> for line in summary.lines("released 2 document(s)")[:2]:
...     print(line.text)
released 2 document(s) with redact
guarantee: NONE: redact gives no formal privacy guarantee; its risk is measured (textveil evaluate), not bounded
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from textveil.mechanisms.base import Release
from textveil.privacy.guarantee import KEEP_LAYOUT_WARNING, KINDS, Guarantee, rewritten_unit_epsilon

SUMMARY_SCHEMA = "textveil.release-summary/1"
"""The version of :meth:`ReleaseSummary.to_dict`'s layout (a manifest's ``summary``)."""


TOTALS: dict[str, str] = {
    "words_protected": "units that went through the mechanism (tokens, words, or output tokens drawn)",
    "unchanged": "of those, how many came out as themselves (drawn, not copied: covered by the guarantee)",
    "passed_through": "word tokens a policy passed through unchanged (unprotected)",
    "dropped": "word tokens a policy removed",
    "units_rewritten": "for a generator that writes unit by unit: the units it rewrote",
    "units_left_out": "for such a generator: the units a public cap left unread and unreleased",
}
"""The counts a summary adds up over its releases (:attr:`ReleaseSummary.totals`), in words."""


_NAMED_IN_GENERAL = ("unprotected", "assumptions", "policies", "post_processing")
"""A summary's lists of words: what any of its releases names is kept when sets combine."""


@dataclass(frozen=True)
class SummaryLine:
    """One line of a summary in words; ``warning``: a face shows it as one (in yellow)."""

    text: str
    warning: bool = False


@dataclass(frozen=True)
class ReleaseSummary:
    """A set of releases: how many, under which guarantee (in general words: the first
    release's, which every release of one mechanism shares), and every total.

    ``exceptions`` counts the records that leave something unprotected beyond the rest (e.g. a
    text the model was trained on), by what; ``entities`` the entities the stage replaced, by
    type; ``entity_stage`` is the stage's options as shown (None: not known to the summary);
    ``document_epsilon`` the smallest and largest epsilon of a whole document, for epsilon-DP.
    """

    documents: int = 0
    mechanism: str = ""
    kind: str = ""
    epsilon: float | None = None
    unit: str = ""
    metric: str = ""
    formula: str = ""
    layout: str = ""
    protected: str = ""
    tokens_per_unit: int | None = None
    unprotected: tuple[str, ...] = ()
    assumptions: tuple[str, ...] = ()
    policies: tuple[str, ...] = ()
    post_processing: tuple[str, ...] = ()
    totals: dict[str, int] = field(default_factory=dict)
    """Every count of :data:`TOTALS` over the set (a count not there is 0)."""
    document_epsilon: tuple[float, float] | None = None
    exceptions: dict[str, int] = field(default_factory=dict)
    entities: dict[str, int] = field(default_factory=dict)
    entity_stage: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        # Lists from JSON become tuples, so a summary read back equals the one written.
        for name in _NAMED_IN_GENERAL:
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if self.document_epsilon is not None:
            low, high = self.document_epsilon
            object.__setattr__(self, "document_epsilon", (float(low), float(high)))

    def total(self, name: str) -> int:
        """The count ``name`` of :data:`TOTALS` over the set.

        >>> ReleaseSummary(documents=1, totals={"dropped": 2}).total("dropped"), ReleaseSummary().total("unchanged")
        (2, 0)
        """
        if name not in TOTALS:
            raise KeyError(f"a summary counts {', '.join(TOTALS)}; not {name!r}")
        return int(self.totals.get(name, 0))

    @property
    def epsilon_per_rewritten_unit(self) -> float | None:
        """For a generator that writes unit by unit: epsilon * L."""
        return rewritten_unit_epsilon(self.epsilon, self.tokens_per_unit)

    def combine(self, other: ReleaseSummary) -> ReleaseSummary:
        """This set and ``other`` as one: the totals added, the epsilon range widened; the
        guarantee's fields are this set's (``other``'s where this one is empty), its lists of words
        both sets'.

        >>> one = ReleaseSummary(documents=1, kind="dp", totals={"words_protected": 3}, document_epsilon=(3.0, 3.0))
        >>> two = ReleaseSummary(documents=2, kind="dp", totals={"words_protected": 5}, document_epsilon=(1.0, 4.0))
        >>> both = one.combine(two)
        >>> both.documents, both.total("words_protected"), both.document_epsilon
        (3, 8, (1.0, 4.0))
        """
        if not other.documents:
            return self if other.entity_stage is None or self.entity_stage is not None else \
                dataclasses.replace(self, entity_stage=other.entity_stage)
        if not self.documents:
            return other if self.entity_stage is None else dataclasses.replace(other, entity_stage=self.entity_stage)
        ranges = [r for r in (self.document_epsilon, other.document_epsilon) if r is not None]
        return dataclasses.replace(
            self,
            documents=self.documents + other.documents,
            totals={name: self.total(name) + other.total(name) for name in TOTALS},
            # what any record names in general words stays named: a policy may pass tokens through
            # in a later record only, and its words must not be lost because the first had none
            **{name: tuple(dict.fromkeys(getattr(self, name) + getattr(other, name))) for name in _NAMED_IN_GENERAL},
            document_epsilon=(min(r[0] for r in ranges), max(r[1] for r in ranges)) if ranges else None,
            exceptions=dict(Counter(self.exceptions) + Counter(other.exceptions)),
            entities=dict(Counter(self.entities) + Counter(other.entities)),
            entity_stage=self.entity_stage if self.entity_stage is not None else other.entity_stage,
        )

    def to_dict(self) -> dict[str, Any]:
        """The summary as plain data (a manifest's ``summary``, a service response's), in the
        schema :data:`SUMMARY_SCHEMA`; ``kind_in_words`` and ``epsilon_per_rewritten_unit`` are
        derived, for a reader."""
        data: dict[str, Any] = {"schema": SUMMARY_SCHEMA}
        for item in dataclasses.fields(self):
            value = getattr(self, item.name)
            data[item.name] = list(value) if isinstance(value, tuple) else value
        data["kind_in_words"] = KINDS.get(self.kind, self.kind)
        data["epsilon_per_rewritten_unit"] = self.epsilon_per_rewritten_unit
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ReleaseSummary:
        """A summary from :meth:`to_dict`'s data; ValueError for data of another schema."""
        if not isinstance(data, dict) or data.get("schema") != SUMMARY_SCHEMA:
            raise ValueError(f"not a release summary of schema {SUMMARY_SCHEMA}")
        names = {item.name for item in dataclasses.fields(cls)}
        return cls(**{name: value for name, value in data.items() if name in names})

    def lines(self, head: str, noun: str = "document") -> list[SummaryLine]:
        """The summary in words, a line each: the entity stage (where known), what was released
        (``head`` says how many and where, e.g. "released 3 document(s) -> out"), the guarantee,
        what is unprotected, the ``noun``\\ s (documents, records) that leave more unprotected, the
        post-processing, the assumptions and the layout's warning.

        >>> summary = ReleaseSummary(documents=2, mechanism="emp", kind="metric", epsilon=10.0, unit="token",
        ...                          metric="d", formula="epsilon * sum_i d(t_i, t'_i)", layout="public",
        ...                          unprotected=("the number of tokens",), totals={"words_protected": 9, "unchanged": 2})
        >>> for line in summary.lines("released 2 document(s)"):
        ...     print(line.text)
        released 2 document(s): 9 tokens perturbed by emp with epsilon=10 (2 released as themselves), 0 passed through unchanged by policy, 0 dropped
        guarantee: metric privacy (epsilon * d between inputs), epsilon=10 per token, composing as epsilon * sum_i d(t_i, t'_i) over a document, metric: d
        released unprotected: the number of tokens
        """
        from textveil.pii.stage import stage_summary

        shown: list[SummaryLine] = []
        if self.entity_stage is not None:
            shown.append(SummaryLine(stage_summary(self.entity_stage, self.entities),
                                     warning=self.entity_stage.get("operator", "off") == "off"))
        if not self.documents:
            return shown + [SummaryLine(head)]
        if self.kind == "none":  # nothing went through a privacy mechanism: no units to count
            shown += [SummaryLine(f"{head} with {self.mechanism}"),
                      SummaryLine(f"guarantee: NONE: {self.mechanism} gives no formal privacy guarantee; its risk is "
                                  "measured (textveil evaluate), not bounded", warning=True)]
        else:
            shown += [SummaryLine(self._released(head)), SummaryLine(self._guarantee(noun))]
        shown.append(SummaryLine("released unprotected: " + ("; ".join(self.unprotected) or "nothing")))
        shown += [SummaryLine(f"WARNING: {count:,} {noun}(s): {item}", warning=True)
                  for item, count in self.exceptions.items()]
        if self.kind != "none":
            if self.post_processing:
                shown.append(SummaryLine("post-processing (costs no privacy): " + "; ".join(self.post_processing)))
            if self.assumptions:
                shown.append(SummaryLine("assumes: " + "; ".join(self.assumptions)))
            if self.layout == "keep":
                shown.append(SummaryLine(f"{KEEP_LAYOUT_WARNING} (drop --layout keep to privatise them)", warning=True))
        return shown

    def _released(self, head: str) -> str:
        epsilon = "" if self.epsilon is None else f" with epsilon={self.epsilon:g}"
        if self.tokens_per_unit is not None:  # a rewriter: its tokens are drawn anew, none stands for an input token
            left_out = (f"; {self.total('units_left_out'):,} unit(s) LEFT OUT by the cap on units (not read, not "
                        "released)" if self.total("units_left_out") else "")
            return (f"{head}: {self.total('units_rewritten'):,} unit(s) rewritten by {self.mechanism}, every output token "
                    f"drawn{epsilon} (at most {self.tokens_per_unit} per unit){left_out}")
        policies = f" [{'; '.join(self.policies)}]" if self.policies else ""
        return (f"{head}: {self.total('words_protected'):,} {self.unit}s perturbed by {self.mechanism}{epsilon} "
                f"({self.total('unchanged'):,} released as themselves), {self.total('passed_through'):,} passed "
                f"through unchanged by policy, {self.total('dropped'):,} dropped{policies}")

    def _guarantee(self, noun: str) -> str:
        per_unit = "" if self.epsilon is None else f", epsilon={self.epsilon:g} per {self.unit}"
        rewritten = self.epsilon_per_rewritten_unit
        if rewritten is not None:
            per_unit += f" (epsilon * L = {rewritten:g} per unit rewritten)"
        metric = f", metric: {self.metric}" if self.metric else ""
        documents = ""
        if self.document_epsilon is not None:
            low, high = self.document_epsilon
            shown = f"{low:g}" if low == high else f"{low:g} to {high:g}"
            documents = f" (epsilon={shown} per {noun})"
        return (f"guarantee: {KINDS.get(self.kind, self.kind)}{per_unit}, composing as {self.formula} over a "
                f"{noun}{metric}{documents}")


def summarise(releases: Iterable[Release], entity_stage: dict[str, Any] | None = None) -> ReleaseSummary:
    """The summary of ``releases``; ``entity_stage``: the stage's options as shown
    (:meth:`~textveil.pii.stage.EntityOptions.public`), for its line."""
    summary = ReleaseSummary(entity_stage=entity_stage)
    for release in releases:
        summary = summary.combine(_one(release.guarantee, release.words_unchanged,
                                       [entity.entity_type for entity in release.entities]))
    return summary


def summarise_records(records: Sequence[dict[str, Any]], entity_stage: dict[str, Any] | None = None) -> ReleaseSummary:
    """The summary of releases in their JSON form
    (:meth:`~textveil.mechanisms.base.Release.to_dict`, as a budget ledger stores them: of this
    Guarantee schema or an older one)."""
    summary = ReleaseSummary(entity_stage=entity_stage)
    for record in records:
        summary = summary.combine(_one(Guarantee.from_dict(record["guarantee"]),
                                       int(record.get("words_unchanged_by_noise", 0)),
                                       [entity["type"] for entity in record.get("entities", ())]))
    return summary


def _one(g: Guarantee, unchanged: int, entity_types: Sequence[str]) -> ReleaseSummary:
    """One release as a summary: the only place a Guarantee's fields become a summary's."""
    epsilon = g.document_epsilon if g.kind == "dp" and g.words_protected else None
    return ReleaseSummary(
        documents=1, mechanism=g.mechanism, kind=g.kind, epsilon=g.epsilon, unit=g.unit, metric=g.metric,
        formula=g.formula, layout=g.layout, protected=g.protected, tokens_per_unit=g.tokens_per_unit,
        unprotected=g.unprotected_in_general, assumptions=g.assumptions, policies=g.policies,
        post_processing=g.post_processing,
        totals={"words_protected": g.words_protected, "unchanged": unchanged, "passed_through": g.tokens_passed_through,
                "dropped": g.tokens_dropped, "units_rewritten": g.units_rewritten, "units_left_out": g.units_left_out},
        document_epsilon=None if epsilon is None else (epsilon, epsilon),
        exceptions=dict.fromkeys(g.unprotected_exceptions, 1), entities=dict(Counter(entity_types)))
