"""Paper 004's stylometric attack suite (Table 1), and longer and typed character n-grams
beside it: a feature set and a classifier per attack.

Feature sets (``features``), each fitted on the known texts only:

* ``word1``, ``word2``: word uni- or bigrams (exactly n words, as paper 004's Table 1),
  lower-cased, with every punctuation mark or symbol as a token of its own so that "love !"
  and "love ." differ; n-grams seen in fewer than ``min_df`` known texts are dropped
  (paper 004 keeps those in at least two tweets).
* ``char1``, ``char2``, ``char3``: character uni-, bi- or trigrams (Almishari et al. 2014),
  case kept (capitals are style), spaces and punctuation included.
* ``char4``, ``char5``: character 4- and 5-grams, the same way. Not in paper 004, but longer
  character n-grams are a mainstay of the authorship literature (Koppel et al. 2011 use
  4-grams), and a risk measured without the strongest attacks is too low.
* ``typed``: character 3-grams typed by what they cover, affix, word or punctuation
  (:mod:`textveil.attacks.typed_ngrams`, Sapkota et al. 2015).
* ``writeprints``: :func:`textveil.text.stylometry.stylometric_features` (Narayanan et al.
  2012).
* ``topic``: content words only (lower-cased words of three letters or more, stop words left
  out): what a text is about rather than how it is written. Not a style attack: it measures the
  part of the risk that a release which keeps the meaning cannot remove.

Classifiers (``classifier``), all from scikit-learn but the centroid one:

* ``svm``: one-vs-rest linear SVM (``LinearSVC``); scores are its decision function.
* ``nb``: multinomial naive Bayes; scores are joint log-likelihoods. It reads raw n-gram
  counts; writeprints columns are shifted and scaled into [0, 1] (``MinMaxScaler``) instead,
  because Gaussian naive Bayes ranks per-user means badly (top-1 0.13 against 0.57 on a
  blog_short validation split): its variances are fitted to single short texts.
* ``knn``: nearest centroid, paper 004's k-NN with each user collapsed to their centroid;
  scores are the negative Euclidean distances to the centroids.
* ``rls``: regularised least squares (``RidgeClassifier``) on +-1 targets.

Following Narayanan et al. (2012), ``svm``, ``knn`` and ``rls`` see normalised features: n-gram
counts become sublinear tf-idf with unit rows, writeprints columns are standardised and then
rows scaled to unit length. The hyperparameters below were chosen on a validation split of
blog_short (first 50 posts of each user known, next 20 unknown), not on the test posts.

>>> attack = StylometricAttack("char2", "knn").fit(["aaa aaa", "aab aab", "xyz xyz", "xyy xyy"], ["A", "A", "X", "X"])
>>> attack.name, attack.classes_, attack.scores(["aaa"]).argmax(axis=1).tolist()
('char2-knn', ['A', 'X'], [0])
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import NotFittedError
from sklearn.feature_extraction.text import CountVectorizer, TfidfTransformer
from sklearn.linear_model import RidgeClassifier
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.naive_bayes import MultinomialNB
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer, MinMaxScaler, Normalizer, StandardScaler
from sklearn.svm import LinearSVC

from textveil.attacks.registry import STYLOMETRIC_CLASSIFIERS, STYLOMETRIC_FEATURES
from textveil.attacks.typed_ngrams import TypedCharNgrams
from textveil.errors import InvalidParameterError
from textveil.text.stopwords import CONTENT_WORD_PATTERN, english_stop_words
from textveil.text.stylometry import stylometric_features, word_shape
from textveil.text.tokenize import WORD_PATTERN

# A word as textveil's tokenizer sees it, or any single character that is neither a word
# character nor whitespace (punctuation, symbols, emoji).
_WORD_OR_MARK = rf"{WORD_PATTERN}|[^\w\s]"
_WORD = re.compile(WORD_PATTERN)

# Validation top-1 (blog_short, 50 known / 20 unknown posts per user) behind each choice:
# SVM C: 1 for n-grams (0.3: 0.83, 1: 0.85, 3: 0.85 on word2); 0.1 for writeprints (0.77
# against 0.71 at C=1). Writeprints is the slow one (a minute or two on blog_short): liblinear
# converges slowly on 10,500 dense rows that no hyperplane separates.
_SVM_C = {"writeprints": 0.1}
# NB smoothing: rare word n-grams want little (word2: 0.01 gives 0.84, 0.1 gives 0.74;
# word1: 0.87 against 0.85);
# characters and writeprints more (char2: 0.1 gives 0.85, 0.01 gives 0.81), but the sparse
# longer character n-grams little again (0.03 against 0.1: char4 0.89 vs 0.85, char5 0.85 vs
# 0.79, typed 0.90 vs 0.88; on a C50 validation split all within a point of each other).
_NB_ALPHA = {"word1": 0.01, "word2": 0.01, "char4": 0.03, "char5": 0.03, "typed": 0.03}
# Ridge: a loose conjugate-gradient tolerance ranks as well as the default (word2: 0.79 with
# either) and fits 3x faster on sparse n-grams. The intercept stays: without it char2 falls
# from 0.89 to 0.43.
_RIDGE = {"alpha": 1.0, "tol": 1e-2}


def averaging_matrix(members: Sequence[Sequence[int]], n: int) -> sp.csr_matrix:
    """A ``len(members) x n`` matrix whose product with X holds the mean row of each group.

    >>> averaging_matrix([[0, 2], [1]], 3).toarray()
    array([[0.5, 0. , 0.5],
           [0. , 1. , 0. ]])
    """
    sizes = [len(group) for group in members]
    if min(sizes, default=1) == 0:
        raise InvalidParameterError("every group of texts to average needs at least one text")
    rows = np.repeat(np.arange(len(members)), sizes)
    columns = np.fromiter((i for group in members for i in group), dtype=np.int64, count=sum(sizes))
    weights = np.repeat(1.0 / np.array(sizes, dtype=np.float64), sizes)
    return sp.csr_matrix((weights, (rows, columns)), shape=(len(members), n))


class CentroidClassifier(ClassifierMixin, BaseEstimator):
    """Each class is the mean of its rows; scores are negative Euclidean distances to them.

    Euclidean rather than cosine: on unit-length tf-idf rows, the distance also counts how
    concentrated an author's centroid is, and ranks far better (word2: 0.87 against 0.56).

    scikit-learn's ``NearestCentroid`` ranks by distances scaled per feature by the
    within-class spread, and its fit builds a dense copy of X (10,500 x 30,000 floats for
    blog_short bigrams), so this small class computes the plain distances itself.

    >>> model = CentroidClassifier().fit(np.array([[0.0], [2.0], [10.0]]), ["a", "a", "b"])
    >>> model.decision_function(np.array([[3.0]])).tolist()
    [[-2.0, -7.0]]
    """

    def fit(self, X: Any, y: Sequence[str]) -> CentroidClassifier:
        self.classes_, position = np.unique(np.asarray(y), return_inverse=True)
        members = [np.flatnonzero(position == c) for c in range(len(self.classes_))]
        centroids = averaging_matrix(members, X.shape[0]) @ X
        self.centroids_ = centroids.toarray() if sp.issparse(centroids) else np.asarray(centroids)
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        return -euclidean_distances(X, self.centroids_)


_SHAPE_SYMBOL = {"lower": "a", "capitalised": "A", "upper": "U", "mixed": "m", "no_letters": "0"}


def layout_skeleton(text: str) -> str:
    """``text`` with every word replaced by one symbol for its shape (a: lower case,
    A: Capitalised, U: ALL CAPS, m: mIxEd, 0: no letters) and everything else kept: the
    punctuation, symbols, spacing and line breaks between words. An attacker who knows that a
    mechanism replaces words but copies the layout reads exactly this.

    >>> layout_skeleton("OMG, I can't  go!!\\n:) Meet at 10")
    'U, A a  a!!\\n:) A a 0'
    """
    return _WORD.sub(lambda match: _SHAPE_SYMBOL[word_shape(match.group())], text)


def _vectoriser(features: str, min_df: int) -> Any:
    """Texts -> raw feature matrix (n-gram counts, or writeprints columns)."""
    if features == "writeprints":
        return FunctionTransformer(stylometric_features)
    if features == "shape":  # character 1- to 4-grams of the layout skeleton
        return CountVectorizer(analyzer="char", ngram_range=(1, 4), lowercase=False, preprocessor=layout_skeleton,
                               min_df=min_df, dtype=np.float64)
    if features == "typed":
        return CountVectorizer(analyzer=TypedCharNgrams(3), min_df=min_df, dtype=np.float64)
    if features == "topic":  # what a text is about: its content words, not its function words or marks
        return CountVectorizer(token_pattern=CONTENT_WORD_PATTERN, lowercase=True,
                               stop_words=sorted(english_stop_words()), min_df=min_df, dtype=np.float64)
    n = int(features[-1])
    if features.startswith("word"):
        return CountVectorizer(token_pattern=_WORD_OR_MARK, ngram_range=(n, n), min_df=min_df, dtype=np.float64)
    return CountVectorizer(analyzer="char", ngram_range=(n, n), lowercase=False, min_df=min_df, dtype=np.float64)


def _normaliser(features: str, classifier: str) -> Any:
    """Raw features -> what the classifier reads (see the module notes)."""
    if classifier == "nb":
        return MinMaxScaler(clip=True) if features == "writeprints" else "passthrough"
    if features == "writeprints":
        return make_pipeline(StandardScaler(), Normalizer())
    return TfidfTransformer(sublinear_tf=True)


def _classifier(features: str, classifier: str, random_state: int | None) -> Any:
    if classifier == "svm":
        return LinearSVC(C=_SVM_C.get(features, 1.0), random_state=random_state)
    if classifier == "nb":
        return MultinomialNB(alpha=_NB_ALPHA.get(features, 0.1))
    if classifier == "knn":
        return CentroidClassifier()
    return RidgeClassifier(**_RIDGE)


class StylometricAttack:
    """One attack of the suite: ``features`` x ``classifier`` (see the module notes).

    ``min_df``: n-grams in fewer known texts are dropped, unless that would drop them all
    (``min_df_`` is the value used). ``random_state`` seeds the SVM
    solver's order of coordinates; every other part is deterministic.
    """

    def __init__(self, features: str = "word2", classifier: str = "svm", random_state: int | None = 0,
                 min_df: int = 2) -> None:
        if features not in STYLOMETRIC_FEATURES:
            raise InvalidParameterError(
                f"unknown stylometric features '{features}'; choose one of {', '.join(STYLOMETRIC_FEATURES)}")
        if classifier not in STYLOMETRIC_CLASSIFIERS:
            raise InvalidParameterError(
                f"unknown stylometric classifier '{classifier}'; choose one of {', '.join(STYLOMETRIC_CLASSIFIERS)}")
        if min_df < 1:
            raise InvalidParameterError(f"min_df must be at least 1, got {min_df}")
        self.features = features
        self.classifier = classifier
        self.random_state = random_state
        self.min_df = min_df
        self.name = f"{features}-{classifier}"
        self.classes_: list[str] = []

    def fit(self, texts: Sequence[str], labels: Sequence[str]) -> StylometricAttack:
        """Fit features and classifier on the known texts and their authors."""
        if len(texts) != len(labels):
            raise InvalidParameterError(f"{len(texts)} known texts but {len(labels)} labels")
        labels = [str(label) for label in labels]
        if len(set(labels)) < 2:
            raise InvalidParameterError(f"attack '{self.name}' needs known texts of at least two authors")
        self.min_df_ = self.min_df
        self.pipeline_ = self._pipeline(self.min_df)
        try:
            self.pipeline_.fit(list(texts), labels)
        except ValueError as error:
            # Known texts that share no n-gram (a small release of random words): the attacker
            # keeps the n-grams seen once rather than give up, as a real one would.
            if "no terms remain" not in str(error) or self.min_df == 1:
                raise
            self.min_df_ = 1
            self.pipeline_ = self._pipeline(1)
            self.pipeline_.fit(list(texts), labels)
        self.classes_ = [str(label) for label in self.pipeline_.classes_]
        return self

    def _pipeline(self, min_df: int) -> Pipeline:
        return Pipeline([
            ("features", _vectoriser(self.features, min_df)),
            ("normalise", _normaliser(self.features, self.classifier)),
            ("classify", _classifier(self.features, self.classifier, self.random_state)),
        ])

    def transform(self, texts: Sequence[str]) -> Any:
        """The feature vectors the classifier reads (sparse for n-grams, dense for writeprints)."""
        if not hasattr(self, "pipeline_"):
            raise NotFittedError(f"attack '{self.name}' is not fitted: call fit(known texts, labels) first")
        return self.pipeline_[:-1].transform(list(texts))

    def scores(self, texts: Sequence[str]) -> np.ndarray:
        """``len(texts) x len(classes_)`` scores, higher meaning more likely."""
        return self.score_vectors(self.transform(texts))

    def group_scores(self, texts: Sequence[str], members: Sequence[Sequence[int]]) -> np.ndarray:
        """Scores of each group's mean feature vector (paper 004 collapses each user's test
        vectors to their mean), ``len(members) x len(classes_)``."""
        vectors = self.transform(texts)
        return self.score_vectors(averaging_matrix(members, vectors.shape[0]) @ vectors)

    def score_vectors(self, vectors: Any) -> np.ndarray:
        """Scores of feature vectors as :meth:`transform` makes them."""
        model = self.pipeline_[-1]
        if isinstance(model, MultinomialNB):
            return model.predict_joint_log_proba(vectors)
        scores = np.asarray(model.decision_function(vectors), dtype=np.float64)
        if scores.ndim == 1:  # two classes: scikit-learn gives one score, for classes_[1]
            scores = np.column_stack([-scores, scores])
        return scores
