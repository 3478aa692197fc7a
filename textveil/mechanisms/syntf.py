"""SynTF (Weggenmann and Kerschbaum 2018) as paper 002 ran it: each output token drawn by the
exponential mechanism over the vocabulary, with a rating function of the input document.

For a document x of L tokens, each of the L output tokens is drawn independently with

    Pr[w] proportional to exp(epsilon * rating(x, w) / (2 * sensitivity)),

and the rating lies in [0, 1] for every document and every candidate, so its sensitivity (the
largest change of any candidate's rating between two documents) is 1 whatever the two
documents are. Each draw is then epsilon-differentially private with respect to the whole
input document, and the L draws compose to (epsilon * L)-DP; L, the number of tokens, is
released unprotected. Two ratings:

* ``"tfidf"`` (default, SynTF's own): the candidate's tf-idf in the document divided by the
  document's largest tf-idf; 0 for a word the document does not hold. The idf is learned by
  :meth:`SynTF.fit` from a training corpus (never the released texts), or, unfitted, taken from
  public English word frequencies (``wordfreq``: idf = -log frequency).
* ``"similarity"``: the candidate's largest cosine to any token of the document, mapped from
  [-1, 1] to [0, 1], over the embeddings' vectors.

At small epsilon the output approaches a uniform draw from the vocabulary; at large epsilon it
concentrates on the document's highest-rated tokens. (A published implementation rates every
candidate the same, which makes the mechanism a uniform draw; here the ratings differ, and a
test checks that they do.)
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from textveil.embeddings.word_embeddings import WordEmbeddings
from textveil.mechanisms.sampling import sample_exponential_mechanism
from textveil.mechanisms.substitution import TokenPlan, TokenSubstitution
from textveil.privacy.guarantee import Guarantee
from textveil.text.layout import PUBLIC_MARKS, is_mark
from textveil.text.placeholders import is_placeholder
from textveil.text.tokenize import word_key

SENSITIVITY = 1.0
"""Every rating lies in [0, 1] for every document, so no candidate's rating moves by more than 1."""


