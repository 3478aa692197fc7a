"""Random-R (paper 002's baseline): every token replaced by a uniformly random vocabulary entry.

The release depends on its input only through the number of tokens (and, with
``layout="keep"``, through the layout it copies): it is the floor of utility and the ceiling
of protection that any mechanism can be compared with. As an epsilon-DP mechanism its epsilon
is 0 per token.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from textveil.embeddings.word_embeddings import WordEmbeddings
from textveil.mechanisms.sampling import sample_uniform_indices
from textveil.mechanisms.substitution import TokenPlan, TokenSubstitution
from textveil.privacy.guarantee import Guarantee


class RandomReplacement(TokenSubstitution):
    """The ``random`` mechanism: uniform replacement of each token.

    >>> from textveil.embeddings import WordEmbeddings
    >>> toy = WordEmbeddings(["good", "fine", "bad"], [[0.0, 0.0], [0.1, 0.0], [9.0, 9.0]])
    >>> release = RandomReplacement(embeddings=toy, seed=3).sanitize("Good, bad!")
    >>> release.guarantee.epsilon, release.guarantee.words_protected, release.guarantee.kind
    (0.0, 4, 'dp')
    """

    name = "random"
    placeholder_rule = "each placeholder is one token, replaced by a uniformly drawn vocabulary entry like any other"

    def __init__(self, embeddings: WordEmbeddings | None = None, *, layout: str = "public", seed: int | None = None,
                 batch_words: int = 8192, placeholders: bool = False) -> None:
        self._check_parameters(layout=layout, seed=seed)
        self._init_common(embeddings, seed, batch_words, placeholders)

    def _substitute(self, batch: list[TokenPlan], streams: Sequence[Sequence[np.random.Generator]] | None) -> list[str]:
        words = self.vocabulary.words
        rows = self._draw(batch, streams, lambda count, rng, _: sample_uniform_indices(count, len(words), rng))
        return [words[row] for row in rows]

    def _guarantee(self, plan: TokenPlan) -> Guarantee:
        n = len(plan.perturb)
        return Guarantee(
            mechanism=self.name, epsilon=0.0, kind="dp", unit="token", composition="sequential",
            words_protected=n, layout=self.release_layout, assumptions=("the vocabulary is public",),
            how=(f"random: each of this text's {n} tokens was replaced by an entry drawn uniformly from the "
                 f"{len(self.vocabulary):,}-entry vocabulary, independently of the input: the release is "
                 "0-differentially private with respect to the tokens' content (any two texts of as many tokens "
                 "give the same release distribution)."),
        )
