"""Does a model trained on the original texts still work on the release? Paper 004's F1 task.

Paper 004 trains a classifier on the original corpus and applies it to each protected
corpus; the closer the release's F1 to the F1 on held-out originals, the better the release
kept the features the model relies on. Here the model is a tf-idf bag of words and bigrams
with a linear classifier (a linear SVM by default, or logistic regression), and the score is macro F1 so
that small classes (a rare blog industry) count as much as large ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from textveil.errors import InvalidParameterError
from textveil.utility.preprocess import check_parallel, words

MODELS = ("svm", "logreg")
# Regularisation per model: on BBC topics (tf-idf words and bigrams) both reach macro F1
# 0.98-0.99 with these; the SVM trains in 0.4 s of CPU, logistic regression (lbfgs) in 13 s.
DEFAULT_C = {"svm": 1.0, "logreg": 10.0}


class ReleaseClassifier:
    """tf-idf (words and bigrams, sublinear tf) + a linear SVM or logistic regression, trained on clean texts.

    >>> sport = ["goal match striker", "match referee goal", "striker scored goal"] * 3
    >>> money = ["bank shares profit", "profit market bank", "shares rallied market"] * 3
    >>> model = ReleaseClassifier().fit(sport + money, ["sport"] * 9 + ["money"] * 9)
    >>> model.predict(["the goal", "bank profit"])
    ['sport', 'money']
    >>> model.f1(["the goal", "bank profit"], ["sport", "money"])
    1.0
    """

    name = "classification-f1"

    def __init__(self, model: str = "svm", *, c: float | None = None, max_features: int | None = 200_000,
                 seed: int = 0) -> None:
        if model not in MODELS:
            raise InvalidParameterError(f"unknown classifier '{model}'; choose one of {', '.join(MODELS)}")
        if c is not None and c <= 0:
            raise InvalidParameterError(f"the regularisation constant C must be positive, got {c}")
        self.model = model
        self.c = DEFAULT_C[model] if c is None else c
        self.max_features = max_features
        self.seed = seed
        self.classes_: list[str] = []
        self._pipeline: Any = None

    def _make_pipeline(self) -> Any:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.svm import LinearSVC

        vectorizer = TfidfVectorizer(
            tokenizer=words, lowercase=False, token_pattern=None, ngram_range=(1, 2), sublinear_tf=True,
            min_df=1, max_features=self.max_features,
        )
        if self.model == "logreg":
            classifier = LogisticRegression(C=self.c, max_iter=2000, random_state=self.seed)
        else:
            classifier = LinearSVC(C=self.c, random_state=self.seed)
        return make_pipeline(vectorizer, classifier)

    def fit(self, texts: Sequence[str], labels: Sequence[str]) -> ReleaseClassifier:
        """Train on clean ``texts`` and their ``labels``; returns ``self``."""
        check_parallel(texts, texts, labels)
        labels = [str(label) for label in labels]
        self.classes_ = sorted(set(labels))
        if len(self.classes_) < 2:
            raise InvalidParameterError(f"classification needs at least 2 labels, got {self.classes_}")
        self._pipeline = self._make_pipeline()
        try:
            self._pipeline.fit(list(texts), labels)
        except ValueError as exc:  # e.g. "empty vocabulary" when no text holds a word
            raise InvalidParameterError(f"cannot train the classifier: {exc}") from None
        return self

    def predict(self, texts: Sequence[str]) -> list[str]:
        """The predicted label of each text."""
        if self._pipeline is None:
            raise InvalidParameterError("the classifier is not fitted; call fit() first")
        return [str(label) for label in self._pipeline.predict(list(texts))] if len(texts) else []

    def f1(self, texts: Sequence[str], labels: Sequence[str]) -> float:
        """Macro F1 of the predictions on ``texts`` (e.g. a release) against their true ``labels``."""
        check_parallel(texts, texts, labels)
        return macro_f1([str(label) for label in labels], self.predict(texts))


def macro_f1(truth: Sequence[str], predicted: Sequence[str]) -> float:
    """Macro-averaged F1 over the labels that occur in ``truth`` or ``predicted``.

    >>> round(macro_f1(["a", "a", "b", "b"], ["a", "b", "b", "b"]), 4)
    0.7333
    """
    from sklearn.metrics import f1_score

    return float(f1_score(list(truth), list(predicted), average="macro", zero_division=0))


def classification_f1(
    train_texts: Sequence[str],
    train_labels: Sequence[str],
    test_texts: Sequence[str],
    test_labels: Sequence[str],
    *,
    model: str = "svm",
) -> float:
    """Train on ``train_texts`` (originals) and return the macro F1 on ``test_texts`` (a release,
    or the held-out originals for the baseline)."""
    return ReleaseClassifier(model).fit(train_texts, train_labels).f1(test_texts, test_labels)
