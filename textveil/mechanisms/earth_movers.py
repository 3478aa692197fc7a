"""Earth Mover's privacy for text (paper 001, Algorithms 1 and 2).

Each token is mapped to its vector, moved by n-dimensional Laplace noise (radius
Gamma(n, 1/epsilon), direction uniform), and decoded to the vocabulary entry nearest to the
noisy vector. Each token then enjoys epsilon*d privacy for d the Euclidean distance between
vectors; decoding is post-processing. What the document-level guarantee says depends on
what the release is:

* ``layout="public"`` (default): every word *and* every punctuation mark or symbol goes
  through the mechanism, in one space (the vocabulary holds the public marks of
  :data:`~textveil.text.layout.PUBLIC_MARKS` beside the words), and the text is written from
  the released tokens by the public rules of :mod:`textveil.text.layout`. Two texts of L
  tokens give release distributions within a factor exp(epsilon * sum_i d(t_i, t'_i))
  (composition over positions); only L is released unprotected.
* ``layout="keep"``: only words are perturbed; casing, punctuation, symbols, spacing and
  line breaks are copied from the input and are NOT protected (the Guarantee names them).
* ``output="bag"``: paper 001's bag of words, written in sorted order so that the release is a
  function of the bag alone; then Theorem 4 holds as stated: epsilon*N*E against any bag of N
  words at Earth Mover's distance E.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from textveil.embeddings.neighbours import NeighbourIndex
from textveil.embeddings.word_embeddings import WordEmbeddings
from textveil.errors import InvalidParameterError
from textveil.mechanisms.sampling import sample_laplace_noise
from textveil.mechanisms.substitution import TokenPlan, TokenSubstitution
from textveil.privacy.guarantee import Guarantee, unprotected_by_layout

OOV_POLICIES = ("perturb", "keep", "drop")
OUTPUT_MODES = ("text", "bag")
LAYOUTS = ("public", "keep")

LARGEST_MEAN_NOISE = 1e6
"""The largest mean noise radius, in units of the longest vocabulary vector, that decoding in
float32 still resolves: beyond it the input's own vector is lost in rounding, and every
release is a draw from (nearly) the same distribution whatever the input."""


class EarthMoversPrivacy(TokenSubstitution):
    """The ``emp`` mechanism: word-level n-dimensional Laplace noise, nearest-word decoding.

    Parameters
    ----------
    epsilon:
        Privacy per word, in inverse units of the embedding space (paper 001 used 10 to 30 on
        300-d word2vec; calibrate with ``textveil calibrate``).
    embeddings:
        Vocabulary and vectors; default: the bundled embeddings (built on first use).
    decode:
        ``"exact"`` nearest word; ``"screened"``, the same words through a screen over the
        vocabulary's principal axes with a proven error bound (:mod:`textveil.embeddings.screened`);
        or ``"approx"`` (k-means inverted lists). Each keeps the guarantee.
    keep_stop_words:
        Leave stop words unchanged (they are then counted as passed through, unprotected).
    oov:
        Words outside the vocabulary: ``"perturb"`` (default; embedded through their
        subword pieces), ``"keep"`` (passed through, unprotected) or ``"drop"``.
    layout:
        For ``output="text"``: ``"public"`` (default) privatises words and marks alike and
        writes casing, spacing and breaks by a public rule; ``"keep"`` copies the input's
        casing, punctuation and spacing (unprotected, and the Guarantee says so).
    output:
        ``"text"``, or ``"bag"``: the paper's bag of words (the input's stop words and
        punctuation removed, lower case, sorted, space separated; a substitute may itself be
        a stop word: the vocabulary is not filtered).
    seed:
        Integer for reproducible releases; ``None`` draws OS entropy.
    placeholders:
        Whether the vocabulary holds the entity stage's placeholders (``<PERSON>``, ...): set by
        the stage that writes them (:class:`textveil.pii.StagedMechanism`); off, the release is drawn
        from the embeddings' own entries alone.

    >>> from textveil.embeddings import WordEmbeddings
    >>> toy = WordEmbeddings(["good", "fine", "bad", "!"], [[0.0, 0.0], [0.1, 0.0], [9.0, 9.0], [0.0, 9.0]])
    >>> emp = EarthMoversPrivacy(epsilon=50, embeddings=toy, seed=1)
    >>> release = emp.sanitize("  GOOD  !")
    >>> release.text in {"Good!", "Fine!"}, release.guarantee.words_protected, release.guarantee.unprotected
    (True, 2, ('the number of tokens (2)',))
    >>> EarthMoversPrivacy(epsilon=50, embeddings=toy, seed=1, layout="keep").sanitize("GOOD!").text in {"GOOD!", "FINE!"}
    True
    >>> emp.with_params(epsilon=5).epsilon, emp.with_params(epsilon=5).embeddings is toy
    (5.0, True)
    """

    name = "emp"

    def __init__(
        self,
        epsilon: float,
        embeddings: WordEmbeddings | None = None,
        *,
        decode: str = "exact",
        keep_stop_words: bool = False,
        oov: str = "perturb",
        output: str = "text",
        layout: str = "public",
        seed: int | None = None,
        batch_words: int = 8192,
        placeholders: bool = False,
    ) -> None:
        self._check_parameters(epsilon=epsilon, decode=decode, keep_stop_words=keep_stop_words, oov=oov,
                               output=output, layout=layout, seed=seed)
        self._init_common(embeddings, seed, batch_words, placeholders)
        smallest = self.smallest_epsilon
        if self.epsilon < smallest:
            raise InvalidParameterError(
                f"epsilon {epsilon!r} is too small for embeddings '{self.embeddings.name}': its noise (mean radius "
                f"{self.embeddings.dim / self.epsilon:.3g}) drowns every vector, so decoding cannot tell inputs "
                f"apart and float32 overflows; any epsilon below {smallest:.3g} releases (nearly) the same "
                f"random text whatever the input: use epsilon >= {smallest:.3g}"
            )

    @property
    def smallest_epsilon(self) -> float:
        """The smallest epsilon these embeddings decode faithfully (see :data:`LARGEST_MEAN_NOISE`)."""
        longest = self.embeddings.longest_norm() or 1.0
        return self.embeddings.dim / (LARGEST_MEAN_NOISE * longest)

    @property
    def metric(self) -> str:
        what = "token" if self.release_layout == "public" else "word"
        return f"Euclidean distance between {what} vectors of '{self.embeddings.name}' ({self.embeddings.dim} dims)"

    @property
    def index(self) -> NeighbourIndex:
        """The neighbour index over the vocabulary (built on first use, shared per embeddings)."""
        return self.vocabulary.neighbour_index(self.decode)

    def perturb_words(self, words: Sequence[str]) -> list[str]:
        """Algorithm 2 on a bag of tokens: each token's noisy vector decoded to the nearest
        vocabulary entry (a word, or in the public layout also a mark)."""
        return self._decode(words, self._noise(len(words), self._rng, self._second_rng))

    def _noise(self, count: int, rng: np.random.Generator, second: np.random.Generator) -> np.ndarray:
        """``count`` draws of the n-dimensional Laplace noise (the only randomness emp draws)."""
        return sample_laplace_noise(count, self.vocabulary.dim, self.epsilon, rng, second)

    def _decode(self, words: Sequence[str], noise: np.ndarray) -> list[str]:
        vocabulary = self.vocabulary
        rows = self.index.nearest((vocabulary.embed(list(words)) + noise).astype(np.float32))
        return [vocabulary.words[row] for row in rows]

    def _substitute(self, batch: list[TokenPlan], streams: Sequence[Sequence[np.random.Generator]] | None) -> list[str]:
        # Noise and queries are drawn and decoded batch_words at a time, even inside one long
        # document: a 123k-word file held 140k x 384 float64 noise rows at once (1.1 GB). Noise
        # drawn in pieces is the same as drawn at once (sample_laplace_noise), so releases are too.
        if streams is None:
            return self._decode_in_pieces([word for plan in batch for word in plan.originals], self._rng,
                                          self._second_rng)
        return [word for plan, stream in zip(batch, streams)
                for word in self._decode_in_pieces(plan.originals, stream[0], stream[1])]

    def _decode_in_pieces(self, words: Sequence[str], rng: np.random.Generator,
                          second: np.random.Generator) -> list[str]:
        released: list[str] = []
        for start in range(0, len(words), self.batch_words):
            piece = words[start : start + self.batch_words]
            released += self._decode(piece, self._noise(len(piece), rng, second))
        return released

    def _guarantee(self, plan: TokenPlan) -> Guarantee:
        return Guarantee(
            mechanism=self.name,
            epsilon=self.epsilon,
            metric=self.metric,
            words_protected=len(plan.perturb),
            tokens_passed_through=plan.kept,
            tokens_dropped=len(plan.dropped),
            layout=self.release_layout,
            unprotected_in_general=unprotected_by_layout(self.release_layout, self.passes_through),
            policies=self.policies,
            assumptions=("the embeddings and their vocabulary are public, fixed before the release",),
        )
