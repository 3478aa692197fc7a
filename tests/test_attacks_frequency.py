"""Frequency analysis and context merging against code-word releases (paper 003's attacker).

The attacks must break a one-to-one substitution cipher (most tokens recovered once the
attacker knows the word counts) and must not beat PIVOT's bound: against ``Pivot(l=5)`` the
mechanism-aware attacker's success on any count class stays at 1/l up to sampling error. Counts
come from a generated Zipf-like corpus (always available) and from Reuters C50 stories (skipped
when ../shared/data is absent).
"""

from __future__ import annotations

import itertools
import os
import string
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest
from scipy.stats import beta

from conftest import REPO_ROOT, require_shared_data
from textveil.attacks import frequency
from textveil.attacks.frequency import (
    context_clusters,
    context_merging_attack,
    expected_slots,
    optimal_assignment,
    rank_matching,
    reference_from_corpus,
    reference_from_wordfreq,
    released_counts,
    score_recovery,
)
from textveil.errors import InputError, InvalidParameterError, TextveilError
from textveil.mechanisms.pivot import Pivot, normalised_tokens, plan_code_words
from textveil.privacy.l_privacy import expected_tokens_recovered

L, PART_SIZE = 5, 40


# -- corpora ---------------------------------------------------------------------------


def zipf_texts(tokens: int = 20000, vocabulary: int = 1500, seed: int = 0) -> list[str]:
    """Texts of generated words ("wa", "wb", ...) drawn with probability ~ 1/rank."""
    rng = np.random.default_rng(seed)
    words = ["w" + "".join(letters) for letters in itertools.product(string.ascii_lowercase, repeat=3)][:vocabulary]
    weights = 1.0 / np.arange(1, vocabulary + 1)
    drawn = rng.choice(vocabulary, size=tokens, p=weights / weights.sum())
    return [" ".join(words[i] for i in drawn[start:start + 250]) for start in range(0, tokens, 250)]


def reuters_texts(files: int = 12) -> list[str]:
    """A few thousand tokens of real English: the first stories of the first C50 authors."""
    root = require_shared_data("reuters_c50", "C50train")
    paths = sorted(root.glob("*/*.txt"))[:files]
    return [path.read_text(encoding="utf-8", errors="replace") for path in paths]


def cipher(documents: list[list[str]], seed: int = 0) -> tuple[list[list[str]], dict[str, str]]:
    """A one-to-one substitution cipher with random opaque code words, and its decoder."""
    rng = np.random.default_rng(seed)
    words = sorted({token for tokens in documents for token in tokens})
    codes: set[str] = set()
    while len(codes) < len(words):
        codes.add("".join(rng.choice(list(string.ascii_lowercase), size=8)))
    encoder = dict(zip(words, rng.permutation(sorted(codes)).tolist()))
    return [[encoder[t] for t in tokens] for tokens in documents], {code: word for word, code in encoder.items()}


def pivot_runs(texts: list[str], match, seeds=range(4)) -> list[tuple[dict, dict, Counter]]:
    """(guesses, truth, counts) of the mechanism-aware attacker against several PIVOT keys."""
    reference = reference_from_corpus(normalised_tokens(text) for text in texts)
    runs = []
    for seed in seeds:
        encoding = Pivot(l=L, part_size=PART_SIZE, seed=seed).encode(texts)
        counts = released_counts(release.text.split() for release in encoding.releases)
        slots = expected_slots(reference, sum(counts.values()), planner=lambda c: plan_code_words(c, L, PART_SIZE))
        runs.append((match(counts, slots), encoding.key.decoder, counts))
    return runs


def cipher_score(texts: list[str], match):
    documents = [normalised_tokens(text) for text in texts]
    released, truth = cipher(documents)
    counts = released_counts(released)
    slots = expected_slots(reference_from_corpus(documents), sum(counts.values()))
    return score_recovery([(match(counts, slots), truth, counts)])


MATCHERS = frequency.MATCHERS  # rank, assignment and majority (the Bayes-optimal guess per count)


# -- the cipher falls, PIVOT holds -----------------------------------------------------


def _check_cipher_broken(texts: list[str], match, least: float) -> None:
    score = cipher_score(texts, match)
    counts = reference_from_corpus(normalised_tokens(text) for text in texts)
    # With exact counts a frequency attacker decodes every word whose count is unique, and one in
    # K of the K words sharing a count: this is the most it can recover, in expectation.
    reachable = expected_tokens_recovered({word: [count] for word, count in counts.items()})
    assert all(k == n for n, k in score.class_success.values() if n == 1)
    assert score.tokens_recovered >= 0.95 * reachable
    assert score.tokens_recovered > least
    assert score.types_recovered < score.tokens_recovered  # rare types share counts, so fewer types fall


