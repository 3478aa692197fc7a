"""The random samplers every mechanism shares; the only place randomness is drawn.

Randomness comes from one ``numpy.random.Generator`` per mechanism: seeded from OS entropy
unless the caller passes a seed (for reproducible runs).
"""

from __future__ import annotations

import numpy as np

from textveil.errors import InvalidParameterError
from textveil.privacy.parameters import check_epsilon


def make_rng(seed: int | np.random.Generator | None = None) -> np.random.Generator:
    """A generator: ``seed=None`` draws fresh OS entropy; an int gives a reproducible stream."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is not None and (not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0):
        raise InvalidParameterError(f"seed must be a non-negative integer, got {seed!r}")
    return np.random.default_rng(seed)


def sample_unit_directions(count: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` directions uniform on the unit sphere in ``dim`` dimensions (float64).

    A standard normal vector divided by its length is uniform on the sphere (Muller 1959,
    the construction paper 001 cites).
    """
    directions = rng.standard_normal((count, dim))
    norms = np.linalg.norm(directions, axis=1, keepdims=True)
    # A zero vector has probability zero; guard anyway so no NaN can leak into a release.
    while np.any(norms == 0):
        bad = norms[:, 0] == 0
        directions[bad] = rng.standard_normal((int(bad.sum()), dim))
        norms = np.linalg.norm(directions, axis=1, keepdims=True)
    return directions / norms


def sample_laplace_noise(
    count: int,
    dim: int,
    epsilon: float,
    rng: np.random.Generator,
    direction_rng: np.random.Generator | None = None,
) -> np.ndarray:
    """``count`` draws of n-dimensional Laplace noise with density proportional to exp(-epsilon |x|).

    Paper 001, Theorem 2 / Algorithm 1: radius ~ Gamma(shape n, scale 1/epsilon), direction
    uniform on the sphere, independently. Adding it to a vector gives epsilon * Euclidean
    distance privacy. With a separate ``direction_rng`` the radii and the directions come
    from two streams, so drawing noise for 10 + 20 vectors gives the same numbers as drawing
    it for 30 at once (releases do not depend on how documents are batched).

    >>> noise = sample_laplace_noise(1000, 3, 2.0, make_rng(0))
    >>> noise.shape, round(float(np.linalg.norm(noise, axis=1).mean()), 1)  # mean radius n/epsilon
    ((1000, 3), 1.5)
    """
    epsilon = check_epsilon(epsilon)
    if dim < 1:
        raise InvalidParameterError(f"the dimension must be at least 1, got {dim}")
    radii = rng.gamma(shape=dim, scale=1.0 / epsilon, size=count)
    directions = sample_unit_directions(count, dim, direction_rng if direction_rng is not None else rng)
    return directions * radii[:, None]
