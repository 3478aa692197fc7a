"""A long seeded release is made and cached in parts (textveil.evaluation.releasing): each part
with a seed of its own, a stopped release resumed at the first missing part and redrawing exactly
what it would have drawn, the parts independent of each other (statistically), the time estimate
counting the parts already held, and the whole kept as one entry once it is done."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

import textveil.evaluation.release_cache as release_cache
import textveil.evaluation.releasing as releasing
from textveil.corpus.labelled import LabelledCorpus
from textveil.embeddings import WordEmbeddings
from textveil.evaluation.release_cache import ReleaseCache
from textveil.evaluation.releasing import cached_share, part_seed, release_corpus
from textveil.evaluation.sweep_clock import TextCount
from textveil.mechanisms.earth_movers import EarthMoversPrivacy
from textveil.mechanisms.random_replacement import RandomReplacement

PART = 4
WORDS = ["a", "b", "c"]


@pytest.fixture(autouse=True)
def small_parts(monkeypatch):
    """Parts of 24 words: 4 of the 6-word texts below, so that a corpus of a few texts is released
    in several (the key holds the size)."""
    monkeypatch.setattr(release_cache, "RELEASE_PART_WORDS", 6 * PART)
    monkeypatch.setattr(releasing, "RELEASE_PART_WORDS", 6 * PART)


def _toy() -> WordEmbeddings:
    return WordEmbeddings(WORDS, [[0.0, 0.0], [0.3, 0.0], [0.0, 0.3]])


def _corpus(n: int) -> LabelledCorpus:
    return LabelledCorpus([f"a b c a text {i}" for i in range(n)], [f"user{i % 3}" for i in range(n)])


def test_a_long_release_is_its_parts_each_released_with_its_own_seed(tmp_path):
    corpus = _corpus(10)  # parts of 4, 4 and 2 texts (24, 24 and 12 words)
    mechanism = EarthMoversPrivacy(5.0, _toy(), seed=7)
    released = release_corpus(mechanism, corpus, ReleaseCache(tmp_path))
    expected = [mechanism.with_params(seed=part_seed(7, number)).release_corpus(
        corpus.texts[start:start + PART], corpus.labels[start:start + PART])
        for number, start in enumerate(range(0, 10, PART))]
    assert released.texts == [text for part in expected for text in part.texts]
    assert released.labels == corpus.labels and released.aligned
    assert released.stats["words_protected"] == sum(part.stats["words_protected"] for part in expected)
    assert released.budget == expected[0].budget  # metric privacy: one epsilon per token, whatever the part
    # one seed, one release; another seed, another
    assert release_corpus(EarthMoversPrivacy(5.0, _toy(), seed=7), corpus, ReleaseCache(tmp_path / "b")) == released
    assert release_corpus(EarthMoversPrivacy(5.0, _toy(), seed=8), corpus, ReleaseCache(tmp_path / "c")) != released
    # a corpus of one part is released whole, with the mechanism's own seed
    short = _corpus(PART)
    assert release_corpus(EarthMoversPrivacy(5.0, _toy(), seed=7), short, ReleaseCache(tmp_path / "d")) == (
        EarthMoversPrivacy(5.0, _toy(), seed=7).release_corpus(short.texts, short.labels))


def test_parts_hold_consecutive_texts_up_to_the_words_of_a_part_and_a_long_text_alone():
    texts = ["one two", "three four five", "six", "a text of seven words in all", "end"]
    assert releasing.release_parts(texts, most_words=6) == [range(0, 3), range(3, 4), range(4, 5)]
    assert releasing.release_parts([], most_words=6) == []
    assert releasing.release_parts(texts, most_words=100) == [range(0, 5)]  # one part: released whole


def test_a_stopped_release_resumes_at_the_first_missing_part_and_redraws_the_same(tmp_path, monkeypatch):
    corpus = _corpus(10)
    whole = release_corpus(RandomReplacement(_toy(), seed=3), corpus, ReleaseCache(tmp_path / "uninterrupted"))
    calls: list[int] = []
    real = RandomReplacement.release_corpus

    def stops_at_the_third_part(self, texts, labels=None, progress=None):
        calls.append(len(texts))
        if len(calls) == 3:
            raise KeyboardInterrupt  # the run is stopped while it releases the last part
        return real(self, texts, labels, progress=progress)

    monkeypatch.setattr(RandomReplacement, "release_corpus", stops_at_the_third_part)
    cache = ReleaseCache(tmp_path / "stopped")
    with pytest.raises(KeyboardInterrupt):
        release_corpus(RandomReplacement(_toy(), seed=3), corpus, cache)
    assert cached_share(RandomReplacement(_toy(), seed=3), corpus, cache) == pytest.approx(0.8)  # 8 of 10 texts
    assert len(list(cache.folder.glob("*-part*.json"))) == 2
    monkeypatch.setattr(RandomReplacement, "release_corpus", real)
    told: list[tuple[float, dict]] = []
    count = TextCount(lambda stage, done, total, **held: told.append((done, held)), "releasing", len(corpus))
    resumed = release_corpus(RandomReplacement(_toy(), seed=3), corpus, cache, progress=count)
    # the parts read back move the count as held (so a rate counts only the last part, released now)
    assert resumed == whole and told[:3] == [(0.0, {}), (4.0, {"held": 4.0}), (8.0, {"held": 8.0})]
    assert told[-1][0] == 10 and all(not held for _, held in told[3:])
    # the whole is kept as one entry, its parts removed, and read back whole next time
    assert [path.name for path in cache.folder.iterdir()] == [f"{releasing._key(RandomReplacement(_toy(), seed=3), corpus)}.json"]
    assert cached_share(RandomReplacement(_toy(), seed=3), corpus, cache) == 1.0
    assert json.loads(next(cache.folder.iterdir()).read_text())["texts"] == whole.texts
    assert cached_share(RandomReplacement(_toy(), seed=4), corpus, cache) == 0.0


def test_the_parts_draw_independently_of_each_other(tmp_path):
    """The same text at the same place of two parts is released independently: random replacement
    draws each word uniformly from the vocabulary, so over many texts the pairs (word in part 0,
    word in part 1) are uniform over the 9 pairs (chi-square). A part seed repeated across parts
    would put every pair on the diagonal: a statistic of 2n (2,400 here, p far below 1e-12)."""
    n_texts = 1200
    corpus = LabelledCorpus(["a"] * (2 * n_texts), ["u"] * (2 * n_texts))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(release_cache, "RELEASE_PART_WORDS", n_texts)  # one word a text
        patch.setattr(releasing, "RELEASE_PART_WORDS", n_texts)
        released = release_corpus(RandomReplacement(_toy(), seed=11), corpus, ReleaseCache(tmp_path))
    first, second = released.texts[:n_texts], released.texts[n_texts:]
    table = np.zeros((3, 3))
    for one, two in zip(first, second):
        table[WORDS.index(one.lower()), WORDS.index(two.lower())] += 1
    _, p_value = stats.chisquare(table.ravel())
    assert p_value > 1e-3, table
    diagonal = np.eye(3).ravel() * n_texts / 3  # what one seed for both parts would give
    assert stats.chisquare(diagonal + 1e-9, np.full(9, n_texts / 9)).pvalue < 1e-12


def test_a_comparison_stopped_in_the_middle_of_a_release_resumes_to_the_same_results(
        tmp_path, vectors, toy_word_embeddings, monkeypatch):
    """End to end through run_comparison: a comparison stopped while it releases its known texts (part
    two of three) is run again; it reads the parts it made back, releases only the rest, and its
    results are those of a run that was never stopped."""
    from tests.conftest import style_corpus
    from textveil.evaluation.comparison import ComparedMechanism, ComparisonPlan, run_comparison
    from textveil.evaluation.experiment_plan import EvaluationCorpora

    rng = np.random.default_rng(3)
    words = list(toy_word_embeddings.words)
    corpora = EvaluationCorpora(style_corpus(words, rng, 3, 6), style_corpus(words, rng, 3, 2))
    words_known = sum(len(text.split()) for text in corpora.risk_known.texts)
    monkeypatch.setattr(release_cache, "RELEASE_PART_WORDS", words_known // 3 + 1)
    monkeypatch.setattr(releasing, "RELEASE_PART_WORDS", words_known // 3 + 1)
    plan = ComparisonPlan(mechanisms=[ComparedMechanism("random")], attacks=["char3-svm", "length"],
                          utility=["unigram-cosine"], seed=4, embeddings=str(vectors), top_k=2, thresholds=[0.4])
    whole = run_comparison(corpora, plan, state_folder=tmp_path / "a" / "state", estimate=False,
                           release_cache_folder=tmp_path / "a" / "releases")

    real = ReleaseCache.store

    def stopped_at_the_second_part(self, key, released):
        if key is not None and key.endswith("-part1"):
            raise KeyboardInterrupt  # stopped as it finishes the second part of the known texts
        return real(self, key, released)

    folders = {"state_folder": tmp_path / "b" / "state", "release_cache_folder": tmp_path / "b" / "releases"}
    monkeypatch.setattr(ReleaseCache, "store", stopped_at_the_second_part)
    with pytest.raises(KeyboardInterrupt):
        run_comparison(corpora, plan, estimate=False, **folders)
    assert len(list((tmp_path / "b" / "releases").glob("*-part*.json"))) == 1  # the first part is kept
    asked: list[str] = []

    def recorded(self, key, released):
        asked.append(key or "")
        return real(self, key, released)

    monkeypatch.setattr(ReleaseCache, "store", recorded)
    resumed = run_comparison(corpora, plan, estimate=False, **folders)
    assert [key[-6:] for key in asked if "-part" in key] == ["-part1", "-part2"]  # part 0 is read back
    assert _measured(resumed) == _measured(whole)  # every release, attack (each text's outcome) and utility
    assert resumed["releases"][0]["point"]["known_release"]["read_from_cache"] == 0  # released, partly read back
    assert not list((tmp_path / "b" / "releases").glob("*-part*.json"))


def _measured(results: dict) -> dict:
    """A comparison's results without what says how they were obtained (times, cache reads, resumes)."""
    from tests.test_time_estimate import _strip_time

    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items()
                    if k not in ("read_from_cache", "read_back", "release_cache", "resume")}
        return [strip(v) for v in value] if isinstance(value, list) else value

    return strip(_strip_time(results))