@pytest.mark.parametrize("name", list(MATCHERS))
def test_frequency_analysis_breaks_a_cipher_of_generated_text(name: str) -> None:
    _check_cipher_broken(zipf_texts(), MATCHERS[name], least=0.55)


@pytest.mark.data
@pytest.mark.parametrize("name", list(MATCHERS))
def test_frequency_analysis_breaks_a_cipher_of_english(name: str) -> None:
    texts = reuters_texts()
    assert 3000 < sum(len(normalised_tokens(t)) for t in texts) < 20000
    # In 5,000 tokens of news, most words are rare and share their count with many others, so
    # even the best frequency attacker decodes only about 40% of the tokens.
    _check_cipher_broken(texts, MATCHERS[name], least=0.35)


def _check_l_privacy(runs, cipher_tokens: float) -> None:
    score = score_recovery(runs, min_class=20)
    eligible = {count: nk for count, nk in score.class_success.items() if nk[0] >= 20}
    assert eligible and score.max_class_success is not None
    # Every class's rate is at most 1/l up to sampling error: the one-sided Clopper-Pearson lower
    # bound, at 1% over all classes together (Bonferroni), must not clear 1/l.
    alpha = 0.01 / len(eligible)
    for count, (n, k) in eligible.items():
        lower = 0.0 if k == 0 else beta.ppf(alpha, k, n - k + 1)
        assert lower <= 1 / L, f"count class {count}: {k} of {n} right"
    # Pooled over all code words the rate is tight, and l-privacy bounds it too.
    code_words = sum(n for n, _ in score.class_success.values())
    right = sum(k for _, k in score.class_success.values())
    assert right / code_words <= 1 / L + 3 * np.sqrt(0.2 * 0.8 / code_words)
    assert score.max_class_success <= score.max_class_upper <= 1
    assert score.tokens_recovered < cipher_tokens / 2


@pytest.mark.parametrize("name", list(MATCHERS))
def test_the_aware_attacker_stays_within_one_over_l_on_generated_text(name: str) -> None:
    texts = zipf_texts()
    _check_l_privacy(pivot_runs(texts, MATCHERS[name]), cipher_score(texts, MATCHERS[name]).tokens_recovered)


@pytest.mark.data
@pytest.mark.parametrize("name", list(MATCHERS))
def test_the_aware_attacker_stays_within_one_over_l_on_english(name: str) -> None:
    texts = reuters_texts()
    _check_l_privacy(pivot_runs(texts, MATCHERS[name]), cipher_score(texts, MATCHERS[name]).tokens_recovered)


def test_the_majority_attacker_reaches_the_exact_bound_and_no_more() -> None:
    """With exact counts and the plan, the best guess per count class decodes what
    l_privacy.expected_tokens_recovered says the best frequency attacker decodes."""
    texts = zipf_texts()
    runs = pivot_runs(texts, frequency.majority_matching, seeds=range(2))
    plan = plan_code_words(reference_from_corpus(normalised_tokens(t) for t in texts), L, PART_SIZE)
    score = score_recovery(runs, min_class=1)
    assert score.tokens_recovered == pytest.approx(expected_tokens_recovered(plan), abs=1e-9)
    assert max(k / n for n, k in score.class_success.values()) <= 1 / L


# -- matching --------------------------------------------------------------------------


def _cost(guesses: dict[str, str], counts: dict[str, int], slots: list[tuple[str, float]], p: float) -> float:
    expected = dict(slots)  # slot words are distinct in these cases
    return sum(abs(counts[code] - expected[word]) ** p for code, word in guesses.items())


@pytest.mark.parametrize("p", [1.0, 2.0])
@pytest.mark.parametrize("shape", [(5, 5), (4, 6)])
def test_optimal_assignment_equals_brute_force(p: float, shape: tuple[int, int]) -> None:
    rng = np.random.default_rng(int(p) * 10 + shape[1])
    for trial in range(20):
        counts = {f"c{i}": int(rng.integers(1, 30)) for i in range(shape[0])}
        slots = [(f"w{j}", float(rng.uniform(1, 30))) for j in range(shape[1])]
        guesses = optimal_assignment(counts, slots, p=p)
        assert set(guesses) == set(counts) and len(set(guesses.values())) == len(counts)  # distinct slots
        codes = list(counts)
        best = min(sum(abs(counts[c] - slots[j][1]) ** p for c, j in zip(codes, chosen))
                   for chosen in itertools.permutations(range(shape[1]), shape[0]))
        assert _cost(guesses, counts, slots, p) == pytest.approx(best, rel=1e-9, abs=1e-9)


