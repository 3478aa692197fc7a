"""Utility tasks as the sweep runs them: prepared once on clean text, measured on each release.

Each runner wraps a function of :mod:`textveil.utility` (or, for paper 001's SRtopic, the
k-NN of :mod:`textveil.attacks.embedding_neighbours`: the same machinery serves as a topic
classifier) and returns ``{"value", "metric", "higher_is_better"}`` for a release.
"""

from __future__ import annotations

from typing import Any, ClassVar

from textveil.corpus.labelled import LabelledCorpus


class UtilityRunner:
    """Base runner: ``prepare`` once on clean train/test texts, then ``measure`` releases."""

    metric: ClassVar[str] = ""
    higher_is_better: ClassVar[bool] = True
    needs_topic_labels: ClassVar[bool] = False

    def __init__(self, embeddings: Any = None, seed: int | None = None) -> None:
        self.embeddings = embeddings
        self.seed = seed
        self.train: LabelledCorpus | None = None
        self.test: LabelledCorpus | None = None

    def prepare(self, train: LabelledCorpus, test: LabelledCorpus) -> None:
        self.train, self.test = train, test

    def measure(self, released: list[str]) -> dict[str, Any]:
        value = float(self.value(released))
        return {"value": value, "metric": self.metric, "higher_is_better": self.higher_is_better}

    def value(self, released: list[str]) -> float:  # pragma: no cover - abstract
        raise NotImplementedError


class TopicNearestNeighbours(UtilityRunner):
    """Paper 001 SRtopic: 5-NN topic by Euclidean distance between mean word vectors."""

    metric = "topic accuracy (5-NN in embedding space)"
    needs_topic_labels = True

    def prepare(self, train: LabelledCorpus, test: LabelledCorpus) -> None:
        from textveil.attacks.embedding_neighbours import EmbeddingNearestNeighbour

        super().prepare(train, test)
        self.model = EmbeddingNearestNeighbour(k=5, embeddings=self.embeddings).fit(train.texts, train.labels)

    def value(self, released: list[str]) -> float:
        assert self.test is not None
        predicted = self.model.predict(released)
        return sum(p == t for p, t in zip(predicted, self.test.labels)) / len(released)


UTILITY_RUNNERS: dict[str, type[UtilityRunner]] = {
    "topic-5nn": TopicNearestNeighbours,
}
