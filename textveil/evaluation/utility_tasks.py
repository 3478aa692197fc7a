"""Utility tasks as the sweep runs them: prepared once on clean text, measured on each release.

Each runner wraps a function of :mod:`textveil.utility` (or, for paper 001's SRtopic, the
k-NN of :mod:`textveil.attacks.embedding_neighbours`: the same machinery serves as a topic
classifier) and returns ``{"value", "metric", "higher_is_better"}`` for a release.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from textveil.corpus.labelled import LabelledCorpus
from textveil.evaluation.intervals import bootstrap_interval
from textveil.registry import Entry, Registry


class UtilityRunner:
    """Base runner: ``prepare`` once on clean train/test texts, then ``measure`` releases."""

    metric: ClassVar[str] = ""
    higher_is_better: ClassVar[bool] = True
    needs_topic_labels: ClassVar[bool] = False
    needs_attributes: ClassVar[bool] = False

    def __init__(self, embeddings: Any = None, seed: int | None = None,
                 attributes: dict[str, str] | None = None) -> None:
        self.embeddings = embeddings
        self.seed = seed
        self.attributes = attributes
        self.train: LabelledCorpus | None = None
        self.test: LabelledCorpus | None = None
        self.per_text: tuple[Callable[..., float], list[Any]] | None = None
        """Set by ``value``: the statistic and its per-text samples, for the bootstrap interval."""

    def prepare(self, train: LabelledCorpus, test: LabelledCorpus) -> None:
        self.train, self.test = train, test

    def measure(self, released: list[str], labels: list[str] | None = None) -> dict[str, Any]:
        """The task on a release: ``labels`` are given for a released corpus that is not
        aligned with the test texts (only tasks that need no aligned pairs take it). A task that
        keeps its per-text parts (``per_text``) states a 95% bootstrap interval over texts."""
        self.per_text = None
        value = float(self.value(released) if labels is None else self.value_unaligned(released, labels))
        measured = {"value": value, "metric": self.metric, "higher_is_better": self.higher_is_better}
        interval = bootstrap_interval(self.per_text[0], *self.per_text[1]) if self.per_text is not None else None
        return {**measured, "interval": interval.to_dict()} if interval is not None else measured

    def value(self, released: list[str]) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def value_unaligned(self, released: list[str], labels: list[str]) -> float:
        raise NotImplementedError(f"{type(self).__name__} compares each text with its own release")


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


class TopicFastText(UtilityRunner):
    """Paper 001 DRtopic: fastText trained on the clean training texts, applied to the release."""

    metric = "topic accuracy (fastText)"
    needs_topic_labels = True
    pretrained = False

    def prepare(self, train: LabelledCorpus, test: LabelledCorpus) -> None:
        from textveil.utility.topic import FastTextTopicClassifier

        super().prepare(train, test)
        vectors = self.embeddings if self.pretrained else None
        self.model = FastTextTopicClassifier(seed=self.seed or 0, pretrained_vectors=vectors).fit(
            train.texts, train.labels
        )

    def value(self, released: list[str]) -> float:
        assert self.test is not None
        return self.model.accuracy(released, self.test.labels)


class TopicFastTextPretrained(TopicFastText):
    """DRtopic as paper 001 ran it: fastText's word vectors start from pretrained ones (here the
    sweep's own embeddings, centred). Words the training texts never use keep those vectors, so
    a substitute the mechanism drew near the original word still reads close to it."""

    metric = "topic accuracy (fastText, pretrained vectors)"
    pretrained = True


class ReleaseClassificationF1(UtilityRunner):
    """Paper 004: macro F1 of a classifier trained on the originals, applied to the release."""

    metric = "macro F1 (classifier trained on originals)"
    needs_topic_labels = True

    def prepare(self, train: LabelledCorpus, test: LabelledCorpus) -> None:
        from textveil.utility.classification import ReleaseClassifier

        super().prepare(train, test)
        self.model = ReleaseClassifier().fit(train.texts, train.labels)

    def value(self, released: list[str]) -> float:
        assert self.test is not None
        return self.model.f1(released, self.test.labels)


class AttributeF1(UtilityRunner):
    """Paper 004's classification task on an author attribute (industry, gender): macro F1 on the
    release of a classifier trained on the original training texts, each text labelled with its
    author's attribute. A synthetic text's attribute is that of the user it was written for."""

    metric = "macro F1 of the author attribute (classifier trained on originals)"
    needs_attributes = True

    def _attribute(self, labels: list[str]) -> list[str]:
        assert self.attributes is not None
        missing = sorted(set(labels) - set(self.attributes))
        if missing:
            from textveil.errors import InputError

            raise InputError(f"author '{missing[0]}' has no attribute value; every author needs one")
        return [self.attributes[label] for label in labels]

    def prepare(self, train: LabelledCorpus, test: LabelledCorpus) -> None:
        from textveil.utility.classification import ReleaseClassifier

        super().prepare(train, test)
        self.model = ReleaseClassifier().fit(train.texts, self._attribute(train.labels))

    def value(self, released: list[str]) -> float:
        assert self.test is not None
        return self.value_unaligned(released, self.test.labels)

    def value_unaligned(self, released: list[str], labels: list[str]) -> float:
        return self.model.f1(released, self._attribute(labels))


class MemorisationRunner(UtilityRunner):
    """Share of released texts holding a word 8-gram of a training text (the texts a synthetic
    corpus's model learned from, the attacker's known texts): verbatim copying, not utility."""

    metric = "texts with a copied 8-gram of a training text (share)"
    higher_is_better = False

    def prepare(self, train: LabelledCorpus, test: LabelledCorpus) -> None:
        from textveil.utility.memorisation import index_training

        super().prepare(train, test)
        self.index = index_training(train.texts)

    def measure(self, released: list[str], labels: list[str] | None = None) -> dict[str, Any]:
        from dataclasses import asdict

        from textveil.utility.memorisation import memorisation

        score = memorisation(released, self.index)
        return {"value": score.texts_with_copied_ngram, "metric": self.metric, "higher_is_better": False,
                **{k: v for k, v in asdict(score).items() if k != "texts_with_copied_ngram"}}


class SemanticSimilarityRunner(UtilityRunner):
    """Paper 002's content measure: sentence-embedding cosine, original vs release.

    The originals are encoded once, in ``prepare``; each release then costs one encoding.
    """

    metric = "semantic similarity (MiniLM cosine)"

    def prepare(self, train: LabelledCorpus, test: LabelledCorpus) -> None:
        from textveil.utility.similarity import SemanticSimilarity

        super().prepare(train, test)
        self.model = SemanticSimilarity()
        self.original_vectors = self.model.embed(test.texts)

    def measure(self, released: list[str], labels: list[str] | None = None) -> dict[str, Any]:
        return {**super().measure(released, labels), "precision": self.model.precision}

    def value(self, released: list[str]) -> float:
        assert self.test is not None
        unchanged = [r == o for r, o in zip(released, self.test.texts)]
        if all(unchanged):
            return 1.0
        from textveil.utility.aligned_parts import aligned_parts

        vectors = self.model.embed(released)
        cosines = np.clip(np.einsum("ij,ij->i", self.original_vectors, vectors), -1.0, 1.0)
        # A long text (or release) is measured over all of it: part by part, aligned, averaged per text.
        parts = [aligned_parts(o, r) for o, r in zip(self.test.texts, released)]
        long = [i for i, pairs in enumerate(parts) if len(pairs) > 1 and not unchanged[i]]
        if long:
            pairs = [pair for i in long for pair in parts[i]]
            ours = self.model.embed([o for o, _ in pairs])
            theirs = self.model.embed([r for _, r in pairs])
            part_cosines = np.clip(np.einsum("ij,ij->i", ours, theirs), -1.0, 1.0)
            start = 0
            for i in long:
                cosines[i] = part_cosines[start:start + len(parts[i])].mean()
                start += len(parts[i])
        cosines[np.array(unchanged)] = 1.0  # an unchanged text is its own vector, whatever the batching
        self.per_text = (np.mean, [cosines])
        return float(cosines.mean())


class StylometricDistanceRunner(UtilityRunner):
    """Paper 002: L2 distance between standardised stylometric vectors, original vs release."""

    metric = "stylometric L2 distance"
    higher_is_better = False

    def value(self, released: list[str]) -> float:
        from textveil.utility.stylometric_distance import mean_stylometric_distance

        assert self.test is not None
        return mean_stylometric_distance(self.test.texts, released)


class PerLabelComparison(UtilityRunner):
    """Paper 004's per-user measures (n-gram and sentiment cosines), per label of the test texts."""

    function = ""

    def value(self, released: list[str]) -> float:
        import textveil.utility as utility

        assert self.test is not None
        return getattr(utility, self.function)(self.test.texts, released, self.test.labels)

    def value_unaligned(self, released: list[str], labels: list[str]) -> float:
        import textveil.utility as utility

        assert self.test is not None
        return getattr(utility, self.function)(self.test.texts, released, self.test.labels, labels)


