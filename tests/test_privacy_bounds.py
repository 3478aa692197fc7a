"""The arithmetic of Earth Mover's privacy (paper 001): distance, indistinguishability
bound (Thm 4), utility bound (Thm 3), and the Guarantee record."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import ot
import pytest
from scipy import stats
from scipy.special import gammainc

from textveil.errors import InvalidParameterError
from textveil.mechanisms.sampling import make_rng, sample_laplace_noise
from textveil.mechanisms.earth_movers import EarthMoversPrivacy
from textveil.embeddings.word_embeddings import WordEmbeddings
from textveil.privacy.earth_movers import (
    earth_movers_distance,
    indistinguishability_bound,
    theorem3_as_stated,
    utility_lower_bound,
)
from textveil.privacy.guarantee import Guarantee

# --------------------------------------------------------------------------------------
# Paper 001, section 3.1: b1 = <President, greets, press, Chicago>,
# b2 = <Chief, speaks, media, Illinois>, E(b1, b2) = 2.816, N = 4.
# "if eps ~ 1/16 ... differ by the multiplier e^{2.816 x 4/16} ~ 2.02; if eps ~ 1/32 ... 1.42"
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("epsilon", "expected"), [(1 / 16, 2.02), (1 / 32, 1.42)])
def test_worked_example_of_section_3_1(epsilon: float, expected: float) -> None:
    assert round(indistinguishability_bound(epsilon, 4, 2.816), 2) == expected
    guarantee = Guarantee("emp", epsilon, "Euclidean distance between word vectors", words_protected=4)
    assert round(guarantee.bound(2.816), 2) == expected
    assert guarantee.document_epsilon == pytest.approx(4 * epsilon)


def test_indistinguishability_bound_is_exp_epsilon_n_e() -> None:
    for epsilon, words, distance in [(0.1, 1, 0.0), (2.0, 10, 0.3), (30.0, 402, 0.01)]:
        assert indistinguishability_bound(epsilon, words, distance) == pytest.approx(math.exp(epsilon * words * distance))
    assert indistinguishability_bound(1.0, 5, 0.0) == 1.0  # identical bags: indistinguishable


@pytest.mark.parametrize(("epsilon", "words", "distance"), [(0, 4, 1.0), (1.0, -1, 1.0), (1.0, 4, -0.5)])
def test_indistinguishability_bound_refuses_bad_parameters(epsilon, words, distance) -> None:
    with pytest.raises(InvalidParameterError):
        indistinguishability_bound(epsilon, words, distance)


# --------------------------------------------------------------------------------------
# Earth Mover's distance
# --------------------------------------------------------------------------------------


def _brute_force_emd(bag_a: np.ndarray, bag_b: np.ndarray) -> float:
    """EMD with weights 1/k and 1/l by brute force: repeat every point of A l times and
    every point of B k times (k*l points each, all weights equal), then try every matching
    (for equal weights an optimal plan is a permutation, Birkhoff-von Neumann)."""
    k, l = len(bag_a), len(bag_b)
    a = np.repeat(bag_a, l, axis=0)
    b = np.repeat(bag_b, k, axis=0)
    cost = np.linalg.norm(a[:, None, :] - b[None, :, :], axis=2)
    size = k * l
    return min(cost[np.arange(size), list(p)].mean() for p in itertools.permutations(range(size)))


def _pot_emd(bag_a: np.ndarray, bag_b: np.ndarray) -> float:
    cost = ot.dist(bag_a, bag_b, metric="euclidean")
    return float(ot.emd2(np.full(len(bag_a), 1 / len(bag_a)), np.full(len(bag_b), 1 / len(bag_b)), cost))


def test_emd_of_identical_bags_is_zero() -> None:
    rng = np.random.default_rng(0)
    bag = rng.standard_normal((6, 5))
    assert earth_movers_distance(bag, bag) == 0.0
    assert earth_movers_distance(bag, bag[::-1]) == pytest.approx(0.0, abs=1e-12)  # order does not matter
    single = rng.standard_normal((1, 3))
    assert earth_movers_distance(single, single) == 0.0


def test_emd_hand_computed_equal_sizes() -> None:
    # (0,0)->(0,1) costs 1, (4,0)->(4,3) costs 3: mean 2. The crossed matching costs 5 + 4.12.
    assert earth_movers_distance([[0.0, 0.0], [4.0, 0.0]], [[4.0, 3.0], [0.0, 1.0]]) == pytest.approx(2.0)
    # 1-D: sorted matching 0-1, 10-12, 20-21: (1 + 2 + 1) / 3
    assert earth_movers_distance([[0.0], [10.0], [20.0]], [[21.0], [1.0], [12.0]]) == pytest.approx(4 / 3)
    # a translated bag moves every point by the translation's length: 3-4-5
    bag = np.random.default_rng(1).standard_normal((5, 2)) * 0.01
    assert earth_movers_distance(bag, bag + [3.0, 4.0]) == pytest.approx(5.0)
    # single points: the Euclidean distance
    assert earth_movers_distance([[1.0, 2.0, 2.0]], [[0.0, 0.0, 0.0]]) == pytest.approx(3.0)


@pytest.mark.parametrize(("k", "l"), [(3, 3), (4, 6), (1, 5), (7, 2)])
def test_emd_is_symmetric(k: int, l: int) -> None:
    rng = np.random.default_rng(k * 10 + l)
    a, b = rng.standard_normal((k, 4)), rng.standard_normal((l, 4))
    assert earth_movers_distance(a, b) == pytest.approx(earth_movers_distance(b, a), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize(("k", "l"), [(2, 3), (3, 2), (1, 4), (5, 1), (1, 1), (2, 2), (3, 3), (5, 5)])
def test_emd_matches_brute_force_on_tiny_bags(k: int, l: int) -> None:
    rng = np.random.default_rng(100 + k * 10 + l)
    a, b = rng.standard_normal((k, 3)), rng.standard_normal((l, 3))
    if k * l > 6:  # equal sizes only: brute force over matchings of the bags themselves
        assert k == l
        cost = np.linalg.norm(a[:, None] - b[None], axis=2)
        expected = min(cost[np.arange(k), list(p)].mean() for p in itertools.permutations(range(k)))
    else:
        expected = _brute_force_emd(a, b)
    assert earth_movers_distance(a, b) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize(("k", "l"), [(3, 5), (10, 7), (1, 9), (20, 30)])
def test_emd_unequal_sizes_agrees_with_pot(k: int, l: int) -> None:
    rng = np.random.default_rng(200 + k + l)
    a, b = rng.standard_normal((k, 6)), rng.standard_normal((l, 6)) + 0.5
    assert earth_movers_distance(a, b) == pytest.approx(_pot_emd(a, b), rel=1e-9)


@pytest.mark.parametrize(("k", "l"), [(5, 8), (13, 4), (30, 30)])
def test_emd_in_one_dimension_is_the_wasserstein_distance(k: int, l: int) -> None:
    """In 1-D the Earth Mover's distance has a closed form (area between the CDFs)."""
    rng = np.random.default_rng(300 + k + l)
    a, b = rng.standard_normal(k), rng.standard_normal(l) * 2 + 1
    assert earth_movers_distance(a[:, None], b[:, None]) == pytest.approx(stats.wasserstein_distance(a, b), rel=1e-9)


