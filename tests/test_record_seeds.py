"""Per-record seeds: a release job's record i is released exactly as a mechanism seeded with its
own seed would release it alone, whatever the batching (the property that makes sharded and
distributed releases identical to a single run)."""

from __future__ import annotations

import numpy as np
import pytest

from textveil.embeddings import WordEmbeddings
from textveil.errors import InvalidParameterError
from textveil.mechanisms.earth_movers import EarthMoversPrivacy
from textveil.mechanisms.random_replacement import RandomReplacement
from textveil.mechanisms.redaction import Redaction
from textveil.mechanisms.syntf import SynTF
from textveil.release.seeds import record_seed, record_seeds

WORDS = ["good", "fine", "bad", "awful", "great", "market", "rallied", "fell", "shares", "the", "!", ","]
TEXTS = ["Good shares rallied!", "", "The market fell, awful.", "great great great", "bad", "Fine, fine."] * 3


@pytest.fixture(scope="module")
def toy() -> WordEmbeddings:
    return WordEmbeddings(WORDS, np.random.default_rng(3).normal(size=(len(WORDS), 4)), name="toy")


def _mechanisms(toy):
    return [
        EarthMoversPrivacy(epsilon=3, embeddings=toy, batch_words=5),
        EarthMoversPrivacy(epsilon=3, embeddings=toy, layout="keep", batch_words=5),
        SynTF(epsilon=2, embeddings=toy, batch_words=5),
        RandomReplacement(toy, batch_words=5),
    ]


@pytest.mark.parametrize("number", range(4), ids=["emp", "emp-keep", "syntf", "random"])
def test_each_record_is_released_as_with_its_own_seed(toy, number):
    mechanism = _mechanisms(toy)[number]
    seeds = record_seeds(11, 0, len(TEXTS))
    together = [r.text for r in mechanism.sanitize_records(TEXTS, seeds)]
    alone = [mechanism.with_params(seed=seed).sanitize(text).text for text, seed in zip(TEXTS, seeds)]
    assert together == alone
    # any split of the records (shards, workers) gives the same releases
    split = [r.text for part in (slice(0, 5), slice(5, 6), slice(6, None))
             for r in mechanism.sanitize_records(TEXTS[part], seeds[part])]
    assert split == together


def test_records_with_other_seeds_are_drawn_afresh(toy):
    emp = EarthMoversPrivacy(epsilon=1, embeddings=toy)
    text = "good fine bad awful great market rallied fell shares the"
    first = emp.sanitize_records([text] * 20, record_seeds(1, 0, 20))
    assert len({r.text for r in first}) > 10, "each record draws its own noise"
    again = emp.sanitize_records([text] * 20, record_seeds(1, 0, 20))
    assert [r.text for r in again] == [r.text for r in first]


def test_per_record_noise_keeps_its_distribution(toy):
    """Through the public API: with per-record seeds, how often a word is released as itself
    matches the same mechanism drawing from one stream (two-sample test on 4,000 records)."""
    from scipy.stats import chi2_contingency

    emp = EarthMoversPrivacy(epsilon=2, embeddings=toy, layout="keep", seed=5)
    texts = ["market"] * 4000
    per_record = [r.text for r in emp.sanitize_records(texts, record_seeds(2, 0, len(texts)))]
    one_stream = [r.text for r in emp.sanitize_many(texts)]
    outcomes = sorted(set(per_record) | set(one_stream))
    table = [[per_record.count(o) for o in outcomes], [one_stream.count(o) for o in outcomes]]
    assert chi2_contingency(np.array(table) + 1)[1] > 0.001


def test_a_mechanism_without_randomness_ignores_seeds_and_a_corpus_level_one_refuses(toy):
    redaction = Redaction()
    assert [r.text for r in redaction.sanitize_records(["Ann met Bob."], [1])] == [redaction.sanitize("Ann met Bob.").text]
    from textveil.mechanisms.pivot import Pivot

    with pytest.raises(InvalidParameterError, match="releases a corpus as a whole"):
        Pivot(l=2).sanitize_records(["a b"], [1])
    with pytest.raises(InvalidParameterError, match="2 seeds for 1 texts"):
        RandomReplacement(toy).sanitize_records(["a"], [1, 2])


def test_record_seeds_are_independent_of_each_other():
    seeds = record_seeds(123, 0, 1000)
    assert len(set(seeds)) == 1000
    assert record_seed(123, 999) == seeds[-1]
    with pytest.raises(InvalidParameterError):
        record_seed(-1, 0)
