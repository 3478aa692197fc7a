"""Statistical tests of the exponential mechanism (McSherry and Talwar 2007) in sampling.py.

Fixed seeds make every test deterministic. A correct sampler passes each check with a wide
margin (p > 1e-3, or within 4 standard errors), and each family of checks is paired with a
wrong sampler that must fail it: a statistical test that cannot fail proves nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from scipy import special, stats

from textveil.errors import InvalidParameterError
from textveil.mechanisms.sampling import (
    exponential_mechanism_log_probabilities,
    exponential_mechanism_probabilities,
    make_rng,
    sample_exponential_mechanism,
    sample_uniform_indices,
)

ALPHA = 1e-3
Sampler = Callable[[np.ndarray, float, int, np.random.Generator], np.ndarray]


def _correct_sampler(scores: np.ndarray, epsilon: float, n: int, rng: np.random.Generator) -> np.ndarray:
    return sample_exponential_mechanism(scores, epsilon, rng, size=n)


def _no_factor_two_sampler(scores: np.ndarray, epsilon: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """The plausible bug: Pr[w] proportional to exp(epsilon * score / sensitivity)."""
    return rng.choice(len(scores), size=n, p=special.softmax(epsilon * np.asarray(scores)))


def _chi_square_p(draws: np.ndarray, probabilities: np.ndarray) -> float:
    counts = np.bincount(draws, minlength=len(probabilities))
    return float(stats.chisquare(counts, len(draws) * probabilities).pvalue)


# --------------------------------------------------------------------------------------
# The draws follow the stated probabilities.
# --------------------------------------------------------------------------------------


def test_one_dimensional_draws_match_the_probabilities() -> None:
    scores = make_rng(1).uniform(0, 3, size=20)
    probabilities = exponential_mechanism_probabilities(scores, 2.0)
    assert probabilities.sum() == pytest.approx(1.0)
    draws = sample_exponential_mechanism(scores, 2.0, make_rng(2), size=100_000)
    assert draws.dtype == np.int64 and draws.shape == (100_000,)
    assert _chi_square_p(draws, probabilities) > ALPHA
    # Power: the same draws are rejected against the distribution without the factor 2.
    assert _chi_square_p(draws, exponential_mechanism_probabilities(scores, 4.0)) < ALPHA


def test_two_d_draws_of_identical_rows_match_the_probabilities() -> None:
    scores = make_rng(3).uniform(0, 3, size=20)
    probabilities = exponential_mechanism_probabilities(scores, 2.0)
    draws = sample_exponential_mechanism(np.tile(scores, (50_000, 1)), 2.0, make_rng(4), block_rows=7_000)
    assert draws.dtype == np.int64 and draws.shape == (50_000,)
    assert _chi_square_p(draws, probabilities) > ALPHA
    assert _chi_square_p(draws, exponential_mechanism_probabilities(scores, 4.0)) < ALPHA


def test_log_probabilities_have_the_closed_form() -> None:
    scores = np.array([[0.0, 1.0, 2.0], [5.0, 5.0, 5.0]])
    expected = 1.5 * scores / (2 * 0.5) - special.logsumexp(1.5 * scores / (2 * 0.5), axis=1, keepdims=True)
    np.testing.assert_allclose(exponential_mechanism_log_probabilities(scores, 1.5, sensitivity=0.5), expected)


# --------------------------------------------------------------------------------------
# Privacy: the likelihood ratio between neighbouring inputs stays within exp(epsilon).
# --------------------------------------------------------------------------------------


def respects_epsilon(sampler: Sampler, scores: np.ndarray, other: np.ndarray, epsilon: float,
                     n: int = 200_000, seed: int = 0, min_count: int = 200) -> bool:
    """Whether Pr[w|x] / Pr[w|x'], estimated from ``n`` draws each, stays within exp(epsilon).

    For every candidate drawn at least ``min_count`` times under both inputs, in both
    directions, the empirical log ratio may exceed epsilon by at most 4 standard errors
    (delta method: Var log p_hat ~ (1 - p) / (n p)).
    """
    rng = make_rng(seed)
    p = np.bincount(sampler(scores, epsilon, n, rng), minlength=len(scores)) / n
    q = np.bincount(sampler(other, epsilon, n, rng), minlength=len(scores)) / n
    enough = (p * n >= min_count) & (q * n >= min_count)
    p, q = p[enough], q[enough]
    log_ratio = np.abs(np.log(p) - np.log(q))
    standard_error = np.sqrt((1 - p) / (n * p) + (1 - q) / (n * q))
    return bool(np.all(log_ratio <= epsilon + 4 * standard_error))


def _worst_case_pair(vocabulary: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores 0 and 1 swapped: candidate 0 loses Delta = 1, every other one gains it."""
    scores = np.zeros(vocabulary)
    scores[0] = 1.0
    return scores, 1.0 - scores


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 3.0])
def test_random_neighbours_respect_epsilon(epsilon: float) -> None:
    rng = make_rng(5)
    scores, other = rng.uniform(0, 1, size=(2, 12))  # any two inputs: per-candidate gap <= 1
    assert respects_epsilon(_correct_sampler, scores, other, epsilon)