@pytest.mark.parametrize("size", [1, 2, 5, 17, 40])
def test_birkhoff_von_neumann_hungarian_equals_transport(size: int) -> None:
    """Equal sizes: the best permutation (Hungarian) is as good as the best fractional flow."""
    rng = np.random.default_rng(400 + size)
    for _ in range(5):
        a, b = rng.standard_normal((size, 5)), rng.standard_normal((size, 5))
        assert earth_movers_distance(a, b) == pytest.approx(_pot_emd(a, b), rel=1e-9, abs=1e-12)


def test_emd_triangle_inequality_on_random_bags() -> None:
    rng = np.random.default_rng(500)
    for trial in range(200):
        sizes = (4, 4, 4) if trial % 2 else tuple(int(s) for s in rng.integers(1, 7, size=3))
        a, b, c = (rng.standard_normal((s, 3)) * rng.uniform(0.1, 3) for s in sizes)
        ab, bc, ac = earth_movers_distance(a, b), earth_movers_distance(b, c), earth_movers_distance(a, c)
        assert ac <= ab + bc + 1e-9


def test_emd_is_never_more_than_the_manhattan_of_any_matching() -> None:
    """N * E(b, b') <= sum_i |b_i - b'_i| for every ordering (paper 001, proof of Thm 3)."""
    rng = np.random.default_rng(600)
    for _ in range(50):
        a, b = rng.standard_normal((6, 4)), rng.standard_normal((6, 4))
        assert earth_movers_distance(a, b) <= np.linalg.norm(a - b, axis=1).mean() + 1e-12


