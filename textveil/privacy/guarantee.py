"""A mechanism's guarantee as data: what was protected, under which metric, by how much."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Guarantee:
    """The metric-privacy guarantee of one released document.

    Attributes
    ----------
    mechanism:
        Short name of the mechanism (``"emp"``).
    epsilon:
        Privacy parameter per word: two words ``w, w'`` give output distributions within a
        factor ``exp(epsilon * d(w, w'))``.
    metric:
        The metric ``d`` (for ``emp``: Euclidean distance between the words' vectors).
    words_protected:
        N, the number of words that went through the mechanism.
    tokens_passed_through:
        Word tokens released unchanged because a policy said so (stop words kept, OOV kept);
        they are *not* covered by the guarantee.
    tokens_dropped:
        Word tokens removed by the OOV ``drop`` policy.

    >>> g = Guarantee("emp", 1 / 16, "Euclidean distance between word vectors", 4)
    >>> round(g.bound(2.816), 2)
    2.02
    """

    mechanism: str
    epsilon: float
    metric: str
    words_protected: int
    tokens_passed_through: int = 0
    tokens_dropped: int = 0

    @property
    def document_epsilon(self) -> float:
        """epsilon * N: multiply by an Earth Mover's distance to get the log-likelihood bound."""
        return self.epsilon * self.words_protected

    def bound(self, earth_movers_distance: float) -> float:
        """``exp(epsilon * N * E)``: the largest ratio of the probabilities of any release of
        this document and of another of the same size N at Earth Mover's distance E."""
        return math.exp(self.document_epsilon * earth_movers_distance)

    def statement(self) -> str:
        """The guarantee in one paragraph, as a user should read it."""
        text = (
            f"{self.mechanism}: epsilon = {self.epsilon:g} per word under the {self.metric}; "
            f"this document's {self.words_protected} perturbed words satisfy "
            f"(epsilon*N*E)-privacy with N = {self.words_protected} (Fernandes, Dras, McIver 2019, Thm 4): "
            f"for any other document of {self.words_protected} words whose bag of word vectors is at "
            f"Earth Mover's distance E from this one, the probability of any release differs by at most "
            f"a factor exp({self.document_epsilon:g} * E)."
        )
        if self.tokens_passed_through:
            text += (
                f" {self.tokens_passed_through} word token(s) were passed through unchanged by policy and are "
                "NOT protected."
            )
        if self.tokens_dropped:
            text += f" {self.tokens_dropped} word token(s) were dropped by policy."
        return text

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["document_epsilon"] = self.document_epsilon
        data["statement"] = self.statement()
        return data
