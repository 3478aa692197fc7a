"""A mechanism's guarantee as data: its kind, what it protects, per which unit, by how much,
how that composes over a document, what the release leaves unprotected (in general, and in this
record with its counts), the policies and post-processing applied, and what it assumes.

Every mechanism returns one :class:`Guarantee` per released document; its JSON form
(:meth:`Guarantee.to_dict`) is a stable schema (:data:`GUARANTEE_SCHEMA`). The words a user
reads, :attr:`Guarantee.unprotected` and :attr:`Guarantee.statement`, are written here from the
fields, so no reader ever needs to parse them back: a face renders the fields (or the summary of
a set of releases, :mod:`textveil.release.summary`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

GUARANTEE_SCHEMA = "textveil.guarantee/5"
"""The version of :meth:`Guarantee.to_dict`'s layout; a change of key names bumps it. Version 5
added ``protected``, ``unprotected_in_general``, ``unprotected_in_record``, ``how``,
``policies``, ``post_processing``, ``tokens_per_unit``, ``units_rewritten``, ``units_left_out``
and ``epsilon_per_rewritten_unit``; ``unprotected`` is now written from the two lists."""
READABLE_SCHEMAS = ("textveil.guarantee/4", GUARANTEE_SCHEMA)
"""The schemas :meth:`Guarantee.from_dict` reads."""

KINDS: dict[str, str] = {
    "metric": "metric privacy (epsilon * d between inputs)",
    "dp": "epsilon-differential privacy against any two inputs (of as many units where the release keeps their number)",
    "l-privacy": "l-privacy against frequency analysis",
    "none": "no formal guarantee: measured risk only",
}
"""The kinds of guarantee a mechanism may give, in words."""

COMPOSITIONS: dict[str, str] = {
    "bag": "epsilon * N * E",
    "sequence": "epsilon * sum_i d(t_i, t'_i)",
    "sequential": "epsilon * N",
    "l-privacy": "each code word: best frequency guess right with probability <= 1/l",
    "none": "none",
}
"""How the per-unit guarantee composes over a document, as a formula over its N units."""

LAYOUTS = ("public", "keep", "bag")

RELEASED_UNPROTECTED: dict[str, tuple[str, ...]] = {
    "public": ("the number of tokens",),
    "bag": ("the number of content words",),
    "keep": ("the number of words and their positions", "the casing of every word", "punctuation, symbols and emoji",
             "spacing and line breaks"),
}
"""What a release of each layout copies from its input without privatising it; the first item is
the count a record states (:func:`unprotected_by_layout`)."""

PROTECTED_BY_LAYOUT: dict[str, str] = {
    "public": "every token (words, numbers, punctuation and symbols alike)",
    "keep": "every word (the rest is copied from the input)",
    "bag": "every content word (released as a sorted bag)",
}
"""What went through the mechanism in a release of each layout, in words."""

PASSED_THROUGH = "word tokens passed through unchanged by policy"
"""What a policy that keeps words (stop words, words outside the vocabulary) leaves unprotected."""

KEEP_LAYOUT_WARNING = (
    "WARNING: --layout keep copies the input's casing, punctuation and spacing into the release; they carry the "
    "writer's style and are NOT protected by the guarantee"
)


@dataclass(frozen=True)
class Guarantee:
    """The guarantee of one released document.

    Attributes
    ----------
    mechanism:
        Short name of the mechanism (``"emp"``).
    epsilon:
        Privacy per unit. Metric privacy: two units ``t, t'`` give output distributions within a
        factor ``exp(epsilon * d(t, t'))``; epsilon-DP: within ``exp(epsilon)`` for any two.
    metric:
        The metric ``d`` of metric privacy (for ``emp``: Euclidean distance between vectors).
    words_protected:
        N, the number of units that went through the mechanism (words, and in the public
        layout punctuation marks and symbols too; output tokens drawn, for a generator).
    tokens_passed_through:
        Word tokens released unchanged because a policy said so (stop words kept, OOV kept);
        they are *not* covered by the guarantee.
    tokens_dropped:
        Word tokens removed by a policy.
    layout:
        What the release is: ``"public"`` (every token privatised, the text written from the
        released tokens by a public rule), ``"keep"`` (the rest copied from the input, and named
        unprotected) or ``"bag"`` (a sorted bag of words, paper 001's Theorem 4).
    kind:
        One of :data:`KINDS`.
    unit:
        What epsilon is per: token, word, document or corpus (default: token in the public
        layout, else word).
    composition:
        One of :data:`COMPOSITIONS`: how the per-unit guarantee composes over the document
        (default for metric privacy: ``"bag"`` for a bag, else ``"sequence"``).
    protected:
        What went through the mechanism, in words (default, but for no guarantee: the layout's,
        :data:`PROTECTED_BY_LAYOUT`).
    unprotected_in_general:
        What every release of this mechanism (with these parameters) leaves unprotected, in
        general words, no counts (default, but for no guarantee: what the layout copies, with
        :data:`PASSED_THROUGH` where this record passed tokens through).
    unprotected_in_record:
        This record's counts, ``(what, count)``: an item of ``unprotected_in_general`` with its
        count here, or one only this record names (``count`` None where it has none, e.g. "this
        text was in the model's training data"). Where the general list names the layout's count,
        the record's count of it (and of the tokens passed through) is added here
        (:func:`layout_counts`).
    assumptions:
        What the guarantee rests on, in words (e.g. the vocabulary is public).
    how:
        The mechanism's own account of how this release was drawn, in words (default for
        metric privacy: written here). Where it is set, :attr:`statement` is written from it and
        the other fields.
    statement:
        The guarantee in one paragraph, as a user should read it: written from the fields (a
        value given here is kept only for a guarantee without ``how``).
    l:
        For l-privacy (paper 003): the l of the guarantee; ``None`` for the other kinds.
    entity_stage:
        What the entity stage (:mod:`textveil.pii`) replaced before the mechanism, in words: best
        effort, not covered by epsilon; empty when no stage ran. The rest of the guarantee is
        the mechanism's, on the text after that stage.
    policies:
        The policies applied to the input's words, in words ("stop words kept unchanged").
    post_processing:
        What was applied to the release after the mechanism, in words (costs no privacy).
    tokens_per_unit:
        For a generator that writes a document unit by unit: L, the most tokens drawn per unit
        (``None`` for the others).
    units_rewritten, units_left_out:
        For such a generator: the units it rewrote, and those a public cap left unread.

    >>> g = Guarantee("emp", 1 / 16, "Euclidean distance between word vectors", 4, layout="bag")
    >>> round(g.bound(2.816), 2), g.composition, g.formula
    (2.02, 'bag', 'epsilon * N * E')
    >>> seven = Guarantee("emp", 10, "d", 7)
    >>> seven.unprotected_in_general, seven.unprotected_in_record, seven.unprotected
    (('the number of tokens',), (('the number of tokens', 7),), ('the number of tokens (7)',))
    >>> Guarantee("random", 0.0, kind="dp", unit="token", words_protected=3, composition="sequential",
    ...           statement="uniform tokens").document_epsilon
    0.0
    >>> Guarantee("gen", 0.5, kind="dp", composition="sequential", words_protected=64, tokens_per_unit=32,
    ...           units_rewritten=2).epsilon_per_rewritten_unit
    16.0
    """

    mechanism: str
    epsilon: float | None
    metric: str = ""
    words_protected: int = 0
    tokens_passed_through: int = 0
    tokens_dropped: int = 0
    layout: str = "public"
    kind: str = "metric"
    unit: str = ""
    composition: str = ""
    protected: str = ""
    unprotected_in_general: tuple[str, ...] = ()
    unprotected_in_record: tuple[tuple[str, int | None], ...] = ()
    assumptions: tuple[str, ...] = ()
    how: str = ""
    statement: str = ""
    l: int | None = None
    entity_stage: str = ""
    policies: tuple[str, ...] = ()
    post_processing: tuple[str, ...] = ()
    tokens_per_unit: int | None = None
    units_rewritten: int = 0
    units_left_out: int = 0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown guarantee kind {self.kind!r}; use one of: {', '.join(KINDS)}")
        # Lists from JSON become tuples, so a guarantee read back equals the one written.
        for name in ("unprotected_in_general", "assumptions", "policies", "post_processing"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "unprotected_in_record", tuple(
            (str(what), None if count is None else int(count)) for what, count in self.unprotected_in_record))
        if not self.unit:
            object.__setattr__(self, "unit", "token" if self.layout == "public" else "word")
        if not self.composition:
            default = ("bag" if self.layout == "bag" else "sequence") if self.kind == "metric" else "sequential"
            object.__setattr__(self, "composition", default if self.kind != "none" else "none")
        if self.composition not in COMPOSITIONS:
            raise ValueError(f"unknown composition {self.composition!r}; use one of: {', '.join(COMPOSITIONS)}")
        if self.kind != "none":
            self._layout_defaults()
        if not self.how and not self.statement and self.kind == "metric":
            object.__setattr__(self, "how", _metric_how(self))
        if self.how:
            object.__setattr__(self, "statement", _written_statement(self))

    def _layout_defaults(self) -> None:
        """What the layout protects and copies, where the mechanism did not say."""
        if not self.protected:
            object.__setattr__(self, "protected", PROTECTED_BY_LAYOUT.get(self.layout, ""))
        if not self.unprotected_in_general and self.layout in RELEASED_UNPROTECTED:
            object.__setattr__(self, "unprotected_in_general",
                               unprotected_by_layout(self.layout, passes_through=self.tokens_passed_through > 0))
        if self.layout in RELEASED_UNPROTECTED and RELEASED_UNPROTECTED[self.layout][0] in self.unprotected_in_general:
            given = {what for what, _ in self.unprotected_in_record}
            counts = tuple(count for count in layout_counts(self) if count[0] not in given)
            object.__setattr__(self, "unprotected_in_record", counts + self.unprotected_in_record)

    @property
    def unprotected(self) -> tuple[str, ...]:
        """What this release leaves unprotected, in words with this record's counts: every item of
        :attr:`unprotected_in_general` (with its count where the record gives one), then what
        only this record names (:attr:`unprotected_exceptions`)."""
        counts = dict(self.unprotected_in_record)
        named = [_counted(what, counts.get(what)) for what in self.unprotected_in_general]
        named += [_counted(what, count) for what, count in self.unprotected_in_record
                  if what not in self.unprotected_in_general]
        return tuple(named)

    @property
    def unprotected_exceptions(self) -> tuple[str, ...]:
        """What only this record leaves unprotected, beyond what every release does, in general
        words (what a summary counts records by).

        >>> Guarantee("ae", 1.0, kind="dp", unprotected_in_record=(("seen in training", None),)).unprotected_exceptions
        ('seen in training',)
        """
        return tuple(what for what, _ in self.unprotected_in_record if what not in self.unprotected_in_general)

    @property
    def formula(self) -> str:
        """The document-level bound's exponent as a formula (``"epsilon * N * E"``)."""
        return COMPOSITIONS[self.composition]

    @property
    def document_epsilon(self) -> float | None:
        """epsilon * N: for a bag, multiply by an Earth Mover's distance to get the
        log-likelihood bound; for epsilon-DP it is the document's epsilon."""
        return None if self.epsilon is None else self.epsilon * self.words_protected

    @property
    def epsilon_per_rewritten_unit(self) -> float | None:
        """For a generator that writes unit by unit: epsilon * L, the bound of one unit's reply."""
        return rewritten_unit_epsilon(self.epsilon, self.tokens_per_unit)

    def bound(self, earth_movers_distance: float) -> float:
        """``exp(epsilon * N * E)`` (Theorem 4): the largest ratio of the probabilities of any
        release of this bag of words and of another bag of N words at Earth Mover's distance E.
        For a release in order (``composition == "sequence"``) use :meth:`sequence_bound`."""
        return math.exp(self._epsilon() * self.words_protected * earth_movers_distance)

    def sequence_bound(self, total_distance: float) -> float:
        """``exp(epsilon * sum_i d(t_i, t'_i))``: the largest ratio of the probabilities of any
        release of this text and of another text of as many tokens, ``total_distance`` being
        the sum of the distances between the tokens at the same positions.

        >>> round(Guarantee("emp", 0.5, "d", 3).sequence_bound(2.0), 3)
        2.718
        """
        return math.exp(self._epsilon() * total_distance)

    def _epsilon(self) -> float:
        if self.epsilon is None:
            raise ValueError(f"{self.mechanism} gives no formal guarantee, so there is no bound to compute")
        return self.epsilon

    def to_dict(self) -> dict[str, Any]:
        """The guarantee as plain data, in the stable schema :data:`GUARANTEE_SCHEMA`."""
        data: dict[str, Any] = {"schema": GUARANTEE_SCHEMA}
        for field in fields(self):
            value = getattr(self, field.name)
            if field.name == "unprotected_in_record":
                value = [list(item) for item in value]
            data[field.name] = list(value) if isinstance(value, tuple) else value
        data["unprotected"] = list(self.unprotected)
        data["formula"] = self.formula
        data["document_epsilon"] = self.document_epsilon
        data["epsilon_per_rewritten_unit"] = self.epsilon_per_rewritten_unit
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Guarantee:
        """A guarantee from its JSON form (:meth:`to_dict`), of this schema or an older one (a budget
        ledger gives back a request's stored releases as they were recorded): schema 4's
        ``unprotected`` (its words, counts and all) is read as the general list, and its statement
        as it was written.

        >>> g = Guarantee("emp", 2.0, "d", 3, tokens_passed_through=1)
        >>> Guarantee.from_dict(g.to_dict()) == g
        True
        >>> old = Guarantee.from_dict({"schema": "textveil.guarantee/4", "mechanism": "emp", "epsilon": 2.0,
        ...                            "unprotected": ["the number of tokens (3)"], "statement": "as written"})
        >>> old.unprotected, old.statement
        (('the number of tokens (3)',), 'as written')
        """
        schema = data.get("schema")
        if schema not in READABLE_SCHEMAS:
            raise ValueError(f"a guarantee of schema {schema!r} cannot be read; this textveil reads "
                             f"{', '.join(READABLE_SCHEMAS)}")
        names = {field.name for field in fields(cls)}
        values = {name: value for name, value in data.items() if name in names}
        if schema != GUARANTEE_SCHEMA:
            values["unprotected_in_general"] = tuple(data.get("unprotected", ()))
        return cls(**values)


def rewritten_unit_epsilon(epsilon: float | None, tokens_per_unit: int | None) -> float | None:
    """epsilon * L: the bound of one unit's reply from a generator that writes unit by unit, at
    most L tokens of epsilon each (sequential composition); None where either is unknown (a
    guarantee or a summary of a mechanism that does not rewrite).

    >>> rewritten_unit_epsilon(0.5, 32), rewritten_unit_epsilon(0.5, None)
    (16.0, None)
    """
    if epsilon is None or tokens_per_unit is None:
        return None
    return epsilon * tokens_per_unit


def unprotected_by_layout(layout: str, passes_through: bool = False) -> tuple[str, ...]:
    """What every release of ``layout`` leaves unprotected, in general words, with the words a
    policy passes through where one does (``passes_through``).

    >>> unprotected_by_layout("public"), unprotected_by_layout("bag", passes_through=True)
    (('the number of tokens',), ('the number of content words', 'word tokens passed through unchanged by policy'))
    """
    return RELEASED_UNPROTECTED[layout] + ((PASSED_THROUGH,) if passes_through else ())


def layout_counts(guarantee: Guarantee) -> tuple[tuple[str, int | None], ...]:
    """The counts a record of a layout states: the layout's count (the tokens through the
    mechanism and those passed through), and the passed through tokens where the general list
    names them.

    >>> layout_counts(Guarantee("emp", 1.0, "d", 5, tokens_passed_through=2))
    (('the number of tokens', 7), ('word tokens passed through unchanged by policy', 2))
    """
    counted: tuple[tuple[str, int | None], ...] = (
        (RELEASED_UNPROTECTED[guarantee.layout][0], guarantee.words_protected + guarantee.tokens_passed_through),)
    if PASSED_THROUGH in guarantee.unprotected_in_general:
        counted += ((PASSED_THROUGH, guarantee.tokens_passed_through),)
    return counted


def _counted(what: str, count: int | None) -> str:
    return what if count is None else f"{what} ({count})"


def _metric_how(g: Guarantee) -> str:
    """How a metric-privacy release was drawn, in one paragraph, as a user should read it."""
    n = g.words_protected
    if g.layout == "bag":
        return (
            f"{g.mechanism}: epsilon = {g.epsilon:g} per word under the {g.metric}; "
            f"this bag of {n} perturbed words, written in sorted order, satisfies (epsilon*N*E)-privacy with "
            f"N = {n} (Fernandes, Dras, McIver 2019, Thm 4): for any other bag of {n} words whose word "
            f"vectors are at Earth Mover's distance E from these, the probability of any release differs by at "
            f"most a factor exp({g.document_epsilon:g} * E)."
        )
    what = "tokens (words, numbers, punctuation and symbols alike)" if g.layout == "public" else "words"
    text = (
        f"{g.mechanism}: epsilon = {g.epsilon:g} per {g.unit} under the {g.metric}; "
        f"this text's {n} {what} each went through the mechanism, so for any other text of as many "
        f"{'tokens' if g.layout == 'public' else 'words'} the probability of any release differs by at "
        f"most a factor exp({g.epsilon:g} * sum_i d(t_i, t'_i)), the sum running over positions "
        "(sequential composition; paper 001's Thm 4 with N*E holds for the sorted bag of words)."
    )
    if g.layout == "public":
        text += (" Casing, spacing and line breaks are written from the released tokens by a public rule "
                 "(post-processing).")
    return text


def _written_statement(g: Guarantee) -> str:
    """The statement: the mechanism's ``how``, then what the fields say (post-processing, units left
    out, what is unprotected, the layout's warning, policies, assumptions, the entity stage)."""
    parts = [g.how]
    if g.post_processing:
        costs = "" if g.kind == "none" else ", which costs no privacy"
        parts.append(f"Post-processing{costs}: " + "; ".join(g.post_processing) + ".")
    if g.units_left_out:
        parts.append(f"{g.units_left_out} unit(s) of this input were left out by the cap on units: not read, not "
                     "released.")
    if g.policies:
        parts.append("Policies: " + "; ".join(g.policies) + ".")
    parts.append("Released unprotected: " + ("; ".join(g.unprotected) or "nothing") + ".")
    if g.layout == "keep" and g.kind != "none":
        parts.append(f"{KEEP_LAYOUT_WARNING}.")
    if g.tokens_dropped:
        parts.append(f"{g.tokens_dropped} word token(s) were dropped by policy.")
    if g.assumptions and g.kind != "none":
        parts.append("Assumes: " + "; ".join(g.assumptions) + ".")
    if g.entity_stage:
        parts.append(g.entity_stage)
    return " ".join(part for part in parts if part)