def test_emd_refuses_empty_bags_and_mismatched_dimensions() -> None:
    with pytest.raises(InvalidParameterError):
        earth_movers_distance(np.empty((0, 3)), np.ones((2, 3)))
    with pytest.raises(InvalidParameterError, match="dimension"):
        earth_movers_distance(np.ones((2, 3)), np.ones((2, 4)))


# --------------------------------------------------------------------------------------
# Utility bound (paper 001, Thm 3)
# --------------------------------------------------------------------------------------


def _paper_formula(x: float, dim: int) -> float:
    """1 - e^{-x} e_{n-1}(x), e_k(x) = sum_{i <= k} x^i / i!, computed term by term."""
    return 1 - math.exp(-x) * sum(x**k / math.factorial(k) for k in range(dim))


@pytest.mark.parametrize("dim", [1, 2, 3, 5, 10, 30])
@pytest.mark.parametrize("fraction_of_limit", [0.01, 0.3, 1.0])
def test_utility_bound_closed_form_for_one_word(dim: int, fraction_of_limit: float) -> None:
    """For N = 1, Thm 3 is the n-dimensional Laplace's radius CDF (Lemma A3)."""
    epsilon = 2.5
    delta = fraction_of_limit * (dim / math.e) / epsilon
    x = epsilon * delta
    assert utility_lower_bound(epsilon, 1, delta, dim) == pytest.approx(_paper_formula(x, dim), rel=1e-9, abs=1e-15)
    # and it is the Gamma(n, 1/epsilon) CDF of the noise radius at delta
    assert utility_lower_bound(epsilon, 1, delta, dim) == pytest.approx(stats.gamma(dim, scale=1 / epsilon).cdf(delta), rel=1e-9, abs=1e-15)


def test_utility_bound_is_stable_in_high_dimensions() -> None:
    value = utility_lower_bound(0.5, 1, (300 / math.e) / 0.5, 300)
    assert 0.0 <= value < 1e-20  # tiny, but a finite probability, no overflow or NaN


def test_utility_bound_grows_with_delta() -> None:
    values = [utility_lower_bound(1.0, 1, delta, 3) for delta in np.linspace(0.01, 3 / math.e, 20)]
    assert all(b > a for a, b in zip(values, values[1:]))
    assert all(0 < v < 1 for v in values)


def test_stated_theorem3_refuses_outside_its_range_and_bad_arguments() -> None:
    epsilon, words, dim = 1.0, 4, 3
    limit_delta = (dim / math.e) / (epsilon * words)
    theorem3_as_stated(epsilon, words, limit_delta * (1 - 1e-9), dim)  # inside: fine
    with pytest.raises(InvalidParameterError, match="n/e"):
        theorem3_as_stated(epsilon, words, limit_delta * 1.01, dim)
    assert 0 < utility_lower_bound(epsilon, words, limit_delta * 10, dim) < 1  # the sound form holds everywhere
    for bad in [(epsilon, 0, 0.1, dim), (epsilon, words, 0.0, dim), (epsilon, words, -1.0, dim), (epsilon, words, 0.1, 0), (0.0, words, 0.1, dim)]:
        with pytest.raises(InvalidParameterError):
            utility_lower_bound(*bad)
        with pytest.raises(InvalidParameterError):
            theorem3_as_stated(*bad)


