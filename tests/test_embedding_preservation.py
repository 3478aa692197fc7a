"""Embedding preservation (paper 003's utility): dist(D, D'), neighbours, word-similarity sets, word2vec.

The measures are checked against what they must do (zero when nothing changed, growing with
noise, chance level for unrelated vectors, agreement with a plain loop over the definition),
and, on real news, PIVOT's mapped-back vectors are compared with a random one-to-many mapping
and with no vectors at all.
"""

from __future__ import annotations

import glob
import itertools
import os
import sys
import time
from collections import Counter

import numpy as np
import pytest

from conftest import REPO_ROOT, require_shared_data, run_guarded
from textveil.errors import InputError, InvalidParameterError, TextveilError
from textveil.utility.embedding_preservation import (
    _sample_pairs,
    embedding_preservation,
    neighbour_agreement,
    pair_distance_change,
    paired_similarity_correlation,
    similarity_pairs,
    train_word2vec,
    word_similarity_correlation,
)


def random_vectors(words, dim=16, seed=0):
    rng = np.random.default_rng(seed)
    return {w: rng.standard_normal(dim) for w in words}


WORDS = [f"w{i}" for i in range(120)]


def naive_pair_distance_change(original, released, words, code_words):
    """The definition, one pair and one code-word pair at a time (every pair, every code word)."""
    def dist(a, b):
        return 1 - float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))

    changes = []
    for wi, wj in itertools.combinations(words, 2):
        terms = [abs(dist(original[wi], original[wj]) - dist(released[p], released[q]))
                 for p in code_words[wi] for q in code_words[wj]]
        changes.append(np.mean(terms))
    return float(np.mean(changes))


# --------------------------------------------------------------------------------------
# dist(D, D')
# --------------------------------------------------------------------------------------


def test_pair_distance_change_is_zero_for_identical_mappings():
    vectors = random_vectors(WORDS)
    assert pair_distance_change(vectors, vectors, WORDS) == pytest.approx(0.0, abs=1e-12)
    # cosines ignore length: scaled vectors keep every distance
    assert pair_distance_change(vectors, {w: 5 * v for w, v in vectors.items()}, WORDS) == pytest.approx(0.0, abs=1e-12)


def test_pair_distance_change_is_zero_when_code_words_carry_their_words_vectors():
    vectors = random_vectors(WORDS)
    rng = np.random.default_rng(1)
    code_words, released = {}, {}
    for word in WORDS:
        codes = [f"{word}_c{j}" for j in range(int(rng.integers(1, 6)))]
        code_words[word] = codes + [f"{word}_untrained"]  # no vector: skipped
        released.update({code: vectors[word] * rng.uniform(0.5, 2.0) for code in codes})
    assert pair_distance_change(vectors, released, WORDS, code_words) == pytest.approx(0.0, abs=1e-12)
    # a PIVOT key lists (code word, count) pairs: the same answer
    as_key = {w: tuple((c, 7) for c in codes) for w, codes in code_words.items()}
    assert pair_distance_change(vectors, released, WORDS, as_key, max_codes=2) == pytest.approx(0.0, abs=1e-12)


def test_pair_distance_change_grows_with_noise():
    vectors = random_vectors(WORDS)
    rng = np.random.default_rng(2)
    noise = {w: rng.standard_normal(16) for w in WORDS}
    levels = [0.05, 0.2, 0.5, 1.0, 3.0]
    mapped = [pair_distance_change(vectors, {w: vectors[w] + s * noise[w] for w in WORDS}, WORDS) for s in levels]
    assert all(a < b for a, b in zip(mapped, mapped[1:])), mapped
    # over code words too: each word's three code words are noisy copies of its vector
    code_words = {w: [f"{w}_{j}" for j in range(3)] for w in WORDS}
    noises = {c: rng.standard_normal(16) for codes in code_words.values() for c in codes}
    coded = [pair_distance_change(vectors, {c: vectors[w] + s * noises[c] for w, codes in code_words.items()
                                            for c in codes}, WORDS, code_words) for s in levels]
    assert all(a < b for a, b in zip(coded, coded[1:])), coded
    assert 0 < coded[0] and coded[-1] <= 2


