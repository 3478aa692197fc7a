"""Arithmetic of the exponential mechanism over a vocabulary (paper 002, Theorem 2).

A draw from N outputs, rated in [0, 1] with sensitivity 1, cannot favour a small set B of good
outputs unless epsilon is large: at best every good output is rated 1 and every other 0, and
then Pr[B] = |B| / (|B| + (N - |B|) exp(-epsilon / 2)). Theorem 2 inverts this: for
Pr[B] >= p it is necessary that

    epsilon >= (2 * sensitivity / local_sensitivity) * ln(p / (1 - p) * (N - |B|) / |B|).

Pure arithmetic, no imports beyond :mod:`math`.
"""

from __future__ import annotations

import math

from textveil.errors import InvalidParameterError


def necessary_epsilon(
    outputs: int,
    good: int = 1,
    probability: float = 0.5,
    sensitivity: float = 1.0,
    local_sensitivity: float = 1.0,
) -> float:
    """Theorem 2's necessary epsilon for the exponential mechanism to put ``probability`` on a
    set of ``good`` outputs out of ``outputs`` (0 when the condition holds for any epsilon).

    >>> round(necessary_epsilon(20_000), 2)  # paper 002: "Omega(9.9)" is ln(20,000); the bound is 2 ln
    19.81
    >>> round(necessary_epsilon(20_000, good=5, probability=0.5), 2)
    16.59
    >>> necessary_epsilon(10, good=10)
    0.0
    """
    if outputs < 1 or not 1 <= good <= outputs:
        raise InvalidParameterError(f"need 1 <= good ({good}) <= outputs ({outputs})")
    if not 0.0 < probability < 1.0:
        raise InvalidParameterError(f"probability must lie strictly between 0 and 1, got {probability}")
    if sensitivity <= 0 or local_sensitivity <= 0:
        raise InvalidParameterError("sensitivities must be greater than 0")
    if good == outputs:
        return 0.0
    odds = probability / (1.0 - probability) * (outputs - good) / good
    return max(0.0, 2.0 * sensitivity / local_sensitivity * math.log(odds))


def best_case_probability(epsilon: float, outputs: int, good: int = 1, sensitivity: float = 1.0) -> float:
    """The largest Pr[B] the mechanism can give a set of ``good`` outputs (each rated 1, the
    rest 0): |B| / (|B| + (N - |B|) exp(-epsilon / (2 sensitivity))).

    >>> round(best_case_probability(necessary_epsilon(20_000, good=5), 20_000, good=5), 3)
    0.5
    """
    rest = (outputs - good) * math.exp(-epsilon / (2.0 * sensitivity))
    return good / (good + rest)