class UnigramCosine(PerLabelComparison):
    metric = "per-label unigram cosine"
    function = "unigram_cosine"


class BigramCosine(PerLabelComparison):
    metric = "per-label bigram cosine"
    function = "bigram_cosine"


class SentimentCosine(PerLabelComparison):
    metric = "per-label VADER sentiment cosine"
    function = "sentiment_cosine"


class EarthMoversRunner(UtilityRunner):
    """Paper 001: Earth Mover's distance between the content-word vector bags, original vs release."""

    metric = "Earth Mover's distance (word vectors)"
    higher_is_better = False

    def value(self, released: list[str]) -> float:
        from textveil.utility.distributions import mean_earth_movers_distance

        assert self.test is not None
        return mean_earth_movers_distance(self.test.texts, released, self.embeddings)


class FluencyRunner(UtilityRunner):
    """Fluency: the perplexity of the release under a public causal LM (by default SmolLM2-135M-
    Instruct, the model ``paraphrase`` ships), as a ratio to the original texts' perplexity
    (:mod:`textveil.utility.fluency`).

    The same seeded sample of at most ``sample_size`` test texts is measured for the originals
    (once, in ``prepare``) and for every release, so the ratio compares like with like and costs
    the same whatever the corpus size. A corpus-level release (synthetic texts, not aligned) is
    sampled the same way from its own texts. An identical release is 1.0 exactly, without running
    the model. An empty release text has nothing to score: it is left out of the release's
    perplexity and counted in ``"empty"`` (read the ratio beside it: a mechanism that empties
    the texts it finds hard would otherwise look more fluent); a release whose sampled texts are
    all empty cannot be measured and raises :class:`~textveil.errors.InvalidParameterError`.
    """

    metric = "perplexity ratio, release / original (lower is more fluent; 1 = as fluent)"
    higher_is_better = False

    def __init__(self, embeddings: Any = None, seed: int | None = None, attributes: dict[str, str] | None = None,
                 language_model: str | None = None, sample_size: int = 96, max_tokens: int = 64) -> None:
        from textveil.utility.fluency import check_count

        super().__init__(embeddings, seed, attributes)
        self.language_model = language_model  # None: the bundled model; else a .gguf file or a model folder
        self.sample_size = check_count("fluency's sample_size", sample_size)
        self.max_tokens = check_count("fluency's max_tokens", max_tokens)
        self.last: dict[str, Any] = {}

    def prepare(self, train: LabelledCorpus, test: LabelledCorpus) -> None:
        from textveil.models.language_model import BUNDLED_MODEL, load_language_model
        from textveil.utility.fluency import perplexity, sample_indices

        super().prepare(train, test)
        self.indices = sample_indices(len(test.texts), self.sample_size, self.seed)
        self.model = load_language_model(self.language_model or BUNDLED_MODEL)
        self.originals = [test.texts[i] for i in self.indices]
        self.original = perplexity(self.model, _fluency_parts(self.originals), self.max_tokens)

    def measure(self, released: list[str], labels: list[str] | None = None) -> dict[str, Any]:
        self.last = {}  # filled by _ratio: the perplexities behind this release's value
        measured = super().measure(released, labels)
        return {**measured, **self.last}

    def value(self, released: list[str]) -> float:
        from textveil.errors import InvalidParameterError

        assert self.test is not None
        if len(released) != len(self.test.texts):
            raise InvalidParameterError(f"fluency: the release holds {len(released)} texts for "
                                        f"{len(self.test.texts)} test texts; an aligned release has one per text")
        return self._ratio([released[i] for i in self.indices], aligned=True)

    def value_unaligned(self, released: list[str], labels: list[str]) -> float:
        from textveil.errors import InvalidParameterError
        from textveil.utility.fluency import sample_indices

        if not released:
            raise InvalidParameterError("fluency: the release holds no text; there is nothing to measure")
        return self._ratio([released[i] for i in sample_indices(len(released), self.sample_size, self.seed)],
                           aligned=False)

    def _ratio(self, texts: list[str], aligned: bool) -> float:
        from textveil.errors import InvalidParameterError
        from textveil.utility.fluency import is_empty, perplexity

        empty = sum(is_empty(text) for text in texts)
        if empty == len(texts):
            raise InvalidParameterError("fluency: every sampled release text is empty; there is nothing to measure")
        # Unchanged texts give the originals' perplexity: skip the model, and report 1 exactly.
        release = self.original if aligned and texts == self.originals else perplexity(
            self.model, _fluency_parts(texts), self.max_tokens)
        self.last = {"release_perplexity": release.perplexity, "original_perplexity": self.original.perplexity,
                     "texts": release.texts, "empty": empty}
        if release is self.original:
            return 1.0
        ours = _per_text(release.per_text, _fluency_owners(texts), len(texts))
        theirs = _per_text(self.original.per_text, _fluency_owners(self.originals), len(self.originals))
        if aligned:  # each text with its own original: resampled together
            self.per_text = (perplexity_ratio, [ours[0], ours[1], theirs[0], theirs[1]])
        else:  # the originals' perplexity stands as measured; the release's texts are resampled
            original_nll, original_tokens = float(theirs[0].sum()), float(theirs[1].sum())
            self.per_text = (lambda nll, tokens: perplexity_ratio(nll, tokens, np.array([original_nll]),
                                                                  np.array([original_tokens])), list(ours))
        return release.perplexity / self.original.perplexity