def test_pair_distance_change_matches_the_definition_computed_pair_by_pair():
    rng = np.random.default_rng(3)
    words = WORDS[:25]
    original = random_vectors(words, dim=6, seed=4)
    code_words = {w: [f"{w}_{j}" for j in range(int(rng.integers(1, 5)))] for w in words}
    released = {c: rng.standard_normal(9) for codes in code_words.values() for c in codes}  # another dimension
    expected = naive_pair_distance_change(original, released, words, code_words)
    assert pair_distance_change(original, released, words, code_words) == pytest.approx(expected, rel=1e-10)


def test_sampled_pairs_estimate_the_full_mean():
    words = [f"v{i}" for i in range(400)]  # 79,800 pairs
    original = random_vectors(words, seed=5)
    rng = np.random.default_rng(6)
    released = {w: v + 0.8 * rng.standard_normal(16) for w, v in original.items()}
    full = pair_distance_change(original, released, words, max_pairs=10**6)
    estimates = [pair_distance_change(original, released, words, max_pairs=5000, seed=s) for s in range(3)]
    assert len(set(estimates)) == 3  # the seed picks the pairs
    assert all(abs(e - full) < 0.01 for e in estimates), (full, estimates)


def test_pair_sampling_gives_distinct_valid_pairs():
    first, second = _sample_pairs(30, 10**6, np.random.default_rng(0))
    assert set(zip(first.tolist(), second.tolist())) == set(itertools.combinations(range(30), 2))
    first, second = _sample_pairs(5000, 20000, np.random.default_rng(0))
    pairs = set(zip(first.tolist(), second.tolist()))
    assert len(pairs) == 20000 and all(0 <= i < j < 5000 for i, j in pairs)


def test_pair_distance_change_skips_words_without_vectors():
    vectors = random_vectors(WORDS)
    rng = np.random.default_rng(7)
    noisy = {w: v + rng.standard_normal(16) for w, v in vectors.items()}
    base = pair_distance_change(vectors, noisy, WORDS)
    # unknown words and words whose code words were never trained change nothing
    assert pair_distance_change(vectors, noisy, [*WORDS, "unknown"]) == pytest.approx(base)
    code_words = {w: [w] for w in WORDS} | {"ghost": ["not-trained"]}
    assert pair_distance_change({**vectors, "ghost": np.ones(16)}, noisy, [*WORDS, "ghost"], code_words) == \
        pytest.approx(base)


# --------------------------------------------------------------------------------------
# neighbours
# --------------------------------------------------------------------------------------


def test_neighbour_agreement_is_one_for_identical_and_chance_for_unrelated_vectors():
    words = [f"v{i}" for i in range(400)]
    vectors = random_vectors(words, dim=32, seed=8)
    assert neighbour_agreement(vectors, vectors, words, k=10) == 1.0
    assert neighbour_agreement(vectors, {w: 2 * v for w, v in vectors.items()}, words, k=10) == 1.0
    unrelated = random_vectors(words, dim=32, seed=9)
    chance = 10 / (len(words) - 1)
    assert abs(neighbour_agreement(vectors, unrelated, words, k=10) - chance) < 0.015
    # a little noise keeps more than chance and less than everything
    rng = np.random.default_rng(10)
    noisy = {w: v + 0.5 * rng.standard_normal(32) for w, v in vectors.items()}
    assert chance + 0.1 < neighbour_agreement(vectors, noisy, words, k=10) < 1.0


# --------------------------------------------------------------------------------------
# word-similarity datasets
# --------------------------------------------------------------------------------------


