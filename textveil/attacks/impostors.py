"""The impostors method of Koppel, Schler & Argamon (2011), paper 001's DRauth attack.

"Authorship attribution in the wild" represents texts as character n-gram vectors and asks,
many times over, which candidate is most similar to the unknown text when only a random part
of the feature set is looked at; a candidate's score is the fraction of rounds it wins. Paper
001 (appendix B.2) runs the PAN reproduction (github.com/pan-webis-de/koppel11): character
4-grams inside words, the 20,000 most frequent of them, 100 rounds. Choices here, measured on
Reuters C50 (2,500 known and 2,500 unknown texts, 50 authors):

* n-grams stay inside words (``char_wb``: a word is padded with one space, so word starts and
  ends are features but no n-gram spans two words), as in the reproduction;
* tf-idf weights with log-scaled counts: top-1 0.68 against 0.62 with plain tf-idf and 0.58
  with raw counts; n = 3, 4 or 5 and 20,000 to all features are within two points;
* a candidate is the centroid of its known texts' vectors; comparing with every known text
  and keeping each author's best scores lower (0.61 vs 0.68) and costs 50 times more;
* each round keeps a random 40% of the features, as Koppel et al. did.

Scores are the vote fractions plus a tie-breaker below one vote: the cosine similarity on all
features, divided by twice the number of rounds. Votes go to few candidates, and without it a
top-10 curve would order the rest arbitrarily.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import sparse

from textveil.corpus.labelled import LabelledCorpus
from textveil.errors import InvalidParameterError


class ImpostorsAttack:
    """Character n-gram profiles compared on random feature subsets; scores are vote fractions.

    Parameters
    ----------
    ngram:
        Characters per n-gram (4 in Koppel et al. and the reproduction).
    n_features:
        Most frequent n-grams of the known texts kept as features; ``None`` keeps all.
    iterations:
        Rounds of voting, each on a fresh random feature subset.
    subset:
        Fraction of the features each round looks at (0 < subset <= 1).
    analyzer:
        ``"char_wb"`` (n-grams inside words) or ``"char"`` (n-grams across spaces too).
    lowercase:
        Fold case first; off by default, since capitalisation is part of a style.
    random_state:
        Seed for the feature subsets; the same seed gives the same scores.

    The subsets are drawn at :meth:`fit`, so a text's scores do not depend on the batch it is
    scored in.

    >>> known = ["colour honour flavour"] * 2 + ["color honor flavor"] * 2
    >>> attack = ImpostorsAttack(ngram=3, iterations=20).fit(known, ["uk", "uk", "us", "us"])
    >>> attack.predict(["the colour of honour", "the color of honor"])
    ['uk', 'us']
    """

    name = "impostors"

    def __init__(
        self,
        ngram: int = 4,
        n_features: int | None = 20_000,
        iterations: int = 100,
        subset: float = 0.4,
        *,
        analyzer: str = "char_wb",
        lowercase: bool = False,
        random_state: int | None = 0,
    ) -> None:
        if ngram < 1:
            raise InvalidParameterError(f"the n-gram size must be a positive integer, got {ngram}")
        if n_features is not None and n_features < 1:
            raise InvalidParameterError(f"the number of features must be positive (or None for all), got {n_features}")
        if iterations < 1:
            raise InvalidParameterError(f"the number of iterations must be a positive integer, got {iterations}")
        if not 0 < subset <= 1:
            raise InvalidParameterError(f"the feature subset fraction must lie in (0, 1], got {subset}")
        if analyzer not in ("char", "char_wb"):
            raise InvalidParameterError(f"analyzer must be 'char' or 'char_wb', got {analyzer!r}")
        self.ngram = ngram
        self.n_features = n_features
        self.iterations = iterations
        self.subset = subset
        self.analyzer = analyzer
        self.lowercase = lowercase
        self.random_state = random_state

    def fit(self, texts: Sequence[str], labels: Sequence[str]) -> ImpostorsAttack:
        """Learn the n-gram features, one centroid profile per label, and the feature subsets."""
        from sklearn.feature_extraction.text import TfidfVectorizer

        known = LabelledCorpus(list(texts), [str(label) for label in labels], name="known texts")
        if len(known) == 0:
            raise InvalidParameterError("no known texts to fit the impostors attack on")
        vectorizer = TfidfVectorizer(
            analyzer=self.analyzer, ngram_range=(self.ngram, self.ngram), max_features=self.n_features,
            lowercase=self.lowercase, sublinear_tf=True, dtype=np.float32,
        )
        try:
            vectors = vectorizer.fit_transform(known.texts)
        except ValueError:
            raise InvalidParameterError(
                f"the known texts hold no character {self.ngram}-gram; give longer texts or a smaller n-gram size"
            ) from None
        self.vectorizer_ = vectorizer
        self.classes_: list[str] = known.label_set
        label_ids = np.searchsorted(self.classes_, known.labels)
        # A label's profile is the centroid of its texts' unit-length vectors, so every known
        # text weighs the same whatever its length.
        by_label = [np.flatnonzero(label_ids == i) for i in range(len(self.classes_))]
        self.profiles_: np.ndarray = mean_rows(vectors, by_label).toarray()
        rng = np.random.default_rng(self.random_state)
        # Column r marks the features round r looks at. Features x rounds, so that the rows of
        # one text's features gather into a single small matrix product (see _votes).
        self.subsets_: np.ndarray = (rng.random((vectors.shape[1], self.iterations)) < self.subset).astype(np.float32)
        self.profile_norms_: np.ndarray = np.sqrt((self.profiles_**2) @ self.subsets_)  # labels x rounds
        return self

    def transform(self, texts: Sequence[str]) -> sparse.csr_matrix:
        """The texts' tf-idf n-gram vectors (unit length; sparse, ``len(texts) x features``)."""
        if not hasattr(self, "vectorizer_"):
            raise InvalidParameterError("the impostors attack is not fitted: call fit() first")
        return sparse.csr_matrix(self.vectorizer_.transform(list(texts)), dtype=np.float32)

    def scores(self, texts: Sequence[str]) -> np.ndarray:
        """Vote fractions per label, plus the tie-breaker below one vote (module notes)."""
        return self.vector_scores(self.transform(texts))

    def vote_fractions(self, texts: Sequence[str]) -> np.ndarray:
        """The fraction of rounds each label wins, for each text (rows sum to 1, or 0 for a text
        with no known n-gram)."""
        return self._votes(self.transform(texts))

    def group_scores(self, texts: Sequence[str], members: Sequence[Sequence[int]]) -> np.ndarray:
        """Scores of each group of texts taken together: the centroid of their vectors."""
        return self.vector_scores(mean_rows(self.transform(texts), members))

    def predict(self, texts: Sequence[str]) -> list[str]:
        """The label that wins most rounds for each text."""
        return [self.classes_[i] for i in np.argmax(self.scores(texts), axis=1)]

    def vector_scores(self, vectors: sparse.csr_matrix) -> np.ndarray:
        """Scores of texts given as n-gram vectors (rows of :meth:`transform`, or means of them)."""
        from sklearn.preprocessing import normalize

        cosines = normalize(vectors) @ normalize(self.profiles_).T
        return self._votes(vectors) + np.asarray(cosines) / (2 * self.iterations)

    def _votes(self, vectors: sparse.csr_matrix) -> np.ndarray:
        """Vote fractions: in every round the label of highest cosine on that round's features
        wins one vote. Exact, and linear in the non-zero features of each text."""
        from threadpoolctl import threadpool_limits

        vectors = sparse.csr_matrix(vectors, dtype=np.float32)
        n_labels = len(self.classes_)
        votes = np.zeros((vectors.shape[0], n_labels))
        profile_columns = np.ascontiguousarray(self.profiles_.T)  # features x labels
        # The products below are small (labels x a text's features x rounds); BLAS threads
        # would cost more to start than they save (30 times more, measured on two cores).
        with threadpool_limits(limits=1, user_api="blas"):
            for row in range(vectors.shape[0]):
                span = slice(vectors.indptr[row], vectors.indptr[row + 1])
                features, values = vectors.indices[span], vectors.data[span]
                rounds = self.subsets_[features]  # this text's features x rounds
                text_norms = np.sqrt((values * values) @ rounds)
                seen = text_norms > 0  # a round that sees none of the text's n-grams casts no vote
                if not seen.any():
                    continue
                dots = (profile_columns[features] * values[:, None]).T @ rounds[:, seen]  # labels x rounds
                norms = self.profile_norms_[:, seen] * text_norms[seen]
                cosines = np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)
                votes[row] = np.bincount(np.argmax(cosines, axis=0), minlength=n_labels)
        return votes / self.iterations


def mean_rows(vectors: sparse.spmatrix, groups: Sequence[Sequence[int]]) -> sparse.csr_matrix:
    """One row per group: the mean of the group's rows of ``vectors``.

    >>> mean_rows(sparse.csr_matrix([[1.0, 0.0], [3.0, 2.0], [5.0, 5.0]]), [[0, 1], [2]]).toarray().tolist()
    [[2.0, 1.0], [5.0, 5.0]]
    """
    rows = np.concatenate([np.full(len(group), i) for i, group in enumerate(groups)]).astype(np.int64)
    columns = np.concatenate([np.asarray(group, dtype=np.int64) for group in groups])
    sizes = np.array([len(group) for group in groups], dtype=np.float32)
    if np.any(sizes == 0):
        raise InvalidParameterError("a group of texts is empty; every group needs at least one text")
    weights = sparse.csr_matrix((1.0 / sizes[rows], (rows, columns)), shape=(len(groups), vectors.shape[0]))
    return sparse.csr_matrix(weights @ vectors, dtype=np.float32)