FLUENCY_PART_WORDS = 80
"""A long text is scored in windows of this many words (about 110 model tokens, inside the score's
128), so the whole of it is read, not its first 128 tokens."""


def _fluency_parts(texts: list[str]) -> list[str]:
    """Each text as the windows the fluency score reads (itself when short)."""
    from textveil.utility.aligned_parts import word_windows

    return [part for text in texts for part in word_windows(text, FLUENCY_PART_WORDS)]


def _fluency_owners(texts: list[str]) -> list[int]:
    """For each window of :func:`_fluency_parts`, the index of the text it comes from."""
    from textveil.utility.aligned_parts import word_windows

    return [index for index, text in enumerate(texts) for _ in word_windows(text, FLUENCY_PART_WORDS)]


def _per_text(parts: tuple[tuple[float, int], ...], owners: list[int], count: int) -> tuple[np.ndarray, np.ndarray]:
    """The windows' (NLL, tokens) summed per text."""
    nll, tokens = np.zeros(count), np.zeros(count)
    for (part_nll, part_tokens), owner in zip(parts, owners):
        nll[owner] += part_nll
        tokens[owner] += part_tokens
    return nll, tokens


class DescribingShare(UtilityRunner):
    """The share of a release's texts that describe the text instead of rewriting it
    (:mod:`textveil.utility.describing`): a language-model rewriter's failure mode."""

    metric = "share of releases that describe the text instead of rewriting it"
    higher_is_better = False

    def value(self, released: list[str]) -> float:
        from textveil.utility.describing import describing_counts

        counts = np.array(describing_counts(released), dtype=float).reshape(-1, 2)
        self.per_text = (ratio_of_sums, [counts[:, 0], counts[:, 1]])
        # describing_share's figure from the same counts (0 where no release holds a paragraph)
        return ratio_of_sums(counts[:, 0], counts[:, 1]) if counts[:, 1].sum() > 0 else 0.0

    def value_unaligned(self, released: list[str], labels: list[str]) -> float:
        return self.value(released)