def test_datasets_load_and_a_model_agrees_with_itself():
    assert len(similarity_pairs("wordsim353")) == 353
    assert len(similarity_pairs("simlex999")) == 999
    rows = similarity_pairs("wordsim353")
    assert all(a == a.lower() and b == b.lower() and 0 <= score <= 10 for a, b, score in rows)
    vocabulary = sorted({w for dataset in ("wordsim353", "simlex999") for a, b, _ in similarity_pairs(dataset)
                         for w in (a, b)})
    vectors = random_vectors(vocabulary, seed=11)
    for dataset, total in (("wordsim353", 353), ("simlex999", 999)):
        assert paired_similarity_correlation(vectors, vectors, dataset) == pytest.approx(1.0)
        score = word_similarity_correlation(vectors, dataset)
        assert (score.pairs_used, score.pairs_total) == (total, total)
        assert abs(score.rho) < 0.2  # random vectors know nothing of people's judgements
        assert score.to_dict()["dataset"] == dataset


def test_similarity_correlation_follows_the_human_scores():
    # Pairs with words of their own (no other row of the dataset joins two of their words),
    # each pair in a plane of its own at an angle that shrinks as people's score grows: the
    # cosines then rank the pairs exactly as people did, and reversed angles rank them backwards.
    rows = similarity_pairs("simlex999")
    chosen, used = [], set()
    for a, b, score in rows:
        if a != b and not {a, b} & used:
            chosen.append((a, b, score))
            used |= {a, b}
    pairs = {row[:2] for row in chosen}
    joined = {w for a, b, _ in rows if a in used and b in used and (a, b) not in pairs for w in (a, b)}
    chosen = [row for row in chosen if not set(row[:2]) & joined][:200]
    assert len(chosen) >= 50

    def placed(reverse):
        vectors = {}
        for n, (a, b, score) in enumerate(chosen):
            angle = (score if reverse else 10 - score) / 10 * np.pi / 2
            vectors[a], vectors[b] = np.zeros(2 * len(chosen)), np.zeros(2 * len(chosen))
            vectors[a][2 * n] = 1.0
            vectors[b][2 * n], vectors[b][2 * n + 1] = np.cos(angle), np.sin(angle)
        return vectors

    score = word_similarity_correlation(placed(False), "simlex999")
    assert (score.pairs_used, score.pairs_total) == (len(chosen), 999)
    assert score.rho == pytest.approx(1.0) and score.p_value < 1e-10
    assert word_similarity_correlation(placed(True), "simlex999").rho == pytest.approx(-1.0)
    assert paired_similarity_correlation(placed(False), placed(True), "simlex999") == pytest.approx(-1.0)
    # fewer than 3 pairs covered: no rank correlation
    assert np.isnan(word_similarity_correlation({w: placed(False)[w] for w in chosen[0][:2]}, "simlex999").rho)


def test_a_model_without_the_datasets_words_uses_no_pairs():
    score = word_similarity_correlation({"kqz47mbe": np.ones(3)}, "wordsim353")
    assert score.pairs_used == 0 and np.isnan(score.rho)
    assert np.isnan(paired_similarity_correlation({"x": np.ones(3)}, {"x": np.ones(3)}, "simlex999"))


# --------------------------------------------------------------------------------------
# the report
# --------------------------------------------------------------------------------------


