"""PIVOT (paper 003) through its public API: the plan keeps l-privacy exactly, the release keeps
the plan's counts and the contexts, the key maps everything back, and the key stays a secret."""

from __future__ import annotations

import pickle
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import require_shared_data
from textveil.errors import InputError, InvalidParameterError
from textveil.mechanisms.pivot import (
    CODE_WORD,
    MIN_PARTS_OF_TOP,
    Pivot,
    PivotKey,
    choose_part_size,
    corpus_counts,
    normalised_tokens,
    plan_code_words,
)
from textveil.privacy.l_privacy import count_classes, frequency_attack_success, max_attainable_l


def zipf_counts(types: int, exponent: float, scale: int) -> dict[str, int]:
    """Word counts that fall with rank as natural language's do."""
    return {f"w{rank}": max(1, int(scale / rank ** exponent)) for rank in range(1, types + 1)}


@settings(max_examples=60, deadline=None)
@given(types=st.integers(20, 400), exponent=st.floats(0.6, 1.3), scale=st.integers(50, 5000),
       l=st.integers(2, 12), part_size=st.integers(1, 300))
def test_plan_reaches_l_privacy_whenever_the_corpus_allows_it(types, exponent, scale, l, part_size):
    counts = zipf_counts(types, exponent, scale)
    if max_attainable_l(counts) < l:
        with pytest.raises(InputError, match="use l <="):
            plan_code_words(counts, l, part_size)
        return
    try:
        plan = plan_code_words(counts, l, part_size)
    except InputError as error:  # the rare corpus the repair cannot serve says so, in one line
        assert "no mapping with l" in str(error)
        return
    assert {word: sum(sizes) for word, sizes in plan.items()} == counts  # every occurrence has a code word
    assert frequency_attack_success(plan) <= 1 / l + 1e-12
    for owners in count_classes(plan).values():  # every count class mixes at least l words
        assert len(owners) >= l
    assert all(size <= part_size for sizes in plan.values() for size in sizes)


def test_plan_is_public_arithmetic_of_the_counts():
    counts = zipf_counts(300, 1.0, 3000)
    assert plan_code_words(counts, 5, 50) == plan_code_words(dict(reversed(list(counts.items()))), 5, 50)


@pytest.mark.parametrize("l", [2, 5, 10])
def test_the_chosen_part_size_cuts_the_most_frequent_word_into_many_code_words(l):
    counts = zipf_counts(5000, 0.8, 50000)  # flatter than 1/rank, so that l = 10 is within reach
    plan = plan_code_words(counts, l)
    assert len(plan["w1"]) >= MIN_PARTS_OF_TOP  # whole frequent words are what context merging finds
    assert choose_part_size(counts, l) <= counts["w1"] // MIN_PARTS_OF_TOP
    assert frequency_attack_success(plan) <= 1 / l


def test_unreachable_l_and_small_vocabularies_are_refused_in_one_line():
    with pytest.raises(InputError, match="fewer than l = 5"):
        Pivot(l=5).encode(["a b c a"])
    with pytest.raises(InputError, match="out of reach"):
        Pivot(l=3).encode(["the the the the cat sat on"])
    for bad in (1, 0, -3, 2.5):
        with pytest.raises(InvalidParameterError):
            Pivot(l=bad)


@pytest.fixture(scope="module")
def c50_texts() -> list[str]:
    root = require_shared_data("reuters_c50", "C50train")
    return [p.read_text(encoding="utf-8", errors="replace") for p in sorted(root.glob("*/*.txt"))[::10]]


def test_release_round_trips_exactly_and_keeps_the_planned_counts(c50_texts):
    encoding = Pivot(l=5, part_size=40, seed=3).encode(c50_texts)
    key = encoding.key
    released = [r.text for r in encoding.releases]
    assert [key.decode_tokens(text) for text in released] == [normalised_tokens(t) for t in c50_texts]
    realised = Counter(code for text in released for code in text.split())
    assert realised == Counter({code: count for codes in key.code_words.values() for code, count in codes})
    assert all(CODE_WORD.match(code) for code in realised)  # opaque: three letters, two digits, three letters
    assert encoding.success <= 1 / 5 and frequency_attack_success(key.plan()) == encoding.success
    # Nothing of the layout survives: single spaces between code words, no capitals, no marks.
    assert all(text == " ".join(text.split()) and text == text.lower() for text in released)
    assert all(r.guarantee.kind == "l-privacy" and r.guarantee.l == 5 for r in encoding.releases)
    assert sum(r.guarantee.words_protected for r in encoding.releases) == sum(realised.values())