def test_worst_case_neighbours_respect_epsilon_and_the_wrong_sampler_does_not() -> None:
    scores, other = _worst_case_pair(10)
    assert respects_epsilon(_correct_sampler, scores, other, 1.0)
    assert not respects_epsilon(_no_factor_two_sampler, scores, other, 1.0)


def test_exact_worst_case_ratio_approaches_but_never_exceeds_exp_epsilon() -> None:
    for vocabulary in (2, 10, 10_000):
        scores, other = _worst_case_pair(vocabulary)
        for epsilon in (0.1, 1.0, 5.0):
            gap = np.abs(exponential_mechanism_log_probabilities(scores, epsilon)
                         - exponential_mechanism_log_probabilities(other, epsilon)).max()
            assert gap <= epsilon + 1e-12
            if vocabulary == 10_000 and epsilon <= 1.0:
                assert gap == pytest.approx(epsilon, abs=1e-3)  # the bound is tight


# --------------------------------------------------------------------------------------
# Numerical stability.
# --------------------------------------------------------------------------------------


def test_huge_vocabulary_and_huge_exponents_stay_finite_and_concentrate() -> None:
    vocabulary = 200_000
    scores = make_rng(6).uniform(0, 1e6, size=vocabulary)
    scores[[17, 123_456]] = 1.2e6  # a tie at the top, 2e5 (exponent 1e5) above the rest
    log_probabilities = exponential_mechanism_log_probabilities(scores, 1.0)
    assert np.all(np.isfinite(log_probabilities))
    probabilities = np.exp(log_probabilities)
    assert probabilities.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(probabilities[[17, 123_456]], 0.5)
    draws = sample_exponential_mechanism(scores, 1.0, make_rng(7), size=2_000)
    assert set(np.unique(draws)) == {17, 123_456}
    assert stats.binomtest(int((draws == 17).sum()), 2_000).pvalue > ALPHA
    rows = sample_exponential_mechanism(np.tile(scores, (4, 1)), 1.0, make_rng(8))
    assert set(rows.tolist()) <= {17, 123_456}


def test_rows_are_normalised_independently_at_any_offset() -> None:
    rows = np.array([[0.0, 1.0, 2.0], [1e7, 1e7 + 1.0, 1e7 + 2.0], [-1e7, -1e7 + 1.0, -1e7 + 2.0]])
    together = exponential_mechanism_log_probabilities(rows, 1.0)
    assert np.all(np.isfinite(together))
    for row, expected in zip(rows, together):
        np.testing.assert_allclose(exponential_mechanism_log_probabilities(row, 1.0), expected, atol=1e-9)
    np.testing.assert_array_equal(sample_exponential_mechanism(rows * 1e3, 1.0, make_rng(20)), [2, 2, 2])


def test_extreme_finite_inputs_never_give_nan_or_inf() -> None:
    scores = np.array([[0.0, 1e308, -1e308], [5.0, 5.0, 5.0]])
    log_probabilities = exponential_mechanism_log_probabilities(scores, 1e308, sensitivity=1e-300)
    assert np.all(np.isfinite(log_probabilities))
    np.testing.assert_allclose(np.exp(log_probabilities), [[0, 1, 0], [1 / 3, 1 / 3, 1 / 3]])
    assert sample_exponential_mechanism(scores[0], 1e308, make_rng(21), sensitivity=1e-300, size=5).tolist() == [1] * 5


def test_tiny_epsilon_is_near_uniform() -> None:
    vocabulary = 1_000
    scores = make_rng(9).uniform(0, 1, size=vocabulary)
    probabilities = exponential_mechanism_probabilities(scores, 1e-12)
    np.testing.assert_allclose(probabilities * vocabulary, 1.0, rtol=1e-9)
    draws = sample_exponential_mechanism(scores, 1e-12, make_rng(10), size=50_000)
    assert _chi_square_p(draws, np.full(vocabulary, 1 / vocabulary)) > ALPHA