def _noisy_bag_distances(bag: np.ndarray, epsilon: float, trials: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 1 applied `trials` times: (EMD(b, noisy b), mean per-vector noise norm)."""
    words, dim = bag.shape
    noise = sample_laplace_noise(trials * words, dim, epsilon, make_rng(seed)).reshape(trials, words, dim)
    emd = np.array([earth_movers_distance(bag, bag + z) for z in noise])
    return emd, np.linalg.norm(noise, axis=2).mean(axis=1)


TRIALS = 4_000


def _bags(words: int, dim: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "spread": rng.standard_normal((words, dim)) * 20,  # far apart: EMD = mean noise norm
        "clustered": rng.standard_normal((words, dim)) * 0.05,  # close: re-matching can help
        "identical": np.zeros((words, dim)),  # every matching costs the mean noise norm
    }


@pytest.mark.parametrize(("words", "dim"), [(3, 2), (5, 4)])
def test_emd_to_the_noisy_bag_is_at_most_the_mean_noise_norm(words: int, dim: int) -> None:
    """Inclusion (16) of paper 001, sample by sample: Z_M is inside Z_E."""
    for name, bag in _bags(words, dim, seed=words).items():
        emd, mean_norm = _noisy_bag_distances(bag, 1.0, 500, seed=dim)
        assert np.all(emd <= mean_norm + 1e-9), name


@pytest.mark.parametrize("dim", [1, 2, 3, 5])
def test_utility_bound_holds_for_one_word(dim: int) -> None:
    """N = 1: the bound is exact (P(|noise| <= delta)); Monte Carlo must agree within error."""
    epsilon = 2.0
    delta = (dim / math.e) / epsilon  # the largest delta the theorem allows
    bound = utility_lower_bound(epsilon, 1, delta, dim)
    emd, _ = _noisy_bag_distances(np.ones((1, dim)), epsilon, TRIALS, seed=dim)
    observed = float(np.mean(emd <= delta))
    assert observed >= bound - 4 * math.sqrt(bound * (1 - bound) / TRIALS)
    assert observed == pytest.approx(bound, abs=4 * math.sqrt(bound * (1 - bound) / TRIALS))


@pytest.mark.parametrize(
    ("words", "dim", "bag_kind"), [(2, 1, "identical"), (3, 2, "spread"), (2, 5, "clustered")]
)
def test_utility_bound_holds_for_several_words(words: int, dim: int, bag_kind: str) -> None:
    """The bound holds in Monte Carlo for bags of several words, also where paper 001's printed
    Theorem 3 (1 - e^{-x} e_{n-1}(x), x = eps*N*delta) fails: it is NOT a lower bound for N >= 2.

    The proof's own region Z_M = {sum_i |noise_i| <= N*delta} has probability
    P(Gamma(N*n, 1) <= x) = gammainc(N*n, x), which is *smaller* than gammainc(n, x) for
    N >= 2 (a sum of N Gamma(n) radii is Gamma(N*n)); for a bag of N identical points every
    matching costs the mean noise norm, so P(E <= delta) equals gammainc(N*n, x) exactly.
    E.g. N = 2, n = 1, eps*N*delta = 1/e: claimed 0.31, true 0.054. A sound bound is
    gammainc(N*n, eps*N*delta) (valid for every x, no n/e condition needed), which
    utility_lower_bound returns.
    """
    epsilon = 1.0
    delta = (dim / math.e) / (epsilon * words)  # the largest delta the theorem allows
    bound = utility_lower_bound(epsilon, words, delta, dim)
    emd, _ = _noisy_bag_distances(_bags(words, dim, seed=words + dim)[bag_kind], epsilon, TRIALS, seed=7)
    observed = float(np.mean(emd <= delta))
    allowance = 4 * math.sqrt(bound * (1 - bound) / TRIALS)
    assert observed >= bound - allowance, (
        f"P(E <= delta) is about {observed:.4f} but utility_lower_bound claims at least {bound:.4f}"
    )


@pytest.mark.parametrize(("words", "dim"), [(2, 1), (3, 2), (4, 3)])
def test_probability_of_staying_close_for_identical_points_is_gamma_n_times_n(words: int, dim: int) -> None:
    """The reference for the bug above, independent of utility_lower_bound: for a bag of N
    identical points, P(E <= delta) = P(Gamma(N*n, 1) <= eps*N*delta)."""
    epsilon = 1.0
    delta = (dim / math.e) / (epsilon * words)
    emd, _ = _noisy_bag_distances(np.zeros((words, dim)), epsilon, TRIALS, seed=11)
    exact = float(gammainc(words * dim, epsilon * words * delta))
    assert float(np.mean(emd <= delta)) == pytest.approx(exact, abs=4 * math.sqrt(exact * (1 - exact) / TRIALS) + 1e-3)


def test_paper_statement_of_theorem3_overstates_for_two_identical_words() -> None:
    """Documents the paper's error: N = 2, n = 1, x = 1/e: printed 0.31, true probability 0.054."""
    epsilon, words, dim = 1.0, 2, 1
    delta = (dim / math.e) / (epsilon * words)
    emd, _ = _noisy_bag_distances(np.zeros((words, dim)), epsilon, TRIALS, seed=5)
    observed = float(np.mean(emd <= delta))
    assert theorem3_as_stated(epsilon, words, delta, dim) > observed + 0.2
    assert utility_lower_bound(epsilon, words, delta, dim) == pytest.approx(observed, abs=0.02)


# --------------------------------------------------------------------------------------
# Guarantee
# --------------------------------------------------------------------------------------


def test_bag_statement_names_epsilon_and_n() -> None:
    guarantee = Guarantee("emp", 0.0625, "Euclidean distance between word vectors", words_protected=37, layout="bag")
    text = guarantee.statement
    assert "0.0625" in text
    assert "N = 37" in text
    assert "bag of 37 perturbed words" in text
    assert "Euclidean distance between word vectors" in text
    assert f"{guarantee.document_epsilon:g}" in text
    assert guarantee.composition == "bag" and guarantee.unprotected == ("the number of content words (37)",)
    assert "NOT protected" not in text and "dropped" not in text


def test_statement_warns_about_passed_through_and_dropped_tokens() -> None:
    guarantee = Guarantee("emp", 2.0, "metric", words_protected=10, tokens_passed_through=3, tokens_dropped=2)
    text = guarantee.statement
    assert "word tokens passed through unchanged by policy (3)" in text
    assert "word tokens passed through unchanged by policy (3)" in guarantee.unprotected
    assert guarantee.unprotected_in_general == ("the number of tokens", "word tokens passed through unchanged by policy")
    assert dict(guarantee.unprotected_in_record) == {"the number of tokens": 13,
                                                    "word tokens passed through unchanged by policy": 3}
    assert "2 word token(s) were dropped" in text


def _toy_with_marks() -> WordEmbeddings:
    rng = np.random.default_rng(3)
    entries = ["the", "market", "rallied", "today", "bank", "fell", ",", ".", "!", "?"]
    return WordEmbeddings(entries, rng.normal(size=(len(entries), 6)), name="toy-marks")


def test_default_release_guarantee_names_only_the_length() -> None:
    """Through the public API: the default (public-layout) release names the number of tokens,
    and nothing else, as unprotected; the same text with --layout keep names what it copies."""
    text = "The MARKET rallied,\n\n  today!!"
    release = EarthMoversPrivacy(5.0, embeddings=_toy_with_marks(), seed=0).sanitize(text)
    assert release.guarantee.layout == "public" and release.guarantee.composition == "sequence"
    assert release.guarantee.unprotected == ("the number of tokens (7)",)
    assert release.guarantee.words_protected == 7  # 4 words and 3 marks, every one privatised
    statement = release.guarantee.statement
    assert "Released unprotected: the number of tokens (7)." in statement and "WARNING" not in statement
    kept = EarthMoversPrivacy(5.0, embeddings=_toy_with_marks(), seed=0, layout="keep").sanitize(text)
    assert kept.guarantee.words_protected == 4
    named = " ".join(kept.guarantee.unprotected)
    for copied in ("number of words", "casing", "punctuation", "spacing and line breaks"):
        assert copied in named
    assert "NOT protected" in kept.guarantee.statement
    assert kept.guarantee.to_dict()["unprotected"] == list(kept.guarantee.unprotected)

def test_guarantee_to_dict_round_trips() -> None:
    guarantee = Guarantee("emp", 1 / 3, "metric", words_protected=12, tokens_passed_through=4, tokens_dropped=1)
    data = guarantee.to_dict()
    fields = {f.name for f in dataclasses.fields(Guarantee)}
    assert Guarantee(**{name: data[name] for name in fields}) == guarantee
    assert data["epsilon"] == 1 / 3  # exact, not rounded
    assert data["document_epsilon"] == pytest.approx(12 / 3)
    assert data["statement"] == guarantee.statement
    assert math.exp(data["document_epsilon"] * 0.5) == pytest.approx(guarantee.bound(0.5))


def test_guarantee_json_schema_is_stable() -> None:
    """``--format json`` consumers read these keys: renaming one must bump GUARANTEE_SCHEMA."""
    from textveil.privacy.guarantee import GUARANTEE_SCHEMA

    data = Guarantee("emp", 2.0, "metric", words_protected=3).to_dict()
    assert GUARANTEE_SCHEMA == "textveil.guarantee/5"
    assert sorted(data) == sorted([
        "schema", "mechanism", "epsilon", "metric", "words_protected", "tokens_passed_through", "tokens_dropped",
        "layout", "kind", "unit", "composition", "protected", "unprotected_in_general", "unprotected_in_record",
        "unprotected", "assumptions", "how", "statement", "formula", "document_epsilon", "l", "entity_stage",
        "policies", "post_processing", "tokens_per_unit", "units_rewritten", "units_left_out",
        "epsilon_per_rewritten_unit"])
    dp = Guarantee("syntf", 0.5, kind="dp", unit="token", words_protected=4, composition="sequential",
                   unprotected_in_general=("the number of tokens",), statement="s").to_dict()
    assert dp["formula"] == "epsilon * N" and dp["document_epsilon"] == 2.0 and dp["kind"] == "dp"
    with pytest.raises(ValueError):
        Guarantee("x", 1.0, kind="magic")
