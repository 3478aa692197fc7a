"""A mechanism's guarantee as data: its kind, what it protects, per which unit, by how much,
how that composes over a document, what the release copies from the input unprotected, and
what the guarantee assumes.

Every mechanism returns one :class:`Guarantee` per released document; its JSON form
(:meth:`Guarantee.to_dict`) is a stable schema (:data:`GUARANTEE_SCHEMA`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

GUARANTEE_SCHEMA = "textveil.guarantee/4"
"""The version of :meth:`Guarantee.to_dict`'s layout; a change of key names bumps it."""

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
"""What a release of each layout copies from its input without privatising it."""

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
    unprotected:
        What the release copies from the input without privatising it, in words (default for
        metric privacy: what the layout copies).
    assumptions:
        What the guarantee rests on, in words (e.g. the vocabulary is public).
    statement:
        The guarantee in one paragraph, as the mechanism states it to a user (default for metric
        privacy: written here from the other fields).
    l:
        For l-privacy (paper 003): the l of the guarantee; ``None`` for the other kinds.
    entity_stage:
        What the entity stage (:mod:`textveil.pii`) replaced before the mechanism, in words: best
        effort, not covered by epsilon; empty when no stage ran. The rest of the guarantee is
        the mechanism's, on the text after that stage.

    >>> g = Guarantee("emp", 1 / 16, "Euclidean distance between word vectors", 4, layout="bag")
    >>> round(g.bound(2.816), 2), g.composition, g.formula
    (2.02, 'bag', 'epsilon * N * E')
    >>> Guarantee("emp", 10, "d", 7).unprotected
    ('the number of tokens (7)',)
    >>> Guarantee("random", 0.0, kind="dp", unit="token", words_protected=3, composition="sequential",
    ...           statement="uniform tokens").document_epsilon
    0.0
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
    unprotected: tuple[str, ...] = ()
    assumptions: tuple[str, ...] = ()
    statement: str = ""
    l: int | None = None
    entity_stage: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown guarantee kind {self.kind!r}; use one of: {', '.join(KINDS)}")
        # Lists from JSON become tuples, so a guarantee read back equals the one written.
        for name in ("unprotected", "assumptions"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if not self.unit:
            object.__setattr__(self, "unit", "token" if self.layout == "public" else "word")
        if not self.composition:
            default = ("bag" if self.layout == "bag" else "sequence") if self.kind == "metric" else "sequential"
            object.__setattr__(self, "composition", default if self.kind != "none" else "none")
        if self.composition not in COMPOSITIONS:
            raise ValueError(f"unknown composition {self.composition!r}; use one of: {', '.join(COMPOSITIONS)}")
        if not self.unprotected and self.kind == "metric":
            object.__setattr__(self, "unprotected", _metric_unprotected(self))
        if not self.statement and self.kind == "metric":
            object.__setattr__(self, "statement", _metric_statement(self))

    @property
    def formula(self) -> str:
        """The document-level bound's exponent as a formula (``"epsilon * N * E"``)."""
        return COMPOSITIONS[self.composition]

    @property
    def document_epsilon(self) -> float | None:
        """epsilon * N: for a bag, multiply by an Earth Mover's distance to get the
        log-likelihood bound; for epsilon-DP it is the document's epsilon."""
        return None if self.epsilon is None else self.epsilon * self.words_protected

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
            data[field.name] = list(value) if isinstance(value, tuple) else value
        data["formula"] = self.formula
        data["document_epsilon"] = self.document_epsilon
        return data


def unprotected_by_layout(layout: str, protected: int, passed_through: int = 0) -> tuple[str, ...]:
    """What a release of ``layout`` copies from its input, in words, with its counts.

    >>> unprotected_by_layout("public", 7)
    ('the number of tokens (7)',)
    """
    count, *rest = RELEASED_UNPROTECTED[layout]
    named = [f"{count} ({protected + passed_through})", *rest]
    if passed_through:
        named.append(f"{passed_through} word token(s) passed through unchanged by policy")
    return tuple(named)


def _metric_unprotected(guarantee: Guarantee) -> tuple[str, ...]:
    return unprotected_by_layout(guarantee.layout, guarantee.words_protected, guarantee.tokens_passed_through)


def _metric_statement(g: Guarantee) -> str:
    """The metric-privacy guarantee in one paragraph, as a user should read it."""
    n = g.words_protected
    if g.layout == "bag":
        text = (
            f"{g.mechanism}: epsilon = {g.epsilon:g} per word under the {g.metric}; "
            f"this bag of {n} perturbed words, written in sorted order, satisfies (epsilon*N*E)-privacy with "
            f"N = {n} (Fernandes, Dras, McIver 2019, Thm 4): for any other bag of {n} words whose word "
            f"vectors are at Earth Mover's distance E from these, the probability of any release differs by at "
            f"most a factor exp({g.document_epsilon:g} * E)."
        )
    else:
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
    text += " Released unprotected: " + "; ".join(g.unprotected) + "."
    if g.layout == "keep":
        text += f" {KEEP_LAYOUT_WARNING}."
    if g.tokens_dropped:
        text += f" {g.tokens_dropped} word token(s) were dropped by policy."
    if g.assumptions:
        text += " Assumes: " + "; ".join(g.assumptions) + "."
    return text