def _pairs_per_bigram(documents: list[list[str]], released: list[list[str]]) -> float:
    """The mean number of distinct code-word pairs that one repeated word pair was released as."""
    seen: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for words, codes in zip(documents, released):
        for i in range(1, len(words)):
            seen.setdefault((words[i - 1], words[i]), set()).add((codes[i - 1], codes[i]))
    counts = Counter((a, b) for words in documents for a, b in zip(words, words[1:]))
    repeated = [len(seen[pair]) for pair, count in counts.items() if count >= 20]
    return float(np.mean(repeated))


def test_gomm_keeps_repeated_word_pairs_on_fewer_code_word_pairs_than_a_random_mapping(c50_texts):
    documents = [normalised_tokens(t) for t in c50_texts]
    gomm = [r.text.split() for r in Pivot(l=5, seed=1).encode(c50_texts).releases]
    random = [r.text.split() for r in Pivot(l=5, seed=1).encode(c50_texts, mapping="random").releases]
    assert _pairs_per_bigram(documents, gomm) < 0.7 * _pairs_per_bigram(documents, random)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=60), min_size=1, max_size=8))
def test_any_texts_round_trip_to_their_tokens(texts):
    counts = corpus_counts(normalised_tokens(t) for t in texts)
    if max_attainable_l(counts) < 2 or len(counts) < 2:
        return
    encoding = Pivot(l=2, seed=0).encode(texts)
    assert [encoding.key.decode_text(r.text) for r in encoding.releases] == [" ".join(normalised_tokens(t))
                                                                           for t in texts]


def test_seeded_key_is_reproducible_and_unseeded_keys_differ(c50_texts):
    first, again = (Pivot(l=3, seed=7).encode(c50_texts[:20]) for _ in range(2))
    assert [r.text for r in first.releases] == [r.text for r in again.releases]
    assert first.key.to_json() == again.key.to_json()
    fresh = [Pivot(l=3).encode(c50_texts[:20]).key.decoder for _ in range(2)]
    assert fresh[0].keys() != fresh[1].keys()


def test_vectors_map_back_as_count_weighted_means():
    key = Pivot(l=2, part_size=2, seed=0).encode(["a a a b c d a b c d"]).key
    codes = dict(key.code_words)
    rng = np.random.default_rng(0)
    vectors = {code: rng.standard_normal(4) for pairs in codes.values() for code, _ in pairs}
    decoded = key.decode_vectors(vectors)
    for word, pairs in codes.items():
        weights = np.array([count for _, count in pairs], dtype=float)
        expected = weights @ np.vstack([vectors[code] for code, _ in pairs]) / weights.sum()
        np.testing.assert_allclose(decoded[word], expected, rtol=1e-6)
    missing = {code: v for code, v in vectors.items() if code not in dict(codes["a"])}
    assert "a" not in key.decode_vectors(missing)


def test_key_is_shown_as_a_digest_never_pickled_and_saved_owner_only(tmp_path):
    key = Pivot(l=2, seed=0).encode(["the cat sat on the mat"]).key
    shown = repr(key) + str(key)
    assert "sha256:" in shown and not any(code in shown for code in key.decoder) and "cat" not in shown
    with pytest.raises(TypeError, match="not picklable"):
        pickle.dumps(key)
    path = key.save(tmp_path / "owner" / "corpus.key")
    assert path.stat().st_mode & 0o777 == 0o600
    assert PivotKey.load(path).to_json() == key.to_json()
    with pytest.raises(InputError, match="never overwritten"):
        key.save(path)
    assert key.save(path, force=True) == path
    with pytest.raises(InputError, match="another key"):
        key.decode_text("abc12def")
    with pytest.raises(InputError, match="does not match"):
        key.check_release(["abc12def"])
    (tmp_path / "bad.key").write_text("{}")
    with pytest.raises(InputError, match="not a textveil PIVOT key"):
        PivotKey.load(tmp_path / "bad.key")


def test_guarantee_names_the_context_channel_and_warns_below_the_measured_safe_l():
    texts = [" ".join(f"w{i % 40}" for i in range(start, start + 30)) for start in range(0, 300, 30)]
    low = Pivot(l=2, seed=0).encode(texts).releases[0].guarantee
    safe = Pivot(l=5, seed=0).encode(texts).releases[0].guarantee
    assert any("contexts" in item for item in safe.unprotected) and "1/l" in safe.statement
    assert any("use l >= 5" in item for item in low.unprotected)
    assert not any("use l >= 5" in item for item in safe.unprotected)
