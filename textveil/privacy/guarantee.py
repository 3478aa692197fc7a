"""A mechanism's guarantee as data: what was protected, under which metric, by how much, and
what the release copies from the input unprotected."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any


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
    """The metric-privacy guarantee of one released document.

    Attributes
    ----------
    mechanism:
        Short name of the mechanism (``"emp"``).
    epsilon:
        Privacy parameter per token: two tokens ``t, t'`` give output distributions within a
        factor ``exp(epsilon * d(t, t'))``.
    metric:
        The metric ``d`` (for ``emp``: Euclidean distance between the tokens' vectors).
    words_protected:
        N, the number of tokens that went through the mechanism (words, and in the public
        layout punctuation marks and symbols too).
    tokens_passed_through:
        Word tokens released unchanged because a policy said so (stop words kept, OOV kept);
        they are *not* covered by the guarantee.
    tokens_dropped:
        Word tokens removed by the OOV ``drop`` policy.
    layout:
        What the release is, which decides how the per-token guarantee composes:
        ``"public"``: every token privatised, the text written from the released tokens by a
        public rule; ``"keep"``: words privatised, the rest copied from the input (and named
        unprotected); ``"bag"``: a sorted bag of words (paper 001's Theorem 4).

    >>> g = Guarantee("emp", 1 / 16, "Euclidean distance between word vectors", 4, layout="bag")
    >>> round(g.bound(2.816), 2)
    2.02
    >>> Guarantee("emp", 10, "d", 7).unprotected
    ('the number of tokens (7)',)
    """

    mechanism: str
    epsilon: float
    metric: str
    words_protected: int
    tokens_passed_through: int = 0
    tokens_dropped: int = 0
    layout: str = "public"

    @property
    def composition(self) -> str:
        """``"bag"``: Theorem 4 over bags (epsilon*N*E); ``"sequence"``: per position (the
        release keeps the order of the tokens, so a permutation of the input is not free)."""
        return "bag" if self.layout == "bag" else "sequence"

    @property
    def unit(self) -> str:
        return "token" if self.layout == "public" else "word"

    @property
    def document_epsilon(self) -> float:
        """epsilon * N: multiply by an Earth Mover's distance to get the log-likelihood bound."""
        return self.epsilon * self.words_protected

    @property
    def unprotected(self) -> tuple[str, ...]:
        """What this release copies from the input without privatising it, in words."""
        count, *rest = RELEASED_UNPROTECTED[self.layout]
        named = [f"{count} ({self.words_protected + self.tokens_passed_through})", *rest]
        if self.tokens_passed_through:
            named.append(f"{self.tokens_passed_through} word token(s) passed through unchanged by policy")
        return tuple(named)

    def bound(self, earth_movers_distance: float) -> float:
        """``exp(epsilon * N * E)`` (Theorem 4): the largest ratio of the probabilities of any
        release of this bag of words and of another bag of N words at Earth Mover's distance E.
        For a release in order (``composition == "sequence"``) use :meth:`sequence_bound`."""
        return math.exp(self.document_epsilon * earth_movers_distance)

    def sequence_bound(self, total_distance: float) -> float:
        """``exp(epsilon * sum_i d(t_i, t'_i))``: the largest ratio of the probabilities of any
        release of this text and of another text of as many tokens, ``total_distance`` being
        the sum of the distances between the tokens at the same positions.

        >>> round(Guarantee("emp", 0.5, "d", 3).sequence_bound(2.0), 3)
        2.718
        """
        return math.exp(self.epsilon * total_distance)

    def statement(self) -> str:
        """The guarantee in one paragraph, as a user should read it."""
        n = self.words_protected
        if self.layout == "bag":
            text = (
                f"{self.mechanism}: epsilon = {self.epsilon:g} per word under the {self.metric}; "
                f"this bag of {n} perturbed words, written in sorted order, satisfies (epsilon*N*E)-privacy with "
                f"N = {n} (Fernandes, Dras, McIver 2019, Thm 4): for any other bag of {n} words whose word "
                f"vectors are at Earth Mover's distance E from these, the probability of any release differs by at "
                f"most a factor exp({self.document_epsilon:g} * E)."
            )
        else:
            what = ("tokens (words, numbers, punctuation and symbols alike)" if self.layout == "public"
                    else "words")
            text = (
                f"{self.mechanism}: epsilon = {self.epsilon:g} per {self.unit} under the {self.metric}; "
                f"this text's {n} {what} each went through the mechanism, so for any other text of as many "
                f"{'tokens' if self.layout == 'public' else 'words'} the probability of any release differs by at "
                f"most a factor exp({self.epsilon:g} * sum_i d(t_i, t'_i)), the sum running over positions "
                "(sequential composition; paper 001's Thm 4 with N*E holds for the sorted bag of words)."
            )
            if self.layout == "public":
                text += (" Casing, spacing and line breaks are written from the released tokens by a public rule "
                         "(post-processing).")
        text += " Released unprotected: " + "; ".join(self.unprotected) + "."
        if self.layout == "keep":
            text += f" {KEEP_LAYOUT_WARNING}."
        if self.tokens_dropped:
            text += f" {self.tokens_dropped} word token(s) were dropped by policy."
        return text

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["unit"] = self.unit
        data["composition"] = self.composition
        data["document_epsilon"] = self.document_epsilon
        data["unprotected"] = list(self.unprotected)
        data["statement"] = self.statement()
        return data
