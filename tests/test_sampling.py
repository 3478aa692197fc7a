"""Statistical tests of the one place randomness is drawn (paper 001, Thm 2 / Lemma 4).

Every test uses a fixed seed, so it is deterministic. Acceptance thresholds are chosen so a
correct sampler passes with a wide margin (p > 1e-3 per check), and each family of checks is
paired with a *power* test: the same check, run on a wrong sampler, must fail. A statistical
test that cannot fail proves nothing.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from tests.chi_square import pooled_chi_square_pvalue
from textveil.embeddings.word_embeddings import WordEmbeddings
from textveil.errors import InvalidParameterError
from textveil.mechanisms.earth_movers import EarthMoversPrivacy
from textveil.mechanisms.sampling import (
    exponential_mechanism_probabilities,
    make_rng,
    sample_exponential_mechanism_rows,
    sample_laplace_noise,
    sample_unit_directions,
)
from textveil.mechanisms.scores import clipped_logit_scores
from textveil.privacy.parameters import check_epsilon

ALPHA = 1e-3  # a correct sampler must give p > ALPHA; a wrong one p < ALPHA
SAMPLES = 20_000


# --------------------------------------------------------------------------------------
# Wrong samplers, for the power tests. Same signature as sample_laplace_noise.
# --------------------------------------------------------------------------------------


def _gamma_n_plus_1_noise(count: int, dim: int, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """Off by one in the Gamma shape (a plausible bug): radius ~ Gamma(n + 1, 1/epsilon)."""
    return sample_unit_directions(count, dim, rng) * rng.gamma(dim + 1, 1.0 / epsilon, size=count)[:, None]


def _gaussian_noise_same_mean_radius(count: int, dim: int, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """Isotropic Gaussian noise scaled so its mean radius equals the Laplace one (n/epsilon)."""
    sigma = (dim / epsilon) / stats.chi(dim).mean()
    return rng.standard_normal((count, dim)) * sigma


def _cube_directions(count: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    """Uniform in the cube, normalised: a classic non-uniform 'direction' sampler."""
    points = rng.uniform(-1.0, 1.0, size=(count, dim))
    return points / np.linalg.norm(points, axis=1, keepdims=True)


def _radius_ks_pvalue(noise: np.ndarray, dim: int, epsilon: float) -> float:
    radii = np.linalg.norm(noise, axis=1)
    return stats.kstest(radii, stats.gamma(a=dim, scale=1.0 / epsilon).cdf).pvalue


def _first_coordinate_ks_pvalue(directions: np.ndarray) -> float:
    """(u1 + 1) / 2 ~ Beta((n-1)/2, (n-1)/2) for u uniform on the sphere in n >= 2 dims."""
    dim = directions.shape[1]
    half = (dim - 1) / 2
    return stats.kstest((directions[:, 0] + 1) / 2, stats.beta(half, half).cdf).pvalue


# --------------------------------------------------------------------------------------
# Radius: Gamma(shape n, scale 1/epsilon)
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [0.5, 2.0, 20.0])
@pytest.mark.parametrize("dim", [1, 2, 5, 50, 384])
def test_radius_is_gamma_n_over_epsilon(dim: int, epsilon: float) -> None:
    noise = sample_laplace_noise(SAMPLES, dim, epsilon, make_rng(1000 + dim))
    assert noise.shape == (SAMPLES, dim)
    assert noise.dtype == np.float64
    assert _radius_ks_pvalue(noise, dim, epsilon) > ALPHA


@pytest.mark.parametrize("wrong_sampler", [_gamma_n_plus_1_noise, _gaussian_noise_same_mean_radius])
@pytest.mark.parametrize("dim", [1, 2, 5, 50, 384])
def test_radius_test_rejects_a_wrong_sampler(wrong_sampler, dim: int) -> None:
    """Power: the same KS check fails for a wrong radius law, even a mean-matched one."""
    noise = wrong_sampler(SAMPLES, dim, 2.0, make_rng(1000 + dim))
    assert _radius_ks_pvalue(noise, dim, 2.0) < ALPHA


def test_radius_mean_and_variance_match_gamma() -> None:
    """Moments as a second, independent check: mean n/eps, variance n/eps^2."""
    dim, epsilon = 10, 4.0
    radii = np.linalg.norm(sample_laplace_noise(SAMPLES, dim, epsilon, make_rng(3)), axis=1)
    mean_se = math.sqrt(dim) / epsilon / math.sqrt(SAMPLES)
    assert abs(radii.mean() - dim / epsilon) < 5 * mean_se
    assert radii.var() == pytest.approx(dim / epsilon**2, rel=0.05)


# --------------------------------------------------------------------------------------
# Directions: uniform on the unit sphere
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [1, 2, 3, 5, 50, 384])
def test_directions_have_unit_norm(dim: int) -> None:
    directions = sample_unit_directions(5_000, dim, make_rng(11))
    assert directions.shape == (5_000, dim)
    np.testing.assert_allclose(np.linalg.norm(directions, axis=1), 1.0, rtol=0, atol=1e-12)
    assert np.all(np.isfinite(directions))


def test_one_dimensional_directions_are_fair_signs() -> None:
    directions = sample_unit_directions(SAMPLES, 1, make_rng(12))[:, 0]
    assert set(np.unique(directions)) == {-1.0, 1.0}
    assert stats.binomtest(int((directions > 0).sum()), SAMPLES, 0.5).pvalue > ALPHA


@pytest.mark.parametrize("dim", [2, 3, 5, 50, 384])
def test_first_coordinate_follows_the_sphere_marginal(dim: int) -> None:
    directions = sample_unit_directions(SAMPLES, dim, make_rng(100 + dim))
    assert _first_coordinate_ks_pvalue(directions) > ALPHA


@pytest.mark.parametrize("dim", [2, 5, 384])
def test_noise_directions_are_uniform_too(dim: int) -> None:
    """The direction of the full noise vector (not only of the helper) is uniform."""
    noise = sample_laplace_noise(SAMPLES, dim, 1.0, make_rng(200 + dim))
    assert _first_coordinate_ks_pvalue(noise / np.linalg.norm(noise, axis=1, keepdims=True)) > ALPHA


@pytest.mark.parametrize("dim", [2, 3, 5, 50])
def test_sphere_marginal_test_rejects_cube_directions(dim: int) -> None:
    """Power: normalised uniform-in-a-cube vectors are not uniform on the sphere."""
    assert _first_coordinate_ks_pvalue(_cube_directions(SAMPLES, dim, make_rng(100 + dim))) < ALPHA


@pytest.mark.parametrize("dim", [2, 3, 5, 50])
def test_directions_have_zero_mean_and_isotropic_covariance(dim: int) -> None:
    count = 50_000
    directions = sample_unit_directions(count, dim, make_rng(300 + dim))
    # each coordinate has variance 1/n, so its mean has standard error 1/sqrt(n * count)
    assert np.max(np.abs(directions.mean(axis=0))) < 5 / math.sqrt(dim * count)
    scaled_covariance = dim * (directions.T @ directions) / count  # E[u u^T] = I / n
    assert np.max(np.abs(scaled_covariance - np.eye(dim))) < 0.05


def test_two_dimensional_angle_is_uniform() -> None:
    directions = sample_unit_directions(SAMPLES, 2, make_rng(21))
    angles = np.arctan2(directions[:, 1], directions[:, 0])
    assert stats.kstest(angles, stats.uniform(loc=-math.pi, scale=2 * math.pi).cdf).pvalue > ALPHA
    # power: the cube sampler's angles are not uniform
    cube = _cube_directions(SAMPLES, 2, make_rng(21))
    cube_angles = np.arctan2(cube[:, 1], cube[:, 0])
    assert stats.kstest(cube_angles, stats.uniform(loc=-math.pi, scale=2 * math.pi).cdf).pvalue < ALPHA


# --------------------------------------------------------------------------------------
# The privacy property itself: density ratios bounded by exp(epsilon * d)
# --------------------------------------------------------------------------------------

MIN_COUNT = 100  # bins with fewer counts in either sample are too noisy to judge
Z_LIMIT = 4.0  # sampling error allowance, in standard errors of the log ratio


def _log_ratios(outputs_a: np.ndarray, outputs_b: np.ndarray, edges: list[np.ndarray]):
    """Per-bin log(P_a(bin) / P_b(bin)), its standard error and the bin centres, for bins
    where both samples have at least MIN_COUNT points."""
    counts_a = np.histogramdd(outputs_a, bins=edges)[0]
    counts_b = np.histogramdd(outputs_b, bins=edges)[0]
    centres = np.stack(np.meshgrid(*[(e[1:] + e[:-1]) / 2 for e in edges], indexing="ij"), axis=-1)
    keep = (counts_a >= MIN_COUNT) & (counts_b >= MIN_COUNT)
    ca, cb = counts_a[keep], counts_b[keep]
    log_ratio = np.log(ca / len(outputs_a)) - np.log(cb / len(outputs_b))
    standard_error = np.sqrt(1 / ca - 1 / len(outputs_a) + 1 / cb - 1 / len(outputs_b))
    return log_ratio, standard_error, centres[keep]


def _worst_excess(outputs_x, outputs_y, edges, bound) -> float:
    """Largest (|log ratio| - bound) / standard error over the bins, in both directions."""
    log_ratio, standard_error, _ = _log_ratios(outputs_x, outputs_y, edges)
    return float(np.max((np.abs(log_ratio) - bound) / standard_error))


def _laplace_outputs(x: np.ndarray, count: int, epsilon: float, seed: int) -> np.ndarray:
    return x + sample_laplace_noise(count, len(x), epsilon, make_rng(seed))


def _gaussian_outputs_same_scale(x: np.ndarray, count: int, epsilon: float, seed: int) -> np.ndarray:
    """A wrong mechanism: Gaussian noise with the Laplace noise's second moment
    (E|noise|^2 = n(n+1)/eps^2), i.e. per-coordinate sd sqrt(n+1)/eps."""
    sigma = math.sqrt(len(x) + 1) / epsilon
    return x + make_rng(seed).standard_normal((count, len(x))) * sigma


ONE_D = dict(epsilon=1.5, distance=1.0, count=500_000, edges=[np.arange(-8.0, 9.0 + 1e-9, 0.1)])
TWO_D = dict(epsilon=1.0, distance=2.0, count=1_000_000, edges=[np.arange(-10.0, 12.0 + 1e-9, 0.5)] * 2)


@pytest.mark.parametrize("setup", [ONE_D, TWO_D], ids=["1d", "2d"])
def test_density_ratio_is_bounded_by_epsilon_times_distance(setup) -> None:
    epsilon, distance, count, edges = setup["epsilon"], setup["distance"], setup["count"], setup["edges"]
    dim = len(edges)
    x = np.zeros(dim)
    x_prime = np.zeros(dim)
    x_prime[0] = distance
    outputs_x = _laplace_outputs(x, count, epsilon, seed=1)
    outputs_y = _laplace_outputs(x_prime, count, epsilon, seed=2)
    log_ratio, standard_error, centres = _log_ratios(outputs_x, outputs_y, edges)
    assert len(log_ratio) > 50  # the check covers many bins
    assert np.max((np.abs(log_ratio) - epsilon * distance) / standard_error) < Z_LIMIT
    # The bound is not vacuous: somewhere the ratio comes close to it.
    assert np.max(log_ratio) > 0.8 * epsilon * distance


def test_density_ratio_bound_is_attained_outside_the_segment_in_1d() -> None:
    """For y left of x (the side away from x'), log p_x(y)/p_x'(y) = eps*d exactly; right of
    x' it is -eps*d. The pooled estimate over those bins must match, i.e. the mechanism is
    not noisier than it needs to be."""
    epsilon, distance, count, edges = ONE_D["epsilon"], ONE_D["distance"], ONE_D["count"], ONE_D["edges"]
    outputs_x = _laplace_outputs(np.zeros(1), count, epsilon, seed=1)
    outputs_y = _laplace_outputs(np.array([distance]), count, epsilon, seed=2)
    log_ratio, standard_error, centres = _log_ratios(outputs_x, outputs_y, edges)
    half_bin = (edges[0][1] - edges[0][0]) / 2
    for side, expected in ((centres[:, 0] + half_bin <= 0.0, epsilon * distance),
                           (centres[:, 0] - half_bin >= distance, -epsilon * distance)):
        assert side.sum() >= 10
        weights = 1 / standard_error[side] ** 2
        pooled = np.sum(weights * log_ratio[side]) / np.sum(weights)
        pooled_se = 1 / math.sqrt(np.sum(weights))
        assert abs(pooled - expected) < max(Z_LIMIT * pooled_se, 0.02)
        # and bin by bin: every bin out there sits at the bound, up to sampling error
        assert np.all(np.abs(log_ratio[side] - expected) < Z_LIMIT * standard_error[side])


@pytest.mark.parametrize("setup", [ONE_D, TWO_D], ids=["1d", "2d"])
def test_density_ratio_harness_catches_gaussian_noise(setup) -> None:
    """Power: Gaussian noise of the same scale has unbounded log ratios in its tails; the
    same harness with the same thresholds must flag it."""
    epsilon, distance, count, edges = setup["epsilon"], setup["distance"], setup["count"], setup["edges"]
    dim = len(edges)
    x_prime = np.zeros(dim)
    x_prime[0] = distance
    outputs_x = _gaussian_outputs_same_scale(np.zeros(dim), count, epsilon, seed=1)
    outputs_y = _gaussian_outputs_same_scale(x_prime, count, epsilon, seed=2)
    assert _worst_excess(outputs_x, outputs_y, edges, epsilon * distance) > Z_LIMIT


def test_density_ratio_harness_catches_too_little_noise() -> None:
    """Power: Laplace noise at twice the claimed epsilon breaks the claimed bound."""
    epsilon, distance, count, edges = ONE_D["epsilon"], ONE_D["distance"], ONE_D["count"], ONE_D["edges"]
    outputs_x = _laplace_outputs(np.zeros(1), count, 2 * epsilon, seed=1)
    outputs_y = _laplace_outputs(np.array([distance]), count, 2 * epsilon, seed=2)
    assert _worst_excess(outputs_x, outputs_y, edges, epsilon * distance) > Z_LIMIT


# --------------------------------------------------------------------------------------
# Seeds and parameters
# --------------------------------------------------------------------------------------


def test_same_seed_gives_the_same_noise() -> None:
    first = sample_laplace_noise(100, 7, 3.0, make_rng(42))
    second = sample_laplace_noise(100, 7, 3.0, make_rng(42))
    np.testing.assert_array_equal(first, second)
    other = sample_laplace_noise(100, 7, 3.0, make_rng(43))
    assert not np.array_equal(first, other)


def test_seed_none_draws_fresh_entropy() -> None:
    first = sample_laplace_noise(100, 7, 3.0, make_rng(None))
    second = sample_laplace_noise(100, 7, 3.0, make_rng())
    assert not np.array_equal(first, second)


def test_a_generator_is_used_as_given() -> None:
    generator = np.random.default_rng(5)
    assert make_rng(generator) is generator
    assert make_rng(np.int64(5)).random() == np.random.default_rng(5).random()


@pytest.mark.parametrize("seed", [-1, 1.5, "a", True, [1]])
def test_bad_seeds_are_refused(seed) -> None:
    with pytest.raises(InvalidParameterError, match="seed"):
        make_rng(seed)


BAD_EPSILONS = [0, 0.0, -1, -0.5, float("nan"), float("inf"), float("-inf"), "x", None]


@pytest.mark.parametrize("epsilon", BAD_EPSILONS)
def test_bad_epsilons_are_refused(epsilon, toy_embeddings: WordEmbeddings) -> None:
    with pytest.raises(InvalidParameterError, match="epsilon"):
        check_epsilon(epsilon)
    with pytest.raises(InvalidParameterError, match="epsilon"):
        sample_laplace_noise(3, 2, epsilon, make_rng(0))
    with pytest.raises(InvalidParameterError, match="epsilon"):
        EarthMoversPrivacy(epsilon, embeddings=toy_embeddings)


@pytest.mark.parametrize("epsilon", [1e-9, 0.5, 3, "2.5", np.float32(4.0)])
def test_good_epsilons_come_back_as_floats(epsilon) -> None:
    value = check_epsilon(epsilon)
    assert isinstance(value, float)
    assert value == float(epsilon)


def test_bad_dimension_is_refused() -> None:
    with pytest.raises(InvalidParameterError, match="dimension"):
        sample_laplace_noise(3, 0, 1.0, make_rng(0))


def test_noise_for_split_batches_equals_noise_for_one_batch() -> None:
    """With separate radius and direction streams, 10 + 20 draws equal 30 draws."""
    whole = sample_laplace_noise(30, 6, 2.0, make_rng(8), make_rng(9))
    radius_rng, direction_rng = make_rng(8), make_rng(9)
    parts = [sample_laplace_noise(n, 6, 2.0, radius_rng, direction_rng) for n in (10, 20)]
    np.testing.assert_array_equal(whole, np.concatenate(parts))


# --------------------------------------------------------------------------------------
# Batching invariance of the whole mechanism
# --------------------------------------------------------------------------------------


def _toy_texts(count: int = 40) -> list[str]:
    rng = np.random.default_rng(99)
    texts = []
    for i in range(count):
        words = [f"w{j}" for j in rng.integers(0, 200, size=int(rng.integers(0, 15)))]
        texts.append(", ".join(words[:3]) + (" " if words[:3] else "") + " ".join(words[3:]) + ("." if i % 2 else "!\n"))
    return texts


def test_a_long_document_is_decoded_in_pieces_with_the_same_release(toy_embeddings: WordEmbeddings) -> None:
    """A document longer than batch_words is drawn and decoded a piece at a time (memory stays
    bounded on a several-MB file), and releases exactly as if at once, per record seed too."""
    text = " ".join(toy_embeddings.words[i % 200] for i in range(0, 2000, 3))
    kwargs = dict(epsilon=2.0, embeddings=toy_embeddings, seed=99)
    pieces, whole = (EarthMoversPrivacy(**kwargs, batch_words=size) for size in (17, 10**6))
    assert pieces.sanitize(text).text == whole.sanitize(text).text != text
    assert ([r.text for r in pieces.sanitize_records([text, text], [5, 6])]
            == [r.text for r in whole.sanitize_records([text, text], [5, 6])])


@pytest.mark.parametrize("decode", ["exact", "screened", "approx"])
def test_releases_do_not_depend_on_batching(toy_embeddings: WordEmbeddings, decode: str) -> None:
    texts = _toy_texts()
    kwargs = dict(epsilon=2.0, embeddings=toy_embeddings, seed=1234, decode=decode)

    one_by_one_mechanism = EarthMoversPrivacy(**kwargs)
    one_by_one = [one_by_one_mechanism.sanitize(t).text for t in texts]
    all_at_once = [r.text for r in EarthMoversPrivacy(**kwargs).sanitize_many(texts)]
    tiny_batches = [r.text for r in EarthMoversPrivacy(**kwargs, batch_words=1).sanitize_many(texts)]
    huge_batches = [r.text for r in EarthMoversPrivacy(**kwargs, batch_words=10**6).sanitize_many(texts)]
    generator_input = [r.text for r in EarthMoversPrivacy(**kwargs, batch_words=7).sanitize_many(iter(texts))]

    assert one_by_one == all_at_once == tiny_batches == huge_batches == generator_input
    # the comparison is meaningful: the noise did change words
    assert sum(a != b for a, b in zip(texts, all_at_once)) > len(texts) // 2
    # and a different seed gives different releases
    other = [r.text for r in EarthMoversPrivacy(**{**kwargs, "seed": 4321}).sanitize_many(texts)]
    assert other != all_at_once


def test_progress_reports_every_document(toy_embeddings: WordEmbeddings) -> None:
    texts = _toy_texts(25)
    seen: list[int] = []
    EarthMoversPrivacy(2.0, embeddings=toy_embeddings, seed=1, batch_words=5).sanitize_many(texts, progress=seen.append)
    assert sum(seen) == len(texts)


# --------------------------------------------------------------------------------------
# The exponential mechanism, one generator per row (the language-model mechanisms' draw)
# --------------------------------------------------------------------------------------


def test_a_row_draw_depends_only_on_its_own_scores_and_generator() -> None:
    """Row i drawn in a batch equals row i drawn alone with the same generator, whatever the other
    rows hold and in whatever order they come: a text's release does not depend on its batch."""
    rng = np.random.default_rng(31)
    for trial in range(40):
        scores = rng.normal(0.0, 3.0, size=(6, 25))
        seeds = [int(s) for s in rng.integers(0, 2**32, size=6)]
        together = sample_exponential_mechanism_rows(scores, 2.0, [make_rng(s) for s in seeds], sensitivity=1.5)
        alone = [int(sample_exponential_mechanism_rows(scores[i:i + 1], 2.0, [make_rng(seeds[i])], sensitivity=1.5)[0])
                 for i in range(6)]
        assert together.tolist() == alone
        # other rows replaced by fresh scores and the batch reversed: row 0 keeps its draw
        others = np.vstack([rng.normal(0.0, 3.0, size=(5, 25)), scores[:1]])
        reversed_rngs = [make_rng(s) for s in rng.integers(0, 2**32, size=5)] + [make_rng(seeds[0])]
        assert sample_exponential_mechanism_rows(others, 2.0, reversed_rngs, sensitivity=1.5)[-1] == together[0]
    # the draws are not all the same (the check above is not vacuous)
    assert len(set(together.tolist())) > 1


def test_a_row_draw_takes_one_uniform_from_its_generator() -> None:
    """Each row's generator advances by exactly one uniform, so a text's later steps are the same
    whatever it is batched with."""
    generator, twin = make_rng(12), make_rng(12)
    sample_exponential_mechanism_rows(np.zeros((1, 7)), 1.0, [generator])
    twin.random()
    assert generator.random() == twin.random()


def test_row_draws_refuse_a_wrong_number_of_generators() -> None:
    with pytest.raises(InvalidParameterError, match="generator"):
        sample_exponential_mechanism_rows(np.zeros((3, 4)), 1.0, [make_rng(0), make_rng(1)])
    with pytest.raises(InvalidParameterError, match="generator"):
        sample_exponential_mechanism_rows(np.zeros(4), 1.0, [make_rng(0)])
    assert sample_exponential_mechanism_rows(np.zeros((0, 4)), 1.0, []).shape == (0,)


ROW_SCORES = np.array([0.0, 1.0, 2.5, -1.0, 0.5, 3.0, -4.0])


def _row_draws(count: int, epsilon: float, sensitivity: float, seed: int) -> np.ndarray:
    """``count`` draws over ROW_SCORES, each row with its own generator seeded from a parent stream."""
    parent = make_rng(seed)
    rngs = [make_rng(int(s)) for s in parent.integers(0, 2**63, size=count)]
    return sample_exponential_mechanism_rows(np.tile(ROW_SCORES, (count, 1)), epsilon, rngs, sensitivity=sensitivity)


def _chi_square_pvalue(draws: np.ndarray, probabilities: np.ndarray) -> float:
    observed = np.bincount(draws, minlength=probabilities.size)
    return stats.chisquare(observed, probabilities * draws.size).pvalue


def test_row_draws_follow_the_exponential_mechanism_probabilities() -> None:
    draws = _row_draws(SAMPLES, 1.5, 2.0, seed=41)
    expected = exponential_mechanism_probabilities(ROW_SCORES, 1.5, sensitivity=2.0)
    assert expected.min() * SAMPLES > 50  # every cell is well populated: the chi-square test applies
    assert _chi_square_pvalue(draws, expected) > ALPHA


def test_row_draw_goodness_of_fit_rejects_a_missing_factor_two() -> None:
    """Power: draws at twice the epsilon (the factor 2 forgotten) fail the same test."""
    draws = _row_draws(SAMPLES, 3.0, 2.0, seed=41)
    assert _chi_square_pvalue(draws, exponential_mechanism_probabilities(ROW_SCORES, 1.5, sensitivity=2.0)) < ALPHA


# -- the clipped score's sampler (the language-model mechanisms): the floor counted, not exponentiated --

# Logits of a small vocabulary: a few near the top, most far below (on the floor of a width-6
# relative score), a control token (index 3) excluded from the candidates and given the row's
# largest logit, so the shift must come from the candidates alone.
CLIPPED_LOGITS = np.array([[9.0, 8.5, 7.0, 30.0, 1.0, 0.5, -2.0, 6.2, -5.0, 2.0, 8.9, -1.0, 3.5, 4.0, 2.9]],
                          dtype=np.float32)
CLIPPED_CANDIDATES = np.array([i for i in range(CLIPPED_LOGITS.shape[1]) if i != 3])


def _clipped_probabilities(epsilon: float, low: float, high: float, relative: bool) -> np.ndarray:
    scores = clipped_logit_scores(CLIPPED_LOGITS[0, CLIPPED_CANDIDATES], low, high, relative)
    return exponential_mechanism_probabilities(scores, epsilon, sensitivity=high - low)


def _clipped_draws(count: int, epsilon: float, low: float, high: float, relative: bool, seed: int,
                   sensitivity: float | None = None) -> np.ndarray:
    from textveil.mechanisms.sampling import sample_clipped_exponential_rows

    parent = make_rng(seed)
    rngs = [make_rng(int(s)) for s in parent.integers(0, 2**63, size=count)]
    return sample_clipped_exponential_rows(np.repeat(CLIPPED_LOGITS, count, axis=0), CLIPPED_CANDIDATES, low, high,
                                           epsilon, rngs, relative=relative, sensitivity=sensitivity)


@pytest.mark.parametrize(("low", "high", "relative"), [(-6.0, 0.0, True), (2.0, 8.0, False), (-40.0, 40.0, False)],
                         ids=["relative", "clipped", "nothing-on-the-floor"])
def test_clipped_draws_follow_the_exponential_mechanism_probabilities(low, high, relative) -> None:
    expected = _clipped_probabilities(4.0, low, high, relative)
    draws = _clipped_draws(SAMPLES, 4.0, low, high, relative, seed=7)
    assert draws.max() < CLIPPED_CANDIDATES.size  # positions in the candidates: the excluded token is never drawn
    assert pooled_chi_square_pvalue(draws, expected) > ALPHA


def test_clipped_draw_goodness_of_fit_rejects_a_wrong_sensitivity() -> None:
    """Power: the same draws with the sensitivity halved (the factor 2 forgotten) fail the test."""
    expected = _clipped_probabilities(4.0, -6.0, 0.0, True)
    draws = _clipped_draws(SAMPLES, 4.0, -6.0, 0.0, True, seed=7, sensitivity=3.0)
    assert stats.chisquare(np.bincount(draws, minlength=expected.size), expected * SAMPLES).pvalue < ALPHA


def test_clipped_draws_match_the_general_sampler_uniform_for_uniform() -> None:
    """With the same uniform, the floor-counting walk lands where the general inverse CDF does (up
    to rounding at a cumulative boundary): a 49,152-token row of a language model's size."""
    from textveil.mechanisms.sampling import sample_clipped_exponential_rows

    rng = np.random.default_rng(3)
    logits = (rng.normal(0.0, 6.0, size=(40, 49_152))).astype(np.float32)
    candidates = np.setdiff1d(np.arange(49_152), [0, 1, 2, 17])
    for epsilon in (10.0, 25.0, 40.0):
        fast = sample_clipped_exponential_rows(logits, candidates, -15.0, 0.0, epsilon,
                                               [make_rng(i) for i in range(40)], relative=True)
        scores = clipped_logit_scores(logits[:, candidates], -15.0, 0.0, True)
        general = sample_exponential_mechanism_rows(scores, epsilon, [make_rng(i) for i in range(40)], sensitivity=15.0)
        assert np.mean(fast == general) >= 0.95 and np.sum(fast != general) <= 2


def test_every_candidate_on_the_floor_is_drawn_uniformly() -> None:
    from textveil.mechanisms.sampling import sample_clipped_exponential_rows

    flat = np.zeros((SAMPLES, 6), dtype=np.float32)
    rngs = [make_rng(i) for i in range(SAMPLES)]
    draws = sample_clipped_exponential_rows(flat, np.arange(6), 5.0, 9.0, 3.0, rngs, relative=False)
    assert stats.chisquare(np.bincount(draws, minlength=6)).pvalue > ALPHA
    with pytest.raises(InvalidParameterError, match="high > low"):
        sample_clipped_exponential_rows(flat[:1], np.arange(6), 2.0, 2.0, 3.0, rngs[:1], relative=False)
    with pytest.raises(InvalidParameterError, match="finite"):
        sample_clipped_exponential_rows(np.full((1, 6), np.nan, dtype=np.float32), np.arange(6), -1.0, 0.0, 3.0,
                                        rngs[:1], relative=True)


# -- the same draws in torch (a GPU's logits drawn where they are; tested here on the CPU) ------


def _torch_clipped_draws(count: int, epsilon: float, low: float, high: float, relative: bool, seed: int,
                         sensitivity: float | None = None, dtype=None) -> np.ndarray:
    import torch

    from textveil.mechanisms.sampling import sample_clipped_exponential_rows_torch

    parent = make_rng(seed)
    rngs = [make_rng(int(s)) for s in parent.integers(0, 2**63, size=count)]
    logits = torch.from_numpy(np.repeat(CLIPPED_LOGITS, count, axis=0)).to(dtype or torch.float32)
    return sample_clipped_exponential_rows_torch(logits, torch.from_numpy(CLIPPED_CANDIDATES), low, high, epsilon,
                                                 rngs, relative=relative, sensitivity=sensitivity).numpy()


@pytest.mark.parametrize(("low", "high", "relative"), [(-6.0, 0.0, True), (2.0, 8.0, False), (-40.0, 40.0, False)],
                         ids=["relative", "clipped", "nothing-on-the-floor"])
def test_torch_clipped_draws_follow_the_exponential_mechanism_probabilities(low, high, relative) -> None:
    """The device draw (run here on the CPU with torch) has the exponential mechanism's
    distribution: chi-square over the candidates, the control token never drawn."""
    expected = _clipped_probabilities(4.0, low, high, relative)
    draws = _torch_clipped_draws(SAMPLES, 4.0, low, high, relative, seed=11)
    assert draws.max() < CLIPPED_CANDIDATES.size
    assert pooled_chi_square_pvalue(draws, expected) > ALPHA


def test_torch_clipped_draw_goodness_of_fit_rejects_a_wrong_sensitivity() -> None:
    """Power: the torch draws with the factor 2 forgotten fail the same test."""
    expected = _clipped_probabilities(4.0, -6.0, 0.0, True)
    draws = _torch_clipped_draws(SAMPLES, 4.0, -6.0, 0.0, True, seed=11, sensitivity=3.0)
    assert stats.chisquare(np.bincount(draws, minlength=expected.size), expected * SAMPLES).pvalue < ALPHA


def test_torch_row_draws_follow_the_exponential_mechanism_probabilities_and_reject_a_missing_factor_two() -> None:
    import torch

    from textveil.mechanisms.sampling import sample_exponential_mechanism_rows_torch

    def draws(epsilon: float) -> np.ndarray:
        parent = make_rng(43)
        rngs = [make_rng(int(s)) for s in parent.integers(0, 2**63, size=SAMPLES)]
        scores = torch.from_numpy(np.tile(ROW_SCORES, (SAMPLES, 1)))
        return sample_exponential_mechanism_rows_torch(scores, epsilon, rngs, sensitivity=2.0).numpy()

    expected = exponential_mechanism_probabilities(ROW_SCORES, 1.5, sensitivity=2.0)
    assert _chi_square_pvalue(draws(1.5), expected) > ALPHA
    assert _chi_square_pvalue(draws(3.0), expected) < ALPHA


@pytest.mark.parametrize("epsilon", [10.0, 25.0, 40.0])
def test_torch_draws_equal_numpy_draws_uniform_for_uniform(epsilon) -> None:
    """For the same logits and the same per-row generators, the device draw gives the NumPy draw's
    tokens (a row of a language model's size, an output vocabulary without four tokens), for the
    clipped score and plain sampling, from float32 and from bfloat16 logits (a GPU's format):
    a release is the same whichever path drew it, up to a float64 boundary case."""
    import torch

    from textveil.mechanisms.sampling import (
        sample_clipped_exponential_rows,
        sample_clipped_exponential_rows_torch,
        sample_exponential_mechanism_rows_torch,
    )

    rng = np.random.default_rng(5)
    logits = torch.from_numpy(rng.normal(0.0, 6.0, size=(64, 49_152)).astype(np.float32)).to(torch.bfloat16)
    candidates = np.setdiff1d(np.arange(49_152), [0, 1, 2, 17])
    on_host = logits.float().numpy()
    for relative, (low, high) in ((True, (-15.0, 0.0)), (False, (9.0, 24.0))):
        ours = sample_clipped_exponential_rows_torch(logits, torch.from_numpy(candidates), low, high, epsilon,
                                                     [make_rng(i) for i in range(64)], relative=relative).numpy()
        theirs = sample_clipped_exponential_rows(on_host, candidates, low, high, epsilon,
                                                 [make_rng(i) for i in range(64)], relative=relative)
        assert (ours == theirs).all()
    plain = sample_exponential_mechanism_rows_torch(logits[:, candidates], 2.0 / 0.7, [make_rng(i) for i in range(64)])
    assert (plain.numpy() == sample_exponential_mechanism_rows(on_host[:, candidates], 2.0 / 0.7,
                                                               [make_rng(i) for i in range(64)])).all()


def test_torch_draws_take_one_uniform_per_row_and_refuse_bad_input() -> None:
    import torch

    from textveil.mechanisms.sampling import sample_clipped_exponential_rows_torch

    rngs = [make_rng(1), make_rng(2)]
    sample_clipped_exponential_rows_torch(torch.zeros((2, 5)), torch.arange(5), -1.0, 0.0, 3.0, rngs, relative=True)
    after = [rng.random() for rng in rngs]
    fresh = [make_rng(1), make_rng(2)]
    [rng.random() for rng in fresh]
    assert after == [rng.random() for rng in fresh]  # exactly one value taken from each row's stream
    with pytest.raises(InvalidParameterError, match="one generator per row"):
        sample_clipped_exponential_rows_torch(torch.zeros((2, 5)), torch.arange(5), -1.0, 0.0, 3.0, rngs[:1],
                                              relative=True)
    with pytest.raises(InvalidParameterError, match="finite"):
        sample_clipped_exponential_rows_torch(torch.full((1, 5), float("nan")), torch.arange(5), -1.0, 0.0, 3.0,
                                              rngs[:1], relative=True)
    # a non-finite logit outside the candidates is never read (as in NumPy)
    row = torch.tensor([[float("inf"), 1.0, 2.0]])
    assert sample_clipped_exponential_rows_torch(row, torch.tensor([1, 2]), -1.0, 0.0, 1e6, rngs[:1],
                                                 relative=True).tolist() == [1]


# -- one draw per kind, wherever the logits are -------------------------------------------------


@pytest.fixture
def torch_path_on_the_cpu(monkeypatch):
    """The dispatching draws take their accelerator path for a CPU tensor too (the path a GPU's
    logits take), so it is tested here, on the CPU."""
    from textveil.mechanisms import sampling
    from textveil.models.device import is_torch_tensor

    monkeypatch.setattr(sampling, "on_accelerator", is_torch_tensor)


def test_the_dispatching_draws_give_the_numpy_tokens_from_a_host_array_a_cpu_tensor_and_the_device_path(
        torch_path_on_the_cpu, monkeypatch) -> None:
    """One function per draw takes a step's logits wherever they are: a NumPy array, a CPU tensor
    (drawn on the host) and a tensor drawn where it lies (the accelerator's path, forced here onto
    the CPU) give the same positions for the same generators, for the clipped score and plain
    sampling, from float32 and bfloat16 logits."""
    import torch

    from textveil.mechanisms import sampling
    from textveil.mechanisms.sampling import (
        sample_clipped_exponential_logits,
        sample_clipped_exponential_rows,
        sample_exponential_mechanism_logits,
    )

    rng = np.random.default_rng(9)
    candidates = np.setdiff1d(np.arange(4_096), [0, 1, 2, 17])
    for dtype in (torch.float32, torch.bfloat16):
        tensor = torch.from_numpy(rng.normal(0.0, 6.0, size=(32, 4_096)).astype(np.float32)).to(dtype)
        on_host = tensor.float().numpy()
        for relative, (low, high) in ((True, (-15.0, 0.0)), (False, (2.0, 17.0))):
            def clipped(logits):
                return sample_clipped_exponential_logits(logits, candidates, low, high, 20.0,
                                                         [make_rng(i) for i in range(32)], relative=relative)

            expected = sample_clipped_exponential_rows(on_host, candidates, low, high, 20.0,
                                                       [make_rng(i) for i in range(32)], relative=relative)
            device = clipped(tensor)
            assert isinstance(device, np.ndarray) and (device == expected).all()
            with monkeypatch.context() as host_only:
                host_only.setattr(sampling, "on_accelerator", lambda logits: False)
                assert (clipped(tensor) == expected).all() and (clipped(on_host) == expected).all()

        def plain(logits):
            return sample_exponential_mechanism_logits(logits, candidates, 2.0 / 0.7, [make_rng(i) for i in range(32)])

        expected = sample_exponential_mechanism_rows(on_host[:, candidates], 2.0 / 0.7,
                                                     [make_rng(i) for i in range(32)])
        assert (plain(tensor) == expected).all() and (plain(on_host) == expected).all()
    # power: other generators give other tokens
    other = sample_exponential_mechanism_logits(on_host, candidates, 2.0 / 0.7, [make_rng(i + 1) for i in range(32)])
    assert (other != expected).any()


def test_child_generators_depend_on_their_place_in_the_parents_stream() -> None:
    from textveil.mechanisms.sampling import child_generator

    parent = make_rng(4)
    first, second = child_generator(parent), child_generator(parent)
    again = make_rng(4)
    assert child_generator(again).random() == first.random() and child_generator(again).random() == second.random()
    assert first.random() != second.random()
