"""Same-representation attacks: nearest known texts in the word-embedding space (paper 001).

Paper 001 (section 6, "same-representation" inference) represents every text by the mean of
its word vectors, in the very space the mechanism perturbs, and assigns an unknown text the
label of its nearest known text by Euclidean distance: 1-NN with authors as labels (SRauth),
5-NN with topics as labels (SRtopic). Appendix B.1 normalises the texts first (stop words and
punctuation removed, lower case); punctuation never reaches the vectors here, lower case is
what the embeddings' look-up does anyway, and dropping stop words is the default.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from textveil.corpus.labelled import LabelledCorpus
from textveil.embeddings.word_embeddings import WordEmbeddings
from textveil.errors import InvalidParameterError
from textveil.text.stopwords import is_stop_word
from textveil.text.tokenize import find_words


# Rows of unknown texts compared with all known texts at once: bounds the distance matrix
# (block x known texts) to a few hundred MiB even for large known sets.
_BLOCK_ROWS = 1024


def mean_word_vectors(texts: Sequence[str], embeddings: WordEmbeddings, drop_stop_words: bool = True) -> np.ndarray:
    """One row per text: the mean vector of its words (a text with no word gets the zero vector).

    Every distinct word is looked up (and judged a stop word or not) once for the whole batch;
    out-of-vocabulary words go through the embeddings' subword embedder, the slow part. Each
    mean is then one sparse product of word counts and vectors.

    >>> emb = WordEmbeddings(["cat", "dog"], [[0.0, 3.0], [3.0, 0.0]])
    >>> mean_word_vectors(["cat dog dog", "the"], emb).tolist()
    [[2.0, 1.0], [0.0, 0.0]]
    """
    from sklearn.feature_extraction.text import CountVectorizer

    counts = CountVectorizer(analyzer=find_words, dtype=np.float32)
    try:
        matrix = counts.fit_transform(list(texts)).tocsc()
    except ValueError:  # no text has a single word
        return np.zeros((len(texts), embeddings.dim), dtype=np.float32)
    words = counts.get_feature_names_out().tolist()
    if drop_stop_words:
        keep = [i for i, word in enumerate(words) if not is_stop_word(word)]
        matrix, words = matrix[:, keep], [words[i] for i in keep]
    vectors = embeddings.embed(words)
    totals = np.asarray(matrix.sum(axis=1), dtype=np.float32)
    return np.asarray(matrix @ vectors, dtype=np.float32) / np.maximum(totals, 1.0)


class EmbeddingNearestNeighbour:
    """k nearest known texts by Euclidean distance between mean word vectors (paper 001 SR*).

    Parameters
    ----------
    k:
        Neighbours that vote: 1 for authors (SRauth), 5 for topics (SRtopic).
    embeddings:
        The word vectors; the default embeddings (loaded at :meth:`fit`) when ``None``. Use the
        same embeddings the mechanism perturbed in: that is what "same representation" means.
    drop_stop_words:
        Leave stop words out of the means, as paper 001 normalises its texts.

    Scores: with ``k=1`` the negative distance to the nearest known text of each label, so the
    ranking of all labels (top-k curves) is by nearest distance; with ``k>1`` the votes among
    the k nearest, ties and vote-less labels ordered by the nearest distance (a bonus under one
    vote, so it never overturns a vote).

    >>> emb = WordEmbeddings(["cat", "dog", "gold", "oil"], np.eye(4))
    >>> attack = EmbeddingNearestNeighbour(embeddings=emb).fit(["cat dog", "gold oil"], ["pets", "trade"])
    >>> attack.predict(["a cat", "oil prices"])
    ['pets', 'trade']
    """

    def __init__(self, k: int = 1, embeddings: WordEmbeddings | None = None, *, drop_stop_words: bool = True) -> None:
        if not isinstance(k, (int, np.integer)) or k < 1:
            raise InvalidParameterError(f"k (neighbours) must be a positive integer, got {k!r}")
        self.k = int(k)
        self.embeddings = embeddings
        self.drop_stop_words = drop_stop_words

    @property
    def name(self) -> str:
        return f"embedding-{self.k}nn"

    def fit(self, texts: Sequence[str], labels: Sequence[str]) -> EmbeddingNearestNeighbour:
        """Embed the known texts; loads the default embeddings now if none were given."""
        known = LabelledCorpus(list(texts), [str(label) for label in labels], name="known texts")
        if len(known) == 0:
            raise InvalidParameterError("no known texts to fit the embedding attack on")
        if self.embeddings is None:
            from textveil.embeddings.default_model import load_embeddings

            self.embeddings = load_embeddings()
        self.classes_: list[str] = known.label_set
        # Known texts sorted by label, so the nearest text of each label is one reduceat.
        label_ids = np.searchsorted(self.classes_, known.labels)
        order = np.argsort(label_ids, kind="stable")
        self.vectors_: np.ndarray = self.transform(known.texts)[order]
        self.labels_: np.ndarray = label_ids[order]
        self.label_starts_: np.ndarray = np.searchsorted(self.labels_, np.arange(len(self.classes_)))
        return self

    def transform(self, texts: Sequence[str]) -> np.ndarray:
        """The mean word vector of each text (``len(texts) x dim``)."""
        if self.embeddings is None:
            raise InvalidParameterError("the embedding attack is not fitted: call fit() first")
        return mean_word_vectors(texts, self.embeddings, self.drop_stop_words)

    def scores(self, texts: Sequence[str]) -> np.ndarray:
        """``len(texts) x len(classes_)`` scores, higher meaning nearer (see the class notes)."""
        return self.vector_scores(self.transform(texts))

    def group_scores(self, texts: Sequence[str], members: Sequence[Sequence[int]]) -> np.ndarray:
        """Scores of each group of texts taken together: the mean of their mean vectors."""
        vectors = self.transform(texts)
        return self.vector_scores(np.stack([vectors[list(group)].mean(axis=0) for group in members]))

    def predict(self, texts: Sequence[str]) -> list[str]:
        """The best-scoring label of each text."""
        return [self.classes_[i] for i in np.argmax(self.scores(texts), axis=1)]

    def vector_scores(self, vectors: np.ndarray) -> np.ndarray:
        """Scores of texts given as mean vectors (rows of :meth:`transform`)."""
        if not hasattr(self, "vectors_"):
            raise InvalidParameterError("the embedding attack is not fitted: call fit() first")
        from sklearn.metrics.pairwise import euclidean_distances

        out = np.empty((len(vectors), len(self.classes_)))
        k = min(self.k, len(self.vectors_))
        for start in range(0, len(vectors), _BLOCK_ROWS):
            distances = euclidean_distances(vectors[start:start + _BLOCK_ROWS], self.vectors_)
            nearest = np.minimum.reduceat(distances, self.label_starts_, axis=1)
            if k == 1:
                out[start:start + _BLOCK_ROWS] = -nearest
                continue
            neighbours = np.argpartition(distances, k - 1, axis=1)[:, :k]
            votes = np.zeros_like(nearest)
            np.add.at(votes, (np.arange(len(votes))[:, None], self.labels_[neighbours]), 1.0)
            # 0.5 / (1 + d) lies in (0, 0.5]: it orders equal votes by nearness, never more.
            out[start:start + _BLOCK_ROWS] = votes + 0.5 / (1.0 + nearest)
        return out