class LengthRatio(UtilityRunner):
    """Released words over input words, summed over the texts: how much of the input a release
    carries (a rewriter that reads a document's start only, or drops paragraphs, scores well
    below 1; one that talks about the task, above). Words are runs between white space, the
    same count for every mechanism."""

    metric = "length ratio (released words / input words; 1 = as long, below 1 = text left out)"

    def measure(self, released: list[str], labels: list[str] | None = None) -> dict[str, Any]:
        assert self.test is not None
        per_text = sorted(len(r.split()) / max(len(o.split()), 1) for r, o in zip(released, self.test.texts))
        return {**super().measure(released, labels),
                "median_per_text": per_text[len(per_text) // 2] if per_text else 0.0,
                "min_per_text": per_text[0] if per_text else 0.0}

    def value(self, released: list[str]) -> float:
        assert self.test is not None
        words = np.array([len(r.split()) for r in released], dtype=float)
        inputs = np.array([len(o.split()) for o in self.test.texts], dtype=float)
        self.per_text = (ratio_of_sums, [words, inputs])
        return float(words.sum() / max(inputs.sum(), 1.0))


def ratio_of_sums(numerators: np.ndarray, denominators: np.ndarray) -> float:
    """sum(numerators) / sum(denominators), NaN where the denominators sum to 0 (a resample
    without any paragraph or word has no ratio).

    >>> ratio_of_sums(np.array([1.0, 3.0]), np.array([2.0, 2.0]))
    1.0
    """
    total = float(np.sum(denominators))
    return float(np.sum(numerators)) / total if total > 0 else float("nan")


def perplexity_ratio(release_nll: np.ndarray, release_tokens: np.ndarray, original_nll: np.ndarray,
                     original_tokens: np.ndarray) -> float:
    """The release's perplexity over the originals', each token-weighted over the texts given
    (what the fluency ratio is; a bootstrap over texts resamples the four together).

    >>> perplexity_ratio(np.array([2.0]), np.array([1]), np.array([1.0]), np.array([1]))  # e^2 / e^1
    2.718281828459045
    """
    tokens, originals = float(np.sum(release_tokens)), float(np.sum(original_tokens))
    if tokens == 0 or originals == 0:
        return float("nan")
    return float(np.exp(np.sum(release_nll) / tokens - np.sum(original_nll) / originals))


UTILITY_TASKS = Registry("utility task", "run 'textveil evaluate --help' for the valid names")
"""Every utility task the harness runs: the one list (faces list it, the sweep makes runners from it)."""
for _name, _runner, _aligned, _description in (
    ("topic-fasttext", "TopicFastText", True,
     "fastText topic accuracy on the release, trained on clean texts (paper 001 DRtopic; higher keeps more)"),
    ("topic-fasttext-pretrained", "TopicFastTextPretrained", True,
     "as topic-fasttext, with word vectors started from the sweep's embeddings (paper 001's setting)"),
    ("topic-5nn", "TopicNearestNeighbours", True,
     "5-NN topic accuracy by distance between mean word vectors (paper 001 SRtopic)"),
    ("semantic-similarity", "SemanticSimilarityRunner", True,
     "mean cosine of all-MiniLM-L6-v2 sentence embeddings, original vs release (stands for paper 002's USE)"),
    ("stylometric-l2", "StylometricDistanceRunner", True,
     "mean L2 distance of standardised writeprints features, original vs release (paper 002; higher = style moved more)"),
    ("unigram-cosine", "UnigramCosine", False,
     "per-user cosine of unigram counts, originals vs releases, averaged over users (paper 004)"),
    ("bigram-cosine", "BigramCosine", False,
     "per-user cosine of bigram counts, originals vs releases, averaged over users (paper 004)"),
    ("sentiment-cosine", "SentimentCosine", False,
     "cosine of the per-user mean VADER compound sentiment vectors, originals vs releases (paper 004)"),
    ("classification-f1", "ReleaseClassificationF1", True,
     "macro F1 on the release of a tf-idf linear classifier trained on original texts (paper 004)"),
    ("attribute-f1", "AttributeF1", False,
     "macro F1 on the release of a classifier trained on original texts to predict their author's attribute, "
     "e.g. industry (paper 004; --attribute-field)"),
    ("memorisation", "MemorisationRunner", False,
     "share of released texts holding a word 8-gram of a known (training) text: verbatim copying (lower is better)"),
    ("earth-movers", "EarthMoversRunner", True,
     "mean Earth Mover's distance between content-word vector bags, original vs release (paper 001; lower keeps more)"),
    ("describing", "DescribingShare", False,
     "share of released texts that describe the text instead of rewriting it (\"The text conveys...\"; a "
     "language-model rewriter's failure; lower is better)"),
    ("length-ratio", "LengthRatio", True,
     "released words / input words, summed over the texts (1 = as long; below 1 = text left out, above = added)"),
    ("fluency", "FluencyRunner", False,
     "perplexity of the release under a public causal LM (SmolLM2-135M-Instruct by default), as a ratio to the "
     "originals' (lower is more fluent; 1 = as fluent; run when named: it loads a language model, ~100 tokens/s "
     "on 2 cores)"),
):
    UTILITY_TASKS.add(Entry(_name, f"{__name__}:{_runner}", _description, needs_aligned_pairs=_aligned,
                            in_default=_name not in ("fluency", "describing", "length-ratio")))


def default_utility_tasks() -> list[str]:
    """The tasks a sweep runs when none are named: all but fluency (it loads a language model and
    scores at about 100 tokens/s on 2 cores), describing and length-ratio (for the language-model
    rewriters): name them to run them."""
    return [entry.name for entry in UTILITY_TASKS.entries() if entry.in_default]