def test_optimal_assignment_beyond_max_size_still_guesses_every_code_word() -> None:
    texts = zipf_texts(tokens=8000)
    documents = [normalised_tokens(text) for text in texts]
    released, truth = cipher(documents)
    counts = released_counts(released)
    slots = expected_slots(reference_from_corpus(documents), sum(counts.values()))
    exact = score_recovery([(optimal_assignment(counts, slots), truth, counts)])
    split = optimal_assignment(counts, slots, max_size=50)  # exact head, then rank matching
    assert set(split) == set(counts)
    assert score_recovery([(split, truth, counts)]).tokens_recovered == pytest.approx(exact.tokens_recovered, abs=0.05)


def test_rank_matching_gives_surplus_code_words_the_nearest_slot() -> None:
    counts = {"a": 100, "b": 50, "c": 48, "d": 2}
    slots = [("big", 100.0), ("mid", 49.0), ("small", 2.5)]
    guesses = rank_matching(counts, slots)
    # a, b, c take the three slots by rank; d has no slot left and its count is nearest "small"
    assert (guesses["a"], guesses["b"], guesses["c"], guesses["d"]) == ("big", "mid", "small", "small")
    # surplus code words near a large slot take that one
    assert rank_matching({"x": 90, "y": 80}, [("big", 100.0)])["y"] == "big"


def test_ties_are_broken_by_the_random_code_words() -> None:
    # 200 code words of one count against two words' slots of that count: each word gets half
    counts = {f"{i:03d}": 5 for i in range(200)}
    slots = [("left", 5.0)] * 100 + [("right", 5.0)] * 100
    for match in (rank_matching, optimal_assignment):  # one code word per slot
        assert Counter(match(counts, slots).values()) == Counter(left=100, right=100)


def test_expected_slots_scale_the_reference_and_follow_the_planner() -> None:
    reference = {"the": 40, "cat": 30, "mat": 20, "sat": 10}
    slots = expected_slots(reference, 1000)
    assert [word for word, _ in slots] == ["the", "cat", "mat", "sat"]
    assert sum(count for _, count in slots) == pytest.approx(1000)
    planned = expected_slots(reference, 1000, planner=lambda c: plan_code_words(c, 2, 100))
    assert sum(count for _, count in planned) == 1000  # whole counts summing to the release
    plan = plan_code_words({"the": 400, "cat": 300, "mat": 200, "sat": 100}, 2, 100)
    assert Counter(word for word, _ in planned) == Counter({word: len(parts) for word, parts in plan.items()})
    assert [count for _, count in planned] == sorted((count for _, count in planned), reverse=True)


# -- the public reference --------------------------------------------------------------


def test_wordfreq_reference_is_lower_case_words_without_punctuation() -> None:
    reference = reference_from_wordfreq(2000)
    assert 1500 < len(reference) <= 2000
    assert max(reference, key=reference.get) == "the"
    assert all(word == word.lower() for word in reference)
    assert not any(word in string.punctuation or all(ch in string.punctuation for ch in word) for word in reference)
    assert all(normalised_tokens(word) == [word] for word in reference)  # each is one release token
    assert all(value > 0 for value in reference.values())
    slots = expected_slots(reference, 10000)
    assert slots[0][0] == "the" and 300 < slots[0][1] < 1000


# -- context merging -------------------------------------------------------------------


