"""SynTF and Random-R, the exponential-mechanism family, tested end to end through the public
API: their output distributions, their likelihood ratios and their guarantees."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from scipy import stats

from textveil.embeddings.word_embeddings import WordEmbeddings
from textveil.mechanisms.random_replacement import RandomReplacement
from textveil.mechanisms.sampling import exponential_mechanism_probabilities
from textveil.mechanisms.syntf import SynTF
from textveil.text.tokenize import word_key

WORDS = ["cat", "dog", "tax", "law", "sun", "sea", "red", "blue", "run", "walk"]
RELEASED = WORDS
"""What the mechanisms draw from: the words alone (a mechanism used alone holds no placeholder, and
these words place none: issue 48)."""


@pytest.fixture(scope="module")
def small() -> WordEmbeddings:
    rng = np.random.default_rng(0)
    return WordEmbeddings(WORDS, rng.standard_normal((len(WORDS), 6)), name="small")


def _frequencies(releases, vocabulary) -> np.ndarray:
    counts = Counter(word_key(word) for release in releases for word in release.text.split())
    return np.array([counts[w] for w in vocabulary], dtype=float)


def test_syntf_ratings_differ_between_candidates_and_stay_in_unit_interval(small):
    """A published SynTF gives every candidate the same score (a uniform draw); here they differ."""
    for rating in ("tfidf", "similarity"):
        scores = SynTF(1.0, small, rating=rating, layout="keep").fit(["cat dog", "tax law", "cat sea"]).ratings(
            ["cat", "cat", "tax"])
        assert scores.min() >= 0 and scores.max() == pytest.approx(1.0) and len(set(np.round(scores, 9))) > 2
    tfidf = SynTF(1.0, small, layout="keep").fit(["cat dog", "tax law", "cat sea"]).ratings(["cat", "cat", "tax"])
    assert tfidf[WORDS.index("cat")] == 1.0 and tfidf[WORDS.index("sun")] == 0.0  # absent words rate 0


def test_syntf_at_small_epsilon_is_uniform(small):
    releases = SynTF(1e-6, small, layout="keep", seed=1).sanitize_many(["cat cat dog tax"] * 1500)
    counts = _frequencies(releases, RELEASED)
    assert counts.sum() == 6000  # every released token is a vocabulary entry
    assert stats.chisquare(counts).pvalue > 1e-3


def test_syntf_at_large_epsilon_concentrates_on_the_highest_rated_words(small):
    syntf = SynTF(200.0, small, layout="keep", seed=2).fit(["cat dog", "tax law", "cat sea", "dog run"])
    releases = syntf.sanitize_many(["cat cat dog tax tax tax"] * 200)
    scores = syntf.ratings("cat cat dog tax tax tax".split())
    top = WORDS[int(np.argmax(scores))]
    assert top == "tax"  # tf 3 beats cat's tf 2, at a comparable idf
    counts = _frequencies(releases, RELEASED)
    assert counts[WORDS.index("tax")] / counts.sum() > 0.99


def test_syntf_output_frequencies_match_its_exponential_mechanism(small):
    epsilon = 3.0
    syntf = SynTF(epsilon, small, layout="keep", seed=3).fit(["cat dog", "tax law", "sun sea"])
    document = "cat dog dog sea"
    expected = exponential_mechanism_probabilities(syntf.ratings(document.split()), epsilon, 1.0)
    counts = _frequencies(syntf.sanitize_many([document] * 3000), RELEASED)
    assert stats.chisquare(counts, expected * counts.sum()).pvalue > 1e-3


def test_syntf_per_token_likelihood_ratio_stays_within_exp_epsilon(small):
    """For two documents, each output token's probability ratio is at most exp(epsilon), up to
    sampling error, measured from releases (the rating of every candidate may move by 1)."""
    epsilon = 2.0
    syntf = SynTF(epsilon, small, layout="keep", seed=4)
    first, second = "cat cat cat", "law law law"  # disjoint top words: the ratings move by the whole 1
    a = _frequencies(syntf.sanitize_many([first] * 4000), RELEASED)
    b = _frequencies(syntf.sanitize_many([second] * 4000), RELEASED)
    pa, pb = a / a.sum(), b / b.sum()
    for i in range(len(RELEASED)):
        if min(a[i], b[i]) < 200:
            continue
        log_ratio = abs(np.log(pa[i] / pb[i]))
        error = 4 * np.sqrt(1 / a[i] + 1 / b[i])  # delta-method standard error of a log ratio, times 4
        assert log_ratio <= epsilon + error, (RELEASED[i], log_ratio)
    top = WORDS.index("cat")
    # one candidate's rating moving by 1 gives exactly exp(epsilon / 2) here (the normalisers are
    # equal): the measured ratio must reach it, or the test could not see a sampler without the 2
    assert np.log(pa[top] / pb[top]) == pytest.approx(epsilon / 2, abs=4 * np.sqrt(1 / a[top] + 1 / b[top]))


def test_syntf_guarantee_composes_over_the_tokens(small):
    release = SynTF(0.5, small, seed=0).sanitize("Cat, dog!")
    guarantee = release.guarantee
    assert guarantee.kind == "dp" and guarantee.words_protected == 4 and guarantee.document_epsilon == 2.0
    assert guarantee.formula == "epsilon * N" and "sensitivity 1" in guarantee.statement
    assert guarantee.unprotected == ("the number of tokens (4)",)
    assert any("public" in a for a in guarantee.assumptions)
    fitted = SynTF(0.5, small, seed=0).fit(["cat dog"]).sanitize("cat").guarantee
    assert any("other than the released ones" in a for a in fitted.assumptions)


def test_syntf_idf_is_learned_from_the_training_corpus(small):
    syntf = SynTF(1.0, small).fit(["cat dog", "cat law", "cat sea", "tax"])
    idf = dict(zip(syntf.vocabulary.words, syntf.idf))
    assert idf["cat"] < idf["tax"] < idf["sun"]  # in every text < in one < in none
    public = dict(zip(syntf.vocabulary.words, SynTF(1.0, small).idf))
    assert public["cat"] != public["law"]  # unfitted: public word frequencies, not all equal


def test_random_replacement_is_uniform_and_ignores_its_input(small):
    first = _frequencies(RandomReplacement(small, layout="keep", seed=1).sanitize_many(["cat cat cat"] * 1000),
                         RELEASED)
    second = _frequencies(RandomReplacement(small, layout="keep", seed=2).sanitize_many(["sun sea run"] * 1000),
                          RELEASED)
    assert stats.chisquare(first).pvalue > 1e-3 and stats.chisquare(second).pvalue > 1e-3
    table = np.vstack([first, second])
    assert stats.chi2_contingency(table).pvalue > 1e-3  # same distribution whatever the input
    guarantee = RandomReplacement(small, seed=0).sanitize("cat, dog").guarantee
    assert guarantee.epsilon == 0.0 and guarantee.document_epsilon == 0.0 and guarantee.kind == "dp"


def test_keep_layout_names_what_it_copies(small):
    for mechanism in (RandomReplacement(small, layout="keep", seed=0), SynTF(1.0, small, layout="keep", seed=0)):
        release = mechanism.sanitize("CAT,   dog!")
        first, rest = release.text.split(",", 1)
        assert first.isupper() and rest.startswith("   ") and release.text.endswith("!")  # the layout, copied
        named = " ".join(release.guarantee.unprotected)
        assert "casing" in named and "spacing" in named