class SynTF(TokenSubstitution):
    """The ``syntf`` mechanism.

    >>> from textveil.embeddings import WordEmbeddings
    >>> toy = WordEmbeddings(["cat", "dog", "tax", "law"], [[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    >>> loud = SynTF(epsilon=200, embeddings=toy, seed=0).fit(["cat dog", "tax law", "cat tax"])
    >>> loud.sanitize("cat cat dog").text.split()  # at large epsilon: the document's top-rated word
    ['Cat', 'cat', 'cat']
    >>> loud.sanitize("cat cat dog").guarantee.document_epsilon
    600.0
    """

    name = "syntf"
    placeholder_rule = ("each placeholder has no content rating: it adds nothing to the document's rating; it is one "
                        "vocabulary entry where the embeddings place it (the mean of the public words for its type "
                        "they know), drawn only as any unrated entry is (covered by epsilon)")

    def __init__(self, epsilon: float, embeddings: WordEmbeddings | None = None, *, rating: str = "tfidf",
                 layout: str = "public", seed: int | None = None, batch_words: int = 8192,
                 placeholders: bool = False) -> None:
        self._check_parameters(epsilon=epsilon, rating=rating, layout=layout, seed=seed)
        self._init_common(embeddings, seed, batch_words, placeholders)

    # -- learning the idf --------------------------------------------------------------

    @property
    def _rated_vocabulary(self) -> WordEmbeddings:
        """The entries idf is kept for: the words, the placeholders and the public marks (whatever
        the layout and whether a stage writes placeholders, so one fitted idf serves every
        vocabulary the mechanism may release from: each is made of its entries)."""
        return self.embeddings.with_placeholders().with_marks(PUBLIC_MARKS)

    def _fit(self, texts: list[str]) -> None:
        """Document frequencies over a training corpus, with scikit-learn's smoothed idf."""
        vocabulary = self._rated_vocabulary
        frequency = np.zeros(len(vocabulary), dtype=np.int64)
        for text in texts:
            rows = {vocabulary.index_of(token.text) for token in self._tokens(text) if token.text}
            rows.discard(None)
            frequency[list(rows)] += 1  # type: ignore[index]
        self.idf_ = np.log((1 + len(texts)) / (1 + frequency)) + 1.0

    @property
    def idf(self) -> np.ndarray:
        """The idf of every vocabulary entry: learned by :meth:`fit`, else public (wordfreq)."""
        full = getattr(self, "idf_", None)
        if full is None:
            full = _public_idf(tuple(self._rated_vocabulary.words))
        rows = self._rated_rows()
        picked = full[rows]
        if rows.min(initial=0) < 0:
            picked[rows < 0] = full.max()
        return picked

    def _rated_rows(self) -> np.ndarray:
        """The row of :attr:`_rated_vocabulary` of each entry of the vocabulary (computed once per
        vocabulary); -1 for an entry it lacks (a mark whose vector only a placeholder has, in a
        vocabulary without them), whose idf is then the largest, as for an entry seen in no text."""
        vocabulary = self.vocabulary
        cached = getattr(self, "_rows", None)
        if cached is None or cached[0] is not vocabulary:
            rated = self._rated_vocabulary
            if vocabulary is rated:
                rows = np.arange(len(rated))
            else:
                spellings = {word: row for row, word in enumerate(rated.words)}
                rows = np.fromiter((spellings.get(word, -1) for word in vocabulary.words), dtype=np.int64,
                                   count=len(vocabulary))
            cached = self._rows = (vocabulary, rows)
        return cached[1]

    # -- rating and drawing --------------------------------------------------------------

    def ratings(self, tokens: list[str]) -> np.ndarray:
        """rating(x, w) in [0, 1] of every vocabulary entry w for a document of ``tokens``; the
        entity stage's placeholders rate nothing (a public token, not the document's content)."""
        vocabulary = self.vocabulary
        tokens = [token for token in tokens if not is_placeholder(token)]
        if self.rating == "similarity":
            if not tokens:
                return np.zeros(len(vocabulary))
            unit = self._unit_vectors()
            document = _normalised(vocabulary.embed(sorted(set(tokens))))
            return (1.0 + np.clip((unit @ document.T).max(axis=1), -1.0, 1.0)) / 2.0
        scores = np.zeros(len(vocabulary))
        for word, count in Counter(tokens).items():
            row = vocabulary.index_of(word)
            if row is not None:
                scores[row] += count
        scores *= self.idf
        top = scores.max()
        return scores / top if top > 0 else scores

    def _unit_vectors(self) -> np.ndarray:
        """The vocabulary's vectors at unit length, computed once per mechanism (not per document)."""
        cached = getattr(self, "_unit", None)
        if cached is None or cached.shape[0] != len(self.vocabulary):
            cached = self._unit = _normalised(self.vocabulary.vectors)
        return cached

    def _substitute(self, batch: list[TokenPlan], streams: Sequence[Sequence[np.random.Generator]] | None) -> list[str]:
        words = self.vocabulary.words
        released: list[str] = []
        for number, plan in enumerate(batch):  # one distribution per document, L draws from it
            originals = [word_key(t) for t in plan.originals]
            if originals:
                rng = self._rng if streams is None else streams[number][0]
                rows = sample_exponential_mechanism(self.ratings(originals), self.epsilon, rng,
                                                    sensitivity=SENSITIVITY, size=len(originals))
                released.extend(words[row] for row in rows)
        return released

    def _guarantee(self, plan: TokenPlan) -> Guarantee:
        n = len(plan.perturb)
        learned = hasattr(self, "idf_")
        assumptions = (
            "the vocabulary is public",
            "the idf was learned from texts other than the released ones" if learned and self.rating == "tfidf"
            else "the ratings use only public data (word frequencies from wordfreq, or the embeddings)",
        )
        return Guarantee(
            mechanism=self.name, epsilon=self.epsilon, kind="dp", unit="token", composition="sequential",
            words_protected=n, layout=self.release_layout, assumptions=assumptions,
            how=(
                f"syntf: each of this text's {n} tokens was drawn by the exponential mechanism with epsilon = "
                f"{self.epsilon:g} over the {len(self.vocabulary):,}-entry vocabulary, rated by the whole input "
                f"document ({self.rating}, in [0, 1], sensitivity {SENSITIVITY:g}); by sequential composition the "
                f"release is ({self.epsilon * n:g})-differentially private against any other text of {n} tokens."
            ),
        )


def _normalised(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)


@lru_cache(maxsize=4)
def _public_idf(words: tuple[str, ...]) -> np.ndarray:
    """idf = -log(frequency of the word in English), from wordfreq; a mark counts as common as
    the commonest word (wordfreq holds no punctuation), a word it does not know as rare."""
    from wordfreq import word_frequency

    commonest = word_frequency("the", "en")
    floor = 1e-9
    frequencies = [commonest if is_mark(w) else max(word_frequency(w, "en"), floor) for w in words]
    return -np.log(np.asarray(frequencies)) + math.log(commonest)  + 1.0