def markov_release(seed: int = 0, words: int = 30, parts: int = 3, tokens: int = 6000):
    """A release in which each word's contexts are its own: word w is followed by w+1 or w+7
    (mod ``words``), and each occurrence is released as one of ``parts`` code words at random."""
    rng = np.random.default_rng(seed)
    documents, truth, word = [], {}, 0
    for _ in range(tokens // 200):
        tokens_ = []
        for _ in range(200):
            word = (word + int(rng.choice([1, 7]))) % words
            code = f"q{word:02d}x{int(rng.integers(parts))}"
            truth[code] = f"w{word}"
            tokens_.append(code)
        documents.append(tokens_)
    return documents, truth


MERGING = dict(vector_size=20, window=2, epochs=10, sample=0, neighbours=2, threshold=0.9)


def test_context_merging_groups_the_code_words_of_one_word() -> None:
    documents, truth = markov_release()
    reference = Counter(truth[code] for tokens in documents for code in tokens)
    result = context_merging_attack(documents, reference, **MERGING)
    assert sorted(code for cluster in result.clusters for code in cluster) == sorted(truth)
    merged = [cluster for cluster in result.clusters if len(cluster) > 1]
    pure = [cluster for cluster in merged if len({truth[code] for code in cluster}) == 1]
    assert sum(map(len, pure)) >= 0.8 * len(truth)
    assert len(pure) >= 0.9 * len(merged)
    # every code word takes its cluster's guess, and every code word has one
    assert set(result.guesses) == set(truth)
    assert all(len({result.guesses[code] for code in cluster}) == 1 for cluster in result.clusters)


def test_context_merging_keeps_rare_code_words_apart_and_accepts_a_planner() -> None:
    documents, truth = markov_release(seed=1)
    documents.append(["rare01", "rare02"])
    truth.update(rare01="w0", rare02="w1")
    reference = Counter(truth[code] for tokens in documents for code in tokens)
    for method in ("rank", "assignment"):
        result = context_merging_attack(documents, reference, planner=lambda c: plan_code_words(c, 2, 50),
                                        method=method, **MERGING)
        assert ["rare01"] in result.clusters and ["rare02"] in result.clusters
        assert set(result.guesses) == set(truth)


def test_context_merging_is_reproducible_across_processes() -> None:
    # gensim seeds its vectors with Python's hash, salted per process; the attack must not be
    documents, truth = markov_release(seed=2, tokens=2000)
    reference = Counter(truth[code] for tokens in documents for code in tokens)
    options = dict(vector_size=20, window=2, epochs=3, sample=0, neighbours=3, threshold=0.5, min_count=1)
    here = context_merging_attack(documents, reference, **options).clusters
    script = (
        "import sys; sys.path.insert(0, 'tests'); from collections import Counter\n"
        "from test_attacks_frequency import markov_release\n"
        "from textveil.attacks.frequency import context_merging_attack\n"
        "documents, truth = markov_release(seed=2, tokens=2000)\n"
        "reference = Counter(truth[c] for t in documents for c in t)\n"
        f"print(context_merging_attack(documents, reference, **{options!r}).clusters)\n")
    environment = dict(os.environ, PYTHONHASHSEED="12345")
    there = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, env=environment, capture_output=True,
                           text=True, check=True).stdout.strip()
    assert there == repr(here)


def _at(*degrees: float) -> np.ndarray:
    return np.array([[np.cos(np.radians(d)), np.sin(np.radians(d))] for d in degrees])


def test_context_clusters_needs_mutual_links_above_the_threshold() -> None:
    vectors = _at(0, 6, 14, 90, 95)
    # 14 degrees has 6 as its nearest, but 6 has 0: no mutual link, so it stays alone
    assert context_clusters(vectors, neighbours=1, threshold=0.9).tolist() == [0, 0, 1, 2, 2]
    assert context_clusters(vectors, neighbours=2, threshold=0.9).tolist() == [0, 0, 0, 1, 1]
    # links below the threshold do not count, however near
    assert len(set(context_clusters(vectors, neighbours=4, threshold=0.9999).tolist())) == 5
    assert len(set(context_clusters(vectors, neighbours=4, threshold=-1.0, block=2).tolist())) == 1


def _brute_force_clusters(vectors: np.ndarray, neighbours: int, threshold: float) -> set[frozenset[int]]:
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    similar = unit @ unit.T
    np.fill_diagonal(similar, -np.inf)
    nearest = [set(np.argsort(-row)[:neighbours].tolist()) for row in similar]
    parent = list(range(len(vectors)))

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for i, js in enumerate(nearest):
        for j in js:
            if i in nearest[j] and similar[i, j] >= threshold:
                parent[root(i)] = root(j)
    groups: dict[int, set[int]] = {}
    for i in range(len(vectors)):
        groups.setdefault(root(i), set()).add(i)
    return {frozenset(group) for group in groups.values()}


