"""The mathematics of Earth Mover's privacy (paper 001), one function per object.

- :func:`earth_movers_distance`: E between two bags of vectors (POT; the assignment problem
  for bags of equal size, where an optimal plan moves each word whole, Birkhoff-von Neumann).
- :func:`indistinguishability_bound`: ``exp(epsilon * N * E)`` (Theorem 4).
- :func:`utility_lower_bound`: the probability that the noisy bag stays within Earth Mover's
  distance Delta of the input (Theorem 3, in a form that holds for every N; the printed form,
  :func:`theorem3_as_stated`, overstates it for N >= 2).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist
from scipy.special import gammainc

from textveil.errors import InvalidParameterError
from textveil.privacy.parameters import check_epsilon


def earth_movers_distance(bag_a: np.ndarray, bag_b: np.ndarray) -> float:
    """Earth Mover's distance between two bags of vectors under the Euclidean metric.

    Each bag is an ``N x n`` array; every element weighs ``1/N`` (Def. 3 of paper 001).
    For equal sizes the optimal flow is a permutation, found exactly with the Hungarian
    algorithm; otherwise POT's network simplex solves the transport problem.

    >>> a = np.array([[0.0, 0.0], [4.0, 0.0]]); b = np.array([[4.0, 3.0], [0.0, 1.0]])
    >>> earth_movers_distance(a, b)
    2.0
    """
    bag_a = np.atleast_2d(np.asarray(bag_a, dtype=np.float64))
    bag_b = np.atleast_2d(np.asarray(bag_b, dtype=np.float64))
    if len(bag_a) == 0 or len(bag_b) == 0:
        raise InvalidParameterError("Earth Mover's distance needs two non-empty bags")
    if bag_a.shape[1] != bag_b.shape[1]:
        raise InvalidParameterError(
            f"dimension mismatch: bags of {bag_a.shape[1]}- and {bag_b.shape[1]}-dimensional vectors"
        )
    cost = cdist(bag_a, bag_b)
    if len(bag_a) == len(bag_b):
        rows, cols = linear_sum_assignment(cost)
        return float(cost[rows, cols].mean())
    import ot

    weights_a = np.full(len(bag_a), 1.0 / len(bag_a))
    weights_b = np.full(len(bag_b), 1.0 / len(bag_b))
    return float(ot.emd2(weights_a, weights_b, cost))


def indistinguishability_bound(epsilon: float, words: int, distance: float) -> float:
    """``exp(epsilon * N * E)``: how far apart the release distributions of two documents of
    N words at Earth Mover's distance E can be (Theorem 4 of paper 001).

    >>> round(indistinguishability_bound(1 / 16, 4, 2.816), 2), round(indistinguishability_bound(1 / 32, 4, 2.816), 2)
    (2.02, 1.42)
    """
    epsilon = check_epsilon(epsilon)
    if words < 0 or distance < 0:
        raise InvalidParameterError("the number of words and the distance must be non-negative")
    return math.exp(epsilon * words * distance)


def utility_lower_bound(epsilon: float, words: int, delta: float, dim: int) -> float:
    """A sound form of Theorem 3 of paper 001: the probability that Algorithm 1's noisy bag lies
    within Earth Mover's distance ``delta`` of the input bag of ``words`` vectors in ``dim``
    dimensions is at least ``P(Gamma(N*n, 1) <= epsilon*N*delta)``.

    Why: matching each word to its own noisy copy gives ``E <= (1/N) sum_i |noise_i|``, and the
    sum of N independent Gamma(n, 1/epsilon) radii is Gamma(N*n, 1/epsilon). This is the
    probability of the region Z_M of the paper's proof, without its approximations; it is
    attained exactly by a bag of N identical words, holds for every delta, and equals the
    paper's stated bound when N = 1. For N >= 2 the stated form ``1 - exp(-x) e_{n-1}(x)``
    overstates the probability (see :func:`theorem3_as_stated`).

    >>> round(utility_lower_bound(0.1, 1, 1.0, 1), 4)  # N = n = 1: 1 - exp(-0.1)
    0.0952
    >>> utility_lower_bound(1.0, 2, 0.18, 1) < theorem3_as_stated(1.0, 2, 0.18, 1)  # two words
    True
    """
    epsilon = check_epsilon(epsilon)
    _check_utility_arguments(words, delta, dim)
    return float(gammainc(words * dim, epsilon * words * delta))


def theorem3_as_stated(epsilon: float, words: int, delta: float, dim: int) -> float:
    """Theorem 3 of paper 001 exactly as printed: ``1 - exp(-x) e_{n-1}(x)``, ``x = epsilon*N*delta``,
    for ``x <= n/e``; kept to compare with the paper.

    It is correct for one word; for N >= 2 words it is *not* a lower bound (a bag of N identical
    words stays within delta with probability ``P(Gamma(N*n, 1) <= x)``, which is smaller).
    Use :func:`utility_lower_bound` for a claim that holds.

    >>> round(theorem3_as_stated(0.1, 1, 1.0, 1), 4)
    0.0952
    """
    epsilon = check_epsilon(epsilon)
    _check_utility_arguments(words, delta, dim)
    x = epsilon * words * delta
    if x > dim / math.e:
        raise InvalidParameterError(
            f"Theorem 3 is stated only for epsilon*N*delta <= n/e ({x:g} > {dim / math.e:g}); use a smaller delta"
        )
    # 1 - exp(-x) e_{n-1}(x) is the Gamma(n, 1) distribution function at x.
    return float(gammainc(dim, x))


def _check_utility_arguments(words: int, delta: float, dim: int) -> None:
    if words < 1 or dim < 1 or delta <= 0:
        raise InvalidParameterError("the utility bound needs words >= 1, dim >= 1 and delta > 0")