def test_embedding_preservation_gathers_the_measures():
    vocabulary = sorted({w for a, b, _ in similarity_pairs("wordsim353") for w in (a, b)})
    original = random_vectors(vocabulary, seed=12)
    rng = np.random.default_rng(13)
    code_words = {w: [f"{w}#{j}" for j in range(3)] for w in vocabulary}
    released = {c: original[w] + 0.3 * rng.standard_normal(16) for w, codes in code_words.items() for c in codes}
    decoded = {w: np.mean([released[c] for c in codes], axis=0) for w, codes in code_words.items()}
    words = vocabulary[:200]
    report = embedding_preservation(original, released, code_words, decoded, words, k=5)
    assert report["words"] == 200 and report["k"] == 5
    assert report["pair_distance_change"] == pair_distance_change(original, released, words, code_words)
    assert report["pair_distance_change_decoded"] == pair_distance_change(original, decoded, words)
    # averaging three noisy copies cancels part of the noise
    assert report["pair_distance_change_decoded"] < report["pair_distance_change"]
    assert report["neighbour_agreement"] == neighbour_agreement(original, decoded, words, k=5)
    for dataset in ("wordsim353", "simlex999"):
        assert report[dataset]["original"]["pairs_total"] == len(similarity_pairs(dataset))
        assert 0.5 < report[dataset]["paired"] <= 1.0
    identical = embedding_preservation(original, original, {w: [w] for w in vocabulary}, original, words)
    assert identical["pair_distance_change"] == pytest.approx(0.0, abs=1e-12)
    assert identical["neighbour_agreement"] == 1.0


# --------------------------------------------------------------------------------------
# bad input: one line each
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("call", "error"), [
    (lambda v: pair_distance_change({}, v, WORDS), InputError),
    (lambda v: pair_distance_change(v, {}, WORDS), InputError),
    (lambda v: pair_distance_change(v, v, ["w0"]), InputError),
    (lambda v: pair_distance_change(v, v, "w0 w1"), InputError),
    (lambda v: pair_distance_change(v, v, WORDS, max_pairs=0), InvalidParameterError),
    (lambda v: pair_distance_change(v, v, WORDS, max_codes=0), InvalidParameterError),
    (lambda v: pair_distance_change(v, {"a": np.ones(3), "b": np.ones(4)}, ["w0", "w1"], {"w0": ["a"], "w1": ["b"]}),
     InputError),
    (lambda v: neighbour_agreement({}, v, WORDS), InputError),
    (lambda v: neighbour_agreement(v, v, WORDS, k=0), InvalidParameterError),
    (lambda v: neighbour_agreement(v, v, WORDS[:5], k=10), InputError),
    (lambda v: word_similarity_correlation(v, "men3000"), InvalidParameterError),
    (lambda v: word_similarity_correlation({}, "wordsim353"), InputError),
    (lambda v: paired_similarity_correlation(v, v, "rw"), InvalidParameterError),
    (lambda v: train_word2vec([]), InputError),
    (lambda v: train_word2vec(["the cat sat"] * 10, min_count=1), InputError),
    (lambda v: train_word2vec([["a", "b"]], min_count=5), InputError),
    (lambda v: train_word2vec([["a"] * 10], vector_size=0), InvalidParameterError),
    (lambda v: train_word2vec([["a"] * 10], sg=2), InvalidParameterError),
])
def test_bad_input_gets_a_one_line_error(call, error):
    vectors = random_vectors(WORDS)
    with pytest.raises(error) as raised:
        call(vectors)
    assert isinstance(raised.value, TextveilError)
    assert "\n" not in str(raised.value) and str(raised.value)


# --------------------------------------------------------------------------------------
# word2vec
# --------------------------------------------------------------------------------------

# A small corpus that any process rebuilds identically: sentences from a seeded generator.
CORPUS_CODE = ("import numpy as np; rng = np.random.default_rng(0); "
               "corpus = [[f't{i}' for i in rng.integers(0, 60, size=20)] for _ in range(300)]")


def corpus():
    scope = {}
    exec(CORPUS_CODE, scope)
    return scope["corpus"]