@pytest.mark.parametrize("neighbours, threshold, block", [(1, -1.0, 7), (3, 0.2, 16), (5, 0.5, 1000), (3, 0.9, 16), (10, -1.0, 9)])
def test_context_clusters_equal_a_brute_force_mutual_neighbour_graph(neighbours, threshold, block) -> None:
    # low thresholds leave many candidates per row (the dense path), high ones few (the sparse path)
    vectors = np.random.default_rng(neighbours).normal(size=(60, 4))
    labels = context_clusters(vectors, neighbours=neighbours, threshold=threshold, block=block)
    found: dict[int, set[int]] = {}
    for i, label in enumerate(labels.tolist()):
        found.setdefault(label, set()).add(i)
    assert {frozenset(group) for group in found.values()} == _brute_force_clusters(vectors, neighbours, threshold)


# -- scoring ---------------------------------------------------------------------------


def test_score_pools_count_classes_over_runs() -> None:
    truth = {f"c{i}": f"w{i % 4}" for i in range(40)}
    counts = {code: 3 if i < 30 else 7 for i, code in enumerate(truth)}
    half = {code: (truth[code] if i % 2 == 0 else "nope") for i, code in enumerate(truth)}
    score = score_recovery([(half, truth, counts), (truth, truth, counts)], min_class=20)
    assert score.class_success[3] == (60, 45) and score.class_success[7] == (20, 15)
    assert score.max_class_success == pytest.approx(0.75)
    assert 0.75 < score.max_class_upper < 1
    assert score.tokens_recovered == pytest.approx(0.75)
    data = score.to_dict()
    assert data["class_success"]["3"] == [60, 45] and data["runs"] == 2
    # no class large enough: no maximum to report
    assert score_recovery([(half, truth, counts)], min_class=100).max_class_success is None


def test_types_recovered_needs_half_of_a_words_tokens() -> None:
    truth = {"a1": "the", "a2": "the", "b1": "cat", "c1": "mat"}
    counts = {"a1": 3, "a2": 1, "b1": 2, "c1": 2}
    guesses = {"a1": "the", "a2": "cat", "b1": "mat"}  # the: 3 of 4 right; cat: wrong; mat: no guess
    score = score_recovery([(guesses, truth, counts)], min_class=1)
    assert score.types_recovered == pytest.approx(1 / 3)
    assert score.tokens_recovered == pytest.approx(3 / 8)


# -- bad input -------------------------------------------------------------------------


@pytest.mark.parametrize("call, error", [
    (lambda: released_counts([]), InputError),
    (lambda: released_counts([[]]), InputError),
    (lambda: released_counts(["abc def"]), InputError),
    (lambda: reference_from_corpus([]), InputError),
    (lambda: expected_slots({}, 10), InputError),
    (lambda: expected_slots({"a": 0}, 10), InputError),
    (lambda: expected_slots({"a": -1}, 10), InvalidParameterError),
    (lambda: expected_slots({"a": 1}, 0), InvalidParameterError),
    (lambda: rank_matching({}, [("a", 1.0)]), InputError),
    (lambda: rank_matching({"x": 1}, []), InputError),
    (lambda: optimal_assignment({"x": 1}, [("a", 1.0)], p=0), InvalidParameterError),
    (lambda: optimal_assignment({"x": 1}, [("a", 1.0)], p=-1), InvalidParameterError),
    (lambda: optimal_assignment({"x": 1}, [("a", 1.0)], p=float("inf")), InvalidParameterError),
    (lambda: optimal_assignment({"x": 1}, [("a", 1.0)], max_size=0), InvalidParameterError),
    (lambda: optimal_assignment({}, [("a", 1.0)]), InputError),
    (lambda: reference_from_wordfreq(0), InvalidParameterError),
    (lambda: reference_from_wordfreq(10, lang="xx-nowhere"), InputError),
    (lambda: context_merging_attack([], {"a": 1}), InputError),
    (lambda: context_merging_attack([["x"]], {}), InputError),
    (lambda: context_merging_attack([["x"]], {"a": 1}, method="guess"), InvalidParameterError),
    (lambda: context_merging_attack([["x"]], {"a": 1}, neighbours=0), InvalidParameterError),
    (lambda: score_recovery([]), InputError),
    (lambda: score_recovery([({}, {}, {"x": 1})]), InputError),
    (lambda: score_recovery([({}, {"x": "a"}, {"x": 1})], min_class=0), InvalidParameterError),
])
def test_bad_input_gets_a_one_line_error(call, error) -> None:
    with pytest.raises(error) as raised:
        call()
    assert isinstance(raised.value, TextveilError)
    assert "\n" not in str(raised.value) and str(raised.value)
