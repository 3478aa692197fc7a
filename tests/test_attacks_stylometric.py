"""Writeprints features and paper 004's stylometric attack suite (5+1 feature sets x 4 classifiers)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError

from conftest import require_shared_data
from textveil.attacks.base import evaluate_attack
from textveil.attacks.registry import STYLOMETRIC_CLASSIFIERS, STYLOMETRIC_FEATURES, make_attack
from textveil.attacks.stylometric import StylometricAttack, averaging_matrix
from textveil.corpus.labelled import group_indices, read_labelled_corpus, split_first_k
from textveil.errors import InvalidParameterError
from textveil.text.stylometry import STYLOMETRIC_FEATURE_NAMES, stylometric_features, word_shape, yules_k

COMBINATIONS = [(f, c) for f in STYLOMETRIC_FEATURES for c in STYLOMETRIC_CLASSIFIERS]

# --------------------------------------------------------------------------------------
# A toy corpus with planted style: every author has their own words, word lengths,
# casing, punctuation and digits, over a vocabulary all authors share.
# --------------------------------------------------------------------------------------

COMMON = "the a of and to in it was on with for that this is at by we".split()
AUTHORS = {
    "ann": dict(words="lol omg yay cute fun tiny hug".split(), case=str.lower, end=" !!!", extra="xoxo"),
    "ben": dict(words="nevertheless extraordinary considerable furthermore substantial".split(),
                case=str.capitalize, end="; indeed.", extra="(sic)"),
    "cat": dict(words="SALE DEAL PRICE BUY NOW CASH".split(), case=str.upper, end=" 100% $$", extra="#1"),
    "dan": dict(words="iPhone eBay macOS jQuery GitHub".split(), case=lambda w: w, end="...", extra="@dan_42"),
}


def toy_text(rng: np.random.Generator, author: str) -> str:
    style = AUTHORS[author]
    n = int(rng.integers(8, 14))
    words = [style["case"](str(rng.choice(style["words"]))) if rng.random() < 0.4 else str(rng.choice(COMMON))
             for _ in range(n)]
    if rng.random() < 0.5:
        words.insert(int(rng.integers(0, n)), style["extra"])
    return " ".join(words) + style["end"]


def toy_corpus(per_author: int, seed: int) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for _ in range(per_author):
        for author in AUTHORS:
            texts.append(toy_text(rng, author))
            labels.append(author)
    return texts, labels


@pytest.fixture(scope="module")
def toy() -> tuple[list[str], list[str], list[str], list[str]]:
    known_texts, known_labels = toy_corpus(15, seed=1)
    unknown_texts, unknown_labels = toy_corpus(8, seed=2)
    return known_texts, known_labels, unknown_texts, unknown_labels


# --------------------------------------------------------------------------------------
# stylometric_features
# --------------------------------------------------------------------------------------

def test_features_shape_names_and_dtype() -> None:
    texts = ["Hello, world.", "", "   ", "WOW!!! 42 cats; 7 dogs?", "naïve café 👍🏽"]
    x = stylometric_features(texts)
    assert x.shape == (len(texts), len(STYLOMETRIC_FEATURE_NAMES))
    assert x.dtype == np.float64 and np.isfinite(x).all()
    assert len(set(STYLOMETRIC_FEATURE_NAMES)) == len(STYLOMETRIC_FEATURE_NAMES)
    assert stylometric_features([]).shape == (0, len(STYLOMETRIC_FEATURE_NAMES))
    assert not x[1].any()  # the empty text is all zeros
    assert np.array_equal(x, stylometric_features(texts))  # no randomness


def test_features_measure_what_they_name() -> None:
    text = "The CAT sat. The cat RAN, didn't it? Yes: 42 times!"
    f = dict(zip(STYLOMETRIC_FEATURE_NAMES, stylometric_features([text])[0].tolist()))
    words = ["The", "CAT", "sat", "The", "cat", "RAN", "didn't", "it", "Yes", "42", "times"]
    assert f["chars"] == len(text) and f["words"] == len(words) and f["sentences"] == 3
    assert f["mean_word_length"] == pytest.approx(sum(map(len, words)) / len(words))
    assert f["shape_upper"] == pytest.approx(2 / 11) and f["shape_no_letters"] == pytest.approx(1 / 11)
    assert f["shape_capitalised"] == pytest.approx(3 / 11) and f["shape_lower"] == pytest.approx(5 / 11)
    assert f["punct_?"] == pytest.approx(1 / len(text)) and f["punct_'"] == pytest.approx(1 / len(text))
    assert f["letter_t"] == pytest.approx(sum(c in "tT" for c in text) / len(text))
    assert f["digit_4"] == pytest.approx(1 / len(text))
    assert f["function_word_the"] == pytest.approx(2 / 11) and f["function_word_it"] == pytest.approx(1 / 11)
    # "the" (x2), "cat" (x2) and seven words once: 9 types in 11 tokens
    assert f["type_token_ratio"] == pytest.approx(9 / 11) and f["hapax_ratio"] == pytest.approx(7 / 11)
    assert f["word_length_3"] == pytest.approx(7 / 11)  # The CAT sat The cat RAN Yes
    rates = [name for name in STYLOMETRIC_FEATURE_NAMES if name.startswith(("word_length_", "shape_"))]
    assert sum(f[name] for name in rates) == pytest.approx(2.0)  # each family sums to one


def test_word_shape_and_yules_k() -> None:
    assert [word_shape(w) for w in ["don't", "Don't", "USA", "McDonald", "3rd", "42"]] == [
        "lower", "capitalised", "upper", "mixed", "lower", "no_letters"]
    assert yules_k(Counter("a b c d".split())) == 0.0  # all different: no repetition
    assert yules_k(Counter("a a a a".split())) == pytest.approx(1e4 * (16 - 4) / 16)
    assert yules_k(Counter()) == 0.0


# --------------------------------------------------------------------------------------
# StylometricAttack on the toy corpus
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("features,classifier", COMBINATIONS)
def test_every_attack_finds_planted_style(toy, features: str, classifier: str) -> None:
    known_texts, known_labels, unknown_texts, unknown_labels = toy
    attack = make_attack(f"{features}-{classifier}")
    per_text = evaluate_attack(attack, known_texts, known_labels, unknown_texts, unknown_labels, top_k=2)
    assert per_text.attack == f"{features}-{classifier}"
    assert per_text.top1 >= 0.75, per_text  # chance is 0.25
    collapsed = evaluate_attack(attack, known_texts, known_labels, unknown_texts, unknown_labels,
                                collapse_per_label=True, fit=False)
    assert collapsed.top1 == 1.0, collapsed


@pytest.mark.parametrize("features,classifier", COMBINATIONS)
def test_group_scores_score_the_mean_vector(toy, features: str, classifier: str) -> None:
    known_texts, known_labels, unknown_texts, unknown_labels = toy
    attack = StylometricAttack(features, classifier).fit(known_texts, known_labels)
    _, members = group_indices(unknown_labels)
    vectors = attack.transform(unknown_texts)
    dense = vectors.toarray() if sp.issparse(vectors) else vectors
    means = np.vstack([dense[group].mean(axis=0) for group in members])
    grouped = attack.group_scores(unknown_texts, members)
    assert grouped.shape == (len(members), len(AUTHORS))
    np.testing.assert_allclose(grouped, attack.score_vectors(means), rtol=1e-9, atol=1e-9)
    # a group of one text scores as that text
    np.testing.assert_allclose(attack.group_scores(unknown_texts, [[3]]), attack.scores([unknown_texts[3]]),
                               rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("classifier", STYLOMETRIC_CLASSIFIERS)
def test_shapes_classes_and_two_authors(toy, classifier: str) -> None:
    known_texts, known_labels, unknown_texts, _ = toy
    attack = StylometricAttack("char2", classifier).fit(known_texts, known_labels)
    assert attack.classes_ == sorted(AUTHORS) and attack.name == f"char2-{classifier}"
    assert attack.scores(unknown_texts).shape == (len(unknown_texts), len(AUTHORS))
    # two authors: scikit-learn's one-column decision functions become two columns
    pair = [i for i, label in enumerate(known_labels) if label in ("ann", "cat")]
    two = StylometricAttack("word1", classifier).fit([known_texts[i] for i in pair], [known_labels[i] for i in pair])
    scores = two.scores(["omg lol yay !!!", "BUY NOW CASH 100% $$"])
    assert two.classes_ == ["ann", "cat"] and scores.shape == (2, 2)
    assert scores.argmax(axis=1).tolist() == [0, 1]


@pytest.mark.parametrize("features,classifier", [("word2", "svm"), ("writeprints", "svm"), ("char3", "rls")])
def test_deterministic(toy, features: str, classifier: str) -> None:
    known_texts, known_labels, unknown_texts, _ = toy
    first = StylometricAttack(features, classifier, random_state=3).fit(known_texts, known_labels)
    second = StylometricAttack(features, classifier, random_state=3).fit(known_texts, known_labels)
    assert np.array_equal(first.scores(unknown_texts), second.scores(unknown_texts))


def test_bad_arguments_are_explained(toy) -> None:
    with pytest.raises(InvalidParameterError, match="word1, word2"):
        StylometricAttack("word3", "svm")
    with pytest.raises(InvalidParameterError, match="svm, nb, knn, rls"):
        StylometricAttack("word1", "lda")
    with pytest.raises(InvalidParameterError, match="two authors"):
        StylometricAttack().fit(["a b c", "a b d"], ["x", "x"])
    with pytest.raises(InvalidParameterError, match="labels"):
        StylometricAttack().fit(["a b c", "a b d"], ["x"])
    with pytest.raises(NotFittedError, match="not fitted"):
        StylometricAttack().scores(["a b c"])
    with pytest.raises(InvalidParameterError, match="at least one text"):
        averaging_matrix([[0], []], 2)


# --------------------------------------------------------------------------------------
# Real data (skipped without ../shared/data)
# --------------------------------------------------------------------------------------

@pytest.mark.data
def test_blog_short_word2_svm_identifies_users() -> None:
    """Paper 004's setting: 70 known posts per user, the other 30 collapsed to their mean;
    the paper reports top-1 0.82 for bigram SVM on its tweets."""
    path = require_shared_data("blog_short", "blog_short.jsonl")
    known, unknown = split_first_k(read_labelled_corpus(path, text_field="text", label_field="user"), 70, 30)
    result = evaluate_attack(StylometricAttack("word2", "svm"), known.texts, known.labels,
                             unknown.texts, unknown.labels, collapse_per_label=True)
    assert result.n_candidates == 150 and result.n_unknown == 150
    assert result.top1 >= 0.75, result


@pytest.mark.data
def test_c50_char3_svm_identifies_authors() -> None:
    """Reuters C50: 50 authors, 50 known and 50 unknown stories each, every story alone."""
    root = require_shared_data("reuters_c50")
    known = read_labelled_corpus(root / "C50train")
    unknown = read_labelled_corpus(root / "C50test")
    result = evaluate_attack(StylometricAttack("char3", "svm"), known.texts, known.labels,
                             unknown.texts, unknown.labels)
    assert result.n_candidates == 50 and result.n_unknown == 2500
    assert result.top1 >= 0.65, result


@pytest.mark.parametrize("features", ["char3", "word1"])
def test_known_texts_that_share_no_ngram_keep_the_ones_seen_once(features: str) -> None:
    # a small release of random words: no n-gram is in two known texts, so min_df=2 would
    # leave nothing; the attacker keeps what it saw once and still finds a repeated word
    known = ["qxv", "bzj", "wkp", "fmy"]
    attack = StylometricAttack(features, "svm", min_df=2).fit(known, ["a", "a", "b", "b"])
    assert attack.min_df_ == 1
    assert attack.scores(["qxv"]).shape == (1, 2)
    assert attack.classes_[int(np.argmax(attack.scores(["bzj"])))] == "a"
    assert StylometricAttack(features, "svm", min_df=2).fit(known * 2, ["a", "a", "b", "b"] * 2).min_df_ == 2


def test_the_topic_attack_reads_content_words_only():
    """Two texts that differ only in function words, punctuation, casing and digits look the same
    to ``topic``; a content word changed makes them differ."""
    from textveil.attacks.stylometric import _vectoriser

    vectoriser = _vectoriser("topic", min_df=1).fit(["Sailing boats at sea", "Stock markets rallied on Friday"])
    same = vectoriser.transform(["SAILING, boats... at the sea!!! 42", "sailing boats by a sea"]).toarray()
    assert (same[0] == same[1]).all() and same.sum() == 6  # sailing, boats, sea twice
    other = vectoriser.transform(["sailing ships at sea"]).toarray()
    assert not (other[0] == same[0]).all()