def test_word2vec_is_reproducible_for_a_seed_across_processes(tmp_path):
    settings = "vector_size=16, epochs=2, min_count=1, seed=3"
    first = train_word2vec(corpus(), vector_size=16, epochs=2, min_count=1, seed=3)
    second = train_word2vec(corpus(), vector_size=16, epochs=2, min_count=1, seed=3)
    assert first.keys() == second.keys() and len(first) == 60
    assert all(v.dtype == np.float32 and v.shape == (16,) for v in first.values())
    assert all(np.array_equal(first[w], second[w]) for w in first)
    other_seed = train_word2vec(corpus(), vector_size=16, epochs=2, min_count=1, seed=4)
    assert not all(np.array_equal(first[w], other_seed[w]) for w in first)
    # another process, with another hash salt, trains the same vectors
    out = tmp_path / "vectors.npz"
    script = (f"{CORPUS_CODE}; from textveil.utility.embedding_preservation import train_word2vec; "
              f"v = train_word2vec(corpus, {settings}); np.savez({str(out)!r}, **v)")
    done = run_guarded([sys.executable, "-c", script], "word2vec training in another process", cwd=REPO_ROOT,
                       capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert done.returncode == 0, done.stderr
    with np.load(out) as elsewhere:
        assert set(elsewhere.files) == set(first)
        assert all(np.array_equal(first[w], elsewhere[w]) for w in first)


def test_word2vec_reads_documents_longer_than_gensims_sentence_limit():
    # gensim trains on the first 10,000 tokens of a sentence only: a word seen only after them
    # would keep its initial vector whatever the number of epochs. Read whole, it moves.
    document = [f"f{i % 2000}" for i in range(10_000)] + ["late", "word"] * 5
    once = train_word2vec([document], vector_size=4, epochs=1, min_count=5)
    twice = train_word2vec([document], vector_size=4, epochs=2, min_count=5)
    assert not np.array_equal(once["late"], twice["late"])


# --------------------------------------------------------------------------------------
# Real data (skipped without ../shared/data)
# --------------------------------------------------------------------------------------


@pytest.mark.data
def test_pivot_vectors_mapped_back_keep_distances_better_than_a_random_mapping():
    from textveil.mechanisms.pivot import Pivot, normalised_tokens

    root = require_shared_data("reuters_c50", "C50train")
    files = sorted(glob.glob(str(root / "*" / "*.txt")))
    assert len(files) == 2500
    files = files[::8][:300]  # six documents of every author
    texts = [open(f, encoding="utf-8", errors="replace").read() for f in files]
    started = time.perf_counter()
    # Skip-gram: on 180k tokens, 3 epochs of CBOW barely move the vectors from their start
    # (all cosines near 1, neighbours at chance level), which would leave nothing to compare.
    settings = dict(vector_size=32, epochs=3, min_count=5, sg=1, seed=0)
    documents = [normalised_tokens(t) for t in texts]
    original = train_word2vec(documents, **settings)
    trained = {}
    for mapping in ("gomm", "random"):
        encoding = Pivot(l=5, seed=0).encode(texts, mapping=mapping)
        released = train_word2vec([r.text.split() for r in encoding.releases], **settings)
        trained[mapping] = released, encoding.key.code_words, encoding.key.decode_vectors(released)
    counts = Counter(token for tokens in documents for token in tokens)
    words = [w for w, _ in counts.most_common()
             if w in original and all(w in decoded for _, _, decoded in trained.values())][:300]
    assert len(words) == 300
    change = {m: pair_distance_change(original, decoded, words) for m, (_, _, decoded) in trained.items()}
    coded = {m: pair_distance_change(original, released, words, codes) for m, (released, codes, _) in trained.items()}
    nothing = pair_distance_change(original, random_vectors(words, dim=32, seed=0), words)
    agreement = neighbour_agreement(original, trained["gomm"][2], words)
    print(f"dist(D, D') mapped back: gomm {change['gomm']:.3f}, random {change['random']:.3f}, random vectors "
          f"{nothing:.3f}; over code words: gomm {coded['gomm']:.3f}, random {coded['random']:.3f}; "
          f"10-NN agreement gomm {agreement:.3f} ({time.perf_counter() - started:.1f} s)")
    assert change["gomm"] < change["random"]
    assert coded["gomm"] < coded["random"]
    assert change["gomm"] < nothing
    assert agreement > 3 * 10 / (len(words) - 1)  # well above chance