def test_uniform_indices_are_uniform() -> None:
    draws = sample_uniform_indices(50_000, 30, make_rng(11))
    assert draws.dtype == np.int64 and draws.min() >= 0 and draws.max() < 30
    assert _chi_square_p(draws, np.full(30, 1 / 30)) > ALPHA
    assert sample_uniform_indices(0, 30, make_rng(11)).shape == (0,)


# --------------------------------------------------------------------------------------
# Reproducibility and shapes.
# --------------------------------------------------------------------------------------


def test_seeded_draws_are_reproducible() -> None:
    scores = make_rng(12).uniform(0, 5, size=(40, 30))
    for sample in (lambda seed: sample_exponential_mechanism(scores[0], 1.0, make_rng(seed), size=100),
                   lambda seed: sample_exponential_mechanism(scores, 1.0, make_rng(seed))):
        np.testing.assert_array_equal(sample(13), sample(13))
        assert not np.array_equal(sample(13), sample(14))


def test_two_d_draws_do_not_depend_on_the_block_size() -> None:
    scores = make_rng(15).uniform(0, 5, size=(37, 50))
    reference_rng = make_rng(16)
    reference = sample_exponential_mechanism(scores, 1.0, reference_rng)
    for block_rows in (1, 5, 36, 37, 1_000):
        rng = make_rng(16)
        np.testing.assert_array_equal(sample_exponential_mechanism(scores, 1.0, rng, block_rows=block_rows), reference)
        assert rng.bit_generator.state == reference_rng.bit_generator.state  # same stream consumed


def test_default_blocks_are_bounded_and_invariant(monkeypatch: pytest.MonkeyPatch) -> None:
    import textveil.mechanisms.sampling as sampling

    scores = make_rng(17).uniform(0, 5, size=(25, 40))
    reference = sample_exponential_mechanism(scores, 1.0, make_rng(18))
    monkeypatch.setattr(sampling, "BLOCK_ENTRIES", 100)  # 2 rows a block
    np.testing.assert_array_equal(sample_exponential_mechanism(scores, 1.0, make_rng(18)), reference)


def test_shapes() -> None:
    single = sample_exponential_mechanism([0.0, 1.0, 2.0], 1.0, make_rng(19))
    assert single.shape == () and single.dtype == np.int64 and 0 <= int(single) < 3
    assert sample_exponential_mechanism([0.0, 1.0], 1.0, make_rng(19), size=0).shape == (0,)
    assert sample_exponential_mechanism(np.zeros((0, 4)), 1.0, make_rng(19)).shape == (0,)
    assert exponential_mechanism_log_probabilities(np.zeros((3, 4)), 1.0).shape == (3, 4)


# --------------------------------------------------------------------------------------
# Bad parameters.
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"epsilon": math.nan}, "epsilon"),
        ({"epsilon": math.inf}, "epsilon"),
        ({"sensitivity": 0.0}, "sensitivity"),
        ({"sensitivity": -2.0}, "sensitivity"),
        ({"sensitivity": math.nan}, "sensitivity"),
        ({"scores": [0.0, math.nan]}, "scores"),
        ({"scores": [0.0, math.inf]}, "scores"),
        ({"scores": []}, "scores"),
        ({"scores": np.zeros((2, 0))}, "scores"),
        ({"scores": np.zeros((2, 2, 2))}, "scores"),
        ({"scores": ["a", "b"]}, "scores"),
        ({"size": -1}, "size"),
        ({"size": 2.5}, "size"),
        ({"size": True}, "size"),
        ({"scores": np.zeros((2, 3)), "size": 4}, "size"),
        ({"scores": np.zeros((2, 3)), "block_rows": 0}, "block_rows"),
    ],
)
def test_bad_parameters_are_refused(kwargs: dict, named: str) -> None:
    arguments = {"scores": [0.0, 1.0], "epsilon": 1.0, "rng": make_rng(0), **kwargs}
    with pytest.raises(InvalidParameterError, match=named) as error:
        sample_exponential_mechanism(**arguments)
    assert "\n" not in str(error.value)
    if set(kwargs) <= {"scores", "epsilon", "sensitivity"}:
        arguments.pop("rng")
        with pytest.raises(InvalidParameterError, match=named):
            exponential_mechanism_log_probabilities(**arguments)


@pytest.mark.parametrize(("count", "vocabulary_size", "named"), [(-1, 5, "count"), (3, 0, "vocabulary_size"), (2.0, 5, "count")])
def test_bad_uniform_parameters_are_refused(count: object, vocabulary_size: object, named: str) -> None:
    with pytest.raises(InvalidParameterError, match=named):
        sample_uniform_indices(count, vocabulary_size, make_rng(0))  # type: ignore[arg-type]
